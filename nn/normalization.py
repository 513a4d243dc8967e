"""Group normalization (Wu and He, 2018), as `torch.nn.functional.group_norm` and
`torch.nn.GroupNorm`: the channels are split into groups, and each sample's group is
normalized over its channels and positions together.

A composition of Tensor ops (mean and biased variance over the group), so its gradient is
the chain rule through them.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from minigrad import Tensor
from minigrad.ops.reduce import accumulation_dtype

from . import kernels
from ._checks import _need_nc_input, _need_tensor, _where
from .module import Module, Parameter


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c], with the mean and the biased
    variance over each sample's group of C / num_groups channels and all its positions.

    Each group is first shifted by its first value x0 (a constant, detached): mean, var and
    x - mean are unchanged, and so is the gradient (y does not depend on a shift), but a
    constant group's x - x0 is exactly 0, so its y is exactly the bias (a rounded mean of n
    equal values need not be the value). float16 is computed in float32 and rounded once
    (`accumulation_dtype`), as in PyTorch.

    Shape:
        input: (N, C, *); weight, bias: (C,); output: like input.
    """
    _need_nc_input("group_norm", input)
    N, C = input.shape[:2]
    if not isinstance(num_groups, int) or num_groups <= 0 or C % num_groups:
        raise ValueError(f"group_norm: the number of channels must be divisible by num_groups, but got "
                         f"an input of shape {input.shape} and num_groups={num_groups}{_where()}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            _need_tensor("group_norm", f"the {name}", p)
            if p.shape != (C,):
                raise ValueError(f"group_norm: the {name} must have shape ({C},), the number of channels, "
                                 f"but got a {name} of shape {p.shape} and an input of shape "
                                 f"{input.shape}{_where()}")
    per_group = C // num_groups * math.prod(input.shape[2:])
    if N * per_group == 1:  # torch refuses this too: every group of the batch is one value
        raise ValueError(f"group_norm: expected more than 1 value per group in the batch, got an input of "
                         f"shape {input.shape} and num_groups={num_groups}{_where()}")
    out_dtype = np.result_type(input.dtype, *(p.dtype for p in (weight, bias) if p is not None))
    acc = accumulation_dtype(input.dtype)
    y = input if acc == input.dtype else input.to(acc)
    if per_group:  # an empty group (no positions) has nothing to normalize
        x = y.reshape(N, num_groups, per_group)
        x = x - x.detach()[..., :1]  # shift by each group's first value x0
        mean = x.mean(dim=-1, keepdim=True)  # (N, G, 1)
        var = x.var(dim=-1, keepdim=True, correction=0)  # (N, G, 1)
        y = ((x - mean) / (var + eps).sqrt()).reshape(input.shape)  # (N, C, *)
    per_channel = (C,) + (1,) * (input.ndim - 2)  # weight[c] broadcast over the positions
    if weight is not None:
        y = y * weight.reshape(per_channel)
    if bias is not None:
        y = y + bias.reshape(per_channel)
    return y if y.dtype == out_dtype else y.to(out_dtype)


class GroupNorm(Module):
    """Group normalization over num_groups groups of channels, then a per-channel scale and
    shift (see `group_norm`).

    Args:
        num_groups: number of groups; it must divide num_channels.
        num_channels: C, the size of the input's second dimension.
        eps: added to the variance, so that constant groups give 0 instead of NaN.
        affine: learn `weight` (ones at first) and `bias` (zeros at first).
        bias: with affine, whether to learn the bias too.

    Shape:
        - Input: (N, C, *)
        - Output: the same shape as the input

    Attributes:
        weight, bias: (num_channels,), or None.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *,
                 bias: bool = True):
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups}), a positive number")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(np.ones(num_channels, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_channels, dtype=np.float32)) if affine and bias else None

    def forward(self, input: Tensor) -> Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last dimensions `normalized_shape` (see kernels.LayerNorm).

    Shape:
        input: (*, *normalized_shape); weight, bias: normalized_shape; output: like input.
    """
    _need_tensor("layer_norm", "the input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if input.shape[input.ndim - len(shape):] != shape or len(shape) > input.ndim:
        raise ValueError(f"layer_norm: input of shape {input.shape} does not end in normalized_shape {shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        _need_tensor("layer_norm", f"the {name}", p)
        if p.shape != shape:
            raise ValueError(f"layer_norm: {name} has shape {p.shape} but normalized_shape {shape} "
                             f"needs {shape}{_where()}")
    params = []
    if weight is not None or bias is not None:
        params.append(weight if weight is not None else Tensor(np.ones(shape, dtype=input.dtype)))
    if bias is not None:
        params.append(bias)
    return kernels.LayerNorm.apply(input, *params, ndim=len(shape), eps=eps)


class LayerNorm(Module):
    """Layer normalization (Ba et al., 2016) over the last dimensions, then scale and shift:
    y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance.

    Args:
        normalized_shape: the trailing shape to normalize over (an int for the last axis).
        eps: added to the variance, so that constant rows give 0 instead of NaN.
        elementwise_affine: learn `weight` (ones at first) and `bias` (zeros at first).
        bias: with elementwise_affine, whether to learn the bias too.

    Shape:
        - Input: (*, *normalized_shape)
        - Output: the same shape as the input

    Attributes:
        weight, bias: normalized_shape, or None.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if elementwise_affine and bias else None

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
