"""Pointwise math with PyTorch's names: trigonometry, exp/log variants, erf and the two-input
functions atan2, hypot, logaddexp and xlogy (the rounding ops and remainders are in rounding.py).

Each docstring gives the forward and the gradient; `g` is the upstream gradient. Ops built
from others (square, reciprocal, rsqrt, exp2, lerp, nan_to_num) are compositions: methods
declared here without a Function of their own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd import Function
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from . import either
from . import erf as erf_kernels
from .indexing import Where
from .promotion import promote, result_type, true_div_operands
from .table import method, op

_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)

# ----------------------------------------------------------------------------- unary math


class Exp(Function):
    """z = exp(x)        dx = g * z   (reuse the output, don't recompute exp)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        z = np.exp(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * z


@op(inplace=True, inplace_function=True)
def exp(self) -> Tensor:
    return Exp.apply(_floating(self))


class Log(Function):
    """z = log(x)        dx = g / x   (log(0) = -inf, log of a negative number = nan)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore"):
            return g / x


@op(inplace=True, inplace_function=True)
def log(self) -> Tensor:
    return Log.apply(_floating(self))


class Sqrt(Function):
    """z = sqrt(x)       dx = g / (2 z)   (infinite at x = 0, like PyTorch)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):
            z = np.sqrt(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        with np.errstate(divide="ignore"):
            return g / (2 * z)


@op(inplace=True, inplace_function=True)
def sqrt(self) -> Tensor:
    return Sqrt.apply(_floating(self))


class Abs(Function):
    """z = |x|           dx = g * sign(x)   (0 at x = 0)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        return g * either.sign(x)


@op(inplace=True, inplace_function=True)
def abs(self) -> Tensor:
    return Abs.apply(self)


method(abs, name="__abs__")  # abs(x)


class TanhOp(Function):
    """z = tanh(x)       dx = g * (1 - z**2)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        z = np.tanh(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * (1 - z * z)


@op(inplace=True, inplace_function=True)
def tanh(self) -> Tensor:
    return TanhOp.apply(_floating(self))


class SigmoidOp(Function):
    """z = 1 / (1 + exp(-x))     dx = g * z * (1 - z) = g * e / (1 + e)**2,   e = exp(-|x|)

    Written with e = exp(-|x|) <= 1 on both sides, z = 1 / (1 + e) for x >= 0 and e / (1 + e)
    for x < 0: nothing overflows, and both tails keep their relative precision (float32
    sigmoid(-20) is 2.06e-9, not 0, so log(sigmoid(x)) stays finite; the derivative at x = 20
    is 2.06e-9, not the 0 that z * (1 - z) gives once z rounds to 1).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        e = np.exp(-np.abs(x))
        s = 1 / (1 + e)
        ctx.save_for_backward(e, s)
        return np.where(x >= 0, s, e * s)

    @staticmethod
    def graph_saved(ctx, x, z):
        """(e, s) as tensors of the graph, for backward(create_graph=True)."""
        e = (-x.abs()).exp()
        return e, 1 / (1 + e)

    @staticmethod
    def backward(ctx, g):
        e, s = ctx.saved
        return g * (e * s * s)


@op(inplace=True, inplace_function=True)
def sigmoid(self) -> Tensor:
    return SigmoidOp.apply(_floating(self))


class ReLUOp(Function):
    """z = max(x, 0)     dx = g * (x > 0)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        z = np.maximum(x, 0)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * (z > 0)


@op(inplace=True, inplace_function=True)
def relu(self) -> Tensor:
    return ReLUOp.apply(self)


class Maximum(Function):
    """z = max(a, b)     da = g * [not a < b],  db = g * [not b < a]; a tie splits g in halves

    As in PyTorch: where a or b is NaN, z is NaN and neither side is smaller, so both get g
    (a NaN must reach every input it came from, so `detect_anomaly` can trace it).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        ctx.save_for_backward(a, b)
        return np.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return _split_ties(g, a, b, np.less, ctx.needs_input_grad)


@op
def maximum(self, other: Any) -> Tensor:
    return self._binary(Maximum, self, self._other(other))


class Minimum(Function):
    """z = min(a, b)     da = g * [not a > b],  db = g * [not b > a]; a tie splits g in halves"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        ctx.save_for_backward(a, b)
        return np.minimum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return _split_ties(g, a, b, np.greater, ctx.needs_input_grad)


@op
def minimum(self, other: Any) -> Tensor:
    return self._binary(Minimum, self, self._other(other))


def _split_ties(g, a, b, loses, needs):
    """Route g to the winner of max/min; on a tie each side gets half. A side gets nothing
    only where it loses (`loses(a, b)`: np.less for max), so at a NaN (no side loses) both
    get g, as in PyTorch."""
    a, b = either.values(a), either.values(b)  # only compared: the routing is a constant of the graph
    zero = np.zeros((), dtype=g.dtype)
    tie = a == b
    g = either.where(tie, g * 0.5, g)
    da = either.where(loses(a, b), zero, g) if needs[0] else None
    db = either.where(loses(b, a), zero, g) if needs[1] else None
    return da, db


class Clip(Function):
    """z = min(max(x, lo), hi)  (no bound where lo or hi is left out)
    dx  = g * [lo <= x <= hi]                  (a value exactly on a bound keeps its gradient)
    dlo = g * [x < lo and lo < hi],   dhi = g * [x > hi or hi < lo]

    The bounds are arrays that broadcast against x (numbers become 0-d arrays), inputs of
    the graph, so a tensor bound gets its gradient. Where lo > hi every z is hi, as in
    PyTorch; the rules above are PyTorch's, also there.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *bounds, low=True, high=True):
        lo = bounds[0] if low else None
        hi = bounds[-1] if high else None
        dtype = result_type(x, *bounds)
        x, lo, hi = (None if a is None else a.astype(dtype, copy=False) for a in (x, lo, hi))
        ctx.save_for_backward(x, lo, hi)
        return np.clip(x, lo, hi)

    @staticmethod
    def graph_saved(ctx, x, *bounds_and_output):
        """The saved arrays as they are: backward only compares them (its masks are constants
        of the graph, and g is what it differentiates)."""
        return ctx.saved

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved
        zero = np.zeros((), dtype=g.dtype)
        needs = ctx.needs_input_grad
        grads = [None]  # a tensor bound may need a gradient where x needs none
        if needs[0]:
            inside = True
            if lo is not None:
                inside = x >= lo
            if hi is not None:
                inside = inside & (x <= hi)
            grads[0] = either.where(inside, g, zero)
        if lo is not None:
            below = None
            if needs[1]:
                below = x < lo
                if hi is not None:
                    below = below & (lo < hi)
            grads.append(None if below is None else either.where(below, g, zero))
        if hi is not None:
            above = None
            if needs[-1]:
                above = x > hi
                if lo is not None:
                    above = above | (hi < lo)
            grads.append(None if above is None else either.where(above, g, zero))
        return tuple(grads)


@op(inplace=True, inplace_function=True, aliases=("clip",))
def clamp(self, min: float | Tensor | None = None, max: float | Tensor | None = None) -> Tensor:
    """Limit every value to [min, max]. A bound is a number or a tensor that broadcasts
    against self (and then gets its gradient); the result dtype follows the one rule
    (`int_tensor.clip(0.5, 1.5)` is float32, as in PyTorch)."""
    if min is None and max is None:
        raise ArgumentError("clip: give at least one of min and max")
    bounds = [self._other(b, fill="clip") for b in (min, max) if b is not None]
    try:
        return Clip.apply(self, *bounds, low=min is not None, high=max is not None)
    except ValueError:
        shapes = ", ".join(str(b.shape) for b in bounds)
        raise ShapeError(f"clip: bounds of shape {shapes} do not broadcast against the "
                         f"input of shape {self.shape}") from None



# ----------------------------------------------------------------------------- trigonometry


class Sin(Function):
    """z = sin(x)        dx = g * cos(x)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):  # sin and cos of +-inf are nan, as in PyTorch
            return np.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(invalid="ignore"):
            return g * either.cos(x)


@op(inplace=True, inplace_function=True)
def sin(self) -> Tensor:
    return Sin.apply(_floating(self))


class Cos(Function):
    """z = cos(x)        dx = -g * sin(x)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):  # sin and cos of +-inf are nan, as in PyTorch
            return np.cos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(invalid="ignore"):
            return -g * either.sin(x)


@op(inplace=True, inplace_function=True)
def cos(self) -> Tensor:
    return Cos.apply(_floating(self))


class Tan(Function):
    """z = tan(x)        dx = g * (1 + z**2)   (reuse the output)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):
            z = np.tan(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * (1 + z * z)


@op(inplace=True, inplace_function=True)
def tan(self) -> Tensor:
    return Tan.apply(_floating(self))


class Asin(Function):
    """z = asin(x)       dx = g / sqrt(1 - x**2)   (nan outside [-1, 1], inf at +-1, as PyTorch)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):
            return np.arcsin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return g / either.sqrt(1 - x * x)


@op(inplace=True, inplace_function=True, aliases=("arcsin",))
def asin(self) -> Tensor:
    return Asin.apply(_floating(self))


class Acos(Function):
    """z = acos(x)       dx = -g / sqrt(1 - x**2)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):
            return np.arccos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return -g / either.sqrt(1 - x * x)


@op(inplace=True, inplace_function=True, aliases=("arccos",))
def acos(self) -> Tensor:
    return Acos.apply(_floating(self))


class Atan(Function):
    """z = atan(x)       dx = g / (1 + x**2)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arctan(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):  # x**2 = inf for huge x: the gradient is then 0, right
            return g / (1 + x * x)


@op(inplace=True, inplace_function=True, aliases=("arctan",))
def atan(self) -> Tensor:
    return Atan.apply(_floating(self))


class Sinh(Function):
    """z = sinh(x)       dx = g * cosh(x)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(over="ignore"):
            return np.sinh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):
            return g * either.cosh(x)


@op(inplace=True, inplace_function=True)
def sinh(self) -> Tensor:
    return Sinh.apply(_floating(self))


class Cosh(Function):
    """z = cosh(x)       dx = g * sinh(x)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(over="ignore"):
            return np.cosh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):
            return g * either.sinh(x)


@op(inplace=True, inplace_function=True)
def cosh(self) -> Tensor:
    return Cosh.apply(_floating(self))


# ----------------------------------------------------------------------------- exp and log


class Expm1(Function):
    """z = exp(x) - 1    dx = g * (z + 1)

    Its own op because exp(x) - 1 cancels for small |x| (float32 exp(1e-8) - 1 is 0, expm1 1e-8).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        with np.errstate(over="ignore"):
            z = np.expm1(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * (z + 1)


@op(inplace=True, inplace_function=True)
def expm1(self) -> Tensor:
    return Expm1.apply(_floating(self))


class Log1p(Function):
    """z = log(1 + x)    dx = g / (1 + x)

    Its own op because 1 + x rounds away a small x (float32 log(1 + 1e-8) is 0, log1p 1e-8).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log1p(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore"):
            return g / (1 + x)


@op(inplace=True, inplace_function=True)
def log1p(self) -> Tensor:
    return Log1p.apply(_floating(self))


class Log2(Function):
    """z = log2(x)       dx = g / (x ln 2)   (exact at powers of two: log2(8) is 3)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log2(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore"):
            return g / (x * _LN2)


@op(inplace=True, inplace_function=True)
def log2(self) -> Tensor:
    return Log2.apply(_floating(self))


class Log10(Function):
    """z = log10(x)      dx = g / (x ln 10)   (exact at powers of ten)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log10(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore"):
            return g / (x * _LN10)


@op(inplace=True, inplace_function=True)
def log10(self) -> Tensor:
    return Log10.apply(_floating(self))


class Erf(Function):
    """z = erf(x) = 2/sqrt(pi) * integral_0^x exp(-t**2) dt     dx = g * 2/sqrt(pi) * exp(-x**2)

    The kernel is ops/erf.py (fdlibm's, computed in float64, returned in x's dtype).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return erf_kernels.erf(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):
            return g * (_TWO_OVER_SQRT_PI * either.exp(-(x * x)))


@op(inplace=True, inplace_function=True)
def erf(self) -> Tensor:
    return Erf.apply(_floating(self))


# ----------------------------------------------------------------------------- two inputs


class Atan2(Function):
    """z = atan2(a, b), the angle of the point (b, a)
    da = g * b / (a**2 + b**2),   db = -g * a / (a**2 + b**2)
    Where a**2 + b**2 is 0 (at the origin, or underflowed) both gradients are 0, as in PyTorch.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        a, b = true_div_operands(a, b)  # integers give float32, as in PyTorch
        ctx.save_for_backward(a, b)
        return np.arctan2(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r2 = a * a + b * b
            origin = either.values(r2) == 0
            if isinstance(r2, Tensor) and origin.any():  # under create_graph: no g / 0 in the
                r2 = either.where(origin, 1, r2)  # graph, whose derivative (0 * inf) would be NaN
            scale = either.where(origin, np.zeros((), dtype=g.dtype), g / r2)
            da = scale * b if ctx.needs_input_grad[0] else None
            db = -scale * a if ctx.needs_input_grad[1] else None
        return da, db


@op(inplace=True, aliases=("arctan2",))
def atan2(self, other: Any) -> Tensor:
    """The angle of the point (other, self), in (-pi, pi]."""
    return self._binary(Atan2, self, self._other(other))


class Hypot(Function):
    """z = sqrt(a**2 + b**2), without overflow for huge a, b     da = g * a / z,   db = g * b / z"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        a, b = true_div_operands(a, b)
        z = np.hypot(a, b)
        ctx.save_for_backward(a, b, z)
        return z

    @staticmethod
    def backward(ctx, g):
        a, b, z = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):  # |a / z| <= 1 for a tiny z; 0/0 is nan
            da = g * (a / z) if ctx.needs_input_grad[0] else None
            db = g * (b / z) if ctx.needs_input_grad[1] else None
        return da, db


@op(inplace=True)
def hypot(self, other: Any) -> Tensor:
    return self._binary(Hypot, self, self._other(other))


class LogAddExp(Function):
    """z = log(exp(a) + exp(b)), without overflow
    da = g / (1 + exp(b - a)),   db = g / (1 + exp(a - b))

    The gradients are written with a - b, not as exp(a - z): z is rounded (float32 1e4 + ln 2 is
    off by 2e-4), and exp(a - z) would carry that error into the gradient.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, a, b):
        a, b = true_div_operands(a, b)
        ctx.save_for_backward(a, b)
        with np.errstate(invalid="ignore"):  # logaddexp(inf, inf) warns, though it is inf
            return np.logaddexp(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        if isinstance(g, Tensor):  # under create_graph: the same value as sigmoid(a - b), whose
            da = g * (a - b).sigmoid() if ctx.needs_input_grad[0] else None  # derivative does not
            db = g * (b - a).sigmoid() if ctx.needs_input_grad[1] else None  # overflow (inf / inf)
            return da, db
        with np.errstate(invalid="ignore", over="ignore"):  # nan at a = b = +-inf, as in PyTorch
            da = g / (1 + np.exp(b - a)) if ctx.needs_input_grad[0] else None
            db = g / (1 + np.exp(a - b)) if ctx.needs_input_grad[1] else None
        return da, db


@op
def logaddexp(self, other: Any) -> Tensor:
    return self._binary(LogAddExp, self, self._other(other))


class XLogY(Function):
    """z = x * log(y), and z = 0 where x = 0 (for any y but NaN: the 0 * log 0 of an entropy)
    dx = g * log(y), but 0 where x = 0 and y <= 0,    dy = g * x / y   (NaN at x = y = 0)

    The rules at the edges are PyTorch's: dx is the derivative of x * log(y) wherever log(y) is
    defined, even at x = 0, and 0 where it is not and z is the constant 0.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, y):
        x, y = true_div_operands(x, y)
        ctx.save_for_backward(x, y)
        with np.errstate(divide="ignore", invalid="ignore"):  # log 0 = -inf, inf * 0 = nan: replaced
            z = x * np.log(y)
        return np.where((x == 0) & ~np.isnan(y), np.zeros((), z.dtype), z)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved
        dx = dy = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_input_grad[0] and isinstance(g, Tensor):  # under create_graph: g.xlogy(y),
                xv, yv = either.values(x), either.values(y)  # the op whose derivative in g is right
                dx = either.where((xv == 0) & (yv <= 0), np.zeros((), g.dtype), g.xlogy(y))  # at g = 0 too
            elif ctx.needs_input_grad[0]:
                flat = ((x == 0) & (y <= 0)) | ((g == 0) & ~np.isnan(y))  # PyTorch's xlogy(g, y) there
                dx = np.where(flat, np.zeros((), g.dtype), g * np.log(y))
            if ctx.needs_input_grad[1]:
                dy = g * x / y
        return dx, dy


@op(inplace=True, inplace_function=True)
def xlogy(self, other: Any) -> Tensor:
    """self * log(other), 0 where self is 0 (torch.xlogy, torch.special.xlogy)."""
    return self._binary(XLogY, self, self._other(other))


class CopySign(Function):
    """z = |x| with the sign of y (its sign bit: y = -0.0 counts as negative)
    dx = g * sign(x) * sign(z), 0 where x = 0       dy = 0

    The result is floating point for integer inputs too, as in PyTorch.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, y):
        x, y = true_div_operands(x, y)
        z = np.copysign(x, y)
        ctx.save_for_backward(x, z)
        ctx.y_shape = np.shape(y)
        return z

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        dx = dy = None
        if ctx.needs_input_grad[0]:
            x, z = either.values(x), either.values(z)  # the signs are constants of the graph (NaN at NaN)
            dx = either.where(x == 0, np.zeros((), g.dtype), g * np.sign(x) * np.sign(z))
        if ctx.needs_input_grad[1]:
            dy = np.zeros(ctx.y_shape, g.dtype)  # PyTorch gives zeros, not None (a constant)
        return dx, dy


@op(inplace=True)
def copysign(self, other: Any) -> Tensor:
    """|self| with the sign of other (a tensor or a number), element by element."""
    return self._binary(CopySign, self, self._other(other))


# ----------------------------------------------------------------------------- methods


def _floating(self) -> Tensor:
    """An integer or bool tensor as float32 (PyTorch's default float dtype), for the
    transcendental functions, which give a float for an integer input, as in PyTorch."""
    if self._data.dtype.kind in "fc":
        return self
    return self.float()


@op(inplace=True, inplace_function=True)
def exp2(self) -> Tensor:
    """z = 2**x; dx = g * z * ln 2."""
    return 2.0 ** _floating(self)


@op(inplace=True, inplace_function=True)
def reciprocal(self) -> Tensor:
    """z = 1 / x; dx = -g / x**2."""
    return 1 / self


@op(inplace=True, inplace_function=True)
def rsqrt(self) -> Tensor:
    """z = 1 / sqrt(x); dx = -g / (2 * x**1.5)."""
    return self.sqrt().reciprocal()


@op(inplace=True, inplace_function=True)
def square(self) -> Tensor:
    """z = x * x; dx = 2 * g * x."""
    return self * self


@op(inplace=True)
def lerp(self, end: Any, weight: Any) -> Tensor:
    """self + weight * (end - self); weight is a number or a tensor (which then gets a gradient)."""
    return self + self._other(weight) * (self._other(end) - self)


@op(inplace=True, inplace_function=True)
def clamp_min(self, min: float | Tensor) -> Tensor:
    """max(x, min) elementwise; gradient g where x > min, else 0 (clip with min only)."""
    return self.clip(min=min)


@op(inplace=True, inplace_function=True)
def clamp_max(self, max: float | Tensor) -> Tensor:
    """min(x, max) elementwise; gradient g where x < max, else 0 (clip with max only)."""
    return self.clip(max=max)


@op(inplace=True, inplace_function=True)
def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN -> nan, +inf -> posinf, -inf -> neginf (by default the dtype's largest and
    smallest finite values). Gradient: g where x is finite, 0 at the replaced places."""
    if self._data.dtype.kind not in "fc":  # integers have nothing to replace
        return self._make(self._data.copy(), None)
    filled = np.nan_to_num(self._data, nan=nan, posinf=posinf, neginf=neginf)
    return Where.apply(self._make(np.isfinite(self._data), None), self, self._make(filled, None))
