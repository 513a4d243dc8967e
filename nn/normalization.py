"""Normalization over features, as torch.nn's normalization.py: group norm (Wu and He, 2018),
layer norm, RMS norm and local response norm, each its functional form and its module
(GroupNorm, LayerNorm, RMSNorm, LocalResponseNorm).

group_norm splits the channels into groups and normalizes each sample's group over its channels
and positions together: a composition of Tensor ops (mean and biased variance over the group),
so its gradient is the chain rule through them. layer_norm is one fused kernel, LayerNormOp
(forward and backward side by side, its rows a block at a time: nn/_pieces.py). rms_norm is a
composition again: a row's mean square, its reciprocal square root, the weight; so is
local_response_norm (a sum of squares over a window of neighbouring channels).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.errors import ShapeError
from minigrad.ops.reduce import accumulation_dtype, narrowed, widened
from minigrad.runtime import compiled

from ._checks import _need_nc_input, _need_tensor, _where
from ._pieces import col_sums, exact_row_means, row_blocks, row_means
from .module import Module, Parameter
from .padding import pad


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c], with the mean and the biased
    variance over each sample's group of C / num_groups channels and all its positions.

    Each group is first shifted by its first value x0 (a constant, detached): mean, var and
    x - mean are unchanged, and so is the gradient (y does not depend on a shift), but a
    constant group's x - x0 is exactly 0, so its y is exactly the bias (a rounded mean of n
    equal values need not be the value). float16 is computed in float32 and rounded once
    (`accumulation_dtype`), as in PyTorch.

    Shape:
        input: (N, C, *); weight, bias: (C,); output: like input.
    """
    _need_nc_input("group_norm", input)
    N, C = input.shape[:2]
    if not isinstance(num_groups, int) or num_groups <= 0 or C % num_groups:
        raise ShapeError(f"group_norm: the number of channels must be divisible by num_groups, but got "
                         f"an input of shape {input.shape} and num_groups={num_groups}{_where()}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            _need_tensor("group_norm", f"the {name}", p)
            if p.shape != (C,):
                raise ShapeError(f"group_norm: the {name} must have shape ({C},), the number of channels, "
                                 f"but got a {name} of shape {p.shape} and an input of shape "
                                 f"{input.shape}{_where()}")
    per_group = C // num_groups * math.prod(input.shape[2:])
    if N * per_group == 1:  # torch refuses this too: every group of the batch is one value
        raise ShapeError(f"group_norm: expected more than 1 value per group in the batch, got an input of "
                         f"shape {input.shape} and num_groups={num_groups}{_where()}")
    out_dtype = np.result_type(input.dtype, *(p.dtype for p in (weight, bias) if p is not None))
    acc = accumulation_dtype(input.dtype)
    y = input if acc == input.dtype else input.to(acc)
    if per_group:  # an empty group (no positions) has nothing to normalize
        x = y.reshape(N, num_groups, per_group)
        x = x - x.detach()[..., :1]  # shift by each group's first value x0
        mean = x.mean(dim=-1, keepdim=True)  # (N, G, 1)
        var = x.var(dim=-1, keepdim=True, correction=0)  # (N, G, 1)
        y = ((x - mean) / (var + eps).sqrt()).reshape(input.shape)  # (N, C, *)
    per_channel = (C,) + (1,) * (input.ndim - 2)  # weight[c] broadcast over the positions
    if weight is not None:
        y = y * weight.reshape(per_channel)
    if bias is not None:
        y = y + bias.reshape(per_channel)
    return y if y.dtype == out_dtype else y.to(out_dtype)


class GroupNorm(Module):
    """Group normalization over num_groups groups of channels, then a per-channel scale and
    shift (see `group_norm`).

    Args:
        num_groups: number of groups; it must divide num_channels.
        num_channels: C, the size of the input's second dimension.
        eps: added to the variance, so that constant groups give 0 instead of NaN.
        affine: learn `weight` (ones at first) and `bias` (zeros at first).
        bias: with affine, whether to learn the bias too.

    Shape:
        - Input: (N, C, *)
        - Output: the same shape as the input

    Attributes:
        weight, bias: (num_channels,), or None.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *,
                 bias: bool = True):
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups}), a positive number")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(np.ones(num_channels, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_channels, dtype=np.float32)) if affine and bias else None

    def forward(self, input: Tensor) -> Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LayerNormOp(Function):
    """Normalize over the last `ndim` axes, then scale and shift.

    mu, var = mean and (biased) variance over those axes;  sigma = sqrt(var + eps)
    x_hat = (x - mu) / sigma;   y = x_hat * w + b
    dx = (1 / sigma) * (gx_hat - mean(gx_hat) - x_hat * mean(gx_hat * x_hat)),  gx_hat = g * w
    dw = sum over the leading axes of g * x_hat;   db = sum over the leading axes of g

    Inputs are x, then weight and bias when given (pass a weight to pass a bias). A constant
    row has x - mu = 0 exactly (`exact_row_means`), so x_hat = 0, y = b, dw = 0 and, for a
    constant g * w, dx = 0 exactly; sigma = sqrt(eps): finite, never NaN. float16 is computed
    in float32 and rounded once (`accumulation_dtype`), as in PyTorch. Large inputs are done a
    block of rows at a time, each block's passes in cache (see PIECE).
    """

    @staticmethod
    def reference(ctx, x, weight=None, bias=None):
        """The composition this kernel computes, for backward(create_graph=True): the mean and
        the biased variance over the last `ndim` axes, then the affine map."""
        dims = tuple(range(-ctx.ndim, 0))
        d = x - x.mean(dims, keepdim=True)
        y = d / ((d * d).mean(dims, keepdim=True) + ctx.eps).sqrt()
        if weight is not None:
            y = y * weight
        return y if bias is None else y + bias

    @staticmethod
    def forward(ctx, x, weight=None, bias=None, *, ndim=1, eps=1e-5):
        # Work on a (rows, features) view: every reduction is then along one contiguous axis.
        features = math.prod(x.shape[x.ndim - ndim:])
        x2 = widened(x.reshape(-1, features))
        out_dtype = np.result_type(x, *(p for p in (weight, bias) if p is not None))
        x_hat, rstd = np.empty(x2.shape, x2.dtype), np.empty((x2.shape[0], 1), x2.dtype)
        y = np.empty(x2.shape, accumulation_dtype(out_dtype))
        w = None if weight is None else widened(weight.reshape(-1))
        b = None if bias is None else widened(bias.reshape(-1))
        if compiled.takes(x2, y):
            _normalize_compiled(x2, w, b, eps, y, x_hat, rstd)
        else:
            _normalize_numpy(x2, w, b, eps, y, x_hat, rstd)
        ctx.save_for_backward(x_hat, rstd, weight)
        ctx.shape, ctx.dtype, ctx.ndim, ctx.eps = x.shape, x.dtype, ndim, eps
        return narrowed(y, out_dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        x_hat, rstd, weight = ctx.saved
        g2 = widened(g.reshape(x_hat.shape))  # (rows, features)
        needs = ctx.needs_input_grad
        w = None if weight is None else widened(weight.reshape(-1))
        want_w, want_b = weight is not None and needs[1], len(needs) > 2 and needs[2]
        if needs[0] and compiled.takes(g2, x_hat):
            dx, dw, db = _normalize_grad_compiled(g2, w, x_hat, rstd, want_w or want_b)
        else:
            dx = dw = db = None
            if want_w:
                dw = np.einsum("ij,ij->j", g2, x_hat)
            if want_b:
                db = col_sums(g2)
            if needs[0]:
                dx = np.empty(x_hat.shape, np.result_type(g2, x_hat))
                for r in row_blocks(x_hat):
                    _normalize_rows_grad(g2[r], w, x_hat[r], rstd[r], dx[r])
        if dx is not None:
            dx = narrowed(dx, np.result_type(g, ctx.dtype)).reshape(ctx.shape)
        dw = narrowed(dw, weight.dtype).reshape(weight.shape) if want_w else None
        db = narrowed(db, g.dtype).reshape(weight.shape) if want_b else None
        return (dx, dw, db)[: len(needs)]


def _normalize_numpy(x2, w, b, eps, y, x_hat, rstd) -> None:
    """LayerNormOp's forward on (rows, features) in numpy, a block of rows at a time."""
    for r in row_blocks(x2):
        into = y[r] if y.dtype == x2.dtype else None  # y itself, when it has the working dtype
        _normalize_rows(x2[r], x2.dtype.type(eps), x_hat[r], rstd[r], into)
        if w is None:
            y[r] = x_hat[r]
        else:
            np.multiply(x_hat[r], w, out=y[r])
        if b is not None:
            y[r] += b


def _normalize_rows(x: np.ndarray, eps, x_hat: np.ndarray, rstd: np.ndarray,
                    scratch: np.ndarray | None) -> None:
    """x_hat = (x - mu) / sqrt(var + eps) and rstd = 1 / sqrt(var + eps) of rows x, in place;
    scratch, when given, is an array of x's shape and dtype to square into (the caller's output
    block: no allocation).

    (x - mu)^2 overflows for |x| past about sqrt(max) (1.8e19 in float32): var would be inf and
    x_hat 0. Checked on the (rows, 1) variances, not assumed: such rows are redone scaled
    (`_normalize_rows_scaled`), which costs ordinary rows nothing."""
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught just below
        np.subtract(x, exact_row_means(x), out=x_hat)  # x - mu
        var = row_means(np.square(x_hat, out=scratch))
    big = ~np.isfinite(var[:, 0])
    var += eps
    np.sqrt(var, out=rstd)
    np.divide(1, rstd, out=rstd)
    x_hat *= rstd
    if big.any():
        x_hat[big], rstd[big] = _normalize_rows_scaled(x[big], eps)


def _normalize_rows_scaled(x: np.ndarray, eps) -> tuple[np.ndarray, np.ndarray]:
    """(x_hat, rstd) of rows x, computed on x / c with c = max |x| per row, so no square can
    overflow: with x = c x', var = c^2 var', and
        x_hat = (x' - mu') / sqrt(var' + eps / c^2),   rstd = 1 / (c sqrt(var' + eps / c^2)).
    eps / c^2 is taken as (sqrt(eps) / c)^2 (c^2 itself may overflow). Inf or NaN in a row stay
    NaN, as in the plain path."""
    c = np.max(np.abs(x), axis=1, keepdims=True)
    c[~np.isfinite(c) | (c == 0)] = 1
    xs = x / c
    d = xs - exact_row_means(xs)  # |d| <= 2
    denom = row_means(d * d) + np.square(np.sqrt(eps) / c)
    flat = denom == 0  # a constant row so large that eps / c^2 underflowed: x_hat = 0
    denom[flat] = 1
    rstd_s = 1 / np.sqrt(denom)  # c * rstd
    rstd = rstd_s / c
    rstd[flat] = 1 / np.sqrt(eps)
    return d * rstd_s, rstd


def _normalize_rows_grad(g: np.ndarray, w: np.ndarray | None, x_hat: np.ndarray, rstd: np.ndarray,
                         dx: np.ndarray) -> None:
    """dx = rstd * (gx - mean(gx) - x_hat * mean(gx * x_hat)), gx = g * w, in place; mean(gx)
    exact for a constant gx (`exact_row_means`), so a constant row (x_hat = 0) with a
    constant gx gets exactly 0."""
    gx = g if w is None else g * w
    mean_gx = exact_row_means(gx)
    np.multiply(gx, x_hat, out=dx)
    mean_gx_xhat = row_means(dx)
    np.multiply(x_hat, mean_gx_xhat, out=dx)
    np.subtract(gx, dx, out=dx)
    dx -= mean_gx
    dx *= rstd


# ---------------------------------------------------------------- the compiled loop form
# The numpy functions above are the reference; these loops compute the same in one pass over a
# row for the statistics and one for the output (five and seven passes in numpy), when numba is
# installed (minigrad.runtime.compiled). A row's sums are taken in float64 from its first value
# (x - x_0): a constant row's mean is then exactly its value, as `exact_row_means` ensures above.


@compiled.kernel(fastmath=compiled.REORDER)
def _normalize_loop(x, w, b, eps, y, x_hat, rstd, start, stop):
    """Rows start..stop-1: mu, rstd = 1 / sqrt(var + eps), x_hat = (x - mu) * rstd, y = x_hat w + b."""
    x, y, x_hat, rstd = x[start:stop], y[start:stop], x_hat[start:stop], rstd[start:stop]
    n = x.shape[1]
    m = max(n, 1)
    for i in range(x.shape[0]):
        x0 = x[i, 0] if n else 0.0
        s = 0.0
        for j in range(n):
            s += x[i, j] - x0
        mu = s / m + x0  # (x0 + mean(x - x0): exact for a constant row)
        q = 0.0
        for j in range(n):
            d = x[i, j] - mu
            q += d * d
        r = 1.0 / np.sqrt(q / m + eps)
        rstd[i, 0] = r
        for j in range(n):
            h = (x[i, j] - mu) * r
            x_hat[i, j] = h
            y[i, j] = h * w[j] + b[j]


def _normalize_compiled(x2, w, b, eps, y, x_hat, rstd) -> None:
    """LayerNormOp's forward by the loop form; rows whose squares overflowed (var = inf: rstd 0,
    only in float64) are redone by the scaled numpy path, as there."""
    n = x2.shape[1]
    w = np.ones(n, x2.dtype) if w is None else np.ascontiguousarray(w, x2.dtype)
    b = np.zeros(n, x2.dtype) if b is None else np.ascontiguousarray(b, x2.dtype)
    out = y if y.dtype == x2.dtype else np.empty_like(x2)
    compiled.over_rows(_normalize_loop, x2.shape[0], n, x2, w, b, float(eps), out, x_hat, rstd)
    big = np.flatnonzero(rstd[:, 0] == 0)
    if big.size:
        x_hat[big], rstd[big] = _normalize_rows_scaled(x2[big], x2.dtype.type(eps))
        out[big] = x_hat[big] * w + b
    if out is not y:
        y[...] = out


@compiled.kernel(fastmath=compiled.REORDER)
def _normalize_grad_loop(g, w, x_hat, rstd, dx, dw, db, per, start, stop):
    """Rows start..stop-1: dx = rstd (gx - mean(gx) - x_hat mean(gx x_hat)), gx = g w; and the
    sums of g x_hat and of g into row `i // per` of dw and db (one row per piece)."""
    g, x_hat, rstd, dx = g[start:stop], x_hat[start:stop], rstd[start:stop], dx[start:stop]
    n = g.shape[1]
    m = max(n, 1)
    for i in range(g.shape[0]):
        p = (start + i) // per
        gx0 = g[i, 0] * w[0] if n else 0.0
        a = 0.0
        c = 0.0
        for j in range(n):
            gx = g[i, j] * w[j]
            a += gx - gx0
            c += gx * x_hat[i, j]
            dw[p, j] += g[i, j] * x_hat[i, j]
            db[p, j] += g[i, j]
        a = a / m + gx0  # exact for a constant gx, as `exact_row_means`
        c /= m
        r = rstd[i, 0]
        for j in range(n):
            dx[i, j] = r * ((g[i, j] * w[j] - a) - x_hat[i, j] * c)


def _normalize_grad_compiled(g2, w, x_hat, rstd, sums: bool):
    """(dx, dw, db) of LayerNormOp by the loop form; dw and db summed in float64 piece by piece."""
    rows, n = x_hat.shape
    w = np.ones(n, x_hat.dtype) if w is None else np.ascontiguousarray(w, x_hat.dtype)
    dx = np.empty(x_hat.shape, np.result_type(g2, x_hat))
    count = compiled.pieces(rows, n) if sums else 1
    dw, db = np.zeros((count, n)), np.zeros((count, n))
    per = compiled.rows_per_piece(n) if sums else max(rows, 1)
    compiled.over_rows(_normalize_grad_loop, rows, n, g2, w, x_hat, rstd, dx, dw, db, per)
    return dx, dw.sum(axis=0), db.sum(axis=0)


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last dimensions `normalized_shape` (see LayerNormOp).

    Shape:
        input: (*, *normalized_shape); weight, bias: normalized_shape; output: like input.
    """
    _need_tensor("layer_norm", "the input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if input.shape[input.ndim - len(shape):] != shape or len(shape) > input.ndim:
        raise ShapeError(f"layer_norm: input of shape {input.shape} does not end in normalized_shape {shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        _need_tensor("layer_norm", f"the {name}", p)
        if p.shape != shape:
            raise ShapeError(f"layer_norm: {name} has shape {p.shape} but normalized_shape {shape} "
                             f"needs {shape}{_where()}")
    params = []
    if weight is not None or bias is not None:
        params.append(weight if weight is not None else Tensor(np.ones(shape, dtype=input.dtype)))
    if bias is not None:
        params.append(bias)
    return LayerNormOp.apply(input, *params, ndim=len(shape), eps=eps)


class LayerNorm(Module):
    """Layer normalization (Ba et al., 2016) over the last dimensions, then scale and shift:
    y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance.

    Args:
        normalized_shape: the trailing shape to normalize over (an int for the last axis).
        eps: added to the variance, so that constant rows give 0 instead of NaN.
        elementwise_affine: learn `weight` (ones at first) and `bias` (zeros at first).
        bias: with elementwise_affine, whether to learn the bias too.

    Shape:
        - Input: (*, *normalized_shape)
        - Output: the same shape as the input

    Attributes:
        weight, bias: normalized_shape, or None.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if elementwise_affine and bias else None

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """y = x / sqrt(mean(x^2) + eps) * weight, the mean over the last dimensions
    `normalized_shape` (Zhang and Sennrich, 2019): layer norm without the mean's shift or a bias.

    eps=None is torch's default: the machine epsilon of the dtype the norm is computed in,
    `torch.finfo(input.dtype).eps`, except for float16, which is computed in float32 and
    rounded once (`accumulation_dtype`), as in torch, with float32's eps (torch 2.13 does so:
    float16's eps would turn [1e-4, -2e-4, 3e-4] into [0.003, ...], not [0.246, ...]).

    A composition of Tensor ops, its gradient the chain rule through them. Each row is first
    divided by a power of two c >= 1 (detached), the one that brings max |x| into [1, 2):
        y = (x / c) / sqrt(mean((x / c)^2) + eps / c^2)
    is the same function of x for any c, and for a row of ordinary values the same numbers
    (scaling by a power of two is exact), but x^2 of |x| past 1.8e19 (float32) no longer
    overflows to inf, which would make y 0 (as torch's is). The result has the input's dtype.

    Shape:
        input: (*, *normalized_shape); weight: normalized_shape; output: like input.
    """
    _need_tensor("rms_norm", "the input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise ShapeError("rms_norm: normalized_shape must have at least one dimension, got ()")
    if len(shape) > input.ndim or input.shape[input.ndim - len(shape):] != shape:
        raise ShapeError(f"rms_norm: input of shape {input.shape} does not end in normalized_shape {shape}"
                         f"{_where()}")
    if weight is not None:
        _need_tensor("rms_norm", "the weight", weight)
        if weight.shape != shape:
            raise ShapeError(f"rms_norm: the weight has shape {weight.shape} but normalized_shape is "
                             f"{shape}{_where()}")
    if input.dtype.kind != "f":
        raise TypeError(f"rms_norm: the input has dtype {input.dtype}; convert it with x.float() or "
                        "x.double()")
    acc = accumulation_dtype(input.dtype)
    x = input if acc == input.dtype else input.to(acc)
    eps = float(np.finfo(acc).eps) if eps is None else float(eps)
    dims = tuple(range(-len(shape), 0))
    if x.numel():
        biggest = np.max(np.abs(x._data), axis=dims, keepdims=True)
        exponent = np.frexp(biggest)[1]  # biggest = f 2^e, f in [0.5, 1); inf, NaN and 0 give e = 0
        c = np.ldexp(np.ones((), acc), np.maximum(exponent - 1, 0)).astype(acc)
        x = x / c
        eps_c = eps / c / c  # exact, or underflowing where mean((x / c)^2) >= 1 / n dwarfs it
        y = x * ((x * x).mean(dims, keepdim=True) + eps_c).rsqrt()
    else:
        y = x  # nothing to normalize: the empty result, as torch's
    if weight is not None:
        y = y * weight
    return y if y.dtype == input.dtype else y.to(input.dtype)


class RMSNorm(Module):
    """Root mean square layer normalization (Zhang and Sennrich, 2019) over the last
    dimensions: y = x / sqrt(mean(x^2) + eps) * weight (see `rms_norm`).

    Args:
        normalized_shape: the trailing shape to normalize over (an int for the last axis).
        eps: added to the mean square; None takes the machine epsilon of the input's dtype
            (float32's for float16), as torch.
        elementwise_affine: learn `weight` (ones at first). There is no bias, as in torch.

    Shape:
        - Input: (*, *normalized_shape)
        - Output: the same shape as the input

    Attributes:
        weight: normalized_shape, or None.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if elementwise_affine else None

    def reset_parameters(self) -> None:
        """The weight back to ones, as torch."""
        if self.weight is not None:
            self.weight.data = np.ones(self.normalized_shape, dtype=self.weight.dtype)

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Local response normalization across channels (Krizhevsky et al., 2012), as torch's:
        y_c = x_c / (k + alpha / size * sum_{c' = c - size//2}^{c + (size-1)//2} x_{c'}^2) ^ beta
    the sum over the channels of the window that exist (the others count as 0, but the divisor
    stays `size`, as torch's average pooling of the zero-padded squares).

    A composition of Tensor ops (the window's sum is `size` shifted slices of the padded
    squares), its gradient the chain rule through them.

    Shape: input (N, C, *) with at least 3 dimensions; output like input.
    """
    _need_nc_input("local_response_norm", input)
    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expected an input of 3 or more dimensions (N, C, *), "
                         f"got shape {input.shape}{_where()}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size!r}")
    channels = input.shape[1]
    if input.numel() == 0:
        return input * 1.0
    squares = (input * input).movedim(1, -1)
    before, after = size // 2, (size - 1) // 2
    padded = pad(squares, (before, after))
    window = padded[..., 0:channels]
    for i in range(1, size):
        window = window + padded[..., i:i + channels]
    div = (window.movedim(-1, 1) * (alpha / size) + k) ** beta
    return input / div


class LocalResponseNorm(Module):
    """Local response normalization across channels (see `local_response_norm`): each channel
    divided by (k + alpha / size * the sum of squares of `size` neighbouring channels) ^ beta.

    Shape:
        - Input: (N, C, *), at least 3 dimensions
        - Output: the same shape as the input
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
