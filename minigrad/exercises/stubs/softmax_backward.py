"""Exercise 5 · softmax_backward: backprop through the softmax.

The softmax turns a row of scores s into weights that are positive and sum to 1:
    a_j = exp(s_j) / sum_k exp(s_k)                      (over the last axis)
Its forward is given below. Write its backward: given g = dL/da (the upstream gradient, the
shape of a), return dL/ds.

The math, for one row (every weight depends on every score of its row):
    da_j / ds_k = a_j ([j = k] - a_k)
    dL/ds_k = sum_j g_j a_j ([j = k] - a_k) = a_k (g_k - sum_j g_j a_j)
so for a whole array, rows along the last axis:
    ds = a * (g - rowsum(g * a))          rowsum: one number per row

Shapes: s (..., n) -> a (..., n); g (..., n) -> ds (..., n), any number of leading axes.
Use numpy only (g and a are np.ndarrays). Check your work with
    minigrad exercise check softmax_backward
"""

import numpy as np

from minigrad import Function


class Softmax(Function):
    """a = softmax(s) over the last axis        ds = a * (g - rowsum(g * a))"""

    @staticmethod
    def forward(ctx, s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))  # minus the row max: exp never overflows
        a = e / e.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(a)
        return a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        # Your code: return dL/ds, an array of the same shape as g.
        raise NotImplementedError
