"""Reductions (sum, mean, max, min, var, std, logsumexp) and the fused softmax / log-softmax.

`dim` is None or () (all axes), an int or a tuple of ints, negative counting from the end;
`keepdim` keeps reduced axes with size 1, as in PyTorch.

One rule for float16: every reduction that adds values up accumulates in float32 (PyTorch's
"opmath" type) and casts its result, and its gradient, back to float16, as PyTorch does; see
`accumulation_dtype`. (64 values of 40 have a sum of squares of 102400, past float16's
largest value 65504, yet their norm is 320.)
"""

from __future__ import annotations

import builtins  # sum, max, min, all and any here are Tensor methods; Python's are builtins.*
from typing import Any, NamedTuple

import numpy as np

from ..autograd import Function
from ..creation import as_tensor
from ..errors import RangeError, ShapeError
from ..runtime import compiled
from ..tensor import Tensor
from . import either
from .arguments import Dim, normalize_dims, one_axis
from .logic import bools
from .ordering import GatherSorted
from .table import function, method, op


def variance_options(op: str, dim: Any, unbiased: Any, keepdim: Any, correction: Any) -> dict:
    """torch's arguments of var and std as the op's (dim, keepdim, correction).

    torch has three forms: var(dim, unbiased=True, keepdim=False), var(dim=None, *,
    correction=1, keepdim=False) and var(unbiased) (a bool first); unbiased=True is
    correction 1 (divide by n - 1), False correction 0 (divide by n)."""
    if isinstance(dim, (bool, np.bool_)):  # x.var(False): the unbiased form
        if unbiased is not None:
            raise TypeError(f"{op}: got a bool dim ({dim}) and unbiased={unbiased!r}; the dims are "
                            "ints, and a lone bool is unbiased")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: give unbiased={unbiased!r} or correction={correction!r}, not both")
    if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"{op}: unbiased (the second positional argument, as in torch) must be a bool, "
                        f"not {unbiased!r}; for another divisor pass correction={unbiased!r}")
    if correction is None:
        correction = 0 if unbiased is False or unbiased is np.False_ else 1
    elif isinstance(correction, (bool, np.bool_)) or not isinstance(correction, (int, float, np.number)):
        raise TypeError(f"{op}: correction must be a number (n - correction divides), not {correction!r}")
    return {"dim": dim, "keepdim": bool(keepdim), "correction": correction}


def reduce_dims(dim, ndim: int, op: str) -> tuple[int, ...]:
    """The axes a reduction sums over: as normalize_dims, except that an empty `dim`
    (`()` or `[]`) means every axis, as in PyTorch, not none of them."""
    if isinstance(dim, (tuple, list)) and not dim:
        dim = None
    return normalize_dims(dim, ndim, op)


def accumulation_dtype(dtype) -> np.dtype:
    """The dtype a reduction adds up in: float32 for float16, the dtype itself otherwise.

    The one place the rule is written; the reductions here, the vector norms, layer norm,
    batch norm and the GELU kernel all take it from here."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def widened(x: np.ndarray) -> np.ndarray:
    """x in its accumulation dtype (no copy when that is its own)."""
    return np.asarray(x).astype(accumulation_dtype(np.asarray(x).dtype), copy=False)


def narrowed(a: np.ndarray, dtype) -> np.ndarray:
    """a, computed in `accumulation_dtype(dtype)`, back in dtype (only float16 differs: an
    integer input's float result stays as it is)."""
    if accumulation_dtype(dtype) == dtype:
        return np.asarray(a)
    with np.errstate(over="ignore"):  # past float16's 65504: inf, as in PyTorch
        return np.asarray(a).astype(dtype)


def scale_of(a: np.ndarray, axes: tuple[int, ...] | None) -> np.ndarray:
    """A power of two c close to max |a| over axes (keepdims; 1 where that max is 0, inf or NaN).

    Dividing by c is exact, so a sum of squares of a / c rounds exactly as that of a would, but
    it can neither overflow nor underflow: var, std and the norms compute on a / c and scale
    back (as LAPACK's nrm2 does), and are right wherever the result itself fits the dtype."""
    top = np.max(np.abs(a), axis=axes, keepdims=True, initial=0)
    _, exponent = np.frexp(top)  # top = m * 2**exponent, 0.5 <= m < 1
    exponent = np.where(np.isfinite(top) & (top > 0), exponent - 1, 0)  # c <= top: c itself fits
    return np.ldexp(np.ones((), a.dtype), exponent).astype(a.dtype, copy=False)


def _keep(g: np.ndarray, axes: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """Put back the reduced axes (size 1) so that g broadcasts against the input."""
    return g if keepdim else either.expand_dims(g, axes)


def _widened_any(g: Any) -> Any:
    """widened for an array or a Tensor (a float16 tensor goes to float32, as an op)."""
    if type(g) is np.ndarray or not hasattr(g, "_node"):
        return widened(g)
    wide = accumulation_dtype(g.dtype)
    return g if wide == g.dtype else g.to(wide)


def _narrowed_any(a: Any, dtype) -> Any:
    """narrowed for an array or a Tensor."""
    if not hasattr(a, "_node"):
        return narrowed(a, dtype)
    return a if a.dtype == dtype or accumulation_dtype(dtype) == dtype else a.to(dtype)


def _centered_graph(x: Tensor, axes: tuple[int, ...], c: np.ndarray) -> Tensor:
    """`_centered`'s d = (x - mean) / c as ops (c a constant), the mean taken the same way."""
    xs = _widened_any(x) / c
    if not builtins.all(x.shape[a] for a in axes):
        return xs
    if x.ndim == 0:  # one element: its own mean, d = 0
        return xs - xs
    x0 = xs[tuple(slice(0, 1) if a in axes else slice(None) for a in range(xs.ndim))]
    return xs - (x0 + (xs - x0).mean(dim=axes, keepdim=True))


class Sum(Function):
    """z = sum_i x_i over dim       dx = g broadcast back over the summed axes"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        ctx.axes, ctx.keepdim, ctx.shape = reduce_dims(dim, x.ndim, "sum"), keepdim, x.shape
        if x.dtype.kind != "f":  # integers and bools: numpy's own rule (int64 sums)
            return x.sum(axis=ctx.axes, keepdims=keepdim)
        return narrowed(x.sum(axis=ctx.axes, keepdims=keepdim, dtype=accumulation_dtype(x.dtype)), x.dtype)

    @staticmethod
    def backward(ctx, g):
        return either.broadcast_to(_keep(g, ctx.axes, ctx.keepdim), ctx.shape)


@op
def sum(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return Sum.apply(self, dim=dim, keepdim=keepdim)


class Mean(Function):
    """z = sum_i x_i / n over dim       dx = g / n broadcast back (n = number averaged)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        ctx.axes, ctx.keepdim, ctx.shape = reduce_dims(dim, x.ndim, "mean"), keepdim, x.shape
        ctx.n = int(np.prod([x.shape[a] for a in ctx.axes]))
        if ctx.n == 0:
            raise ShapeError(f"mean: cannot average over an empty dimension of shape {x.shape}")
        return narrowed(widened(x).mean(axis=ctx.axes, keepdims=keepdim), x.dtype)

    @staticmethod
    def backward(ctx, g):
        return either.broadcast_to(_keep(g, ctx.axes, ctx.keepdim) / ctx.n, ctx.shape)


@op
def mean(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    _float_only(self, "mean")
    return Mean.apply(self, dim=dim, keepdim=keepdim)


class Max(Function):
    """z = max_i x_i over dim       dx = g * [x_i == z] / (number of ties)

    Tied maxima share the gradient equally, as PyTorch's amax does. A slice holding NaN has
    z = NaN, and its NaN elements are the winners (x == z is False there): the gradient goes
    to them, as PyTorch's x.max() routes it, instead of NaN spreading over the whole slice.
    Under create_graph the shares are constants (their derivative is 0 wherever it exists).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        return ctx.saved  # x and the kept-dims max, only compared: arrays, constants of the graph

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False, op="max"):
        axes = reduce_dims(dim, x.ndim, op)
        if builtins.any(x.shape[a] == 0 for a in axes):
            raise ShapeError(f"{op}: cannot reduce an empty dimension of shape {x.shape}")
        reduce = np.max if op == "max" else np.min
        z = reduce(x, axis=axes, keepdims=True)
        ctx.save_for_backward(x, z)
        ctx.axes, ctx.keepdim = axes, keepdim
        return z if keepdim else np.squeeze(z, axis=axes)

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        x, z = either.values(x), either.values(z)
        winners = x == z
        if x.dtype.kind in "fc" and np.isnan(z).any():
            winners |= np.isnan(x) & np.isnan(z)
        share = winners / winners.sum(axis=ctx.axes, keepdims=True)
        return _keep(g, ctx.axes, ctx.keepdim) * share.astype(g.dtype, copy=False)


class MaxResult(NamedTuple):
    """What `max(dim)` returns, as torch.return_types.max: `values, indices = x.max(dim=1)`."""

    values: Tensor
    indices: Tensor

class MinResult(NamedTuple):
    """What `min(dim)` returns, as torch.return_types.min."""

    values: Tensor
    indices: Tensor

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
    flat = self._data.reshape(1) if self.ndim == 0 else self._data
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


@op
def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
    """x.max(): the largest value, a tensor (tied maxima share the gradient).
    x.max(dim): a named tuple (values, indices), as PyTorch; see `_extreme`.
    x.max(other_tensor) is `maximum`, as in PyTorch."""
    if hasattr(dim, "data"):
        return self.maximum(dim)
    if dim is None:
        return Max.apply(self)
    return _extreme(self, dim, keepdim, "max")


@method
def amax(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """The largest values over dim (one, several or all), ties sharing the gradient."""
    return Max.apply(self, dim=dim, keepdim=keepdim)


@function(name="amax")
def amax_form(input: Any, dim: Dim = (), keepdim: bool = False) -> Tensor:
    return as_tensor(input).amax(dim, keepdim)


class Min(Max):
    """z = min_i x_i over dim       dx = g * [x_i == z] / (number of ties)"""

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        return Max.forward(ctx, x, dim=dim, keepdim=keepdim, op="min")


@op
def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
    """x.min(): the smallest value; x.min(dim): a named tuple (values, indices)."""
    if hasattr(dim, "data"):
        return self.minimum(dim)
    if dim is None:
        return Min.apply(self)
    return _extreme(self, dim, keepdim, "min")


@method
def amin(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """The smallest values over dim (one, several or all), ties sharing the gradient."""
    return Min.apply(self, dim=dim, keepdim=keepdim)


@function(name="amin")
def amin_form(input: Any, dim: Dim = (), keepdim: bool = False) -> Tensor:
    return as_tensor(input).amin(dim, keepdim)


class Var(Function):
    """v = sum_i (x_i - mean)**2 / (n - correction)       dx = g * 2 (x - mean) / (n - correction)

    The mean's own dependence on x drops out because sum_i (x_i - mean) = 0. Computed on x / c
    (`_centered`): v = c^2 v', right wherever v itself fits the dtype, and exactly 0 for a
    constant slice.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        """d rebuilt as ops from x (so dx's own derivative has d's), c a constant."""
        d, c = ctx.saved
        return _centered_graph(x, ctx.axes, c), c

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False, correction=1):
        axes = reduce_dims(dim, x.ndim, "var")
        d, c, denom = _centered(x, axes, correction)
        ctx.save_for_backward(d, c)
        ctx.axes, ctx.keepdim, ctx.denom, ctx.dtype = axes, keepdim, denom, x.dtype
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # n <= correction: nan/inf
            v = (d * d).sum(axis=axes, keepdims=True) / d.dtype.type(denom) * c * c
        return narrowed(v if keepdim else np.squeeze(v, axis=axes), x.dtype)

    @staticmethod
    def backward(ctx, g):
        d, c = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            dx = _keep(_widened_any(g), ctx.axes, ctx.keepdim) * d * (2 / d.dtype.type(ctx.denom)) * c
        return _narrowed_any(dx, ctx.dtype)


@op
def var(self, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Variance over dim, dividing by n - correction; torch's arguments: var(dim, unbiased,
    keepdim) or var(dim, correction=..., keepdim=...) (unbiased=True, the default, is
    correction=1; False is 0), and var(False) (see `variance_options`)."""
    _float_only(self, "var")
    return Var.apply(self, **variance_options("var", dim, unbiased, keepdim, correction))


class Std(Function):
    """s = sqrt(var(x))       dx = g * (x - mean) / ((n - correction) s),   and dx = 0 where s = 0

    By the chain rule through sqrt, a constant slice (s = 0) would get 0 / 0 = nan although
    its forward is finite; PyTorch defines the gradient there as 0, and so does minigrad, so
    that `x / (x.std() + eps)` trains on constant rows. (`x.var().sqrt()` is two ops and
    keeps sqrt's infinite slope at 0, as in PyTorch.) Computed on x / c (`_centered`):
    s = c s', and dx = g d' / ((n - correction) s') needs no c at all.

    Under create_graph d and s are rebuilt as ops (graph_saved), with s taken as 1 in the
    divisor where it is 0: dx is 0 there, and so is its derivative (no 0 * inf).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        d_arr, s_arr = ctx.saved
        d = _centered_graph(x, ctx.axes, ctx.c)
        flat = s_arr == 0
        squares = (d * d).sum(dim=ctx.axes, keepdim=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (either.where(flat, np.ones((), squares.dtype), squares) / d_arr.dtype.type(ctx.denom)).sqrt()
        return d, s, flat

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False, correction=1):
        axes = reduce_dims(dim, x.ndim, "std")
        d, c, denom = _centered(x, axes, correction)
        with np.errstate(divide="ignore", invalid="ignore"):  # n <= correction gives nan/inf
            s = np.sqrt((d * d).sum(axis=axes, keepdims=True) / d.dtype.type(denom))  # s / c
        ctx.save_for_backward(d, s)
        ctx.axes, ctx.keepdim, ctx.denom, ctx.dtype, ctx.c = axes, keepdim, denom, x.dtype, c
        with np.errstate(over="ignore"):
            out = s * c
        return narrowed(out if keepdim else np.squeeze(out, axis=axes), x.dtype)

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):  # create_graph: d, s (1 where it is 0) and that mask
            d, s, flat = ctx.saved
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = _keep(_widened_any(g), ctx.axes, ctx.keepdim) / (s * d.dtype.type(ctx.denom))
            dx = either.where(flat, np.zeros((), dtype=scale.dtype), scale) * d
            return _narrowed_any(dx, ctx.dtype)
        d, s = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = _keep(widened(g), ctx.axes, ctx.keepdim) / (s * d.dtype.type(ctx.denom))
        return narrowed(np.where(s == 0, np.zeros((), dtype=scale.dtype), scale) * d, ctx.dtype)


@op
def std(self, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Standard deviation over dim, with var's arguments; a constant slice gets gradient 0,
    as in PyTorch."""
    _float_only(self, "std")
    return Std.apply(self, **variance_options("std", dim, unbiased, keepdim, correction))


def _centered(x: np.ndarray, axes: tuple[int, ...], correction) -> tuple[np.ndarray, np.ndarray, float]:
    """(d, c, n - correction floored at 0): what var and std share, with d = (x - mean) / c
    over axes in the accumulation dtype, and c = `scale_of(x)`, a power of two near max |x|.

    The mean is taken as x0 + mean(x - x0), x0 the slice's first element: the same number,
    but for a constant slice exactly x0 (a rounded mean of n equal values need not be the
    value), so its deviations, its variance and its gradient are exactly 0."""
    n = int(np.prod([x.shape[a] for a in axes]))
    xs = widened(x)
    c = scale_of(xs, axes)
    with np.errstate(invalid="ignore"):  # inf - inf: the NaN an infinite input gives anyway
        xs = xs / c
        if n:
            x0 = xs[tuple(slice(0, 1) if a in axes else slice(None) for a in range(xs.ndim))]
            mean = x0 + (xs - x0).mean(axis=axes, keepdims=True)
        else:
            mean = np.zeros((), xs.dtype)
        return xs - mean, c, builtins.max(n - correction, 0)


class LogSumExp(Function):
    """z = log sum_i exp(x_i) = m + log s,  s = sum_i exp(x_i - m), m = max x
    dx = g * exp(x - z) = g * exp(x - m) / s   (the softmax)

    Subtracting the max keeps exp from overflowing; a row of -inf gives -inf and, by
    definition, no gradient (zeros). NaN and +inf inputs give NaN gradients, as in PyTorch,
    so that `detect_anomaly` sees them. Backward uses the shifted exponentials, not
    exp(x - z): for large x, z rounds and x - z loses digits. Under create_graph e and s are
    rebuilt as ops from x, shifted by the same (constant) max.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        wide = _widened_any(x)
        m = _finite_max(either.values(wide), ctx.axes)
        e = either.exp(wide - m)
        return e, e.sum(dim=ctx.axes, keepdim=True)

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        axes = reduce_dims(dim, x.ndim, "logsumexp")
        ctx.dtype, x = x.dtype, widened(x)
        m = _finite_max(x, axes)
        e = np.exp(x - m)
        s = e.sum(axis=axes, keepdims=True)
        with np.errstate(divide="ignore"):
            z = np.log(s) + m
        ctx.save_for_backward(e, s)
        ctx.axes, ctx.keepdim = axes, keepdim
        return narrowed(z if keepdim else np.squeeze(z, axis=axes), ctx.dtype)

    @staticmethod
    def backward(ctx, g):
        e, s = ctx.saved
        with np.errstate(invalid="ignore"):  # inf / inf where x holds +inf: nan, as it should
            p = e / either.where(either.values(s) == 0, np.ones((), dtype=s.dtype), s)  # a row of -inf:
        return _narrowed_any(_keep(g, ctx.axes, ctx.keepdim) * p, ctx.dtype)  # s = 0, no gradient


@method
def logsumexp(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return LogSumExp.apply(self, dim=dim, keepdim=keepdim)


@function(name="logsumexp")
def logsumexp_form(input: Any, dim: Dim, keepdim: bool = False) -> Tensor:
    return as_tensor(input).logsumexp(dim, keepdim)


def _finite_max(x: np.ndarray, axes) -> np.ndarray:
    """max over axes (keepdims), with 0 where the max is infinite, so that x - m is safe."""
    if x.size == 0:
        return np.zeros([1 if a in axes else s for a, s in enumerate(x.shape)], x.dtype)
    m = np.max(x, axis=axes, keepdims=True)
    return np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)


class SoftmaxOp(Function):
    """z_i = exp(x_i) / sum_j exp(x_j) along dim      dx = z * (g - sum_j g_j z_j)

    Stable for huge logits (subtracts the row max). A row that is all -inf (every entry
    masked) gives zeros rather than NaN, and no gradient.
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): exp of x
        shifted by its (constant) row maximum, over its sum; a row of -inf gives weights 0, as
        the kernel's forward."""
        m = np.max(x._data, axis=ctx.axis, keepdims=True) if x._data.size else np.zeros((), x.dtype)
        m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)  # a row of -inf: weights 0
        e = (x - m).exp()
        total = e.sum(ctx.axis, keepdim=True)
        return e / either.where(total._data == 0, np.ones((), x.dtype), total)

    @staticmethod
    def forward(ctx, x, *, dim=-1):
        axis = normalize_dims(dim, x.ndim, "softmax")
        ctx.dtype, x = x.dtype, widened(x)
        ctx.axis = axis
        if _last_axis_rows(x, axis):
            z = _softmax_compiled(x)
        else:
            e = np.exp(x - _finite_max(x, axis))
            s = e.sum(axis=axis, keepdims=True)
            z = e / np.where(s == 0, 1, s)
        ctx.save_for_backward(z)
        return narrowed(z, ctx.dtype)

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        if (g.shape == z.shape and g.dtype == z.dtype and g.flags.c_contiguous
                and _last_axis_rows(z, ctx.axis)):
            dx = np.empty_like(z)
            compiled.over_rows(_softmax_grad_loop, *_rows(z).shape, _rows(g), _rows(z), _rows(dx))
            return narrowed(dx, ctx.dtype)
        gz = g * z
        return narrowed(gz - z * gz.sum(axis=ctx.axis, keepdims=True), ctx.dtype)


# The loop form of softmax over the last axis (minigrad.runtime.compiled): a row's max and shift in
# one pass, numpy's vector exp in place (numba's exp is a call per element, several times slower),
# the row's sum and scaling in one more; the backward in one. The numpy form above is the reference.


def _rows(a: np.ndarray) -> np.ndarray:
    """a (contiguous, at least 1-d) as the 2-D view (rows, last axis) the loops walk."""
    return a.reshape(a.size // builtins.max(a.shape[-1], 1), a.shape[-1])


def _last_axis_rows(x: np.ndarray, axis) -> bool:
    """Whether softmax's loop form takes x: compiled kernels on, float32 or float64, C-contiguous,
    over the last axis only, and not 0-d."""
    return compiled.takes(x) and x.ndim > 0 and tuple(axis) == (x.ndim - 1,)


@compiled.kernel(fastmath=compiled.REORDER)
def _shift_by_max_loop(x, out, start, stop):
    """out = x - max of its row (0 for a row whose max is infinite: a row of -inf stays -inf)."""
    n = x.shape[1]
    for i in range(start, stop):
        m = -np.inf
        for j in range(n):
            m = x[i, j] if x[i, j] > m else m  # (a NaN is skipped here; it makes its row NaN below)
        m = m if np.isfinite(m) else 0.0
        for j in range(n):
            out[i, j] = x[i, j] - m


@compiled.kernel(fastmath=compiled.REORDER)
def _normalize_sum_loop(e, start, stop):
    """e /= its row sum (a row that sums to 0, all -inf before the exp, stays 0)."""
    n = e.shape[1]
    for i in range(start, stop):
        s = 0.0
        for j in range(n):
            s += e[i, j]
        r = 1.0 / s if s != 0 else 1.0
        for j in range(n):
            e[i, j] = e[i, j] * r


@compiled.kernel(fastmath=compiled.REORDER)
def _softmax_grad_loop(g, z, dx, start, stop):
    """dx = z (g - sum_j g_j z_j), row by row."""
    n = z.shape[1]
    for i in range(start, stop):
        s = 0.0
        for j in range(n):
            s += g[i, j] * z[i, j]
        for j in range(n):
            dx[i, j] = z[i, j] * (g[i, j] - s)


@compiled.kernel(fastmath=compiled.REORDER)
def _subtract_log_sum_loop(shifted, e, start, stop):
    """shifted -= log of the row sum of e (= exp(shifted))."""
    n = e.shape[1]
    for i in range(start, stop):
        s = 0.0
        for j in range(n):
            s += e[i, j]
        lse = np.log(s)
        for j in range(n):
            shifted[i, j] = shifted[i, j] - lse


def log_softmax_last(x: np.ndarray) -> np.ndarray:
    """log_softmax of an array of at least one axis over its last, (x - m) - log(sum exp(x - m)),
    m the row max (0 where it is infinite): the kernel LogSoftmaxOp and cross entropy share. The
    loop form when it takes x (`_last_axis_rows`), else numpy's passes."""
    if _last_axis_rows(x, (x.ndim - 1,)):
        y = np.empty_like(x)
        compiled.over_rows(_shift_by_max_loop, *_rows(x).shape, _rows(x), _rows(y))
        e = np.exp(y)
        with np.errstate(divide="ignore"):
            compiled.over_rows(_subtract_log_sum_loop, *_rows(y).shape, _rows(y), _rows(e))
        return y
    shifted = x - _finite_max(x, (x.ndim - 1,))
    with np.errstate(divide="ignore"):
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _softmax_compiled(x: np.ndarray) -> np.ndarray:
    z = np.empty_like(x)
    compiled.over_rows(_shift_by_max_loop, *_rows(x).shape, _rows(x), _rows(z))
    np.exp(z, out=z)
    compiled.over_rows(_normalize_sum_loop, *_rows(z).shape, _rows(z))
    return z


@method
def softmax(self, dim: int = -1) -> Tensor:
    return SoftmaxOp.apply(self, dim=dim)


@function(name="softmax")
def softmax_form(input: Any, dim: int) -> Tensor:
    return as_tensor(input).softmax(dim)


class LogSoftmaxOp(Function):
    """y_i = x_i - logsumexp(x) along dim      dx = g - exp(y) * sum_j g_j"""

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True)."""
        shifted = x - x.detach().amax(ctx.axis, keepdim=True)
        return shifted - shifted.exp().sum(ctx.axis, keepdim=True).log()

    @staticmethod
    def forward(ctx, x, *, dim=-1):
        axis = normalize_dims(dim, x.ndim, "log_softmax")
        ctx.dtype, x = x.dtype, widened(x)
        if tuple(axis) == (x.ndim - 1,):
            y = log_softmax_last(x)
        else:
            shifted = x - _finite_max(x, axis)
            with np.errstate(divide="ignore"):
                y = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        ctx.save_for_backward(y)
        ctx.axis = axis
        return narrowed(y, ctx.dtype)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        g = widened(g)
        return narrowed(g - np.exp(y) * g.sum(axis=ctx.axis, keepdims=True), ctx.dtype)


@method
def log_softmax(self, dim: int = -1) -> Tensor:
    return LogSoftmaxOp.apply(self, dim=dim)


@function(name="log_softmax")
def log_softmax_form(input: Any, dim: int) -> Tensor:
    return as_tensor(input).log_softmax(dim)


# ----------------------------------------------------------------------------- methods


def _float_only(self, op: str) -> None:
    """Reductions that average refuse integers, as PyTorch does (the mean of int64 has no
    int64 result)."""
    if self._data.dtype.kind not in "fc":
        raise TypeError(f"{op}: the input is {self._data.dtype}, not a floating-point tensor; "
                        f"convert it first with .float()")


@op
def all(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """True where every value over dim (one, several, or all) is non-zero."""
    axis = normalize_dims(dim, self.ndim, "all") if self.ndim else None
    return bools(self, np.all(self._data, axis=axis, keepdims=keepdim))


@op
def any(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """True where some value over dim (one, several, or all) is non-zero."""
    axis = normalize_dims(dim, self.ndim, "any") if self.ndim else None
    return bools(self, np.any(self._data, axis=axis, keepdims=keepdim))


@op
def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the largest value over dim (of the flattened tensor without dim), int64."""
    _need_choice("argmax", self, dim)
    return self._make(np.asarray(np.argmax(self._data, axis=dim, keepdims=keepdim)), None)


@op
def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest value over dim (of the flattened tensor without dim), int64."""
    _need_choice("argmin", self, dim)
    return self._make(np.asarray(np.argmin(self._data, axis=dim, keepdims=keepdim)), None)


def _need_choice(fn: str, x: Tensor, dim: int | None) -> None:
    """argmax/argmin pick among the values of dim (or all): there must be one (torch's IndexError)."""
    if dim is not None and x.ndim and not -x.ndim <= dim < x.ndim:
        return  # numpy's error names the dimension out of range
    n = x._data.size if dim is None or x.ndim == 0 else x.shape[dim]
    if n == 0:
        where = "" if dim is None else f" along dim {dim}"
        raise RangeError(f"{fn}: no value to choose{where} in a tensor of shape {x.shape}")
