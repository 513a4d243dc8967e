"""The median of all elements and the vector norms (`linalg.vector_norm`).

The median along a dim needs no op of its own: its indices come from a stable sort (numpy,
not differentiable) and its values are a gather by them (`GatherSorted`, ops/ordering.py).
Both ops here follow PyTorch's backward at the edges: ties share the gradient evenly, and
the places where the calculus has no answer (a norm of zeros) get a gradient of 0.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from .reduce import narrowed, reduce_dims, scale_of, widened


def _fraction(mask: np.ndarray, axes: tuple[int, ...] | None) -> np.ndarray:
    """mask / (its count over axes, None: all): the even share of each tied element."""
    return mask / np.maximum(mask.sum(axis=axes, keepdims=True), 1)


class Median(Function):
    """z = the lower median of all n elements of x: the ((n - 1) // 2)-th smallest (NaN if x
    holds a NaN, or is empty)

        dx = g / m at each of the m elements equal to z (the NaNs when z is NaN), 0 elsewhere

    Ties share the gradient evenly, as in PyTorch (torch.median() without a dim).
    """

    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        if flat.size == 0:
            if x.dtype.kind not in "fc":
                raise RuntimeError(f"median: an empty {x.dtype} tensor of shape {x.shape} has no "
                                   "median (an empty float tensor gives NaN, as in PyTorch)")
            z = np.asarray(np.nan, dtype=x.dtype)
        elif x.dtype.kind == "f" and np.isnan(flat).any():
            z = np.asarray(np.nan, dtype=x.dtype)
        else:
            z = np.asarray(np.partition(flat, (flat.size - 1) // 2)[(flat.size - 1) // 2])
        ctx.save_for_backward(x, z)
        return z

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        mask = (x == z) | (np.isnan(x) & np.isnan(z))
        return (g * _fraction(mask, None)).astype(g.dtype, copy=False)


def check_norm_input(x: np.ndarray, ord: float, axes: tuple[int, ...]) -> None:
    """PyTorch's refusals: integer inputs, and an inf or negative norm over an empty axis."""
    if x.dtype.kind != "f":
        raise RuntimeError(f"vector_norm: expected a floating-point tensor, got {x.dtype} (shape "
                           f"{x.shape}); convert it first with x.float()")
    if any(x.shape[a] == 0 for a in axes) and (ord < 0 or ord == np.inf):
        raise RuntimeError(f"vector_norm: cannot compute the {ord} norm over an empty dimension "
                           f"of a tensor of shape {x.shape}: the operation has no identity")


def _sign(x: np.ndarray) -> np.ndarray:
    """sign(x), and 0 for NaN, as PyTorch's sgn."""
    return np.where(np.isnan(x), 0, np.sign(x))


class VectorNorm(Function):
    """z = (sum_i |x_i|^p)^(1/p) over dim, for p = ord; and the limits of that:

        p = 0      z = the number of nonzero x_i       no gradient (as in PyTorch)
        p = 1      z = sum |x_i|                       dx = g * sign(x)
        p = 2      z = sqrt(sum x_i^2)                 dx = g * x / z   (0 where z = 0)
        p = inf    z = max |x_i|                       dx = g * sign(x) / m at the m elements
        p = -inf   z = min |x_i|                            with |x_i| = z (or NaN), 0 elsewhere
        other p    as above                            dx = g * sign(x) |x|^(p-1) / z^(p-1)
                                                            (0 where x = 0 for p < 1, and where
                                                            z = 0 for p > 1)

    A p-norm for p other than 0, 1 and +-inf is computed on x / c, c = `scale_of(x)` (a power
    of two near max |x|, or for p < 0 near min |x|, whose term then dominates): z = c z', so
    no power can overflow or underflow where z itself fits the dtype (PyTorch's 2-norm of
    float32 [1e20, 1e20] is inf; here 1.4e20). Its backward uses the ratio |x| / z, at most 1
    for p >= 1. float16 is summed in float32 (`accumulation_dtype`). NaN propagates for every p.
    """

    @staticmethod
    def forward(ctx, x, *, ord=2, dim=None, keepdim=False):
        axes = reduce_dims(dim, x.ndim, "vector_norm")
        check_norm_input(x, ord, axes)
        ctx.axes, ctx.keepdim, ctx.ord, ctx.dtype = axes, keepdim, ord, x.dtype
        x = widened(x)
        a = np.abs(x)
        with np.errstate(divide="ignore", over="ignore"):  # 0 ** negative p is inf, as it should be
            if ord == 0:
                z = (x != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
            elif ord == 1:
                z = a.sum(axis=axes, keepdims=True)
            elif ord == np.inf:
                z = a.max(axis=axes, keepdims=True)
            elif ord == -np.inf:
                z = a.min(axis=axes, keepdims=True)
            else:
                c = scale_of(a, axes) if ord > 0 else _min_scale(a, axes)
                scaled = a / c
                if ord == 2:
                    z = np.sqrt((scaled * scaled).sum(axis=axes, keepdims=True)) * c
                else:
                    z = (scaled ** ord).sum(axis=axes, keepdims=True) ** (1.0 / ord) * c
        ctx.save_for_backward(x, z)  # z keeps the reduced axes
        return narrowed(z if keepdim else np.squeeze(z, axis=axes), ctx.dtype)

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        p = ctx.ord
        if p == 0:
            return None
        g = widened(g)
        if not ctx.keepdim and ctx.axes:
            g = np.expand_dims(g, ctx.axes)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == 1:
                dx = g * _sign(x)
            elif p == 2:
                dx = g * np.where(z == 0, 0, x / np.where(z == 0, 1, z))
            elif np.isinf(p):
                a = np.abs(x)
                mask = (a == z) | np.isnan(a)
                dx = g * _sign(x) * _fraction(mask, ctx.axes)
            else:  # g sign(x) (|x| / z)^(p - 1): 0 where x = 0 (p < 1) and where z = 0 (p > 1;
                ratio = np.abs(x) / z  # for p < 1, a z of 0 gives inf ** (p - 1) = 0, right)
                zero = (x == 0) if p < 1 else (z == 0)
                dx = np.where(zero, 0, _sign(x) * ratio ** (p - 1)) * g
        return narrowed(dx, ctx.dtype)


def _min_scale(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """`scale_of` for a p-norm with p < 0, where the smallest |x| dominates: a power of two
    near min |x| over axes (1 where that is 0, the norm then being 0)."""
    low = np.min(np.where(np.isnan(a), np.inf, a), axis=axes, keepdims=True, initial=np.inf)
    return scale_of(np.where(np.isfinite(low), low, 0).astype(a.dtype, copy=False), ())
