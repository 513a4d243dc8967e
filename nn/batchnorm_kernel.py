"""The batch-norm kernel: normalization with the batch's statistics, one `Function` with a
hand-written backward, and the same math composed from Tensor ops (the readable twin the
tests check the kernel against). `g` is always the upstream gradient.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.ops.reduce import accumulation_dtype, narrowed, widened


def _channels(a: np.ndarray) -> np.ndarray:
    """(N, C, *) as an (N, C, M) view, M the number of positions (1 for an (N, C) input)."""
    return a.reshape(a.shape[0], a.shape[1], math.prod(a.shape[2:]))


def _channel_sums(a3: np.ndarray) -> np.ndarray:
    """a3 (N, C, M) summed over N and M, as (C,): the sum over M is a matrix-vector product
    (BLAS reads a3 once, about 3x faster than numpy's reduction over axes 0 and 2)."""
    N, C, M = a3.shape
    return (a3.reshape(N * C, M) @ np.ones(M, dtype=a3.dtype)).reshape(N, C).sum(axis=0)


def _channel_means(a3: np.ndarray) -> np.ndarray:
    """The mean of each channel of a3 (N, C, M), as (C,), exactly a0 for a channel of n values
    a0: the BLAS sum rounds (a constant channel's x - mean would be an ulp, and x_hat then
    ulp / sqrt(eps)), so the channels that may be constant, whose first and last values are
    equal, are averaged again as a0 + mean(a - a0), a0 their first value (kernels.py does the
    same for layer norm's rows). Zeros for an empty batch."""
    n = a3.dtype.type(max(a3.shape[0] * a3.shape[2], 1))
    mean = _channel_sums(a3) / n
    if a3.size:
        flat = np.flatnonzero(a3[0, :, 0] == a3[-1, :, -1])
        if flat.size:
            a0 = a3[:1, flat, :1]
            mean[flat] = a0[0, :, 0] + _channel_sums(a3[:, flat] - a0) / n
    return mean


def _centered(x3: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, x - mean, biased var) of the channels of x3 (N, C, M); zeros for an empty batch.
    A square that overflows gives an infinite variance, as it is."""
    n = x3.dtype.type(max(x3.shape[0] * x3.shape[2], 1))
    with np.errstate(over="ignore", invalid="ignore"):
        mean = _channel_means(x3)  # (C,)
        d = x3 - mean[:, None]  # (N, C, M)
        return mean, d, np.einsum("ncm,ncm->c", d, d) / n


def batch_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of x (N, C, *) over every axis but 1, as (C,)
    arrays of x's dtype (zeros for an empty batch; float16 summed in float32)."""
    mean, _, var = _centered(widened(_channels(x)))
    return narrowed(mean, x.dtype), narrowed(var, x.dtype)


class BatchNorm(Function):
    """Normalize each channel of x (N, C, *) with the batch's statistics, then scale and shift.

    Over the n = N * (positions) values of channel c:
        mu, var = mean and biased variance;  rstd = 1 / sqrt(var + eps)
        x_hat = (x - mu) * rstd;   y = x_hat * w[c] + b[c]
    Backward, with g_hat = g * w[c] and the sums over the channel's n values:
        dx = (1 / n) * rstd * (n * g_hat - sum(g_hat) - x_hat * sum(g_hat * x_hat))
        dw = sum(g * x_hat);   db = sum(g)
    (x_hat depends on x directly and through mu and var: d mu / dx = 1 / n gives the
    -sum(g_hat) term, d var / dx = 2 (x - mu) / n the -x_hat * sum(g_hat x_hat) term.)
    Since sum(g_hat) = w * db and sum(g_hat x_hat) = w * dw, the sums for dx come for free.

    Inputs are x, then weight and bias when given (pass a weight to pass a bias). A constant
    channel has x - mu = 0 exactly (`_channel_means`), so x_hat = 0, y = b, dw = 0 (and dx = 0
    for a constant g), and rstd = 1 / sqrt(eps): finite, never NaN. A channel whose squares
    overflow (|x| past about 1e19 in float32) is redone scaled by its max |x|. float16 is
    computed in float32 and rounded once (`accumulation_dtype`), as in PyTorch.
    """

    @staticmethod
    def reference(ctx, x, weight=None, bias=None):
        """The composition this kernel computes, for backward(create_graph=True): as the kernel,
        in the accumulation dtype, the channels shifted by their mean and, where the squares
        overflowed, scaled by their max |x| (constants: x_hat is unchanged by either, so are
        its derivatives), then the mean and biased variance over every axis but 1, and the
        affine map."""
        dims = (0,) + tuple(range(2, x.ndim))
        per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        x3 = widened(_channels(x._data))
        mean, _, var = _centered(x3)
        scale = np.ones_like(var)
        big = ~np.isfinite(var)
        if big.any():
            big[big] = np.isfinite(x3[:, big]).all(axis=(0, 2))
            scale[big] = np.abs(x3[:, big]).max(axis=(0, 2))
        xs = _wide(x) - Tensor._make(mean.reshape(per_channel), None)
        if big.any():
            xs = xs / Tensor._make(scale.reshape(per_channel), None)
        eps = np.square(np.sqrt(x3.dtype.type(ctx.eps)) / scale)  # eps / scale^2
        if x3.shape[0] * x3.shape[2] == 0:
            y = xs  # an empty batch: nothing to normalize (and no gradient to give)
        else:
            d = xs - xs.mean(dims, keepdim=True)
            y = d / ((d * d).mean(dims, keepdim=True) + Tensor._make(eps.reshape(per_channel), None)).sqrt()
        if weight is not None:
            y = y * _wide(weight).reshape(per_channel)
        if bias is not None:
            y = y + _wide(bias).reshape(per_channel)
        out_dtype = np.result_type(x._data, *(p._data for p in (weight, bias) if p is not None))
        return y if y.dtype == out_dtype else y.to(out_dtype)

    @staticmethod
    def forward(ctx, x, weight=None, bias=None, *, eps=1e-5):
        out_dtype = np.result_type(x, *(p for p in (weight, bias) if p is not None))
        ctx.dtype, ctx.eps = x.dtype, eps
        x3 = widened(_channels(x))  # (N, C, M)
        weight = None if weight is None else widened(weight)
        bias = None if bias is None else widened(bias)
        _, x_hat, var = _centered(x3)  # x_hat holds x - mean until scaled in place
        rstd = 1 / np.sqrt(var + x3.dtype.type(eps))  # (C,)
        with np.errstate(invalid="ignore"):
            x_hat *= rstd[:, None]  # (N, C, M)
        big = ~np.isfinite(var)
        if big.any():  # redo the overflowed channels, unless they hold inf or NaN themselves
            big[big] = np.isfinite(x3[:, big]).all(axis=(0, 2))
            x_hat[:, big], rstd[big] = _normalize_scaled(x3[:, big], eps)
        y = x_hat if weight is None else x_hat * weight[:, None]
        if bias is not None:
            if weight is not None and y.dtype == np.result_type(y, bias):
                y += bias[:, None]  # y is a new array: add in place
            else:
                y = y + bias[:, None]
        ctx.save_for_backward(x_hat, rstd, weight)
        return narrowed(y, out_dtype).reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        x_hat, rstd, weight = ctx.saved
        out_dtype = np.result_type(g, ctx.dtype)
        g3 = widened(_channels(g))  # (N, C, M)
        n = x_hat.shape[0] * x_hat.shape[2]
        dw = np.einsum("ncm,ncm->c", g3, x_hat)  # sum(g * x_hat)
        mean_g = _channel_means(g3)  # exactly g0 for a constant g
        db = mean_g * g3.dtype.type(n)  # sum(g)
        needs = ctx.needs_input_grad
        dx = None
        if needs[0]:
            w = np.ones_like(rstd) if weight is None else weight
            k = w * rstd  # dx = k * (g - mean(g) - x_hat * dw / n), per channel
            dx = g3 * k[:, None]
            dx -= x_hat * (k * dw / n)[:, None]
            dx -= (k * mean_g)[:, None]
            dx = narrowed(dx, out_dtype).reshape(g.shape)
        dw, db = narrowed(dw, out_dtype), narrowed(db, out_dtype)
        grads = (dx, dw if len(needs) > 1 and needs[1] else None, db if len(needs) > 2 and needs[2] else None)
        return grads[: len(needs)]


def _wide(t: Tensor) -> Tensor:
    """Tensor t in its accumulation dtype (float32 for float16), as `widened` for arrays."""
    dtype = accumulation_dtype(t.dtype)
    return t if dtype == t.dtype else t.to(dtype)


def _normalize_scaled(x3: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(x_hat, rstd) of the channels of x3 (N, C', M), computed on x / c with c = max |x| per
    channel, so no square can overflow: with x = c x', var = c^2 var', and
        x_hat = (x' - mu') / sqrt(var' + eps / c^2),   rstd = 1 / (c sqrt(var' + eps / c^2)).
    eps / c^2 is taken as (sqrt(eps) / c)^2 (c^2 itself may overflow)."""
    c = np.abs(x3).max(axis=(0, 2))  # (C',), finite and > 0 (the variance overflowed)
    xs = x3 / c[:, None]
    d = xs - _channel_means(xs)[:, None]  # |d| <= 2
    rstd_s = 1 / np.sqrt(np.square(d).mean(axis=(0, 2)) + np.square(np.sqrt(x3.dtype.type(eps)) / c))
    return d * rstd_s[:, None], rstd_s / c


def batch_norm_reference(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
                         eps: float = 1e-5) -> Tensor:
    """The training-mode normalization composed from Tensor ops (the twin of `BatchNorm`, for
    the tests): the mean and biased variance over every axis but the channel axis 1."""
    dims = (0,) + tuple(range(2, x.ndim))
    per_channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    mean = x.mean(dim=dims, keepdim=True)  # (1, C, 1, ...)
    var = x.var(dim=dims, keepdim=True, correction=0)  # (1, C, 1, ...)
    y = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        y = y * weight.reshape(per_channel)
    if bias is not None:
        y = y + bias.reshape(per_channel)
    return y
