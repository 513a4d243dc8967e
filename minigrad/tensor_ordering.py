"""Tensor methods with PyTorch's names for products, running sums and products, sorting and
counting: prod, cumsum, cumprod, sort, argsort, topk, count_nonzero.

They live in a base class of Tensor, `OrderingMethods`, only to keep tensor.py short. The
differentiable ones hand the work to an op in `minigrad.ops.ordering`. Sort and topk return a
named tuple (values, indices) as PyTorch's `torch.return_types.sort` / `topk` do: the values
are differentiable (a gather by the indices), the indices are int64 outside the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .ops.ordering import CumProd, CumSum, GatherSorted, Prod, one_axis
from .ops.reduce import normalize_dims
from .tensor_shape import Dim

if TYPE_CHECKING:
    from .tensor import Tensor


class SortResult(NamedTuple):
    """What `sort` returns, as torch.return_types.sort: `values, indices = x.sort()`."""

    values: Tensor
    indices: Tensor


class MaxResult(NamedTuple):
    """What `max(dim)` returns, as torch.return_types.max: `values, indices = x.max(dim=1)`."""

    values: Tensor
    indices: Tensor


class MinResult(NamedTuple):
    """What `min(dim)` returns, as torch.return_types.min."""

    values: Tensor
    indices: Tensor


class TopKResult(NamedTuple):
    """What `topk` returns, as torch.return_types.topk: `values, indices = x.topk(k)`."""

    values: Tensor
    indices: Tensor


def stable_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices sorting `a` along axis, equal values keeping their order (PyTorch's stable=True).

    Descending sorts the reversed array ascending and reverses the result, so ties still keep
    their original order and no value is negated (which would overflow the smallest integer
    and fail on bool). NaN counts as the largest value, as in PyTorch.
    """
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    flipped = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - flipped, axis).copy()  # a fresh array: no negative strides


class OrderingMethods:
    """The product, running and sorting methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    shape: tuple[int, ...]
    ndim: int

    # ------------------------------------------------------------------ products and running sums

    def prod(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The product of the elements over `dim` (one axis) or of all of them (dim=None)."""
        return Prod.apply(self, dim=dim, keepdim=keepdim)

    def cumsum(self, dim: int) -> Tensor:
        return CumSum.apply(self, dim=dim)

    def cumprod(self, dim: int) -> Tensor:
        return CumProd.apply(self, dim=dim)

    # ------------------------------------------------------------------ sorting

    def _sort_indices(self, dim: int, descending: bool, op: str) -> tuple[int, np.ndarray]:
        axis = one_axis(dim, self.ndim, op)
        data = self.data if self.ndim else self.data.reshape(1)
        return axis, stable_argsort(data, axis, descending)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> SortResult:
        """(values, indices) of the elements sorted along `dim`, ascending unless `descending`.

        The sort is always stable (equal values keep their order), which stable=False allows.
        """
        axis, idx = self._sort_indices(dim, descending, "sort")
        idx = idx.reshape(self.shape)
        values = GatherSorted.apply(self, indices=idx, dim=axis)
        return SortResult(values, self._make(idx.astype(np.int64, copy=False), None))

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        """The int64 indices that sort the elements along `dim` (stable, as `sort`)."""
        _, idx = self._sort_indices(dim, descending, "argsort")
        return self._make(idx.reshape(self.shape).astype(np.int64, copy=False), None)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopKResult:
        """(values, indices) of the k largest elements along `dim` (smallest with largest=False),
        in sorted order. sorted=False allows any order; they come sorted anyway."""
        axis = one_axis(dim, self.ndim, "topk")
        n = self.shape[axis] if self.ndim else 1
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= n:
            raise ValueError(f"topk: k={k!r} is out of range for dim {dim} of size {n} in a tensor "
                             f"of shape {self.shape}; pass an int k with 0 <= k <= {n}")
        _, idx = self._sort_indices(dim, largest, "topk")
        idx = np.take(idx, np.arange(k), axis=axis)
        if self.ndim == 0:
            idx = idx.reshape(()) if k else idx
        values = GatherSorted.apply(self, indices=idx, dim=axis)
        return TopKResult(values, self._make(idx.astype(np.int64, copy=False), None))

    # ------------------------------------------------------------------ extremes along one dim

    def _extreme(self, dim: int, keepdim: bool, op: str) -> MaxResult | MinResult:
        """(values, indices) of the largest (smallest) element along one dim, as PyTorch's
        max(dim) / min(dim): the first of tied elements wins, a NaN wins over any number, and
        the gradient of the values goes to the element picked (amax / amin share it among ties)."""
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"{op}: dim must be one int, got {dim!r}; for several dims use "
                            f"a{op}(dim=...), which returns the values only")
        axis = one_axis(dim, self.ndim, op)
        if self.ndim and self.shape[axis] == 0:
            raise IndexError(f"{op}: cannot reduce the empty dim {dim} of a tensor of shape {self.shape}")
        flat = self.data.reshape(1) if self.ndim == 0 else self.data
        pick = np.argmax if op == "max" else np.argmin  # NaN counts as the extreme in both
        idx = np.expand_dims(pick(flat, axis=axis), axis)
        if self.ndim == 0:
            idx = idx.reshape(())
        values = GatherSorted.apply(self, indices=idx, dim=axis)
        indices = idx
        if not keepdim and self.ndim:
            values, indices = values.squeeze(axis), np.squeeze(idx, axis)
        result = MaxResult if op == "max" else MinResult
        return result(values, self._make(indices.astype(np.int64, copy=False), None))

    # ------------------------------------------------------------------ counting (no grad)

    def count_nonzero(self, dim: Dim = None) -> Tensor:
        """The int64 number of nonzero elements over `dim` (None: all; an int or a tuple)."""
        axes = normalize_dims(dim, self.ndim, "count_nonzero")
        counts = np.count_nonzero(self.data, axis=axes) if self.ndim else np.count_nonzero(self.data)
        return self._make(np.asarray(counts, dtype=np.int64), None)
