"""Products, running sums and products, and the values of sort / topk, along one axis.

`dim` is one axis (negative counting from the end); a 0-d input is treated as a single element
along dim 0 or -1, as in PyTorch. Prod also takes dim=None (every element). The indices of sort
and topk are not differentiable: the Tensor methods (declared below) compute them with numpy and
hand them to `GatherSorted`, whose backward sends each g to the place it came from.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd import Function
from ..errors import ShapeError
from ..tensor import Tensor
from .arguments import Dim, normalize_dims, one_axis
from .table import op


class SortResult(NamedTuple):
    """What `sort` returns, as torch.return_types.sort: `values, indices = x.sort()`."""

    values: Tensor
    indices: Tensor


class CumMaxResult(NamedTuple):
    """What `cummax` returns, as torch.return_types.cummax: `values, indices = x.cummax(0)`."""

    values: Tensor
    indices: Tensor


class CumMinResult(NamedTuple):
    """What `cummin` returns, as torch.return_types.cummin."""

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


def _widen(x: np.ndarray) -> np.ndarray:
    """Bool and integer inputs accumulate in int64, as PyTorch's prod / cumsum / cumprod do
    (numpy alone would keep an int32 0-d input int32)."""
    return x.astype(np.int64) if x.dtype.kind in "biu" else x


def _exclusive_cumprod(x: np.ndarray, axis: int) -> np.ndarray:
    """out_i = prod_{j < i} x_j along axis (1 at i = 0): no division, so zeros are exact."""
    if x.shape[axis] == 0:
        return np.ones_like(x)
    ones = np.ones_like(np.take(x, [0], axis=axis))
    before = np.take(x, np.arange(x.shape[axis] - 1), axis=axis)
    return np.cumprod(np.concatenate([ones, before], axis=axis), axis=axis)


def _ones(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A constant tensor of ones (no graph) of t's dtype."""
    return Tensor._make(np.ones(shape, dtype=t.dtype), None)


def _along(t: Tensor, axis: int, part: slice) -> Tensor:
    return t[(slice(None),) * axis + (part,)]


def _tree_prod(t: Tensor, axis: int) -> Tensor:
    """The product along axis (kept, size 1) as ops: pairs multiplied, log2(n) rounds. Only
    multiplications, so every derivative is exact at zeros (the composition Prod computes)."""
    from .shape import Cat

    n = t.shape[axis]
    if n == 0:
        return _ones(t, t.shape[:axis] + (1,) + t.shape[axis + 1:])
    while n > 1:
        half = n // 2
        p = _along(t, axis, slice(0, 2 * half, 2)) * _along(t, axis, slice(1, 2 * half, 2))
        t = Cat.apply(p, _along(t, axis, slice(n - 1, n)), dim=axis) if n % 2 else p
        n = t.shape[axis]
    return t


def _reverse_cumsum(g: np.ndarray, axis: int) -> np.ndarray:
    """out_i = sum_{j >= i} g_j along axis."""
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


class Prod(Function):
    """z = prod_i x_i over dim       dx_i = g * prod_{j != i} x_j

    prod_{j != i} x_j is the product of the elements before i times the product of those after
    it, both taken as running products: no division by x_i, so the gradient is right when the
    input holds zeros (one zero: only its own place gets a gradient; two: none does).
    Under create_graph, `reference`: the product as a tree of multiplications.
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True)."""
        if ctx.dim is None:
            return _tree_prod(x.reshape(-1), 0).reshape(())
        if x.ndim == 0:
            return x * 1
        z = _tree_prod(x, ctx.axis)
        return z if ctx.keepdim else z.squeeze(ctx.axis)

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        x = _widen(x)
        ctx.shape, ctx.keepdim, ctx.dim = x.shape, keepdim, dim
        if dim is None:
            ctx.save_for_backward(x)
            return np.prod(x)
        axis = one_axis(dim, x.ndim, "prod")
        ctx.axis = axis
        ctx.save_for_backward(x)
        if x.ndim == 0:
            return x * 1
        return np.prod(x, axis=axis, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        if ctx.dim is None:
            flat = x.reshape(-1)
            others = _exclusive_cumprod(flat, 0) * np.flip(_exclusive_cumprod(np.flip(flat), 0))
            return (g * others).reshape(ctx.shape)
        if x.ndim == 0:
            return g
        axis = ctx.axis
        before = _exclusive_cumprod(x, axis)
        after = np.flip(_exclusive_cumprod(np.flip(x, axis), axis), axis)
        g = g if ctx.keepdim else np.expand_dims(g, axis)
        return g * before * after


@op
def prod(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The product of the elements over `dim` (one axis) or of all of them (dim=None)."""
    return Prod.apply(self, dim=dim, keepdim=keepdim)


class CumSum(Function):
    """z_i = sum_{j <= i} x_j along dim       dx_j = sum_{i >= j} g_i   (flip, cumsum, flip)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dim):
        x = _widen(x)
        ctx.axis = one_axis(dim, x.ndim, "cumsum")
        return np.cumsum(np.atleast_1d(x), axis=ctx.axis).reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):  # create_graph: the same, as ops
            g1 = g.reshape(g.shape or (1,))
            return CumSum.apply(g1.flip(ctx.axis), dim=ctx.axis).flip(ctx.axis).reshape(g.shape)
        return _reverse_cumsum(np.atleast_1d(g), ctx.axis).reshape(g.shape)


@op(inplace=True)
def cumsum(self, dim: int) -> Tensor:
    return CumSum.apply(self, dim=dim)


class CumProd(Function):
    """z_i = prod_{j <= i} x_j along dim       dx_j = sum_{i >= j} g_i prod_{k <= i, k != j} x_k

    Before the first zero of a slice (x_j != 0) that is sum_{i >= j} g_i z_i / x_j. At the first
    zero it is sum_{i >= j} g_i w_i with w the running product of x whose first zero is
    replaced by 1. After it every product holds that zero, so the gradient is 0.
    Under create_graph, `reference`: the running product as a scan of multiplications.
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): a
        Hillis-Steele scan, z_i *= z_{i - k} for k = 1, 2, 4, ... (log2(n) rounds, products
        only, so exact derivatives at zeros)."""
        from .shape import Cat

        axis = ctx.axis
        z = x.reshape(x.shape or (1,))
        n, k = z.shape[axis], 1
        while k < n:
            pad = _ones(z, z.shape[:axis] + (k,) + z.shape[axis + 1:])
            z = z * Cat.apply(pad, _along(z, axis, slice(0, n - k)), dim=axis)
            k *= 2
        return z.reshape(x.shape)

    @staticmethod
    def forward(ctx, x, *, dim):
        x = _widen(x)
        ctx.axis = one_axis(dim, x.ndim, "cumprod")
        z = np.cumprod(np.atleast_1d(x), axis=ctx.axis).reshape(x.shape)
        ctx.save_for_backward(x, z)
        return z

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        shape, axis = x.shape, ctx.axis
        if x.ndim == 0 or x.shape[axis] == 1:
            return g  # z = x: exact even for a subnormal x, where z / x would round
        x, z, g = np.atleast_1d(x), np.atleast_1d(z), np.atleast_1d(g)
        zero = x == 0
        zeros_so_far = np.cumsum(zero, axis=axis)
        first_zero = zero & (zeros_so_far == 1)
        before = zeros_so_far == 0
        safe_x = np.where(before, x, 1)
        dx = np.where(before, _reverse_cumsum(g * z, axis) / safe_x, 0)
        if first_zero.any():
            w = np.cumprod(np.where(first_zero, 1, x), axis=axis)
            dx = np.where(first_zero, _reverse_cumsum(g * w, axis), dx)
        return dx.astype(g.dtype, copy=False).reshape(shape)


@op(inplace=True)
def cumprod(self, dim: int) -> Tensor:
    return CumProd.apply(self, dim=dim)


class LogCumSumExp(Function):
    """z_i = log sum_{j <= i} exp(x_j) along dim       dx_j = sum_{i >= j} g_i exp(x_j - z_i)

    Forward is numpy's running logaddexp, which never overflows. Backward keeps the sum in log
    space too, the positive and the negative g_i apart: exp(x_j - z_i) <= 1 for i >= j, so
    dx_j = exp(x_j + log sum_{i >= j} g+_i e^-z_i) - exp(x_j + log sum_{i >= j} g-_i e^-z_i)
    neither overflows nor loses the small terms. Where every x so far is -inf, z_i = -inf and
    the gradient is NaN, as in PyTorch.

    Under create_graph, `reference`: z_i = logsumexp over the row x masked to j <= i (an
    (n, n) matrix along dim), so the graph is logsumexp's, stable for large x. (Where every
    x so far is -inf, that gives gradient 0, logsumexp's rule, not NaN.)
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True)."""
        from .indexing import where

        x1 = x.reshape(x.shape or (1,)).movedim(ctx.axis, -1)
        n = x1.shape[-1]
        rows = x1.unsqueeze(-2).expand(x1.shape[:-1] + (n, n))  # rows[..., i, j] = x_j
        before = np.tril(np.ones((n, n), bool))
        masked = where(before, rows, np.array(-np.inf, dtype=x.dtype))
        return masked.logsumexp(-1).movedim(-1, ctx.axis).reshape(x.shape)

    @staticmethod
    def forward(ctx, x, *, dim):
        if x.dtype.kind not in "fc":
            raise TypeError(f"logcumsumexp: expected a floating-point tensor, got {x.dtype}")
        ctx.axis = one_axis(dim, x.ndim, "logcumsumexp")
        z = np.logaddexp.accumulate(np.atleast_1d(x), axis=ctx.axis).reshape(x.shape)
        ctx.save_for_backward(x, z)
        return z

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        axis, shape = ctx.axis, x.shape
        x, z, g = np.atleast_1d(x), np.atleast_1d(z), np.atleast_1d(g)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            parts = []
            for part in (np.maximum(g, 0), np.maximum(-g, 0)):
                terms = np.flip(np.log(part) - z, axis)  # log(g_i e^-z_i), summed from the end
                parts.append(np.exp(x + np.flip(np.logaddexp.accumulate(terms, axis=axis), axis)))
            dx = parts[0] - parts[1]
        return dx.astype(g.dtype, copy=False).reshape(shape)


@op
def logcumsumexp(self, dim: int) -> Tensor:
    """log(cumsum(exp(x), dim)), computed without overflow."""
    return LogCumSumExp.apply(self, dim=dim)


def _running_extreme(self, dim: int, largest: bool, op: str) -> tuple[Tensor, Tensor]:
    """(values, indices) of the running max (min) along dim: each index is the last place that
    holds the running value (PyTorch's >=), a NaN counting as larger (smaller) than all and
    staying; values are gathered at the indices, so each gradient goes to that place."""
    axis = one_axis(dim, self.ndim, op)
    x = np.atleast_1d(self._data)
    ufunc = np.maximum if largest else np.minimum
    best = ufunc.accumulate(x, axis=axis)
    place = np.arange(x.shape[axis]).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    holds = (x == best) | (np.isnan(x) if x.dtype.kind in "fc" else False)
    idx = np.maximum.accumulate(np.where(holds, place, 0), axis=axis).reshape(self.shape)
    indices = self._make(idx.astype(np.int64, copy=False), None)
    values = self.gather(axis, indices) if self.ndim else self * 1
    return values, indices


@op
def cummax(self, dim: int) -> CumMaxResult:
    """(values, indices): the running maximum along `dim` and where each was taken from."""
    return CumMaxResult(*_running_extreme(self, dim, True, "cummax"))


@op
def cummin(self, dim: int) -> CumMinResult:
    """(values, indices): the running minimum along `dim` and where each was taken from."""
    return CumMinResult(*_running_extreme(self, dim, False, "cummin"))


class GatherSorted(Function):
    """z = take_along_dim(x, indices, dim)       dx = 0, then dx[indices] += g along dim

    The values of sort and topk: `indices` (from numpy's argsort, not differentiable) pick each
    output element, and its gradient goes back to the element it was picked from.
    Under create_graph dx is that scatter_add (of distinct places) as an op.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, indices, dim):
        ctx.axis, ctx.indices, ctx.shape = one_axis(dim, x.ndim, "sort"), indices, x.shape
        if x.ndim == 0:
            return np.take(x.reshape(1), indices.reshape(-1)).reshape(indices.shape)
        return np.take_along_axis(x, indices, axis=ctx.axis)

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            if len(ctx.shape) == 0:
                return g.sum()
            from .indexing import ScatterAdd
            zeros = Tensor._make(np.zeros(ctx.shape, dtype=g.dtype), None)
            return ScatterAdd.apply(zeros, g, dim=ctx.axis, index=ctx.indices)
        if len(ctx.shape) == 0:
            return np.asarray(g.sum(), dtype=g.dtype)
        dx = np.zeros(ctx.shape, dtype=g.dtype)
        np.put_along_axis(dx, ctx.indices, g, axis=ctx.axis)  # indices along dim are distinct
        return dx


@op
def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> SortResult:
    """(values, indices) of the elements sorted along `dim`, ascending unless `descending`.

    The sort is always stable (equal values keep their order), which stable=False allows.
    """
    axis, idx = _sort_indices(self, dim, descending, "sort")
    idx = idx.reshape(self.shape)
    values = GatherSorted.apply(self, indices=idx, dim=axis)
    return SortResult(values, self._make(idx.astype(np.int64, copy=False), None))


@op
def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopKResult:
    """(values, indices) of the k largest elements along `dim` (smallest with largest=False),
    in sorted order. sorted=False allows any order; they come sorted anyway."""
    axis = one_axis(dim, self.ndim, "topk")
    n = self.shape[axis] if self.ndim else 1
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= n:
        raise ShapeError(f"topk: k={k!r} is out of range for dim {dim} of size {n} in a tensor "
                         f"of shape {self.shape}; pass an int k with 0 <= k <= {n}")
    _, idx = _sort_indices(self, dim, largest, "topk")
    idx = np.take(idx, np.arange(k), axis=axis)
    if self.ndim == 0:
        idx = idx.reshape(()) if k else idx
    values = GatherSorted.apply(self, indices=idx, dim=axis)
    return TopKResult(values, self._make(idx.astype(np.int64, copy=False), None))


# ----------------------------------------------------------------------------- methods


def _sort_indices(self, dim: int, descending: bool, op: str) -> tuple[int, np.ndarray]:
    axis = one_axis(dim, self.ndim, op)
    data = self._data if self.ndim else self._data.reshape(1)
    return axis, stable_argsort(data, axis, descending)


@op
def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The int64 indices that sort the elements along `dim` (stable, as `sort`)."""
    _, idx = _sort_indices(self, dim, descending, "argsort")
    return self._make(idx.reshape(self.shape).astype(np.int64, copy=False), None)


@op
def count_nonzero(self, dim: Dim = None) -> Tensor:
    """The int64 number of nonzero elements over `dim` (None: all; an int or a tuple)."""
    axes = normalize_dims(dim, self.ndim, "count_nonzero")
    counts = np.count_nonzero(self._data, axis=axes) if self.ndim else np.count_nonzero(self._data)
    return self._make(np.asarray(counts, dtype=np.int64), None)
