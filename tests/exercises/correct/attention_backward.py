"""A correct attention_backward, written out in numpy: the stub's forward, and the backward
through its three lines in reverse (O = A V, A = softmax(S), S = Q K^T * c)."""

import math

import numpy as np

from minigrad import Function


class Attention(Function):
    """O = softmax(Q K^T / sqrt(d), masked) V"""

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
        q, k, v, a = ctx.saved
        c = ctx.c
        # 1. O = A V
        dv = a.swapaxes(-1, -2) @ g  # (..., Tk, dv)
        da = g @ v.swapaxes(-1, -2)  # (..., Tq, Tk)
        # 2. A = softmax(S), row by row (masked entries have A = 0, so dS = 0 there)
        ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
        # 3. S = Q K^T * c
        dq = ds @ k * c  # (..., Tq, d)
        dk = ds.swapaxes(-1, -2) @ q * c  # (..., Tk, d)
        return dq, dk, dv  # the engine sums the broadcast batch axes away
