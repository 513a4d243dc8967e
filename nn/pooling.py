"""Pooling, as in PyTorch: `F.max_pool1d`, `F.max_pool2d`, `F.avg_pool2d`, `F.adaptive_avg_pool2d`
and their layers. The max and average kernels are in conv_kernels.py; a 1-D pool is the 2-D one
on inputs of height 1, and the adaptive average is two matrix products (a composition).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError

from ._checks import _need_tensor, _where
from .conv import _tuple
from .conv_kernels import AvgPool2dOp, MaxPool2dOp, max_pool2d_indices, max_pool2d_scan, pool_out_size
from .module import Module


def _pool_args(fn: str, x: Tensor, n: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> tuple:
    """Checked (x as a batch, unbatched?, kernel, stride, padding, dilation) for an n-d pool."""
    _need_tensor(fn, "the input", x)
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError(f"{fn}: expected an input of {n + 1} or {n + 2} dimensions, got shape {x.shape}"
                         f"{_where()}")
    if x.dtype.kind != "f" and not (fn == "max_pool2d" and x.dtype.kind in "iu"):  # torch's rule
        raise TypeError(f"{fn}: the input has dtype {x.dtype}; pooling needs floating point (x.float())")
    unbatched = x.ndim == n + 1
    kernel = _tuple(fn, "kernel_size", kernel_size, n)
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(fn, "stride", stride, n)
    padding = _tuple(fn, "padding", padding, n)
    dilation = _tuple(fn, "dilation", dilation, n)
    if min(kernel + stride + dilation) < 1 or min(padding) < 0:
        raise ShapeError(f"{fn}: kernel_size {kernel}, stride {stride} and dilation {dilation} must be "
                         f"positive and padding {padding} not negative")
    for p, k in zip(padding, kernel):
        if p > k // 2:  # torch's rule (the kernel's size, whatever the dilation)
            raise ShapeError(f"{fn}: pad should be at most half of kernel size, but got pad={p} and "
                             f"kernel_size={k}")
    spatial = x.shape[x.ndim - n:]
    out = tuple(pool_out_size(s, k, st, p, p, d, ceil_mode)
                for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation))
    if min(out) < 1:
        raise ShapeError(f"{fn}: input of shape {x.shape} is too small for kernel_size {kernel} "
                         f"(padding {padding}, dilation {dilation}): the output size {out} is too small"
                         f"{_where()}")
    if unbatched:
        x = x.unsqueeze(0)
    if n == 1:
        x = x.unsqueeze(2)
        kernel, stride, padding, dilation = (1,) + kernel, (1,) + stride, (0,) + padding, (1,) + dilation
    return x, unbatched, kernel, stride, padding, dilation


def _unpool_shape(y: Tensor, n: int, unbatched: bool) -> Tensor:
    """Undo the height 1 (1-d) and the batch of 1 (unbatched) that _pool_args added."""
    if n == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def _max_pool(fn: str, n: int, x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool, return_indices: bool) -> Any:
    x4, unbatched, kernel, stride, padding, dilation = _pool_args(
        fn, x, n, kernel_size, stride, padding, dilation, ceil_mode)
    y = MaxPool2dOp.apply(x4, kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                               ceil_mode=ceil_mode)
    y = _unpool_shape(y, n, unbatched)
    if not return_indices:
        return y
    _, arg = max_pool2d_scan(x4._data, kernel, stride, padding, dilation, ceil_mode)
    idx = Tensor(max_pool2d_indices(x4._data, arg, kernel, stride, padding, dilation))
    return y, _unpool_shape(idx, n, unbatched)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The maximum of each (dilated) window; padding counts as -inf. With return_indices, also the
    flat position h * W + w of each maximum in its input plane (int64), as PyTorch. Integer
    inputs work too, as in torch (no other pooling takes them).

    Shape:
        input: (N, C, H, W) or (C, H, W); output: (N, C, OH, OW),
        OH = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1 (ceil with ceil_mode); stride
        defaults to kernel_size.
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """max_pool2d on inputs of height 1.

    Shape:
        input: (N, C, L) or (C, L); output: (N, C, OL), OL = floor((L + 2 p - d (k - 1) - 1) / s) + 1.
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean of each window (zero padding); the divisor is the window's size with the padding
    (count_include_pad) or without it, or divisor_override.

    Shape:
        input: (N, C, H, W) or (C, H, W); output: (N, C, OH, OW), OH = floor((H + 2 pH - kH) / sH) + 1.
    """
    if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override == 0):
        raise ValueError(f"avg_pool2d: divisor_override must be a non-zero int, not {divisor_override!r}")
    x4, unbatched, kernel, stride, padding, _ = _pool_args(
        "avg_pool2d", input, 2, kernel_size, stride, padding, 1, ceil_mode)
    y = AvgPool2dOp.apply(x4, kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                               count_include_pad=count_include_pad, divisor_override=divisor_override)
    return _unpool_shape(y, 2, unbatched)


def _adaptive_matrix(n: int, out: int) -> np.ndarray:
    """A (out, n) matrix whose row i averages x[start_i:end_i], start_i = floor(i n / out),
    end_i = ceil((i + 1) n / out): PyTorch's adaptive windows."""
    a = np.zeros((out, n))
    for i in range(out):
        start, end = (i * n) // out, -((-(i + 1) * n) // out)
        a[i, start:end] = 1.0 / (end - start)
    return a


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average over windows chosen so that the output has output_size (an int, a pair, None in
    a place keeping that size). The windows along each axis are fixed, so the pool is
    A_h @ x @ A_w^T with averaging matrices A (a composition: its gradient is A_h^T @ g @ A_w).

    Shape:
        input: (N, C, H, W) or (C, H, W); output: (N, C, *output_size).
    """
    _need_tensor("adaptive_avg_pool2d", "the input", input)
    if input.ndim not in (3, 4):
        raise ShapeError(f"adaptive_avg_pool2d: expected an input of 3 or 4 dimensions, got shape "
                         f"{input.shape}{_where()}")
    size = output_size if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    H, W = input.shape[-2:]
    size = tuple(s if s is not None else d for s, d in zip(size, (H, W)))
    size = _tuple("adaptive_avg_pool2d", "output_size", size, 2)
    if min(size) < 1 or min(H, W) < 1:
        raise ShapeError(f"adaptive_avg_pool2d: output_size {size} and the input's size {(H, W)} must be "
                         "positive")
    ah = Tensor(_adaptive_matrix(H, size[0]).astype(input.dtype))
    awt = Tensor(_adaptive_matrix(W, size[1]).T.astype(input.dtype))
    return ah @ input @ awt


# ----------------------------------------------------------------------------- layers


class _PoolNd(Module):
    """Holds the arguments of a pool and prints them as PyTorch does."""

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in self._shown)


class MaxPool2d(_PoolNd):
    """Max pooling over 2-D windows, as `torch.nn.MaxPool2d` (see F.max_pool2d).

    Shape:
        - Input: (N, C, H, W) or (C, H, W)
        - Output: (N, C, OH, OW), OH = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1
    """

    _fn, _shown = staticmethod(max_pool2d), ("kernel_size", "stride", "padding", "dilation", "ceil_mode")

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False):
        self.kernel_size, self.padding, self.dilation = kernel_size, padding, dilation
        self.stride = stride if stride is not None else kernel_size
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                        self.return_indices)


class MaxPool1d(MaxPool2d):
    """Max pooling over 1-D windows, as `torch.nn.MaxPool1d` (see F.max_pool1d).

    Shape:
        - Input: (N, C, L) or (C, L)
        - Output: (N, C, OL), OL = floor((L + 2 p - d (k - 1) - 1) / s) + 1
    """

    _fn = staticmethod(max_pool1d)


class AvgPool2d(_PoolNd):
    """Average pooling over 2-D windows, as `torch.nn.AvgPool2d` (see F.avg_pool2d).

    Shape:
        - Input: (N, C, H, W) or (C, H, W)
        - Output: (N, C, OH, OW), OH = floor((H + 2 pH - kH) / sH) + 1
    """

    _shown = ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = stride if stride is not None else kernel_size
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool2d(_PoolNd):
    """Average pooling to a fixed output size, as `torch.nn.AdaptiveAvgPool2d`.

    Shape:
        - Input: (N, C, H, W) or (C, H, W)
        - Output: (N, C, *output_size)
    """

    _shown = ("output_size",)

    def __init__(self, output_size: Any):
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return adaptive_avg_pool2d(input, self.output_size)
