"""Tensor methods with PyTorch's names for pointwise math, comparisons and logic (the
operators < <= > >= == != ~ & | among them), and argmax / argmin.

They live in a base class of Tensor, `PointwiseMethods`, only to keep tensor.py short; every
one is written out here. The differentiable ones hand the work to an op in
`minigrad.ops.pointwise` or `minigrad.ops.rounding`, or are one-line compositions of existing
ops; comparisons and logic give bool tensors outside the graph, as in PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .ops.elementwise import Where
from .ops.pointwise import (
    Acos,
    Asin,
    Atan,
    Atan2,
    Cos,
    Cosh,
    Erf,
    Expm1,
    Hypot,
    Log1p,
    Log2,
    Log10,
    LogAddExp,
    Sin,
    Sinh,
    Tan,
)
from .ops.promotion import result_type
from .ops.reduce import normalize_dims
from .ops.rounding import Ceil, Floor, Fmod, Remainder, Round, Sign, Trunc
from .tensor_shape import Dim

if TYPE_CHECKING:
    from .tensor import Tensor


def _array(x: Any) -> Any:
    return getattr(x, "data", x)


class PointwiseMethods:
    """The pointwise, comparison and logic methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    shape: tuple[int, ...]

    # ------------------------------------------------------------------ trigonometry

    def sin(self) -> Tensor:
        return Sin.apply(self._floating())

    def cos(self) -> Tensor:
        return Cos.apply(self._floating())

    def tan(self) -> Tensor:
        return Tan.apply(self._floating())

    def asin(self) -> Tensor:
        return Asin.apply(self._floating())

    def acos(self) -> Tensor:
        return Acos.apply(self._floating())

    def atan(self) -> Tensor:
        return Atan.apply(self._floating())

    def atan2(self, other: Any) -> Tensor:
        """The angle of the point (other, self), in (-pi, pi]."""
        return self._binary(Atan2, self, self._other(other))

    arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2

    def sinh(self) -> Tensor:
        return Sinh.apply(self._floating())

    def cosh(self) -> Tensor:
        return Cosh.apply(self._floating())

    # ------------------------------------------------------------------ exp, log and powers

    def exp2(self) -> Tensor:
        """z = 2**x; dx = g * z * ln 2."""
        return 2.0 ** self._floating()

    def expm1(self) -> Tensor:
        return Expm1.apply(self._floating())

    def log2(self) -> Tensor:
        return Log2.apply(self._floating())

    def log10(self) -> Tensor:
        return Log10.apply(self._floating())

    def log1p(self) -> Tensor:
        return Log1p.apply(self._floating())

    def logaddexp(self, other: Any) -> Tensor:
        return self._binary(LogAddExp, self, self._other(other))

    def hypot(self, other: Any) -> Tensor:
        return self._binary(Hypot, self, self._other(other))

    def erf(self) -> Tensor:
        return Erf.apply(self._floating())

    def reciprocal(self) -> Tensor:
        """z = 1 / x; dx = -g / x**2."""
        return 1 / self

    def rsqrt(self) -> Tensor:
        """z = 1 / sqrt(x); dx = -g / (2 * x**1.5)."""
        return self.sqrt().reciprocal()

    def square(self) -> Tensor:
        """z = x * x; dx = 2 * g * x."""
        return self * self

    def lerp(self, end: Any, weight: Any) -> Tensor:
        """self + weight * (end - self); weight is a number or a tensor (which then gets a gradient)."""
        return self + self._other(weight) * (self._other(end) - self)

    # ------------------------------------------------------------------ rounding (gradient 0)

    def sign(self) -> Tensor:
        return Sign.apply(self)

    def floor(self) -> Tensor:
        return Floor.apply(self)

    def ceil(self) -> Tensor:
        return Ceil.apply(self)

    def round(self, *, decimals: int = 0) -> Tensor:
        """Halves go to the even neighbour (2.5 -> 2), as in PyTorch."""
        return Round.apply(self, decimals=decimals)

    def trunc(self) -> Tensor:
        return Trunc.apply(self)

    fix = trunc

    def frac(self) -> Tensor:
        """x - trunc(x), with x's sign (frac(-1.5) = -0.5)."""
        return self - self.trunc()

    def remainder(self, other: Any) -> Tensor:
        """self - floor(self / other) * other: the sign of other, as Python's %."""
        return self._binary(Remainder, self, self._other(other))

    def fmod(self, other: Any) -> Tensor:
        """self - trunc(self / other) * other: the sign of self, as C's fmod."""
        return self._binary(Fmod, self, self._other(other))

    # ------------------------------------------------------------------ limits

    def clamp_min(self, min: float | Tensor) -> Tensor:
        """max(x, min) elementwise; gradient g where x > min, else 0 (clip with min only)."""
        return self.clip(min=min)

    def clamp_max(self, max: float | Tensor) -> Tensor:
        """min(x, max) elementwise; gradient g where x < max, else 0 (clip with max only)."""
        return self.clip(max=max)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """NaN -> nan, +inf -> posinf, -inf -> neginf (by default the dtype's largest and
        smallest finite values). Gradient: g where x is finite, 0 at the replaced places."""
        if self.data.dtype.kind not in "fc":  # integers have nothing to replace
            return self._make(self.data.copy(), None)
        filled = np.nan_to_num(self.data, nan=nan, posinf=posinf, neginf=neginf)
        return Where.apply(self._make(np.isfinite(self.data), None), self, self._make(filled, None))

    # ------------------------------------------------------------------ comparisons (no grad)

    def eq(self, other: Any) -> Tensor:
        """self == other elementwise, a bool tensor (no gradient)."""
        return self == other

    def ne(self, other: Any) -> Tensor:
        """self != other elementwise, a bool tensor (no gradient)."""
        return self != other

    def lt(self, other: Any) -> Tensor:
        """self < other elementwise, a bool tensor (no gradient)."""
        return self < other

    def le(self, other: Any) -> Tensor:
        """self <= other elementwise, a bool tensor (no gradient)."""
        return self <= other

    def gt(self, other: Any) -> Tensor:
        """self > other elementwise, a bool tensor (no gradient)."""
        return self > other

    def ge(self, other: Any) -> Tensor:
        """self >= other elementwise, a bool tensor (no gradient)."""
        return self >= other

    def _bools(self, values: Any) -> Tensor:
        return self._make(np.asarray(values, dtype=np.bool_), None)

    def isnan(self) -> Tensor:
        """True where the value is NaN (never for integers)."""
        return self._bools(np.isnan(self.data) if self.data.dtype.kind in "fc" else np.zeros(self.shape))

    def isinf(self) -> Tensor:
        """True where the value is +inf or -inf (never for integers)."""
        return self._bools(np.isinf(self.data) if self.data.dtype.kind in "fc" else np.zeros(self.shape))

    def isfinite(self) -> Tensor:
        """True where the value is neither NaN nor infinite (always for integers)."""
        return self._bools(np.isfinite(self.data) if self.data.dtype.kind in "fc" else np.ones(self.shape))

    def equal(self, other: Any) -> bool:
        """True when other has the same shape and the same values (NaN equals nothing)."""
        other = _array(other)
        return self.shape == np.shape(other) and bool(np.array_equal(self.data, other))

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
            raise ValueError(f"isclose: shapes {self.shape} and {other.shape} do not broadcast") from None
        if self.dtype == np.bool_:
            return self._bools(self.data == other.data)
        return self._bools(np.isclose(self.data, other.data, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """True when every element is close to other's: isclose(...).all(), as a Python bool."""
        return bool(self.isclose(other, rtol, atol, equal_nan).data.all())

    # ------------------------------------------------------------------ logic (no grad)

    def logical_not(self) -> Tensor:
        """True where the value is zero (False), a bool tensor."""
        return self._bools(np.logical_not(self.data))

    def logical_and(self, other: Any) -> Tensor:
        """True where both values are non-zero, a bool tensor."""
        return self._bools(np.logical_and(self.data, _array(other)))

    def logical_or(self, other: Any) -> Tensor:
        """True where either value is non-zero, a bool tensor."""
        return self._bools(np.logical_or(self.data, _array(other)))

    def logical_xor(self, other: Any) -> Tensor:
        """True where exactly one of the two values is non-zero, a bool tensor."""
        return self._bools(np.logical_xor(self.data, _array(other)))

    def all(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        """True where every value over dim (one, several, or all) is non-zero."""
        axis = normalize_dims(dim, self.ndim, "all") if self.ndim else None
        return self._bools(np.all(self.data, axis=axis, keepdims=keepdim))

    def any(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        """True where some value over dim (one, several, or all) is non-zero."""
        axis = normalize_dims(dim, self.ndim, "any") if self.ndim else None
        return self._bools(np.any(self.data, axis=axis, keepdims=keepdim))

    # ------------------------------------------------------------------ comparisons (no grad)

    def _compare(self, other: Any, op: Callable) -> Tensor:
        """op(self, other) elementwise, a bool tensor. A Python int beside an integer tensor is
        first wrapped to its dtype, as in PyTorch (int8 < 300 is int8 < 44; see scalar_array)."""
        if isinstance(other, int) and not isinstance(other, bool) and self.dtype.kind in "iu":
            other = self._other(other)
        return self._make(np.asarray(op(self.data, getattr(other, "data", other))), None)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater_equal)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    __hash__ = object.__hash__  # identity, as in PyTorch; __eq__ is elementwise

    # ------------------------------------------------------------------ bitwise (no grad)

    def _bitwise(self, other: Any, op: Callable, name: str) -> Tensor:
        """Bitwise on integers, logical on bools, as in PyTorch; the dtypes follow the one rule
        (int32 & 1 stays int32, bool & int64 is int64); a float operand is refused."""
        b = self._other(other) if other is not None else self
        dtype = result_type(self.data, b.data)
        if dtype.kind not in "biu":
            raise TypeError(f"{name}: bitwise ops take integer or bool tensors, got {self.dtype}"
                            + ("" if other is None else f" and {b.dtype}"))
        a, b = self.data.astype(dtype, copy=False), b.data.astype(dtype, copy=False)
        return self._make(np.asarray(op(a) if other is None else op(a, b)), None)

    def bitwise_and(self, other: Any) -> Tensor:
        """self & other on integer or bool tensors (no gradient)."""
        return self._bitwise(other, np.bitwise_and, "bitwise_and")

    def bitwise_or(self, other: Any) -> Tensor:
        """self | other on integer or bool tensors (no gradient)."""
        return self._bitwise(other, np.bitwise_or, "bitwise_or")

    def bitwise_xor(self, other: Any) -> Tensor:
        """self ^ other on integer or bool tensors (no gradient)."""
        return self._bitwise(other, np.bitwise_xor, "bitwise_xor")

    def bitwise_not(self) -> Tensor:
        """~x: each bit flipped for integers (~5 = -6), logical not for bools."""
        return self._bitwise(None, np.invert, "bitwise_not")

    __and__ = __rand__ = bitwise_and
    __or__ = __ror__ = bitwise_or
    __xor__ = __rxor__ = bitwise_xor
    __invert__ = bitwise_not

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the largest value over dim (of the flattened tensor without dim), int64."""
        return self._make(np.asarray(np.argmax(self.data, axis=dim, keepdims=keepdim)), None)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the smallest value over dim (of the flattened tensor without dim), int64."""
        return self._make(np.asarray(np.argmin(self.data, axis=dim, keepdims=keepdim)), None)
