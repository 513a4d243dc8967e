"""A correct layer_norm_backward, written out in numpy: the stub's forward, and the three-term
backward dx = (gx - mean(gx) - x_hat * mean(gx * x_hat)) / sigma with gx = g * w."""

import numpy as np

from minigrad import Function


class LayerNorm(Function):
    """y = (x - mean(x)) / sqrt(var(x) + eps) * w + b over the last axis"""

    @staticmethod
    def forward(ctx, x, w, b, *, eps=1e-5):
        mu = x.mean(axis=-1, keepdims=True)
        sigma = np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
        x_hat = (x - mu) / sigma
        ctx.save_for_backward(x_hat, sigma, w)
        return x_hat * w + b

    @staticmethod
    def backward(ctx, g):
        x_hat, sigma, w = ctx.saved
        rows = tuple(range(g.ndim - 1))  # every leading axis: w and b are shared by all rows
        db = g.sum(axis=rows)
        dw = (g * x_hat).sum(axis=rows)
        gx = g * w  # the gradient reaching x_hat
        mean_gx = gx.mean(axis=-1, keepdims=True)  # the path through mu
        mean_gx_xhat = (gx * x_hat).mean(axis=-1, keepdims=True)  # the path through sigma
        dx = (gx - mean_gx - x_hat * mean_gx_xhat) / sigma
        return dx, dw, db
