"""Dtype conversions: the Cast op and the methods to, type, float, double, half, long, int, bool."""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

import numpy as np

from ..autograd import Function
from ..tensor import Tensor
from .table import method

# PyTorch's legacy type names (torch.FloatTensor, ...) of the numpy dtypes minigrad can hold.
TYPE_NAMES = {
    np.dtype(np.float16): "HalfTensor", np.dtype(np.float32): "FloatTensor",
    np.dtype(np.float64): "DoubleTensor", np.dtype(np.complex64): "ComplexFloatTensor",
    np.dtype(np.complex128): "ComplexDoubleTensor", np.dtype(np.int8): "CharTensor",
    np.dtype(np.int16): "ShortTensor", np.dtype(np.int32): "IntTensor",
    np.dtype(np.int64): "LongTensor", np.dtype(np.uint8): "ByteTensor",
    np.dtype(np.uint16): "UInt16Tensor", np.dtype(np.uint32): "UInt32Tensor",
    np.dtype(np.uint64): "UInt64Tensor", np.dtype(np.bool_): "BoolTensor",
}


_BY_NAME = {name: dtype for dtype, name in TYPE_NAMES.items()}


def type_name(dtype: np.dtype) -> str:
    """'minigrad.FloatTensor' for float32, and so on (torch's names, minigrad's prefix)."""
    return "minigrad." + TYPE_NAMES.get(np.dtype(dtype), f"{np.dtype(dtype).name.capitalize()}Tensor")


def dtype_of_type_name(name: str) -> np.dtype:
    """The dtype a type name such as 'minigrad.DoubleTensor' (or 'torch.DoubleTensor') names."""
    prefix, _, short = name.rpartition(".")
    if prefix not in ("minigrad", "torch") or short not in _BY_NAME:
        raise ValueError(f"type: invalid type {name!r}; pass a dtype (mg.float64) or a name such as "
                         "'minigrad.DoubleTensor'")
    return _BY_NAME[short]


class Cast(Function):
    """z = x converted to dtype       dx = g converted back to x's dtype

    Values past the new dtype's range become inf (or wrap, for integers) as numpy's astype
    makes them, silently, as in PyTorch: numpy would warn of the overflow."""

    @staticmethod
    def forward(ctx, x, *, dtype):
        ctx.in_dtype = x.dtype
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        with np.errstate(over="ignore", invalid="ignore"):
            return g.astype(ctx.in_dtype)


@method
def to(self, *args: Any, dtype: Any = None, copy: bool = False) -> Tensor:
    """This tensor with `dtype`, as torch's `to`: `x.to(mg.float64)`, `x.to(other)` (other's
    dtype), `x.to(dtype=...)`. Itself when it has that dtype already, unless copy=True.

    minigrad has one device, so there is no device argument.
    """
    if len(args) > 1:
        raise TypeError(f"to: expected one dtype or tensor, got {len(args)} arguments")
    if args:
        if dtype is not None:
            raise TypeError("to: the dtype was given both as an argument and as dtype=")
        dtype = args[0].dtype if isinstance(args[0], Tensor) else args[0]
    try:
        target = self.dtype if dtype is None else np.dtype(dtype)
    except TypeError:
        raise TypeError(f"to: expected a dtype or a tensor, not {dtype!r}") from None
    if target == self.dtype and not copy:
        return self  # type: ignore[return-value]
    if target.kind not in "fc":  # integer and boolean tensors never require grad
        return self._make(self.data.astype(target), None)
    return Cast.apply(self, dtype=target)


# ----------------------------------------------------------------------------- methods


@method
def type(self, dtype: Any = None) -> str | Tensor:
    """With no argument the type name ('minigrad.FloatTensor' for float32, as torch's
    'torch.FloatTensor'); else this tensor cast to `dtype`, a dtype or such a name."""
    if dtype is None:
        return type_name(self.dtype)
    if isinstance(dtype, str):
        dtype = dtype_of_type_name(dtype)
    return self.to(dtype)


@method
def float(self) -> Tensor:
    """This tensor as float32 (a copy unless it is float32 already); the gradient flows back
    in the input's dtype."""
    return self.to(np.float32)


@method
def double(self) -> Tensor:
    """This tensor as float64."""
    return self.to(np.float64)


@method
def half(self) -> Tensor:
    """This tensor as float16."""
    return self.to(np.float16)


@method
def long(self) -> Tensor:
    """This tensor as int64 (no gradient)."""
    return self.to(np.int64)


@method
def int(self) -> Tensor:
    """int32, rounding toward zero (as PyTorch's `.int()`)."""
    return self.to(np.int32)


@method
def bool(self) -> Tensor:
    """True where the value is nonzero."""
    return self.to(np.bool_)


# ----------------------------------------------------------------------------- dtype facts


class FloatInfo(NamedTuple):
    """What torch.finfo says of a floating dtype, as Python numbers."""

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str


class IntInfo(NamedTuple):
    """What torch.iinfo says of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: str


def finfo(type: Any = None) -> FloatInfo:
    """Facts of a floating dtype, as torch.finfo: `eps`, `max`, `min`, `tiny` (=
    `smallest_normal`), `resolution`, `bits`; of float32 (minigrad's default) without a type."""
    dtype = np.dtype(np.float32 if type is None else type)
    if dtype.kind != "f":
        raise TypeError(f"finfo: {dtype} is not a floating dtype; use iinfo for integers")
    i = np.finfo(dtype)
    number = builtins.float  # (this module's `float` is Tensor.float)
    # resolution as torch gives it: 10 ** -precision exactly, not rounded to the dtype
    return FloatInfo(i.bits, *(number(v) for v in (i.eps, i.max, i.min, i.tiny, i.smallest_normal)),
                     10.0 ** -i.precision, dtype.name)


def iinfo(type: Any) -> IntInfo:
    """Facts of an integer dtype, as torch.iinfo: `max`, `min`, `bits`."""
    dtype = np.dtype(type)
    if dtype.kind not in "iu":
        raise TypeError(f"iinfo: {dtype} is not an integer dtype; use finfo for floating ones")
    i = np.iinfo(dtype)
    return IntInfo(i.bits, builtins.int(i.max), builtins.int(i.min), dtype.name)
