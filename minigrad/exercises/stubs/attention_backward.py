"""Exercise 10 · attention_backward: dQ, dK and dV through the softmax (the heart of the course).

Scaled dot-product attention, with the forward given below:
    S = Q K^T * c                 c = 1 / sqrt(d), d the size of a query (the last axis of q)
    S_ij = -inf where mask_ij is False        (True = query i may attend to key j)
    A = softmax(S)                over the keys (the last axis); a fully masked row gives 0
    O = A V
Write the backward: given g = dL/dO, return (dQ, dK, dV). Go through the forward's lines in
reverse, one at a time:
    1. O = A V, a matrix product:       dV = A^T g,        dA = g V^T
    2. A = softmax(S), row by row:      dS = A * (dA - rowsum(dA * A))     (exercise 5 (`softmax_backward`))
    3. S = Q K^T * c:                   dQ = dS K * c,     dK = dS^T Q * c
Masked scores have A = 0, so dS is 0 there by itself: the mask needs no line of its own.

Shapes: q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), g and O (..., Tq, dv),
A and S (..., Tq, Tk). "Transpose" means the last two axes: x.swapaxes(-1, -2). The leading
axes (batch, heads) broadcast; the engine sums a gradient back over the ones that did.
Use numpy only. Check your work with
    minigrad exercise check attention_backward
and watch your backward train a language model with
    minigrad exercise check attention_backward --train
"""

import math

import numpy as np

from minigrad import Function


class Attention(Function):
    """O = softmax(Q K^T / sqrt(d), masked) V      dQ, dK, dV: see the module docstring"""

    @staticmethod
    def forward(ctx, q, k, v, *, mask=None):
        c = 1.0 / math.sqrt(q.shape[-1])
        s = q @ k.swapaxes(-1, -2) * c  # (..., Tq, Tk)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)  # a fully masked row: exp(-inf) = 0, not nan
        e = np.exp(s - m)
        total = e.sum(axis=-1, keepdims=True)
        a = e / np.where(total == 0, 1.0, total)  # (..., Tq, Tk)
        ctx.save_for_backward(q, k, v, a)
        ctx.c = c
        return a @ v  # (..., Tq, dv)

    @staticmethod
    def backward(ctx, g):
        q, k, v, a = ctx.saved  # the scale c is ctx.c
        # Your code: return dq, dk, dv (each the shape of its input, or broadcast to it).
        raise NotImplementedError
