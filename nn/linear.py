"""Linear layers, as torch.nn's linear.py: its fused kernel LinearOp (y = x W^T + b as one
matrix product, forward and backward side by side), the functional form `linear` and the modules
Linear and Identity."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.errors import ArgumentError, ShapeError
from minigrad.runtime import parallel

from . import init
from ._checks import _CONVERT, _need_tensor, _where
from ._pieces import col_sums
from .module import Module, Parameter


def _empty(*shape: int) -> Parameter:
    return Parameter(np.zeros(shape, dtype=np.float32))


class LinearOp(Function):
    """Affine map y = x W^T + b, x (*, in), W (out, in), b (out)

    dx = g W,   dW = sum over rows of g^T x,   db = sum over rows of g
    The leading axes (*) are flattened into one axis of rows first, so each product is a
    single (rows, in) x (in, out) matrix product rather than one per batch element, and
    the bias gradient is one sum instead of the engine undoing a broadcast.
    """

    @staticmethod
    def reference(ctx, x, weight, bias=None):
        """The composition this kernel computes, for backward(create_graph=True)."""
        y = x @ weight.T
        return y if bias is None else y + bias

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        x2 = x.reshape(-1, x.shape[-1])  # (rows, in)
        y = parallel.matmul(x2, weight.T)  # (rows, out); x2 @ weight.T, over the threads
        if bias is not None:
            y += bias
        ctx.save_for_backward(x2, weight)
        ctx.in_shape = x.shape
        return y.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, g):
        x2, weight = ctx.saved
        g2 = g.reshape(-1, weight.shape[0])  # (rows, out)
        needs = ctx.needs_input_grad
        dx = parallel.matmul(g2, weight).reshape(ctx.in_shape) if needs[0] else None
        dw = parallel.matmul(g2.T, x2) if needs[1] else None
        if len(needs) == 2:
            return dx, dw
        return dx, dw, (col_sums(g2) if needs[2] else None)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight^T + bias, with weight (out_features, in_features) as in PyTorch.

    Shape:
        input: (*, in_features); weight: (out_features, in_features); bias: (out_features);
        output: (*, out_features).
    """
    _need_tensor("linear", "the input", input)
    _need_tensor("linear", "the weight", weight)
    if bias is not None:
        _need_tensor("linear", "the bias", bias)
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(
            f"linear: input of shape {input.shape} does not fit weight of shape {weight.shape} "
            "(the input's last dimension must equal weight.shape[1] = in_features)"
        )
    if bias is not None and bias.shape != weight.shape[:1]:  # numpy would broadcast, or fail unnamed
        raise ShapeError(
            f"linear: bias has shape {bias.shape} but weight {weight.shape} needs {weight.shape[:1]}"
            f"{_where()} (one bias per output feature)"
        )
    if input.dtype.kind not in "fc":  # numpy would silently compute in float64; PyTorch raises
        # (A float64 input to float32 weights is allowed: it computes in float64, which the
        # float64 gradient checks of float32 modules rely on.)
        raise TypeError(
            f"linear: input of dtype {input.dtype} and weight of dtype {weight.dtype} differ{_where()}; "
            f"convert the input with {_CONVERT.get(weight.dtype.name, f'x.to({weight.dtype.name})')}"
        )
    # Fused (one matrix product, see LinearOp); the same as `input @ weight.T + bias`.
    return LinearOp.apply(input, weight) if bias is None else LinearOp.apply(input, weight, bias)


class Linear(Module):
    """An affine map y = x W^T + b.

    Both W and b start as U(-1/sqrt(in_features), 1/sqrt(in_features)), as in PyTorch
    (kaiming_uniform_ with a = sqrt(5) for the weight).

    Args:
        in_features: size of each input's last dimension.
        out_features: size of each output's last dimension.
        bias: whether to add the learned bias b.

    Shape:
        - Input: (*, in_features)
        - Output: (*, out_features)

    Attributes:
        weight: (out_features, in_features).
        bias: (out_features), or None.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        for what, n in (("in_features", in_features), ("out_features", out_features)):
            if n < 0:
                raise ArgumentError(f"Linear: {what} must be a size >= 0, got {n}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = _empty(out_features, in_features)
        self.bias = _empty(out_features) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in_features == 0:  # nothing to draw, and no fan to divide by
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={bias}"


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for an optional layer); any
    constructor arguments are ignored, as in PyTorch.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def forward(self, input: Any) -> Any:
        return input
