"""A correct cross_entropy, built from the library's fused kernel (minigrad.nn.kernels)."""

from minigrad import Function
from minigrad.nn.kernels import CrossEntropy as LibraryCrossEntropy


class CrossEntropy(Function):
    @staticmethod
    def forward(ctx, x, t):
        return LibraryCrossEntropy.forward(ctx, x, t)

    @staticmethod
    def backward(ctx, g):
        return LibraryCrossEntropy.backward(ctx, g)
