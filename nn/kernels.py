"""Fused kernels of the nn layer: linear, cross entropy, layer norm, GELU, dropout and embedding.

Each is one `Function` with a hand-written backward, the code to study; the tests check each
against the same math composed from core Tensor ops. `g` is always the upstream gradient.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad.autograd import Function
from minigrad.ops.reduce import LogSoftmax
from minigrad.random import generator

from ._erf import erf, erf_float32


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """log_softmax over the last axis: the core's fused kernel, run on plain arrays."""
    return LogSoftmax.forward(LogSoftmax(), x, dim=-1)


def _col_sums(a: np.ndarray) -> np.ndarray:
    """a.sum(axis=0) of a 2-D array as ones @ a: BLAS reads a once, about 4x faster than
    numpy's strided reduction down the columns."""
    return np.ones(a.shape[0], dtype=a.dtype) @ a


def _row_means(a: np.ndarray) -> np.ndarray:
    """a.mean(axis=1, keepdims=True) of a 2-D array as a @ (ones / n): a matrix-vector product,
    about 4x faster than numpy's sum over short rows."""
    return (a @ np.full(a.shape[1], 1.0 / max(a.shape[1], 1), dtype=a.dtype))[:, None]


# ----------------------------------------------------------------------------- linear


class Linear(Function):
    """Affine map y = x W^T + b, x (*, in), W (out, in), b (out)

    dx = g W,   dW = sum over rows of g^T x,   db = sum over rows of g
    The leading axes (*) are flattened into one axis of rows first, so each product is a
    single (rows, in) x (in, out) matrix product rather than one per batch element, and
    the bias gradient is one sum instead of the engine undoing a broadcast.
    """

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        x2 = x.reshape(-1, x.shape[-1])  # (rows, in)
        y = x2 @ weight.T  # (rows, out)
        if bias is not None:
            y += bias
        ctx.save_for_backward(x2, weight)
        ctx.in_shape = x.shape
        return y.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, g):
        x2, weight = ctx.saved
        g2 = g.reshape(-1, weight.shape[0])  # (rows, out)
        needs = ctx.needs_input_grad
        dx = (g2 @ weight).reshape(ctx.in_shape) if needs[0] else None
        dw = g2.T @ x2 if needs[1] else None
        if len(needs) == 2:
            return dx, dw
        return dx, dw, (_col_sums(g2) if needs[2] else None)


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
        # Work on a (rows, features) view: every reduction is then along one contiguous axis.
        features = math.prod(x.shape[x.ndim - ndim:])
        x2 = x.reshape(-1, features)
        x_hat = x2 - _row_means(x2)  # x - mu
        var = _row_means(np.square(x_hat))
        var += x.dtype.type(eps)
        rstd = np.sqrt(var, out=var)
        np.divide(1, rstd, out=rstd)
        x_hat *= rstd
        ctx.save_for_backward(x_hat, rstd, weight)
        ctx.shape = x.shape
        y = x_hat.copy() if weight is None else x_hat * weight.reshape(-1)
        if bias is not None:
            y += bias.reshape(-1)
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        x_hat, rstd, weight = ctx.saved
        g2 = g.reshape(x_hat.shape)  # (rows, features)
        needs = ctx.needs_input_grad
        dw = db = dx = None
        if weight is not None and needs[1]:
            dw = np.einsum("ij,ij->j", g2, x_hat).reshape(weight.shape)
        if len(needs) > 2 and needs[2]:
            db = _col_sums(g2).reshape(weight.shape)
        if needs[0]:
            gx = g2 if weight is None else g2 * weight.reshape(-1)
            mean_gx = _row_means(gx)
            dx = gx * x_hat
            mean_gx_xhat = _row_means(dx)
            np.multiply(x_hat, mean_gx_xhat, out=dx)
            np.subtract(gx, dx, out=dx)
            dx -= mean_gx
            dx *= rstd
            dx = dx.reshape(ctx.shape)
        return (dx, dw, db)[: len(needs)]


# ----------------------------------------------------------------------------- GELU

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _square(x: np.ndarray) -> np.ndarray:
    """x * x as a new array, also for 0-d x (where x * x would be a numpy scalar, which the
    in-place steps below cannot write into)."""
    return np.multiply(x, x, out=np.empty_like(x))


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
            # In place on one temporary: u = sqrt(2/pi) * (x + 0.044715 x^3), t = tanh(u).
            t = _square(x)
            t *= 0.044715 * _SQRT_2_OVER_PI
            t += _SQRT_2_OVER_PI
            t *= x
            np.tanh(t, out=t)
            ctx.save_for_backward(x, t)
            y = t + 1
            y *= x
            y *= 0.5
            return y
        u = x * math.sqrt(0.5)
        cdf = 0.5 * (1 + (erf_float32(u) if x.dtype == np.float32 and u.ndim else erf(u)))
        ctx.save_for_backward(x, cdf)
        return (x * cdf).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved
        if ctx.approximate == "tanh":
            # dx = g * (1 + t + x (1 - t^2) du) / 2,  du = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
            #    = g * (1 + t) * (1/2 + (1 - t) * x du / 2)     (1 - t^2 = (1 - t)(1 + t)):
            # ten passes over x's size instead of eleven.
            dx = _square(x)
            dx *= 0.5 * 3 * 0.044715 * _SQRT_2_OVER_PI
            dx += 0.5 * _SQRT_2_OVER_PI
            dx *= x  # x du / 2
            one_minus_t = np.subtract(1, s, out=np.empty_like(s))
            dx *= one_minus_t
            dx += 0.5
            dx *= np.add(s, 1, out=one_minus_t)  # reuse the buffer for 1 + t
            dx *= g
            return dx
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
        dw = scatter_add_rows(idx.reshape(-1), g.reshape(-1, ctx.shape[-1]), ctx.shape[0])
        if ctx.padding_idx is not None:
            dw[ctx.padding_idx] = 0
        return None, dw


def scatter_add_rows_reference(ids: np.ndarray, rows: np.ndarray, num_rows: int) -> np.ndarray:
    """out[ids[i]] += rows[i] for every i: the readable definition (np.add.at)."""
    out = np.zeros((num_rows, rows.shape[1]), dtype=rows.dtype)
    np.add.at(out, ids, rows)
    return out


def scatter_add_rows(ids: np.ndarray, rows: np.ndarray, num_rows: int) -> np.ndarray:
    """The same as `scatter_add_rows_reference`, about 3x faster: sort the ids so that equal
    ids are adjacent, then sum each run of equal ids with one np.add.reduceat. Ids without
    repeats (learned positions) are copied, not summed: at T = 1024 that is about 20x faster."""
    out = np.zeros((num_rows, rows.shape[1]), dtype=rows.dtype)
    if ids.size == 0:
        return out
    if np.all(ids[1:] > ids[:-1]):  # no repeats, in order (positions 0..T-1): a plain copy
        out[ids] = rows
        return out
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    if starts.size == ids.size:  # no repeats: reduceat over one-row runs is slow, and not needed
        out[sorted_ids] = rows[order]
    else:
        out[sorted_ids[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return out
