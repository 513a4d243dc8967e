"""Comparisons, logic and bitwise ops: == != < <= > >= (eq, ne, lt, le, gt, ge), isnan, isinf,
isfinite, equal, isclose, allclose, logical_not/and/or/xor, bitwise_and/or/xor/not and the
operators & | ^ ~. They give bool (or integer) tensors outside the graph, as in PyTorch: none
has a gradient.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import ShapeError
from ..tensor import Tensor
from .promotion import result_type
from .table import method, op

# ----------------------------------------------------------------------------- methods


def _array(x: Any) -> Any:
    return getattr(x, "_data", x)


@op(inplace=True)
def eq(self, other: Any) -> Tensor:
    """self == other elementwise, a bool tensor (no gradient)."""
    return _checked(self, other, np.equal, "eq")


@op(inplace=True)
def ne(self, other: Any) -> Tensor:
    """self != other elementwise, a bool tensor (no gradient)."""
    return _checked(self, other, np.not_equal, "ne")


@op(inplace=True)
def lt(self, other: Any) -> Tensor:
    """self < other elementwise, a bool tensor (no gradient)."""
    return _checked(self, other, np.less, "lt")


@op(inplace=True)
def le(self, other: Any) -> Tensor:
    """self <= other elementwise, a bool tensor (no gradient)."""
    return _checked(self, other, np.less_equal, "le")


@op(inplace=True)
def gt(self, other: Any) -> Tensor:
    """self > other elementwise, a bool tensor (no gradient)."""
    return _checked(self, other, np.greater, "gt")


@op(inplace=True)
def ge(self, other: Any) -> Tensor:
    """self >= other elementwise, a bool tensor (no gradient)."""
    return _checked(self, other, np.greater_equal, "ge")


def bools(self, values: Any) -> Tensor:
    return self._make(np.asarray(values, dtype=np.bool_), None)


@op
def isnan(self) -> Tensor:
    """True where the value is NaN (never for integers)."""
    return bools(self, np.isnan(self._data) if self._data.dtype.kind in "fc" else np.zeros(self.shape))


@op
def isinf(self) -> Tensor:
    """True where the value is +inf or -inf (never for integers)."""
    return bools(self, np.isinf(self._data) if self._data.dtype.kind in "fc" else np.zeros(self.shape))


@op
def isfinite(self) -> Tensor:
    """True where the value is neither NaN nor infinite (always for integers)."""
    return bools(self, np.isfinite(self._data) if self._data.dtype.kind in "fc" else np.ones(self.shape))


@op
def equal(self, other: Any) -> bool:
    """True when other has the same shape and the same values (NaN equals nothing)."""
    other = _array(other)
    return self.shape == np.shape(other) and bool(np.array_equal(self._data, other))


@op
def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|self - other| <= atol + rtol * |other| elementwise (not symmetric, as in PyTorch);
    equal infinities are close; NaN is close to NaN only with equal_nan=True."""
    other = self._other(other)
    if other.dtype != self.dtype:
        raise TypeError(f"isclose: the input is {self.dtype} and other is {other.dtype}; both must "
                        f"have the same dtype, as in PyTorch (convert one with .to())")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol ({rtol}) and atol ({atol}) must be non-negative")
    try:
        np.broadcast_shapes(self.shape, other.shape)
    except ValueError:
        raise ShapeError(f"isclose: shapes {self.shape} and {other.shape} do not broadcast") from None
    if self.dtype == np.bool_:
        return bools(self, self._data == other._data)
    return bools(self, np.isclose(self._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@op
def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every element is close to other's: isclose(...).all(), as a Python bool."""
    return bool(self.isclose(other, rtol, atol, equal_nan)._data.all())


@op(inplace=True)
def logical_not(self) -> Tensor:
    """True where the value is zero (False), a bool tensor."""
    return bools(self, np.logical_not(self._data))


@op(inplace=True)
def logical_and(self, other: Any) -> Tensor:
    """True where both values are non-zero, a bool tensor."""
    return bools(self, np.logical_and(self._data, _array(other)))


@op(inplace=True)
def logical_or(self, other: Any) -> Tensor:
    """True where either value is non-zero, a bool tensor."""
    return bools(self, np.logical_or(self._data, _array(other)))


@op(inplace=True)
def logical_xor(self, other: Any) -> Tensor:
    """True where exactly one of the two values is non-zero, a bool tensor."""
    return bools(self, np.logical_xor(self._data, _array(other)))


_COMPARABLE = (Tensor, np.ndarray, np.generic, bool, int, float, complex)


def _compare(self, other: Any, op: Callable) -> Tensor:
    """op(self, other) elementwise, a bool tensor. A Python int beside an integer tensor is
    first wrapped to its dtype, as in PyTorch (int8 < 300 is int8 < 44; see scalar_array).

    Only a tensor, an array or a number compares elementwise; anything else (None, a list, a
    string) gives NotImplemented, as torch's operators do, so that Python decides: `x == None`
    is False, `x != None` True and `x < None` a TypeError."""
    if not isinstance(other, _COMPARABLE):
        return NotImplemented
    if isinstance(other, int) and not isinstance(other, bool) and self.dtype.kind in "iu":
        other = self._other(other)
    try:
        values = op(self._data, getattr(other, "_data", other))
    except TypeError:  # an object numpy cannot compare (pytest.approx): let it compare itself, as torch
        return NotImplemented
    return self._make(np.asarray(values), None)


def _checked(self, other: Any, op: Callable, name: str) -> Tensor:
    """The method form (x.eq(y), torch.eq(x, y)): as the operator, but what the operator leaves
    to Python (None, a list) is a TypeError naming the op, as in torch."""
    out = _compare(self, other, op)
    if out is NotImplemented:
        raise TypeError(f"{name}: compares a tensor with a tensor or a number, got a tensor of shape "
                        f"{self.shape} and {type(other).__name__} {other!r:.60}")
    return out


@method
def __lt__(self, other: Any) -> Tensor:
    return _compare(self, other, np.less)


@method
def __le__(self, other: Any) -> Tensor:
    return _compare(self, other, np.less_equal)


@method
def __gt__(self, other: Any) -> Tensor:
    return _compare(self, other, np.greater)


@method
def __ge__(self, other: Any) -> Tensor:
    return _compare(self, other, np.greater_equal)


@method
def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
    return _compare(self, other, np.equal)


@method
def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
    return _compare(self, other, np.not_equal)


def _bitwise(self, other: Any, op: Callable, name: str) -> Tensor:
    """Bitwise on integers, logical on bools, as in PyTorch; the dtypes follow the one rule
    (int32 & 1 stays int32, bool & int64 is int64); a float operand is refused."""
    b = self._other(other) if other is not None else self
    dtype = result_type(self._data, b._data)
    if dtype.kind not in "biu":
        raise TypeError(f"{name}: bitwise ops take integer or bool tensors, got {self.dtype}"
                        + ("" if other is None else f" and {b.dtype}"))
    a, b = self._data.astype(dtype, copy=False), b._data.astype(dtype, copy=False)
    return self._make(np.asarray(op(a) if other is None else op(a, b)), None)


@op(inplace=True)
def bitwise_and(self, other: Any) -> Tensor:
    """self & other on integer or bool tensors (no gradient)."""
    return _bitwise(self, other, np.bitwise_and, "bitwise_and")

method(bitwise_and, name="__and__")
method(bitwise_and, name="__rand__")


@op(inplace=True)
def bitwise_or(self, other: Any) -> Tensor:
    """self | other on integer or bool tensors (no gradient)."""
    return _bitwise(self, other, np.bitwise_or, "bitwise_or")

method(bitwise_or, name="__or__")
method(bitwise_or, name="__ror__")


@op(inplace=True)
def bitwise_xor(self, other: Any) -> Tensor:
    """self ^ other on integer or bool tensors (no gradient)."""
    return _bitwise(self, other, np.bitwise_xor, "bitwise_xor")

method(bitwise_xor, name="__xor__")
method(bitwise_xor, name="__rxor__")


@op(inplace=True)
def bitwise_not(self) -> Tensor:
    """~x: each bit flipped for integers (~5 = -6), logical not for bools."""
    return _bitwise(self, None, np.invert, "bitwise_not")

method(bitwise_not, name="__invert__")
