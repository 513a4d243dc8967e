"""Batch normalization (Ioffe and Szegedy, 2015), as `torch.nn.functional.batch_norm`,
`torch.nn.BatchNorm1d` and `torch.nn.BatchNorm2d`: each channel is normalized over the batch
and every position, with the batch's statistics in training and the running ones in eval.

The training-mode normalization is the `BatchNorm` kernel (batchnorm_kernel.py); the eval
mode is a composition of Tensor ops; the running statistics are updated with numpy, outside
the graph, as torch does. `minigrad.export.to_torch` records the training forward as the
batch-statistics function (torch then keeps no running statistics); to export the eval
function, export a method that calls the model under `nn.evaluating(model)`.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError

from ._checks import _need_nc_input, _need_tensor, _where
from .batchnorm_kernel import BatchNorm, batch_stats
from .module import Module, Parameter


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c], per channel c (axis 1).

    training=True: mean and var are the batch's (the biased variance over every axis but 1),
    and running_mean / running_var, when given, are updated in place (outside the graph):
        running = (1 - momentum) * running + momentum * batch statistic,
    with the unbiased variance (n / (n - 1) times the biased one) for running_var, as torch.
    training=False: mean and var are running_mean and running_var.

    Shape:
        input: (N, C, *); running_mean, running_var, weight, bias: (C,); output: like input.
    """
    _need_nc_input("batch_norm", input)
    C = input.shape[1]
    for name, p in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if p is not None:
            _need_tensor("batch_norm", f"the {name}", p)
            if p.shape != (C,):
                raise ShapeError(f"batch_norm: the {name} must have shape ({C},), the number of channels, "
                                 f"but got a {name} of shape {p.shape} and an input of shape "
                                 f"{input.shape}{_where()}")
    per_channel = (1, C) + (1,) * (input.ndim - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var must be given in evaluation mode "
                             f"(training=False){_where()}")
        y = (input - running_mean.reshape(per_channel)) / (running_var.reshape(per_channel) + eps).sqrt()
        if weight is not None:
            y = y * weight.reshape(per_channel)
        return y if bias is None else y + bias.reshape(per_channel)
    n = input.shape[0] * math.prod(input.shape[2:])
    if n == 1:  # the variance of one value is 0 and its unbiased estimate undefined: torch refuses
        raise ShapeError(f"batch_norm: Expected more than 1 value per channel when training, got an input "
                         f"of shape {input.shape}{_where()}")
    if n and (running_mean is not None or running_var is not None):
        _update_running_stats(input._data, running_mean, running_var, momentum, n)
    if weight is None:
        y = BatchNorm.apply(input, eps=eps)
        return y if bias is None else y + bias.reshape(per_channel)
    args = (input, weight) if bias is None else (input, weight, bias)
    return BatchNorm.apply(*args, eps=eps)


def _update_running_stats(x: np.ndarray, running_mean: Tensor | None, running_var: Tensor | None,
                          momentum: float, n: int) -> None:
    """running = (1 - momentum) * running + momentum * batch statistic, in numpy (no graph).
    The arrays are replaced, not written into, so a graph that saved the old ones keeps them."""
    mean, var = batch_stats(x)
    with np.errstate(over="ignore", invalid="ignore"):
        for buf, stat in ((running_mean, mean), (running_var, var * (n / (n - 1)))):
            if buf is not None:
                buf._data = ((1 - momentum) * buf._data + momentum * stat).astype(buf.dtype)


class _BatchNorm(Module):
    """What BatchNorm1d and BatchNorm2d share: torch's `_BatchNorm`; only the input check differs."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, *, bias: bool = True):
        if not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive int, "
                             f"not {num_features!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(np.ones(num_features, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_features, dtype=np.float32)) if affine and bias else None
        tracked = track_running_stats
        self.register_buffer("running_mean", Tensor(np.zeros(num_features, np.float32)) if tracked else None)
        self.register_buffer("running_var", Tensor(np.ones(num_features, np.float32)) if tracked else None)
        self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)) if tracked else None)

    def reset_running_stats(self) -> None:
        """running_mean to zeros, running_var to ones, num_batches_tracked to 0."""
        if self.track_running_stats:
            self.running_mean._data = np.zeros_like(self.running_mean._data)
            self.running_var._data = np.ones_like(self.running_var._data)
            self.num_batches_tracked._data = np.zeros_like(self.num_batches_tracked._data)

    def reset_parameters(self) -> None:
        """The running statistics reset, weight to ones and bias to zeros."""
        self.reset_running_stats()
        if self.weight is not None:
            self.weight._data = np.ones_like(self.weight._data)
        if self.bias is not None:
            self.bias._data = np.zeros_like(self.bias._data)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError  # abstract

    def forward(self, input: Tensor) -> Tensor:
        _need_tensor(type(self).__name__, "the input", input)
        self._check_input_dim(input)
        # torch's rules: momentum None is the cumulative average, 1 / (batches seen so far);
        # the batch's statistics are used in training, and in eval when nothing was tracked.
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked._data = np.array(self.num_batches_tracked._data + 1)  # 0-d, not a scalar
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked._data)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                          self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs, per channel over N (and L).

    Args:
        num_features: C, the size of the input's second dimension.
        eps: added to the variance, so that constant channels give 0 instead of NaN.
        momentum: the weight of a new batch in the running statistics; None for their
            cumulative average over every batch so far.
        affine: learn `weight` (ones at first) and `bias` (zeros at first).
        track_running_stats: keep running_mean, running_var and num_batches_tracked (buffers,
            in the state dict) and use them in eval; without, eval uses the batch's statistics.
        bias: with affine, whether to learn the bias too.

    Shape:
        - Input: (N, C) or (N, C, L)
        - Output: the same shape as the input

    Attributes:
        weight, bias: (num_features,), or None.
        running_mean, running_var: (num_features,) buffers, or None; num_batches_tracked: an
            int64 0-d buffer, or None.
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise ShapeError(f"BatchNorm1d: expected 2D or 3D input (got {input.ndim}D input of shape "
                             f"{input.shape}){_where()}")


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs, per channel over N, H and W.

    Args: as `BatchNorm1d`.

    Shape:
        - Input: (N, C, H, W)
        - Output: the same shape as the input

    Attributes:
        weight, bias: (num_features,), or None.
        running_mean, running_var: (num_features,) buffers, or None; num_batches_tracked: an
            int64 0-d buffer, or None.
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 4:
            raise ShapeError(f"BatchNorm2d: expected 4D input (got {input.ndim}D input of shape "
                             f"{input.shape}){_where()}")
