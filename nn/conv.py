"""Convolutions, as in PyTorch: `F.conv1d`, `F.conv2d` and the layers `Conv1d`, `Conv2d`, and
the transposed ones `F.conv_transpose1d`, `F.conv_transpose2d`, `ConvTranspose1d`, `ConvTranspose2d`.

Both are the one 2-D kernel (`conv_kernels.Conv2dOp`: im2col and a matrix product); a 1-D
convolution is the 2-D one on inputs of height 1. Layouts are PyTorch's: NCL and NCHW inputs,
weights (out_channels, in_channels / groups, *kernel_size). A transposed convolution is the
input gradient of a convolution as an op (`conv_kernels.ConvTranspose2dOp`: col2im of a matrix
product), its weight laid out (in_channels, out_channels / groups, *kernel_size) as torch's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Tensor
from minigrad.device import check_device
from minigrad.errors import ShapeError

from . import init
from ._checks import _need_tensor, _where
from .conv_kernels import Conv2dOp, ConvTranspose2dOp, transpose_out_size
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


def _check_dtypes(fn: str, x: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """Float input and weight, and parameters of the input's dtype."""
    if x.dtype.kind != "f" or weight.dtype.kind != "f":
        raise TypeError(f"{fn}: input of dtype {x.dtype} and weight of dtype {weight.dtype}: both must "
                        "be floating point (convert with x.float())")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:  # as torch: no silent promotion of the parameters
            raise TypeError(f"{fn}: input of dtype {x.dtype} and {what} of dtype {t.dtype} differ{_where()}; "
                            f"convert the input with x.to({t.dtype.name}) or the layer with .to(...)")


def _check_ranks(fn: str, x: Tensor, weight: Tensor, groups: int, n: int, layout: str) -> None:
    """What a convolution and a transposed one share: tensors of n + 2 dimensions (the weight's
    first two named by `layout`) and a positive int of groups."""
    _need_tensor(fn, "the input", x)
    _need_tensor(fn, "the weight", weight)
    if weight.ndim != n + 2:
        raise ShapeError(f"{fn}: weight of shape {weight.shape} must have {n + 2} dimensions "
                         f"({layout}, {', '.join('k' * n)})")
    if x.ndim != n + 2:
        raise ShapeError(f"{fn}: expected an input of {n + 2} dimensions (batched) or {n + 1} "
                         f"(unbatched), got shape {x.shape}{_where()}")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{fn}: groups must be a positive int, not {groups!r}")


def _check(fn: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int, n: int) -> None:
    """The shape rules of a convolution, with errors naming fn and the shapes."""
    _check_ranks(fn, x, weight, groups, n, "out_channels, in_channels / groups")
    if weight.shape[0] % groups:
        raise ShapeError(f"{fn}: groups={groups} must divide the weight's out_channels, but the weight "
                         f"has shape {weight.shape}")
    if x.shape[1] != weight.shape[1] * groups:
        raise ShapeError(f"{fn}: with groups={groups}, weight of shape {weight.shape} expects an input "
                         f"with {weight.shape[1] * groups} channels, but the input of shape {x.shape} "
                         f"has {x.shape[1]}{_where()}")
    if bias is not None:
        _need_tensor(fn, "the bias", bias)
        if bias.shape != weight.shape[:1]:
            raise ShapeError(f"{fn}: bias has shape {bias.shape} but weight {weight.shape} needs "
                             f"{weight.shape[:1]} (one per output channel)")
    _check_dtypes(fn, x, weight, bias)


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
            raise ShapeError(
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
        return _conv_repr(self)


def _conv_repr(layer: Module) -> str:
    """torch's extra_repr of a convolution layer, plain or transposed: the settings that are not
    their defaults, in torch's order."""
    n = layer._n
    s = f"{layer.in_channels}, {layer.out_channels}, kernel_size={layer.kernel_size}, stride={layer.stride}"
    if layer.padding != (0,) * n:
        s += f", padding={layer.padding}"
    if layer.dilation != (1,) * n:
        s += f", dilation={layer.dilation}"
    if getattr(layer, "output_padding", (0,) * n) != (0,) * n:
        s += f", output_padding={layer.output_padding}"
    if layer.groups != 1:
        s += f", groups={layer.groups}"
    if layer.bias is None:
        s += ", bias=False"
    if layer.padding_mode != "zeros":
        s += f", padding_mode={layer.padding_mode}"
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


# ----------------------------------------------------------------------------- transposed


def _check_transpose(fn: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int, n: int) -> None:
    """The shape rules of a transposed convolution (weight (C_in, C_out / groups, *k)), with
    errors naming fn and the shapes."""
    _check_ranks(fn, x, weight, groups, n, "in_channels, out_channels / groups")
    if weight.shape[0] % groups:
        raise ShapeError(f"{fn}: groups={groups} must divide the weight's in_channels (its first "
                         f"dimension), but the weight has shape {weight.shape}")
    if x.shape[1] != weight.shape[0]:
        raise ShapeError(f"{fn}: weight of shape {weight.shape} expects an input with {weight.shape[0]} "
                         f"channels, but the input of shape {x.shape} has {x.shape[1]}{_where()}")
    if 0 in x.shape[2:]:
        raise ShapeError(f"{fn}: the input of shape {x.shape} has a spatial dimension of size 0{_where()}")
    if bias is not None:
        _need_tensor(fn, "the bias", bias)
        if bias.shape != (weight.shape[1] * groups,):
            raise ShapeError(f"{fn}: bias has shape {bias.shape} but weight {weight.shape} with "
                             f"groups={groups} needs ({weight.shape[1] * groups},) (one per output channel)")
    _check_dtypes(fn, x, weight, bias)


def _conv_transpose(fn: str, n: int, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                    padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    """The n-d transposed convolution (n = 1, 2) through the 2-D kernel; an unbatched input gets
    a batch of 1."""
    _need_tensor(fn, "the input", x)
    unbatched = x.ndim == n + 1
    if unbatched:
        x = x.unsqueeze(0)
    _check_transpose(fn, x, weight, bias, groups, n)
    kernel = tuple(weight.shape[2:])
    stride, dilation = _tuple(fn, "stride", stride, n), _tuple(fn, "dilation", dilation, n)
    pads, extra = _tuple(fn, "padding", padding, n), _tuple(fn, "output_padding", output_padding, n)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ValueError(f"{fn}: stride {stride} and dilation {dilation} must be positive")
    if any(p < 0 for p in pads) or any(q < 0 for q in extra):
        raise ValueError(f"{fn}: negative padding {pads} or output_padding {extra} is not supported")
    if any(q >= s and q >= d for q, s, d in zip(extra, stride, dilation)):
        raise ShapeError(f"{fn}: output_padding {extra} must be smaller than either the stride {stride} "
                         f"or the dilation {dilation} along every dimension")
    out = tuple(transpose_out_size(size, *a) for size, a in
                zip(x.shape[2:], zip(kernel, stride, pads, extra, dilation)))
    if min(out) < 1:
        raise ShapeError(f"{fn}: the output size {out} is too small (input of shape {x.shape}, weight "
                         f"{weight.shape}, stride {stride}, padding {pads}, output_padding {extra}, "
                         f"dilation {dilation}){_where()}")
    if n == 1:  # height 1: the kernel and the options get a leading 1 / 0
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, dilation, pads, extra = (1,) + stride, (1,) + dilation, (0,) + pads, (0,) + extra
    args = (x, weight) if bias is None else (x, weight, bias)
    y = ConvTranspose2dOp.apply(*args, stride=stride, padding=pads, output_padding=extra, dilation=dilation,
                                groups=groups)
    if n == 1:
        y = y.squeeze(2)
    return y.squeeze(0) if unbatched else y


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d with respect to its input), as torch's.

    Each input pixel adds its channels' kernels, weighted by its values, onto the output at
    (h s, w s), stamps overlapping where the kernel is larger than the stride; padding crops
    every side of that, and output_padding adds rows and columns at the bottom and right (it
    must be smaller than the stride or the dilation). conv2d with the same options maps an
    output of this shape back to the input's.

    Shape:
        input: (N, C, H, W) or (C, H, W); weight: (C, O / groups, kH, kW); bias: (O);
        output: (N, O, OH, OW) with OH = (H - 1) sH - 2 pH + dH (kH - 1) + opH + 1.
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution: conv_transpose2d on inputs of height 1.

    Shape:
        input: (N, C, L) or (C, L); weight: (C, O / groups, k); bias: (O);
        output: (N, O, OL) with OL = (L - 1) s - 2 p + d (k - 1) + output_padding + 1.
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                           groups, dilation)


class _ConvTransposeNd(Module):
    """What ConvTranspose1d and ConvTranspose2d share: arguments, parameters, initialisation,
    and the output_padding that a requested output_size picks."""

    _n = 2
    _name = "ConvTranspose2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None, dtype: Any = None):
        name, n = self._name, self._n
        check_device(device, name)
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        if dtype.kind != "f":
            raise TypeError(f"{name}: dtype must be a floating point dtype, not {dtype}")
        if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
            raise ValueError(f"{name}: groups must be a positive integer, not {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                             f"must be divisible by groups ({groups})")
        if padding_mode != "zeros":  # torch: the other modes have no meaning for the transpose
            raise ValueError(f"{name}: only the 'zeros' padding_mode is supported, not {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(name, "kernel_size", kernel_size, n)
        self.stride = _tuple(name, "stride", stride, n)
        self.padding = _tuple(name, "padding", padding, n)
        self.output_padding = _tuple(name, "output_padding", output_padding, n)
        self.dilation = _tuple(name, "dilation", dilation, n)
        self.padding_mode = padding_mode
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(np.zeros(shape, dtype=dtype))
        self.bias = Parameter(np.zeros(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's: kaiming_uniform_ with a = sqrt(5) (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), and
        the bias from the same range; fan_in is computed from the weight's layout as for any
        weight, weight.size(1) * prod(kernel_size) = out_channels / groups * prod(kernel_size)."""
        fan_in = math.prod(self.weight.shape[1:])
        if fan_in == 0:
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """self.output_padding, or the one that gives output_size (its spatial sizes, or all of
        the output's): each must lie between the smallest output and that plus stride - 1."""
        if output_size is None:
            return self.output_padding
        n, name = self._n, self._name
        _need_tensor(name, "the input", input)
        lead = 2 if input.ndim == n + 2 else 1
        size = [int(s) for s in output_size]
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ShapeError(f"{name}: for an input of {input.ndim} dimensions, output_size must have {n} or "
                             f"{lead + n} elements (got {len(size)}: {tuple(output_size)})")
        smallest = [transpose_out_size(input.shape[lead + a], self.kernel_size[a], self.stride[a],
                                       self.padding[a], 0, self.dilation[a]) for a in range(n)]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(not lo <= s <= hi for s, lo, hi in zip(size, smallest, largest)):
            raise ShapeError(f"{name}: requested an output size of {tuple(size)}, but valid sizes range from "
                             f"{smallest} to {largest} (for an input of shape {input.shape}){_where()}")
        return tuple(s - lo for s, lo in zip(size, smallest))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        fn = conv_transpose1d if self._n == 1 else conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)

    def extra_repr(self) -> str:
        return _conv_repr(self)


class ConvTranspose2d(_ConvTransposeNd):
    """A 2-D transposed convolution layer, as `torch.nn.ConvTranspose2d`: the gradient of a
    Conv2d with respect to its input, an upsampling by the stride with learned kernels.

    Args:
        in_channels, out_channels: channels of the input and of the output.
        kernel_size, stride, padding, dilation: an int or a pair (height, width); padding
            removes that many rows and columns from every side of the full output.
        output_padding: rows and columns added at the bottom and right (smaller than the stride
            or the dilation), so that several input sizes of a strided Conv2d can be reached;
            forward's output_size picks it instead.
        groups: split the channels into this many groups convolved separately.
        bias: whether to add a learned bias per output channel.
        padding_mode: "zeros" only (as torch).
        device: the CPU only; dtype: the parameters' float dtype (float32 by default).

    Shape:
        - Input: (N, in_channels, H, W) or (in_channels, H, W)
        - Output: (N, out_channels, OH, OW),
          OH = (H - 1) sH - 2 pH + dH (kH - 1) + output_padding[0] + 1

    Attributes:
        weight: (in_channels, out_channels / groups, kH, kW).
        bias: (out_channels), or None.
    """

    _n, _name = 2, "ConvTranspose2d"


class ConvTranspose1d(_ConvTransposeNd):
    """A 1-D transposed convolution layer, as `torch.nn.ConvTranspose1d`; arguments as
    ConvTranspose2d's, each an int (or a 1-tuple).

    Shape:
        - Input: (N, in_channels, L) or (in_channels, L)
        - Output: (N, out_channels, OL), OL = (L - 1) s - 2 p + d (k - 1) + output_padding + 1

    Attributes:
        weight: (in_channels, out_channels / groups, kernel_size).
        bias: (out_channels), or None.
    """

    _n, _name = 1, "ConvTranspose1d"


__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "conv1d", "conv2d",
           "conv_transpose1d", "conv_transpose2d"]
