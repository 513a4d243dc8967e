"""Convolutions, as in PyTorch: `F.conv1d`, `F.conv2d` and the layers `Conv1d`, `Conv2d`.

Both are the one 2-D kernel (`conv_kernels.Conv2dOp`: im2col and a matrix product); a 1-D
convolution is the 2-D one on inputs of height 1. Layouts are PyTorch's: NCL and NCHW inputs,
weights (out_channels, in_channels / groups, *kernel_size).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Tensor

from . import init
from ._checks import _need_tensor, _where
from .conv_kernels import Conv2dOp
from .module import Module, Parameter
from .padding import pad as _pad

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(fn: str, what: str, value: Any, n: int) -> tuple[int, ...]:
    """An int or a sequence of n ints as a tuple of n ints, or a ValueError naming fn."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) == n and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        return tuple(int(v) for v in value)
    raise ValueError(f"{fn}: {what} must be an int or a tuple of {n} ints, not {value!r}")


def _padding(fn: str, padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
             dilation: tuple[int, ...]) -> tuple[int, ...]:
    """(before, after) per spatial axis, flattened. "same" pads d(k - 1) in all, the smaller half
    before (as PyTorch, which then pads an even kernel one more on the right)."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * n)
        if padding != "same":
            raise ValueError(f"{fn}: invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
        if any(s != 1 for s in stride):
            raise ValueError(f"{fn}: padding='same' is not supported for strided convolutions "
                             f"(stride={stride})")
        out: list[int] = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            out += [total // 2, total - total // 2]
        return tuple(out)
    pads = _tuple(fn, "padding", padding, n)
    if any(p < 0 for p in pads):
        raise ValueError(f"{fn}: negative padding {padding!r} is not supported")
    return tuple(p for p in pads for _ in range(2))


def _check(fn: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int, n: int) -> None:
    """The shape rules of a convolution, with errors naming fn and the shapes."""
    _need_tensor(fn, "the input", x)
    _need_tensor(fn, "the weight", weight)
    if weight.ndim != n + 2:
        raise ValueError(f"{fn}: weight of shape {weight.shape} must have {n + 2} dimensions "
                         f"(out_channels, in_channels / groups, {', '.join('k' * n)})")
    if x.ndim != n + 2:
        raise ValueError(f"{fn}: expected an input of {n + 2} dimensions (batched) or {n + 1} "
                         f"(unbatched), got shape {x.shape}{_where()}")
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, not {groups!r}")
    if weight.shape[0] % groups:
        raise ValueError(f"{fn}: groups={groups} must divide the weight's out_channels, but the weight "
                         f"has shape {weight.shape}")
    if x.shape[1] != weight.shape[1] * groups:
        raise ValueError(f"{fn}: with groups={groups}, weight of shape {weight.shape} expects an input "
                         f"with {weight.shape[1] * groups} channels, but the input of shape {x.shape} "
                         f"has {x.shape[1]}{_where()}")
    if bias is not None:
        _need_tensor(fn, "the bias", bias)
        if bias.shape != weight.shape[:1]:
            raise ValueError(f"{fn}: bias has shape {bias.shape} but weight {weight.shape} needs "
                             f"{weight.shape[:1]} (one per output channel)")
    if x.dtype.kind != "f" or weight.dtype.kind != "f":
        raise TypeError(f"{fn}: input of dtype {x.dtype} and weight of dtype {weight.dtype}: both must "
                        "be floating point (convert with x.float())")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:  # as torch: no silent promotion of the parameters
            raise TypeError(f"{fn}: input of dtype {x.dtype} and {what} of dtype {t.dtype} differ{_where()}; "
                            f"convert the input with x.to({t.dtype.name}) or the layer with .to(...)")


def _conv(fn: str, n: int, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
          dilation: Any, groups: int) -> Tensor:
    """The n-d convolution (n = 1, 2) through the 2-D kernel; an unbatched input gets a batch of 1."""
    _need_tensor(fn, "the input", x)
    unbatched = x.ndim == n + 1
    if unbatched:
        x = x.unsqueeze(0)
    _check(fn, x, weight, bias, groups, n)
    kernel = tuple(weight.shape[2:])
    stride = _tuple(fn, "stride", stride, n)
    dilation = _tuple(fn, "dilation", dilation, n)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(f"{fn}: stride {stride} and dilation {dilation} must be positive")
    pads = _padding(fn, padding, kernel, stride, dilation)
    for axis, k in enumerate(kernel):
        size = x.shape[2 + axis] + pads[2 * axis] + pads[2 * axis + 1]
        if dilation[axis] * (k - 1) + 1 > size:
            raise ValueError(
                f"{fn}: kernel of size {kernel} (dilation {dilation}) is larger than the padded input "
                f"(input of shape {x.shape}, padded to {size} along dimension {2 + axis}){_where()}")
    if n == 1:  # height 1: the kernel and the options get a leading 1 / 0
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, dilation, pads = (1,) + stride, (1,) + dilation, (0, 0) + pads
    args = (x, weight) if bias is None else (x, weight, bias)
    y = Conv2dOp.apply(*args, stride=stride, padding=pads, dilation=dilation, groups=groups)
    if n == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution (a cross-correlation, as in PyTorch) of `input` with `weight`.

    padding is an int, a pair, "valid" (none) or "same" (output as large as the input; stride 1).

    Shape:
        input: (N, C, H, W) or (C, H, W); weight: (O, C / groups, kH, kW); bias: (O);
        output: (N, O, OH, OW) with OH = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1.
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution: conv2d on inputs of height 1.

    Shape:
        input: (N, C, L) or (C, L); weight: (O, C / groups, k); bias: (O);
        output: (N, O, OL) with OL = floor((L + 2 p - d (k - 1) - 1) / s) + 1.
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


class _ConvNd(Module):
    """What Conv1d and Conv2d share: arguments, parameters, initialisation."""

    _n = 2
    _name = "Conv2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros"):
        name, n = self._name, self._n
        if not isinstance(groups, int) or groups < 1:
            raise ValueError(f"{name}: groups must be a positive integer, not {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                             f"must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, not {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(name, "kernel_size", kernel_size, n)
        self.stride = _tuple(name, "stride", stride, n)
        self.dilation = _tuple(name, "dilation", dilation, n)
        self.padding = padding if isinstance(padding, str) else _tuple(name, "padding", padding, n)
        self._pads = _padding(name, self.padding, self.kernel_size, self.stride, self.dilation)
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(np.zeros(shape, dtype=np.float32))
        self.bias = Parameter(np.zeros(out_channels, dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's: kaiming_uniform_ with a = sqrt(5) (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), and
        the bias from the same range; fan_in = in_channels / groups * prod(kernel_size)."""
        fan_in = math.prod(self.weight.shape[1:])
        if fan_in == 0:
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        fn = conv1d if self._n == 1 else conv2d
        if self.padding_mode == "zeros":
            return fn(input, self.weight, self.bias, self.stride, self._pads[::2] if self._symmetric()
                      else self.padding, self.dilation, self.groups)
        # the other modes pad first (F.pad takes the last dimension first), then convolve unpadded
        pads = sum(((self._pads[2 * a], self._pads[2 * a + 1]) for a in reversed(range(self._n))), ())
        return fn(_pad(input, pads, mode=self.padding_mode), self.weight, self.bias, self.stride, 0,
                  self.dilation, self.groups)

    def _symmetric(self) -> bool:
        return all(self._pads[2 * a] == self._pads[2 * a + 1] for a in range(self._n))

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """A 2-D convolution layer (cross-correlation), as `torch.nn.Conv2d`.

    Args:
        in_channels, out_channels: channels of the input and of the output.
        kernel_size, stride, dilation: an int or a pair (height, width).
        padding: an int, a pair, "valid" or "same" (stride 1 only).
        groups: split the channels into this many groups convolved separately.
        bias: whether to add a learned bias per output channel.
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".

    Shape:
        - Input: (N, in_channels, H, W) or (in_channels, H, W)
        - Output: (N, out_channels, OH, OW), OH = floor((H + 2 pH - dH (kH - 1) - 1) / sH) + 1

    Attributes:
        weight: (out_channels, in_channels / groups, kH, kW).
        bias: (out_channels), or None.
    """

    _n, _name = 2, "Conv2d"


class Conv1d(_ConvNd):
    """A 1-D convolution layer (cross-correlation), as `torch.nn.Conv1d`; arguments as Conv2d's,
    each an int (or a 1-tuple).

    Shape:
        - Input: (N, in_channels, L) or (in_channels, L)
        - Output: (N, out_channels, OL), OL = floor((L + 2 p - d (k - 1) - 1) / s) + 1

    Attributes:
        weight: (out_channels, in_channels / groups, kernel_size).
        bias: (out_channels), or None.
    """

    _n, _name = 1, "Conv1d"


__all__ = ["Conv1d", "Conv2d", "conv1d", "conv2d"]
