"""The integer-valued pointwise ops: sign, floor, ceil, round, trunc (piecewise constant, so
their gradient is 0, as in PyTorch), and remainder and fmod (whose gradient in the divisor is
the integer quotient).

Each docstring gives the forward and the gradient; `g` is the upstream gradient. `frac` is the
composition x - trunc(x), a method without a Function of its own; floor_divide, // and % are
declared here too (div's rounding_mode is in arithmetic.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Function
from ..tensor import Tensor
from . import either
from .promotion import promote
from .table import method, op

# ----------------------------------------------------------------------------- rounding (gradient 0)


def _kept(x: np.ndarray) -> bool:
    """Integers and bools are already whole: the rounding ops return them unchanged (numpy's
    floor would make int64 float64; PyTorch keeps the dtype)."""
    return x.dtype.kind in "iub"


class PiecewiseConstant(Function):
    """An op whose output is constant between its jumps: dx = 0 everywhere (PyTorch's choice
    at the jumps too). Subclasses define forward only.

    Under create_graph the zeros are a constant of the graph: every higher derivative is 0."""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(either.values(g))


class Sign(PiecewiseConstant):
    """z = [x > 0] - [x < 0] in {-1, 0, 1}; sign(nan) = 0, as in PyTorch (numpy: nan)     dx = 0"""

    @staticmethod
    def forward(ctx, x):
        if x.dtype.kind == "b":
            return x.copy()
        return np.subtract(x > 0, x < 0, dtype=x.dtype)


@op(inplace=True)
def sign(self) -> Tensor:
    return Sign.apply(self)


class Floor(PiecewiseConstant):
    """z = floor(x)      dx = 0"""

    @staticmethod
    def forward(ctx, x):
        return x.copy() if _kept(x) else np.floor(x)


@op(inplace=True, inplace_function=True)
def floor(self) -> Tensor:
    return Floor.apply(self)


class Ceil(PiecewiseConstant):
    """z = ceil(x)       dx = 0"""

    @staticmethod
    def forward(ctx, x):
        return x.copy() if _kept(x) else np.ceil(x)


@op(inplace=True, inplace_function=True)
def ceil(self) -> Tensor:
    return Ceil.apply(self)


class Round(PiecewiseConstant):
    """z = x rounded to `decimals` places, halves to even (round(2.5) = 2, as PyTorch)     dx = 0"""

    @staticmethod
    def forward(ctx, x, *, decimals=0):
        if _kept(x) and decimals >= 0:
            return x.copy()
        return np.round(x, decimals)


@op(inplace=True, inplace_function=True)
def round(self, *, decimals: int = 0) -> Tensor:
    """Halves go to the even neighbour (2.5 -> 2), as in PyTorch."""
    return Round.apply(self, decimals=decimals)


class Trunc(PiecewiseConstant):
    """z = x rounded toward 0       dx = 0"""

    @staticmethod
    def forward(ctx, x):
        return x.copy() if _kept(x) else np.trunc(x)


@op(inplace=True, inplace_function=True, aliases=("fix",))
def trunc(self) -> Tensor:
    return Trunc.apply(self)



# ----------------------------------------------------------------------------- remainders


def _no_integer_zero(a: np.ndarray, b: np.ndarray, op: str) -> None:
    if a.dtype.kind in "iub" and not np.all(b):
        raise ZeroDivisionError(f"{op}: an integer divisor is 0 (at {int((b == 0).sum())} place(s)); "
                                "PyTorch raises here too: mask the zeros out or use a float divisor")


class Remainder(Function):
    """z = a - floor(a / b) * b, the sign of b (Python's %, torch.remainder)
    da = g,   db = -g * floor(a / b)   (floor(a / b), piecewise constant, is a constant of the graph)
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:
            a, b = promote(a, b)
        _no_integer_zero(a, b, "remainder")
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.mod(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        if not ctx.needs_input_grad[1]:
            return g, None
        with np.errstate(divide="ignore", invalid="ignore"):
            return g, -g * np.floor_divide(either.values(a), either.values(b))


@method
def __mod__(self, other: Any) -> Tensor:
    return self._binary(Remainder, self, self._other(other))


@method
def __rmod__(self, other: Any) -> Tensor:
    return self._binary(Remainder, self._other(other), self)


@op(inplace=True)
def remainder(self, other: Any) -> Tensor:
    """self - floor(self / other) * other: the sign of other, as Python's %."""
    return self._binary(Remainder, self, self._other(other))


class Fmod(Function):
    """z = a - trunc(a / b) * b, the sign of a (C's fmod, torch.fmod)
    da = g,   db = -g * trunc(a / b)   (trunc(a / b), piecewise constant, is a constant of the graph)
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:
            a, b = promote(a, b)
        _no_integer_zero(a, b, "fmod")
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        if not ctx.needs_input_grad[1]:
            return g, None
        with np.errstate(divide="ignore", invalid="ignore"):
            return g, -g * np.trunc(either.values(a) / either.values(b))


@op(inplace=True)
def fmod(self, other: Any) -> Tensor:
    """self - trunc(self / other) * other: the sign of self, as C's fmod."""
    return self._binary(Fmod, self, self._other(other))


# ----------------------------------------------------------------------------- rounded division


def floor_divide_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """floor(a / b) as PyTorch computes it for floats: from the exact remainder fmod(a, b), so
    that 0.3 // 0.1 is 3 where the rounded quotient 2.9999... would floor to 2."""
    if a.dtype.kind in "iub":
        return np.floor_divide(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        mod = np.fmod(a, b)
        div = (a - mod) / b
        div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
        floor = np.floor(div)
        floor = np.where(div - floor > 0.5, floor + 1, floor)
        quotient = a / b
        out = np.where(div != 0, floor, np.copysign(np.zeros_like(div), quotient))
        return np.where(b == 0, quotient, out).astype(a.dtype, copy=False)


class RoundedDivide(Function):
    """z = floor(a / b) (mode "floor", Python's //) or trunc(a / b) (mode "trunc")
    da = 0,   db = 0 (piecewise constant, as PyTorch's div with a rounding mode)

    Integers stay integers (7 // 2 = 3, -7 // 2 = -4, trunc: -3); an integer divisor of 0 raises.
    """

    differentiable_backward = True  # see graph_backward.py: the zeros are constants of the graph

    @staticmethod
    def forward(ctx, a, b, *, mode="floor"):
        if a.dtype is not b.dtype:
            a, b = promote(a, b)
        if a.dtype.kind == "b":
            a, b = a.astype(np.int64), b.astype(np.int64)
        _no_integer_zero(a, b, f"div(rounding_mode={mode!r})")
        if mode == "floor":
            return floor_divide_arrays(a, b)
        if a.dtype.kind in "iu":  # trunc on integers: the floor, moved up by one when the signs differ
            q = np.floor_divide(a, b)
            return q + ((q < 0) & (q * b != a)).astype(q.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.trunc(a / b)

    @staticmethod
    def backward(ctx, g):
        g = either.values(g)
        return np.zeros_like(g), np.zeros_like(g)


# ----------------------------------------------------------------------------- methods


@op(inplace=True)
def floor_divide(self, other: Any) -> Tensor:
    """floor(self / other), as Python's // (and PyTorch's since 1.13)."""
    return self.div(other, rounding_mode="floor")


@method
def __floordiv__(self, other: Any) -> Tensor:
    return self.floor_divide(other)


@method
def __rfloordiv__(self, other: Any) -> Tensor:
    return self._other(other).floor_divide(self)


@op(inplace=True, inplace_function=True)
def frac(self) -> Tensor:
    """x - trunc(x), with x's sign (frac(-1.5) = -0.5)."""
    return self - self.trunc()
