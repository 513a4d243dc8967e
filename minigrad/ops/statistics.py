"""The median of all elements and the vector norms (`linalg.vector_norm`).

The median along a dim needs no op of its own: its indices come from a stable sort (numpy,
not differentiable) and its values are a gather by them (`GatherSorted`, ops/ordering.py).
Both ops here follow PyTorch's backward at the edges: ties share the gradient evenly, and
the places where the calculus has no answer (a norm of zeros) get a gradient of 0.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from .reduce import reduce_dims


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

    As PyTorch's, the 2-norm squares without rescaling, so it overflows to inf once the sum of
    squares does (|x| past ~1e19 in float32); NaN propagates for every p.
    """

    @staticmethod
    def forward(ctx, x, *, ord=2, dim=None, keepdim=False):
        axes = reduce_dims(dim, x.ndim, "vector_norm")
        check_norm_input(x, ord, axes)
        ctx.axes, ctx.keepdim, ctx.ord = axes, keepdim, ord
        a = np.abs(x)
        with np.errstate(divide="ignore", over="ignore"):  # 0 ** negative p is inf, as it should be
            if ord == 0:
                z = (x != 0).sum(axis=axes, keepdims=keepdim).astype(x.dtype)
            elif ord == 1:
                z = a.sum(axis=axes, keepdims=keepdim)
            elif ord == 2:
                z = np.sqrt((x * x).sum(axis=axes, keepdims=keepdim))
            elif ord == np.inf:
                z = a.max(axis=axes, keepdims=keepdim)
            elif ord == -np.inf:
                z = a.min(axis=axes, keepdims=keepdim)
            else:
                z = ((a ** ord).sum(axis=axes, keepdims=keepdim)) ** (1.0 / ord)
        z = np.asarray(z, dtype=x.dtype)
        ctx.save_for_backward(x, z)
        return z

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        p = ctx.ord
        if p == 0:
            return None
        if not ctx.keepdim and ctx.axes:
            g, z = np.expand_dims(g, ctx.axes), np.expand_dims(z, ctx.axes)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == 1:
                return g * _sign(x)
            if p == 2:
                return g * np.where(z == 0, 0, x / np.where(z == 0, 1, z))
            a = np.abs(x)
            if np.isinf(p):
                mask = (a == z) | np.isnan(a)
                return g * _sign(x) * _fraction(mask, ctx.axes)
            if p < 1:
                scaled = np.where(x == 0, 0, _sign(x) * a ** (p - 1))
                return scaled * g * z ** (1 - p)
            scale = np.where(z == 0, 0, g / np.where(z == 0, 1, z ** (p - 1)))
            return _sign(x) * a ** (p - 1) * scale
