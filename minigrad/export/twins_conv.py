"""The torch twins of the convolution, pooling and batch-norm ops (see ops.py for the contract
every twin keeps)."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function
from minigrad.nn import batchnorm_kernel, conv_kernels

CONV_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}


# batch norm: the kernel is the training-mode normalization (the batch's statistics); the
# running statistics are updated outside the graph, so the twin has none to update.
def _batch_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, *,
                eps: float = 1e-5) -> torch.Tensor:
    return torch.nn.functional.batch_norm(x, None, None, weight, bias, training=True, eps=eps)


CONV_TWINS.update({batchnorm_kernel.BatchNorm: _batch_norm})


# convolution and pooling: the kernels' options are torch's, except that the convolution's
# padding is (top, bottom, left, right), so an uneven "same" padding is applied with F.pad first.
def _conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, stride=(1, 1),
            padding=(0, 0, 0, 0), dilation=(1, 1), groups: int = 1) -> torch.Tensor:
    top, bottom, left, right = padding
    if top == bottom and left == right:
        return torch.nn.functional.conv2d(x, weight, bias, stride, (top, left), dilation, groups)
    x = torch.nn.functional.pad(x, (left, right, top, bottom))
    return torch.nn.functional.conv2d(x, weight, bias, stride, 0, dilation, groups)


CONV_TWINS.update({
    conv_kernels.Conv2dOp: _conv2d,
    conv_kernels.ConvTranspose2dOp: torch.nn.functional.conv_transpose2d,  # the same options, by name
    conv_kernels.MaxPool2dOp: torch.nn.functional.max_pool2d,
    conv_kernels.AvgPool2dOp: torch.nn.functional.avg_pool2d,
})
