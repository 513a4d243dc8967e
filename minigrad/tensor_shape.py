"""Tensor methods that change shape, not values: reshape, permute, transpose, expand,
(un)squeeze, flatten, split, chunk and indexing.

They live in a base class of Tensor, `ShapeMethods`, only to keep tensor.py short; every one
is written out here and hands the work to an op in `minigrad.ops.shape`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .ops.reduce import normalize_dims
from .ops.shape import Expand, GetItem, Permute, Reshape

if TYPE_CHECKING:
    from .tensor import Tensor

Dim = int | Sequence[int] | None


class ShapeMethods:
    """The shape methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    shape: tuple[int, ...]
    ndim: int

    def reshape(self, *shape: Any) -> Tensor:
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self if shape == self.shape else Reshape.apply(self, shape=shape)

    view = reshape

    def permute(self, *dims: Any) -> Tensor:
        dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
        if len(dims) != self.ndim:
            raise ValueError(f"permute: {len(dims)} dims given for a tensor of {self.ndim} dimensions")
        return Permute.apply(self, dims=dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        dims = list(range(self.ndim))
        if self.ndim:
            (d0,), (d1,) = (normalize_dims(d, self.ndim, "transpose") for d in (dim0, dim1))
            dims[d0], dims[d1] = dims[d1], dims[d0]
        return self.permute(*dims)

    def expand(self, *sizes: Any) -> Tensor:
        """Broadcast to a larger shape without copying; -1 keeps a size."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
        lead = len(sizes) - self.ndim
        shape = tuple(
            self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes)
        )
        return Expand.apply(self, shape=shape)

    def unsqueeze(self, dim: int) -> Tensor:
        d = dim % (self.ndim + 1) if -self.ndim - 1 <= dim <= self.ndim else None
        if d is None:
            raise IndexError(f"unsqueeze: dim {dim} is out of range for {self.ndim} dimensions")
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim: Dim = None) -> Tensor:
        """Drop axes of size 1 (all of them, or those in dim that have size 1)."""
        axes = normalize_dims(dim, self.ndim, "squeeze")
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _axis(start_dim, self.ndim, "flatten"), _axis(end_dim, self.ndim, "flatten")
        if s > e:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces of `split_size` along dim (the last may be smaller), or of the given sizes."""
        dim = _axis(dim, self.ndim, "split")
        n = self.shape[dim]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            sizes = [min(step, n - i) for i in range(0, n, step)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ValueError(f"split: sizes {sizes} do not add up to {n} (dim {dim})")
        pieces, start = [], 0
        lead = (slice(None),) * dim
        for size in sizes:
            pieces.append(self[lead + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        n = self.shape[_axis(dim, self.ndim, "chunk")]
        return self.split(max(-(-n // chunks), 1), dim)

    def __getitem__(self, index: Any) -> Tensor:
        return GetItem.apply(self, index=_to_index(index))


def _axis(dim: int, ndim: int, op: str) -> int:
    """`dim` as a non-negative axis of a tensor of `ndim` >= 1 dimensions, checked."""
    if ndim == 0:
        raise IndexError(f"{op}: a 0-d tensor has no dim {dim}")
    return normalize_dims(dim, ndim, op)[0]


def _to_index(index: Any) -> Any:
    """Index parts as numpy understands them: tensors and lists become arrays."""
    if isinstance(index, tuple):
        return tuple(_to_index(i) for i in index)
    if isinstance(index, ShapeMethods):  # a Tensor
        index = index.data
    elif isinstance(index, list):
        index = np.asarray(index)
    if isinstance(index, np.ndarray) and index.dtype.kind not in "iub":
        raise IndexError(
            f"getitem: index arrays must be integer or boolean, not {index.dtype} "
            "(make them with dtype=minigrad.int64)"
        )
    return index
