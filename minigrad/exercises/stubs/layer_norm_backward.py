"""Exercise 7 · layer_norm_backward: the three-term backward of layer norm.

Layer norm normalises each row (the last axis, n features) to mean 0 and variance 1, then
scales and shifts it (the forward is given below):
    mu = mean(x),   var = mean((x - mu)^2),   sigma = sqrt(var + eps)
    x_hat = (x - mu) / sigma
    y = x_hat * w + b                         w, b: (n,), shared by every row

Write the backward: given g = dL/dy, return (dx, dw, db).
    db = sum of g over every row              (b was broadcast over the rows: the adjoint is a sum)
    dw = sum of g * x_hat over every row
    gx = g * w                                (the gradient reaching x_hat)
x_hat depends on x three ways: directly, through mu, and through sigma. One term each:
    dx = (gx - mean(gx) - x_hat * mean(gx * x_hat)) / sigma
where the means are over the last axis, one per row (keep that axis so they broadcast).

Shapes: x and y (..., n); w, b, dw, db (n,): sum over every leading axis. Use numpy only.
Check your work with
    minigrad exercise check layer_norm_backward
"""

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
        # Your code: return dx (the shape of x), dw and db (the shape of w).
        raise NotImplementedError
