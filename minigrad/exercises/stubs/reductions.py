"""Exercise 4 · reductions: the backward of sum, mean and max over one axis.

Each op reduces x over the axis `dim`, dropping it (keepdim=False) or keeping it with size 1
(keepdim=True); the forwards are given below.
    z = sum_i x_i          dx_i = g                  (every x_i counts once)
    z = sum_i x_i / n      dx_i = g / n              (n: the size of the axis)
    z = max_i x_i          dx_i = g * [x_i == z] / (number of i with x_i == z)
The max sends the gradient to the winner; when several entries tie for the max they share it
equally (PyTorch's amax does the same, and it is what central differences give for two tied
entries). In every case g has z's shape: put the reduced axis back (size 1) so g broadcasts
against x, and return an array of exactly x's shape (np.broadcast_to or a multiplication by
an array of x's shape gets you there).

Shapes: x (any shape with at least one axis); dim an int (negative counts from the end).
Use numpy only. Check your work with
    minigrad exercise check reductions
"""

import numpy as np

from minigrad import Function


class Sum(Function):
    """z = sum of x over dim        dx = g, broadcast back over the summed axis"""

    @staticmethod
    def forward(ctx, x, *, dim, keepdim=False):
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return x.sum(axis=dim, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        # Your code: return dx, of shape ctx.shape.
        raise NotImplementedError


class Mean(Function):
    """z = mean of x over dim       dx = g / n, broadcast back (n = x.shape[dim])"""

    @staticmethod
    def forward(ctx, x, *, dim, keepdim=False):
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        return x.mean(axis=dim, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        # Your code: return dx, of shape ctx.shape.
        raise NotImplementedError


class Max(Function):
    """z = max of x over dim        dx = g * [x == z] / (number of ties)"""

    @staticmethod
    def forward(ctx, x, *, dim, keepdim=False):
        z = x.max(axis=dim, keepdims=True)
        ctx.save_for_backward(x, z)
        ctx.dim, ctx.keepdim = dim, keepdim
        return z if keepdim else np.squeeze(z, axis=dim)

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        # Your code: return dx, of x's shape.
        raise NotImplementedError
