"""Tensor methods that summarise values: median, norms, sampling from rows of probabilities.

They live in a base class of Tensor, `StatisticsMethods`, only to keep tensor.py short; every
one is written out here and hands the work to an op in `minigrad.ops`.
"""

from __future__ import annotations


class StatisticsMethods:
    """The statistics methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
