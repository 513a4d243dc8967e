"""The bilinear map y_k = x1^T A_k x2 + b_k, as `torch.nn.functional.bilinear` and
`torch.nn.Bilinear` (weight (out_features, in1_features, in2_features)).

A composition of matmul, reshape and sum (no einsum): x1 times every A_k at once is one
matmul with the weight laid out as (in1, out * in2); each row then meets x2.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError

from . import init
from ._checks import _need_tensor, _where
from .module import Module, Parameter


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., k] = sum_ij input1[..., i] weight[k, i, j] input2[..., j] + bias[k]

    Shape:
        input1: (*, in1); input2: (*, in2), the same leading dimensions; weight: (out, in1, in2);
        bias: (out,); output: (*, out).
    """
    for what, t in (("input1", input1), ("input2", input2), ("the weight", weight)):
        _need_tensor("bilinear", what, t)
    if weight.ndim != 3:
        raise ShapeError(f"bilinear: the weight must have shape (out_features, in1_features, in2_features), "
                         f"got {weight.shape}{_where()}")
    out, in1, in2 = weight.shape
    if input1.ndim == 0 or input1.shape[:-1] != input2.shape[:-1] or input2.ndim != input1.ndim:
        raise ShapeError(f"bilinear: input1 of shape {input1.shape} and input2 of shape {input2.shape} must "
                         f"have at least 1 dimension and the same leading dimensions{_where()}")
    for what, x, n in (("input1", input1, in1), ("input2", input2, in2)):
        if x.shape[-1] != n:
            raise ShapeError(f"bilinear: {what} of shape {x.shape} must end in {n} for a weight of shape "
                             f"{weight.shape}{_where()}")
    if bias is not None:
        _need_tensor("bilinear", "the bias", bias)
        if bias.shape != (out,):
            raise ShapeError(f"bilinear: the bias must have shape ({out},) for a weight of shape "
                             f"{weight.shape}, got {bias.shape}{_where()}")
    lead = input1.shape[:-1]
    M = math.prod(lead)
    x1, x2 = input1.reshape(M, in1), input2.reshape(M, in2)
    t = x1 @ weight.permute(1, 0, 2).reshape(in1, out * in2)  # (M, out * in2): x1^T A_k for every k
    y = (t.reshape(M, out, in2) * x2.reshape(M, 1, in2)).sum(dim=-1)  # (M, out)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out,))


class Bilinear(Module):
    """y = x1^T A x2 + b, one matrix A_k (in1, in2) per output feature.

    Weight and bias start as U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as in PyTorch.

    Args:
        in1_features: size of each first input's last dimension.
        in2_features: size of each second input's last dimension.
        out_features: size of each output's last dimension.
        bias: whether to add the learned bias b.

    Shape:
        - Input1: (*, in1_features); Input2: (*, in2_features), the same leading dimensions
        - Output: (*, out_features)

    Attributes:
        weight: (out_features, in1_features, in2_features).
        bias: (out_features), or None.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True):
        if in1_features <= 0:
            raise ValueError(f"Bilinear: in1_features must be > 0, not {in1_features}")
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(np.zeros((out_features, in1_features, in2_features), dtype=np.float32))
        self.bias = Parameter(np.zeros(out_features, dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
