"""Memory: what a node keeps of the activations once backward has used them (`Released`), and
freed memory kept inside the process between training steps (Linux, glibc).

A training step allocates the same large arrays every time and frees them all when the graph
goes. By default glibc hands blocks of more than about 128 KiB straight back to the operating
system, so the next step gets fresh pages and pays a page fault for every 4 KiB of them:
measured here, that made a 512x512 op chain 1.3x slower than numpy instead of level with it.
Raising glibc's mmap and trim thresholds lets freed blocks be reused, as PyTorch's caching
allocator does. Set MINIGRAD_KEEP_MEMORY=0 to leave the allocator alone.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .autograd import Function
    from .tensor import Tensor

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h
_MMAP_THRESHOLD = 32 * 2**20  # the largest value glibc accepts on 64-bit machines
_TRIM_THRESHOLD = 512 * 2**20


def keep_freed_memory() -> bool:
    """Ask glibc to reuse freed blocks instead of returning them; True if it agreed."""
    if not sys.platform.startswith("linux") or os.environ.get("MINIGRAD_KEEP_MEMORY") == "0":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
            libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):  # not glibc (e.g. musl): nothing to tune
        return False


# ----------------------------------------------------------------------------- released activations

# Intermediate inputs of more than KEEP_VALUES elements are released after backward (see
# `Released`); smaller ones cost nothing to keep, and drawings print their values.
KEEP_VALUES = 64


class Released:
    """What a node keeps of an intermediate input once backward has freed the graph.

    Holding the input Tensors would keep every activation alive for as long as anyone keeps
    the loss (`losses.append(loss)`). A drawing or an error message needs only the shape,
    dtype, name and the node that made it. Only nodes with an intermediate input of more than
    `KEEP_VALUES` elements are released (small ones cost nothing to keep, and a drawing of a
    small graph can still print their values); leaves (parameters, inputs) are the user's own
    tensors and stay as they are.
    """

    __slots__ = ("shape", "dtype", "name", "_node", "_grad", "_small")
    requires_grad = True
    released = True

    def __init__(self, t: Tensor) -> None:
        a = t._data
        self.shape, self.dtype, self.name, self._node, self._grad = a.shape, a.dtype, t.name, t._node, t._grad
        self._small = a if a.size <= KEEP_VALUES else None

    @property
    def _data(self) -> np.ndarray:
        """The kept values (as a Tensor's `_data`), or a read-only stand-in of the right shape
        (zeros, no memory)."""
        if self._small is not None:
            return self._small
        return np.broadcast_to(np.zeros((), self.dtype), self.shape)

    @property
    def values_kept(self) -> bool:
        return self._small is not None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def grad_fn(self) -> Function:
        return self._node

    is_leaf = False

    def __repr__(self) -> str:
        return f"<released tensor {self.shape} {self.dtype}>"


def release_inputs(inputs: tuple, records: dict) -> tuple:
    """The inputs with every intermediate tensor replaced by its `Released` record.

    `records` (id of the node that made a tensor -> its record) is shared by one backward
    pass, so all users of one tensor get the same record: drawings tell tensors apart by
    identity.
    """
    out = []
    for t in inputs:
        if t._node is not None and type(t) is not Released:
            r = records.get(id(t._node))
            if r is None:
                r = records[id(t._node)] = Released(t)
            t = r
        out.append(t)
    return tuple(out)
