"""Reductions (sum, mean, max, min, var, std, logsumexp) and the fused softmax / log-softmax.

`dim` is None or () (all axes), an int or a tuple of ints, negative counting from the end;
`keepdim` keeps reduced axes with size 1, as in PyTorch.

One rule for float16: every reduction that adds values up accumulates in float32 (PyTorch's
"opmath" type) and casts its result, and its gradient, back to float16, as PyTorch does; see
`accumulation_dtype`. (64 values of 40 have a sum of squares of 102400, past float16's
largest value 65504, yet their norm is 320.)
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function


def normalize_dims(dim, ndim: int, op: str) -> tuple[int, ...]:
    """`dim` (None, int or tuple) as a sorted tuple of non-negative axes, checked."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dims = (dim,)
    elif isinstance(dim, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in dim):
        dims = tuple(dim)
    else:
        raise TypeError(f"{op}: dim must be an int or a tuple of ints, not {dim!r}")
    out = []
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"{op}: dim {d} is out of range for a tensor of {ndim} dimensions")
        out.append(int(d) % max(ndim, 1) if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {dim} repeats an axis")
    return tuple(sorted(out)) if ndim else ()


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
    return g if keepdim else np.expand_dims(g, axes)


class Sum(Function):
    """z = sum_i x_i over dim       dx = g broadcast back over the summed axes"""

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        ctx.axes, ctx.keepdim, ctx.shape = reduce_dims(dim, x.ndim, "sum"), keepdim, x.shape
        if x.dtype.kind != "f":  # integers and bools: numpy's own rule (int64 sums)
            return x.sum(axis=ctx.axes, keepdims=keepdim)
        return narrowed(x.sum(axis=ctx.axes, keepdims=keepdim, dtype=accumulation_dtype(x.dtype)), x.dtype)

    @staticmethod
    def backward(ctx, g):
        return np.broadcast_to(_keep(g, ctx.axes, ctx.keepdim), ctx.shape)


class Mean(Function):
    """z = sum_i x_i / n over dim       dx = g / n broadcast back (n = number averaged)"""

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        ctx.axes, ctx.keepdim, ctx.shape = reduce_dims(dim, x.ndim, "mean"), keepdim, x.shape
        ctx.n = int(np.prod([x.shape[a] for a in ctx.axes]))
        if ctx.n == 0:
            raise ValueError(f"mean: cannot average over an empty dimension of shape {x.shape}")
        return narrowed(widened(x).mean(axis=ctx.axes, keepdims=keepdim), x.dtype)

    @staticmethod
    def backward(ctx, g):
        return np.broadcast_to(_keep(g, ctx.axes, ctx.keepdim) / ctx.n, ctx.shape)


class Max(Function):
    """z = max_i x_i over dim       dx = g * [x_i == z] / (number of ties)

    Tied maxima share the gradient equally, as PyTorch's amax does. A slice holding NaN has
    z = NaN, and its NaN elements are the winners (x == z is False there): the gradient goes
    to them, as PyTorch's x.max() routes it, instead of NaN spreading over the whole slice.
    """

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False, op="max"):
        axes = reduce_dims(dim, x.ndim, op)
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"{op}: cannot reduce an empty dimension of shape {x.shape}")
        reduce = np.max if op == "max" else np.min
        z = reduce(x, axis=axes, keepdims=True)
        ctx.save_for_backward(x, z)
        ctx.axes, ctx.keepdim = axes, keepdim
        return z if keepdim else np.squeeze(z, axis=axes)

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        winners = x == z
        if x.dtype.kind in "fc" and np.isnan(z).any():
            winners |= np.isnan(x) & np.isnan(z)
        share = winners / winners.sum(axis=ctx.axes, keepdims=True)
        return _keep(g, ctx.axes, ctx.keepdim) * share.astype(g.dtype, copy=False)


class Min(Max):
    """z = min_i x_i over dim       dx = g * [x_i == z] / (number of ties)"""

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False):
        return Max.forward(ctx, x, dim=dim, keepdim=keepdim, op="min")


class Var(Function):
    """v = sum_i (x_i - mean)**2 / (n - correction)       dx = g * 2 (x - mean) / (n - correction)

    The mean's own dependence on x drops out because sum_i (x_i - mean) = 0. Computed on x / c
    (`_centered`): v = c^2 v', right wherever v itself fits the dtype, and exactly 0 for a
    constant slice.
    """

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
            dx = _keep(widened(g), ctx.axes, ctx.keepdim) * d * (2 / d.dtype.type(ctx.denom)) * c
        return narrowed(dx, ctx.dtype)


class Std(Function):
    """s = sqrt(var(x))       dx = g * (x - mean) / ((n - correction) s),   and dx = 0 where s = 0

    By the chain rule through sqrt, a constant slice (s = 0) would get 0 / 0 = nan although
    its forward is finite; PyTorch defines the gradient there as 0, and so does minigrad, so
    that `x / (x.std() + eps)` trains on constant rows. (`x.var().sqrt()` is two ops and
    keeps sqrt's infinite slope at 0, as in PyTorch.) Computed on x / c (`_centered`):
    s = c s', and dx = g d' / ((n - correction) s') needs no c at all.
    """

    @staticmethod
    def forward(ctx, x, *, dim=None, keepdim=False, correction=1):
        axes = reduce_dims(dim, x.ndim, "std")
        d, c, denom = _centered(x, axes, correction)
        with np.errstate(divide="ignore", invalid="ignore"):  # n <= correction gives nan/inf
            s = np.sqrt((d * d).sum(axis=axes, keepdims=True) / d.dtype.type(denom))  # s / c
        ctx.save_for_backward(d, s)
        ctx.axes, ctx.keepdim, ctx.denom, ctx.dtype = axes, keepdim, denom, x.dtype
        with np.errstate(over="ignore"):
            out = s * c
        return narrowed(out if keepdim else np.squeeze(out, axis=axes), x.dtype)

    @staticmethod
    def backward(ctx, g):
        d, s = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = _keep(widened(g), ctx.axes, ctx.keepdim) / (s * d.dtype.type(ctx.denom))
        return narrowed(np.where(s == 0, np.zeros((), dtype=scale.dtype), scale) * d, ctx.dtype)


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
        return xs - mean, c, max(n - correction, 0)


class LogSumExp(Function):
    """z = log sum_i exp(x_i) = m + log s,  s = sum_i exp(x_i - m), m = max x
    dx = g * exp(x - z) = g * exp(x - m) / s   (the softmax)

    Subtracting the max keeps exp from overflowing; a row of -inf gives -inf and, by
    definition, no gradient (zeros). NaN and +inf inputs give NaN gradients, as in PyTorch,
    so that `detect_anomaly` sees them. Backward uses the shifted exponentials, not
    exp(x - z): for large x, z rounds and x - z loses digits.
    """

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
            p = e / np.where(s == 0, 1, s)  # a row of -inf has s = 0 and no gradient
        return narrowed(_keep(g, ctx.axes, ctx.keepdim) * p, ctx.dtype)


def _finite_max(x: np.ndarray, axes) -> np.ndarray:
    """max over axes (keepdims), with 0 where the max is infinite, so that x - m is safe."""
    if x.size == 0:
        return np.zeros([1 if a in axes else s for a, s in enumerate(x.shape)], x.dtype)
    m = np.max(x, axis=axes, keepdims=True)
    return np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)


class Softmax(Function):
    """z_i = exp(x_i) / sum_j exp(x_j) along dim      dx = z * (g - sum_j g_j z_j)

    Stable for huge logits (subtracts the row max). A row that is all -inf (every entry
    masked) gives zeros rather than NaN, and no gradient.
    """

    @staticmethod
    def forward(ctx, x, *, dim=-1):
        axis = normalize_dims(dim, x.ndim, "softmax")
        ctx.dtype, x = x.dtype, widened(x)
        e = np.exp(x - _finite_max(x, axis))
        s = e.sum(axis=axis, keepdims=True)
        z = e / np.where(s == 0, 1, s)
        ctx.save_for_backward(z)
        ctx.axis = axis
        return narrowed(z, ctx.dtype)

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        gz = g * z
        return narrowed(gz - z * gz.sum(axis=ctx.axis, keepdims=True), ctx.dtype)


class LogSoftmax(Function):
    """y_i = x_i - logsumexp(x) along dim      dx = g - exp(y) * sum_j g_j"""

    @staticmethod
    def forward(ctx, x, *, dim=-1):
        axis = normalize_dims(dim, x.ndim, "log_softmax")
        ctx.dtype, x = x.dtype, widened(x)
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
