"""Pointwise math with PyTorch's names: trigonometry, exp/log variants, erf and the two-input
functions atan2, hypot and logaddexp (the rounding ops and remainders are in rounding.py).

Each docstring gives the forward and the gradient; `g` is the upstream gradient. Ops built
from others (square, reciprocal, rsqrt, exp2, lerp, nan_to_num) are compositions in
tensor_pointwise.py, not classes here.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function
from .erf import erf
from .promotion import true_div_operands

_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)

# ----------------------------------------------------------------------------- trigonometry


class Sin(Function):
    """z = sin(x)        dx = g * cos(x)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):  # sin and cos of +-inf are nan, as in PyTorch
            return np.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(invalid="ignore"):
            return g * np.cos(x)


class Cos(Function):
    """z = cos(x)        dx = -g * sin(x)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):  # sin and cos of +-inf are nan, as in PyTorch
            return np.cos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(invalid="ignore"):
            return -g * np.sin(x)


class Tan(Function):
    """z = tan(x)        dx = g * (1 + z**2)   (reuse the output)"""

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


class Asin(Function):
    """z = asin(x)       dx = g / sqrt(1 - x**2)   (nan outside [-1, 1], inf at +-1, as PyTorch)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):
            return np.arcsin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return g / np.sqrt(1 - x * x)


class Acos(Function):
    """z = acos(x)       dx = -g / sqrt(1 - x**2)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(invalid="ignore"):
            return np.arccos(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return -g / np.sqrt(1 - x * x)


class Atan(Function):
    """z = atan(x)       dx = g / (1 + x**2)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.arctan(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):  # x**2 = inf for huge x: the gradient is then 0, right
            return g / (1 + x * x)


class Sinh(Function):
    """z = sinh(x)       dx = g * cosh(x)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(over="ignore"):
            return np.sinh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):
            return g * np.cosh(x)


class Cosh(Function):
    """z = cosh(x)       dx = g * sinh(x)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with np.errstate(over="ignore"):
            return np.cosh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):
            return g * np.sinh(x)


# ----------------------------------------------------------------------------- exp and log


class Expm1(Function):
    """z = exp(x) - 1    dx = g * (z + 1)

    Its own op because exp(x) - 1 cancels for small |x| (float32 exp(1e-8) - 1 is 0, expm1 1e-8).
    """

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


class Log1p(Function):
    """z = log(1 + x)    dx = g / (1 + x)

    Its own op because 1 + x rounds away a small x (float32 log(1 + 1e-8) is 0, log1p 1e-8).
    """

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


class Log2(Function):
    """z = log2(x)       dx = g / (x ln 2)   (exact at powers of two: log2(8) is 3)"""

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


class Log10(Function):
    """z = log10(x)      dx = g / (x ln 10)   (exact at powers of ten)"""

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


class Erf(Function):
    """z = erf(x) = 2/sqrt(pi) * integral_0^x exp(-t**2) dt     dx = g * 2/sqrt(pi) * exp(-x**2)

    The kernel is ops/erf.py (fdlibm's, computed in float64, returned in x's dtype).
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return erf(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        with np.errstate(over="ignore"):
            return g * (_TWO_OVER_SQRT_PI * np.exp(-(x * x)))


# ----------------------------------------------------------------------------- two inputs


class Atan2(Function):
    """z = atan2(a, b), the angle of the point (b, a)
    da = g * b / (a**2 + b**2),   db = -g * a / (a**2 + b**2)
    Where a**2 + b**2 is 0 (at the origin, or underflowed) both gradients are 0, as in PyTorch.
    """

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
            scale = np.where(r2 == 0, np.zeros((), dtype=g.dtype), g / r2)
            da = scale * b if ctx.needs_input_grad[0] else None
            db = -scale * a if ctx.needs_input_grad[1] else None
        return da, db


class Hypot(Function):
    """z = sqrt(a**2 + b**2), without overflow for huge a, b     da = g * a / z,   db = g * b / z"""

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


class LogAddExp(Function):
    """z = log(exp(a) + exp(b)), without overflow
    da = g / (1 + exp(b - a)),   db = g / (1 + exp(a - b))

    The gradients are written with a - b, not as exp(a - z): z is rounded (float32 1e4 + ln 2 is
    off by 2e-4), and exp(a - z) would carry that error into the gradient.
    """

    @staticmethod
    def forward(ctx, a, b):
        a, b = true_div_operands(a, b)
        ctx.save_for_backward(a, b)
        with np.errstate(invalid="ignore"):  # logaddexp(inf, inf) warns, though it is inf
            return np.logaddexp(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        with np.errstate(invalid="ignore", over="ignore"):  # nan at a = b = +-inf, as in PyTorch
            da = g / (1 + np.exp(b - a)) if ctx.needs_input_grad[0] else None
            db = g / (1 + np.exp(a - b)) if ctx.needs_input_grad[1] else None
        return da, db
