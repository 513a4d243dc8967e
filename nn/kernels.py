"""Fused kernels of the nn layer: cross entropy, layer norm, GELU, dropout and embedding.

Each is one `Function` with a hand-written backward, the code to study; the tests check each
against the same math composed from core Tensor ops. `g` is always the upstream gradient.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.autograd import Function
from minigrad.ops.reduce import LogSoftmax
from minigrad.random import generator

from ._erf import erf


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """log_softmax over the last axis: the core's fused kernel, run on plain arrays."""
    return LogSoftmax.forward(LogSoftmax(), x, dim=-1)


# ----------------------------------------------------------------------------- cross entropy


class CrossEntropy(Function):
    """Cross entropy of logits x (*, C) against class ids t (*), with label smoothing eps.

    p = softmax(x);  loss_i = (1 - eps) * (-log p_i[t_i]) + eps * mean_c(-log p_i[c])
    dx_i = g_i * (p_i - (1 - eps) * onehot(t_i) - eps / C)

    Rows whose target equals `ignore_index` give loss 0 and no gradient. reduction="mean"
    divides by the number of rows not ignored; when every row is ignored the mean is 0.0
    (PyTorch returns nan there) and the gradient is zero.
    """

    @staticmethod
    def forward(ctx, x, target, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        C = x.shape[-1]
        logp = _log_softmax(x.reshape(-1, C))  # (N, C)
        t = target.reshape(-1)
        keep = t != ignore_index
        safe_t = np.where(keep, t, 0)  # any valid column; ignored rows are zeroed below
        rows = np.arange(t.size)
        loss = -logp[rows, safe_t]
        eps = label_smoothing
        if eps:
            loss = (1 - eps) * loss - eps * logp.mean(axis=-1)
        loss = np.where(keep, loss, 0).astype(x.dtype, copy=False)
        ctx.save_for_backward(logp, safe_t, keep)
        ctx.reduction, ctx.eps, ctx.shape = reduction, eps, x.shape
        ctx.count = int(keep.sum())
        if reduction == "none":
            return loss.reshape(target.shape)
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / x.dtype.type(max(ctx.count, 1))  # all ignored: 0.0, not nan

    @staticmethod
    def backward(ctx, g):
        logp, safe_t, keep = ctx.saved
        if ctx.reduction == "none":
            gi = g.reshape(-1, 1)
        elif ctx.reduction == "sum":
            gi = g
        else:
            gi = g / max(ctx.count, 1)
        dx = np.exp(logp)
        dx[np.arange(safe_t.size), safe_t] -= 1 - ctx.eps
        if ctx.eps:
            dx -= ctx.eps / logp.shape[-1]
        dx *= keep[:, None] * gi
        return dx.reshape(ctx.shape), None


# ----------------------------------------------------------------------------- layer norm


class LayerNorm(Function):
    """Normalize over the last `ndim` axes, then scale and shift.

    mu, var = mean and (biased) variance over those axes;  sigma = sqrt(var + eps)
    x_hat = (x - mu) / sigma;   y = x_hat * w + b
    dx = (1 / sigma) * (gx_hat - mean(gx_hat) - x_hat * mean(gx_hat * x_hat)),  gx_hat = g * w
    dw = sum over the leading axes of g * x_hat;   db = sum over the leading axes of g

    Inputs are x, then weight and bias when given (pass a weight to pass a bias). A constant
    row has var = 0, so x_hat = 0 and sigma = sqrt(eps): finite, never NaN.
    """

    @staticmethod
    def forward(ctx, x, weight=None, bias=None, *, ndim=1, eps=1e-5):
        axes = tuple(range(x.ndim - ndim, x.ndim))
        mu = x.mean(axis=axes, keepdims=True)
        d = x - mu
        rstd = 1.0 / np.sqrt((d * d).mean(axis=axes, keepdims=True) + x.dtype.type(eps))
        x_hat = d * rstd
        ctx.save_for_backward(x_hat, rstd, weight)
        ctx.axes = axes
        y = x_hat if weight is None else x_hat * weight
        return y if bias is None else y + bias

    @staticmethod
    def backward(ctx, g):
        x_hat, rstd, weight = ctx.saved
        axes = ctx.axes
        lead = tuple(range(g.ndim - len(axes)))
        dw = (g * x_hat).sum(axis=lead) if weight is not None and ctx.needs_input_grad[1] else None
        db = g.sum(axis=lead) if len(ctx.needs_input_grad) > 2 and ctx.needs_input_grad[2] else None
        dx = None
        if ctx.needs_input_grad[0]:
            gx = g if weight is None else g * weight
            dx = rstd * (gx - gx.mean(axis=axes, keepdims=True)
                         - x_hat * (gx * x_hat).mean(axis=axes, keepdims=True))
        return (dx, dw, db)[: len(ctx.needs_input_grad)]


# ----------------------------------------------------------------------------- GELU

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


class GELU(Function):
    """Gaussian error linear unit: y = x * Phi(x), Phi the standard normal CDF.

    approximate="none":  Phi(x) = (1 + erf(x / sqrt 2)) / 2
        dx = g * (Phi(x) + x * phi(x)),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    approximate="tanh":  y = x / 2 * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3)
        dx = g * ((1 + t) / 2 + x / 2 * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2)),  t = tanh(u)
    """

    @staticmethod
    def forward(ctx, x, *, approximate="none"):
        ctx.approximate = approximate
        if approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x)))  # x * x * x: ** is slow
            ctx.save_for_backward(x, t)
            return (0.5 * x * (1 + t)).astype(x.dtype, copy=False)
        cdf = 0.5 * (1 + erf(x * math.sqrt(0.5)))
        ctx.save_for_backward(x, cdf)
        return (x * cdf).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved
        if ctx.approximate == "tanh":
            du = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return g * (0.5 * (1 + s) + 0.5 * x * (1 - s * s) * du)
        return g * (s + x * (_INV_SQRT_2PI * np.exp(-0.5 * x * x)))


# ----------------------------------------------------------------------------- dropout


class Dropout(Function):
    """Inverted dropout: y = x * m / (1 - p), m_i ~ Bernoulli(1 - p)     dx = g * m / (1 - p)

    The mask comes from the global generator (see `minigrad.manual_seed`) and is kept for
    backward. Scaling by 1 / (1 - p) at training time keeps E[y] = x, so evaluation needs
    no rescaling.
    """

    @staticmethod
    def forward(ctx, x, *, p=0.5):
        keep = generator().random(x.shape, dtype=np.float32) >= p
        scaled = keep * x.dtype.type(1.0 / (1.0 - p))  # m / (1 - p), in x's dtype
        ctx.save_for_backward(scaled)
        return x * scaled

    @staticmethod
    def backward(ctx, g):
        (scaled,) = ctx.saved
        return g * scaled


# ----------------------------------------------------------------------------- embedding


class Embedding(Function):
    """Row lookup: y[..., :] = W[idx[...], :]     dW = zeros, with g scatter-added at rows idx

    A row used twice receives both gradients (np.add.at accumulates repeats); the row
    `padding_idx`, when given, receives none.
    """

    @staticmethod
    def forward(ctx, idx, weight, *, padding_idx=None):
        ctx.save_for_backward(idx)
        ctx.shape, ctx.padding_idx = weight.shape, padding_idx
        return weight[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved
        dw = np.zeros(ctx.shape, dtype=g.dtype)
        np.add.at(dw, idx.reshape(-1), g.reshape(-1, ctx.shape[-1]))
        if ctx.padding_idx is not None:
            dw[ctx.padding_idx] = 0
        return None, dw
