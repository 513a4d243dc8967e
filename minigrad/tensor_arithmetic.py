"""Tensor methods with PyTorch's names for arithmetic: add, sub, mul, div (with rounding_mode),
floor_divide, neg, pow, and the operators // and %.

They live in a base class of Tensor, `ArithmeticMethods`, only to keep tensor.py short; the
operators + - * / ** themselves are in tensor.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ops.rounding import Remainder, RoundedDivide

if TYPE_CHECKING:
    from .tensor import Tensor


class ArithmeticMethods:
    """The arithmetic methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()

    def _scaled(self, other: Any, alpha: Any, op: str) -> Any:
        """alpha * other, refusing a float alpha on integer tensors as PyTorch does."""
        if alpha == 1:
            return other
        if isinstance(alpha, float) and self.dtype.kind in "iub":
            raise TypeError(f"{op}: alpha={alpha} is a float, and the input is {self.dtype}; for integer "
                            "tensors alpha must be an integer, as in PyTorch")
        return self._other(other) * alpha

    def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
        """self + alpha * other."""
        return self + self._scaled(other, alpha, "add")

    def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        """self - alpha * other."""
        return self - self._scaled(other, alpha, "sub")

    subtract = sub

    def mul(self, other: Any) -> Tensor:
        return self * other

    multiply = mul

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """self / other: true division (an integer tensor gives float32), or rounded with
        rounding_mode="floor" (Python's //) or "trunc" (toward 0), keeping integer dtypes."""
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("floor", "trunc"):
            raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
        return self._binary(RoundedDivide, self, self._other(other), mode=rounding_mode)

    divide = div

    def true_divide(self, other: Any) -> Tensor:
        """self / other, always true (float) division."""
        return self / other

    def floor_divide(self, other: Any) -> Tensor:
        """floor(self / other), as Python's // (and PyTorch's since 1.13)."""
        return self.div(other, rounding_mode="floor")

    def neg(self) -> Tensor:
        return -self

    negative = neg

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def __floordiv__(self, other: Any) -> Tensor:
        return self.floor_divide(other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return self._other(other).floor_divide(self)

    def __mod__(self, other: Any) -> Tensor:
        return self._binary(Remainder, self, self._other(other))

    def __rmod__(self, other: Any) -> Tensor:
        return self._binary(Remainder, self._other(other), self)
