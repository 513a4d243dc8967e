"""A correct mul_broadcast, written out: each gradient summed back to its input's shape."""

from minigrad import Function


def sum_to_shape(grad, shape):
    shape = tuple(shape)
    # The axes broadcasting added on the left: summed away.
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    # The axes stretched from size 1: summed, keeping them (size 1).
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return sum_to_shape(g * b, a.shape), sum_to_shape(g * a, b.shape)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return sum_to_shape(g / b, a.shape), sum_to_shape(-g * a / b**2, b.shape)
