"""Function forms of the arithmetic and bitwise methods, with PyTorch's names and argument
names: `minigrad.add(x, y, alpha=2)` is `x.add(y, alpha=2)`. Beside functions.py only to keep
each file short; each is one line handing the work to the method. A Python number as the first
argument becomes a tensor of its default dtype, as in PyTorch (`minigrad.pow(2, x)`)."""

from __future__ import annotations

from typing import Any

from .creation import as_tensor
from .tensor import Tensor


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return as_tensor(input).add(other, alpha=alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return as_tensor(input).sub(other, alpha=alpha)


subtract = sub


def mul(input: Any, other: Any) -> Tensor:
    return as_tensor(input) * other


multiply = mul


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    return as_tensor(input).div(other, rounding_mode=rounding_mode)


divide = div


def true_divide(input: Any, other: Any) -> Tensor:
    return as_tensor(input) / other


def floor_divide(input: Any, other: Any) -> Tensor:
    return as_tensor(input).floor_divide(other)


def neg(input: Any) -> Tensor:
    return -as_tensor(input)


negative = neg


def pow(input: Any, exponent: Any) -> Tensor:
    if not isinstance(input, Tensor) and isinstance(exponent, Tensor):
        return exponent.__rpow__(input)  # a number raised to a tensor: the tensor's dtype rule
    return as_tensor(input) ** exponent


def bitwise_and(input: Any, other: Any) -> Tensor:
    return as_tensor(input).bitwise_and(other)


def bitwise_or(input: Any, other: Any) -> Tensor:
    return as_tensor(input).bitwise_or(other)


def bitwise_xor(input: Any, other: Any) -> Tensor:
    return as_tensor(input).bitwise_xor(other)


def bitwise_not(input: Any) -> Tensor:
    return as_tensor(input).bitwise_not()
