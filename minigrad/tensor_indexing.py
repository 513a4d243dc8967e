"""Tensor methods that select and place elements by index.

They live in a base class of Tensor, `IndexingMethods`, only to keep tensor.py short; every one
is written out here and hands the work to an op in `minigrad.ops`.
"""

from __future__ import annotations


class IndexingMethods:
    """The indexing methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
