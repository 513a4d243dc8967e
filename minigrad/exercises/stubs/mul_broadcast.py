"""Exercise 1 · mul_broadcast: the backward of Mul and Div, and why the adjoint of
broadcasting is a sum.

    z = a * b        da = g * b,          db = g * a
    z = a / b        da = g / b,          db = -g * a / b^2

g is the upstream gradient dL/dz, of z's shape. numpy broadcasts a and b to a common shape in
the forward: a (2, 3) * b (3,) uses each b_j twice, once per row. A value used several times
collects the gradient of every use, so db_j = sum over the rows of (g * a)[:, j]: the adjoint
of broadcasting is a sum over the axes that broadcasting added (on the left) or stretched
(from size 1). Write `sum_to_shape(grad, shape)` for that sum, and use it in both backwards so
that each gradient has exactly its input's shape (the grader checks the shapes you return).

Shapes: a and b broadcast together to z's shape; da has a's shape, db has b's shape.
Use numpy only. Check your work with
    minigrad exercise check mul_broadcast
"""

import numpy as np  # noqa: F401  (for your sums)

from minigrad import Function


def sum_to_shape(grad, shape):
    """Sum grad (the broadcast shape) over the axes broadcasting added or stretched, giving shape.

    E.g. grad (4, 2, 3) -> shape (2, 1): sum over axis 0 (added), then over the last axis
    (stretched from 1 to 3) keeping it, giving (2, 1).
    """
    # Your code.
    raise NotImplementedError


class Mul(Function):
    """z = a * b        da = g * b,   db = g * a   (each summed back to its input's shape)"""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        # Your code: return da, db.
        raise NotImplementedError


class Div(Function):
    """z = a / b        da = g / b,   db = -g * a / b^2   (each summed back to its input's shape)"""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        # Your code: return da, db.
        raise NotImplementedError
