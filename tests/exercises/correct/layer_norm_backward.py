"""A correct layer_norm_backward, built from the library's fused kernel (minigrad.nn.kernels)."""

from minigrad import Function
from minigrad.nn.kernels import LayerNorm as LibraryLayerNorm


class LayerNorm(Function):
    @staticmethod
    def forward(ctx, x, w, b, *, eps=1e-5):
        return LibraryLayerNorm.forward(ctx, x, w, b, ndim=1, eps=eps)

    @staticmethod
    def backward(ctx, g):
        return LibraryLayerNorm.backward(ctx, g)
