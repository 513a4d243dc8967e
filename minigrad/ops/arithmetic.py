"""Arithmetic: + - * / ** and negation, with their methods add, sub, mul, div, true_divide,
neg and pow (and the operators).

Each docstring gives the forward and the gradient; `g` is the upstream gradient. Binary ops
broadcast, and the engine sums their gradients back to each input's shape. div with a
rounding mode, floor_divide, % and fmod are in rounding.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Function
from ..creation import as_tensor
from ..tensor import Tensor
from . import either
from .promotion import promote, true_div_operands  # (the one dtype rule)
from .rounding import RoundedDivide
from .table import function, method, op

# ----------------------------------------------------------------------------- arithmetic


class Add(Function):
    """z = a + b        da = g,  db = g"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


@method
def __add__(self, other: Any) -> Tensor:
    return self._binary(Add, self, self._other(other))


@method
def __radd__(self, other: Any) -> Tensor:
    return self._binary(Add, self._other(other), self)


class Sub(Function):
    """z = a - b        da = g,  db = -g"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        return a - b

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


@method
def __sub__(self, other: Any) -> Tensor:
    return self._binary(Sub, self, self._other(other))


@method
def __rsub__(self, other: Any) -> Tensor:
    return self._binary(Sub, self._other(other), self)


class Mul(Function):
    """z = a * b        da = g * b,  db = g * a"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        da, db = ctx.needs_input_grad
        return (g * b if da else None), (g * a if db else None)


@method
def __mul__(self, other: Any) -> Tensor:
    return self._binary(Mul, self, self._other(other))


@method
def __rmul__(self, other: Any) -> Tensor:
    return self._binary(Mul, self._other(other), self)


class Div(Function):
    """z = a / b        da = g / b,  db = -g * a / b**2 = -g * z / b"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype or a.dtype.kind in "iub":
            a, b = true_div_operands(a, b)
        z = a / b
        ctx.save_for_backward(b, z)
        return z

    @staticmethod
    def backward(ctx, g):
        b, z = ctx.saved
        da = g / b
        return da, (-da * z if ctx.needs_input_grad[1] else None)


@method
def __truediv__(self, other: Any) -> Tensor:
    return self._binary(Div, self, self._other(other))


@method
def __rtruediv__(self, other: Any) -> Tensor:
    return self._binary(Div, self._other(other), self)


class Neg(Function):
    """z = -x           dx = -g"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, g):
        return -g


@method
def __neg__(self) -> Tensor:
    return Neg.apply(self)


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b. numpy's float32 pow goes through a slow libm call (x**3 on a million floats
    took 70 ms here, x*x*x 1 ms), so a scalar exponent of 1, 2 or 3 multiplies instead."""
    if b.ndim == 0 and a.dtype == np.result_type(a, b):
        e = b.item()
        if e == 1:
            return a.copy()
        if e == 2:
            return a * a
        if e == 3:
            return a * a * a
    return a**b


class Pow(Function):
    """z = a ** b       da = g * b * a**(b-1),  db = g * z * log(a)

    db is computed only when the exponent requires grad (log(a) needs a > 0). At a = 0 the
    rules meet 0 * inf; as in PyTorch, da = 0 where b = 0 and db = 0 where b >= 0.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf and nan, silently,
            z = power(a, b)  # as in PyTorch: (-8) ** 0.5, 0 ** -1
        ctx.save_for_backward(a, b, z)
        return z

    @staticmethod
    def backward(ctx, g):
        a, b, z = ctx.saved
        zero = np.zeros((), dtype=g.dtype)
        av, bv = either.values(a), either.values(b)
        da = db = None
        if ctx.needs_input_grad[0]:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                da = g * b * (power(a, b - 1) if type(a) is np.ndarray else a ** (b - 1))
            if not bv.all():  # a**0 is the constant 1, even at a = 0 (or tiny a, where a**-1 overflows)
                da = either.where(bv == 0, zero, da)
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                db = g * z * either.log(a)
            if not av.all():
                db = either.where((av == 0) & (bv >= 0), zero, db)
        return da, db


@method
def __pow__(self, exponent: Any) -> Tensor:
    return self._binary(Pow, self, self._other(exponent))


@method
def __rpow__(self, base: Any) -> Tensor:
    return self._binary(Pow, self._other(base), self)


# ----------------------------------------------------------------------------- methods


def _scaled(self, other: Any, alpha: Any, op: str) -> Any:
    """alpha * other, refusing a float alpha on integer tensors as PyTorch does."""
    if alpha == 1:
        return other
    if isinstance(alpha, float) and self.dtype.kind in "iub":
        raise TypeError(f"{op}: alpha={alpha} is a float, and the input is {self.dtype}; for integer "
                        "tensors alpha must be an integer, as in PyTorch")
    return self._other(other) * alpha


@op(inplace=True)
def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
    """self + alpha * other."""
    return self + _scaled(self, other, alpha, "add")


@op(inplace=True, aliases=("subtract",))
def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
    """self - alpha * other."""
    return self - _scaled(self, other, alpha, "sub")


@op(inplace=True, aliases=("multiply",))
def mul(self, other: Any) -> Tensor:
    return self * other


@op(inplace=True, aliases=("divide",))
def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """self / other: true division (an integer tensor gives float32), or rounded with
    rounding_mode="floor" (Python's //) or "trunc" (toward 0), keeping integer dtypes."""
    if rounding_mode is None:
        return self / other
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
    return self._binary(RoundedDivide, self, self._other(other), mode=rounding_mode)


@op(inplace=True)
def true_divide(self, other: Any) -> Tensor:
    """self / other, always true (float) division."""
    return self / other


@op(inplace=True, inplace_function=True, aliases=("negative",))
def neg(self) -> Tensor:
    return -self


@method(inplace=True)
def pow(self, exponent: Any) -> Tensor:
    return self ** exponent


@function(name="pow")
def pow_form(input: Any, exponent: Any) -> Tensor:
    if not isinstance(input, Tensor) and isinstance(exponent, Tensor):
        return exponent.__rpow__(input)  # a number raised to a tensor: the tensor's dtype rule
    return as_tensor(input) ** exponent
