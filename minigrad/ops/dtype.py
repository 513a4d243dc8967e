"""Dtypes: the Cast op and the methods to, type, type_as, float, double, half, long, int, bool;
the dtype questions (is_floating_point, is_complex, is_signed, is_nonzero, is_tensor); torch's
dtype names and legacy tensor types; finfo and iinfo."""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

import numpy as np

from ..autograd import Function
from ..device import check_device, is_device
from ..tensor import Tensor
from . import either
from .table import function, method, op

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

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dtype):
        ctx.in_dtype = x.dtype
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        with np.errstate(over="ignore", invalid="ignore"):
            return either.astype(g, ctx.in_dtype)


@method
def to(self, *args: Any, device: Any = None, dtype: Any = None, non_blocking: bool = False,
       copy: bool = False, memory_format: Any = None) -> Tensor:
    """This tensor with `dtype` on `device`, as torch's `to`: `x.to(mg.float64)`, `x.to("cpu")`,
    `x.to(device, dtype)`, `x.to(other)` (other's dtype), `x.to(device=..., dtype=...)`. Itself
    when nothing changes, unless copy=True. The device must be the CPU, minigrad's one device
    (any other is an error naming it); non_blocking and memory_format are accepted and change
    nothing here.
    """
    if args and is_device(args[0]):
        if device is not None:
            raise TypeError("to: the device was given both as an argument and as device=")
        device, args = args[0], args[1:]
    check_device(device, "to")
    if len(args) > 1:
        raise TypeError(f"to: expected a device, a dtype or a tensor, got {len(args)} more arguments")
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
        return self._make(self._data.astype(target), None)
    return Cast.apply(self, dtype=target)


# ----------------------------------------------------------------------------- methods


@method
def cpu(self, memory_format: Any = None) -> Tensor:
    """This tensor itself, as torch's `cpu()` of a tensor on the CPU (minigrad's one device)."""
    return self


@method
def cuda(self, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Tensor:
    """Refused with an error naming the device: minigrad computes on the CPU only."""
    index = device if isinstance(device, builtins.int) else getattr(device, "index", None)
    check_device("cuda" if index is None else f"cuda:{index}", "cuda")  # (always raises)
    return self


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
def type_as(self, other: Tensor) -> Tensor:
    """This tensor in other's dtype (itself when it has it already)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as: expected a Tensor, got {builtins.type(other).__name__}")
    return self.to(other.dtype)


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


# ----------------------------------------------------------------------------- dtype questions


@op
def is_floating_point(self) -> builtins.bool:
    """True for a float16, float32 or float64 tensor."""
    return self._data.dtype.kind == "f"


@op
def is_complex(self) -> builtins.bool:
    """True for a complex64 or complex128 tensor."""
    return self._data.dtype.kind == "c"


@op
def is_signed(self) -> builtins.bool:
    """True unless the dtype is unsigned (uint8, ...) or bool, as torch's."""
    return self._data.dtype.kind not in "ub"


@op
def is_nonzero(self) -> builtins.bool:
    """The truth of a one-element tensor; any other size is torch's RuntimeError."""
    if self._data.size != 1:
        raise RuntimeError(f"is_nonzero: a tensor of {self._data.size} elements (shape "
                           f"{self._data.shape}) has no single truth value")
    return builtins.bool(self._data.reshape(()) != 0)


@method
def is_contiguous(self, memory_format: Any = None) -> builtins.bool:
    """True: a minigrad tensor's values are always one dense block, for the ops that ask."""
    return True


@function
def is_tensor(obj: Any) -> builtins.bool:
    """True if obj is a Tensor (a Parameter is one)."""
    return isinstance(obj, Tensor)


@function
def get_default_dtype() -> np.dtype:
    """float32: the dtype Python floats become (minigrad's, as torch's, default)."""
    return np.dtype(np.float32)


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


# ----------------------------------------------------------------------------- dtype names

# torch's dtype names and aliases (torch.long is torch.int64, ...), each bound to numpy's one
# dtype object of its kind: `x.dtype is mg.float32` and `x.dtype == mg.long` hold as torch code
# expects. (bfloat16 is missing: numpy has no such dtype.)
DTYPE_NAMES = {
    name: np.dtype(kind) for names, kind in [
        (("float32", "float"), np.float32), (("float64", "double"), np.float64),
        (("float16", "half"), np.float16), (("complex64", "cfloat"), np.complex64),
        (("complex128", "cdouble"), np.complex128), (("int8",), np.int8), (("int16", "short"), np.int16),
        (("int32", "int"), np.int32), (("int64", "long"), np.int64), (("uint8",), np.uint8),
        (("uint16",), np.uint16), (("uint32",), np.uint32), (("uint64",), np.uint64),
        (("bool",), np.bool_),
    ] for name in names
}


class LegacyTensorType(builtins.type):
    """The type of torch's legacy constructors: `LongTensor([1, 2])` makes an int64 tensor of
    the data, `FloatTensor(2, 3)` an uninitialised float32 one of that shape, and
    `isinstance(x, FloatTensor)` asks whether x is a float32 tensor."""

    dtype: np.dtype

    def __call__(cls, *args: Any) -> Tensor:
        if all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args):
            return Tensor._make(np.empty(args, dtype=cls.dtype), None)  # a shape (or () for empty)
        if len(args) > 1:
            raise TypeError(f"{cls.__name__}: expected data or sizes, got {args!r}")
        return Tensor._make(np.array(args[0]._data if isinstance(args[0], Tensor) else args[0],
                                     dtype=cls.dtype), None)

    def __instancecheck__(cls, obj: Any) -> builtins.bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype


LEGACY_TYPES = {
    short: LegacyTensorType(short, (), {"dtype": dtype, "__doc__": f"torch's legacy {dtype.name} tensor type "
                                        f"and constructor ({short}(data) or {short}(*sizes))."})
    for dtype, short in TYPE_NAMES.items()
}
