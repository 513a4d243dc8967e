"""Elementwise ops: arithmetic, unary math and activations, comparisons-free selection.

Each docstring gives the forward and the gradient; `g` is the upstream gradient. Binary ops
broadcast, and the engine sums their gradients back to each input's shape.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from .promotion import promote, result_type, true_div_operands  # (the one dtype rule)

# ----------------------------------------------------------------------------- arithmetic


class Add(Function):
    """z = a + b        da = g,  db = g"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(Function):
    """z = a - b        da = g,  db = -g"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        return a - b

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


class Mul(Function):
    """z = a * b        da = g * b,  db = g * a"""

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


class Div(Function):
    """z = a / b        da = g / b,  db = -g * a / b**2 = -g * z / b"""

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


class Neg(Function):
    """z = -x           dx = -g"""

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, g):
        return -g


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

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # mixed dtypes: PyTorch's rule, see promotion.py
            a, b = promote(a, b)
        z = power(a, b)
        ctx.save_for_backward(a, b, z)
        return z

    @staticmethod
    def backward(ctx, g):
        a, b, z = ctx.saved
        zero = np.zeros((), dtype=g.dtype)
        da = db = None
        if ctx.needs_input_grad[0]:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                da = g * b * power(a, b - 1)
            if not b.all():  # a**0 is the constant 1, even at a = 0 (or tiny a, where a**-1 overflows)
                da = np.where(b == 0, zero, da)
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                db = g * z * np.log(a)
            if not a.all():
                db = np.where((a == 0) & (b >= 0), zero, db)
        return da, db


# ----------------------------------------------------------------------------- unary math


class Exp(Function):
    """z = exp(x)        dx = g * z   (reuse the output, don't recompute exp)"""

    @staticmethod
    def forward(ctx, x):
        z = np.exp(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * z


class Log(Function):
    """z = log(x)        dx = g / x   (log(0) = -inf, log of a negative number = nan)"""

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


class Sqrt(Function):
    """z = sqrt(x)       dx = g / (2 z)   (infinite at x = 0, like PyTorch)"""

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


class Abs(Function):
    """z = |x|           dx = g * sign(x)   (0 at x = 0)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        return g * np.sign(x)


class Tanh(Function):
    """z = tanh(x)       dx = g * (1 - z**2)"""

    @staticmethod
    def forward(ctx, x):
        z = np.tanh(x)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * (1 - z * z)


class Sigmoid(Function):
    """z = 1 / (1 + exp(-x))     dx = g * z * (1 - z) = g * e / (1 + e)**2,   e = exp(-|x|)

    Written with e = exp(-|x|) <= 1 on both sides, z = 1 / (1 + e) for x >= 0 and e / (1 + e)
    for x < 0: nothing overflows, and both tails keep their relative precision (float32
    sigmoid(-20) is 2.06e-9, not 0, so log(sigmoid(x)) stays finite; the derivative at x = 20
    is 2.06e-9, not the 0 that z * (1 - z) gives once z rounds to 1).
    """

    @staticmethod
    def forward(ctx, x):
        e = np.exp(-np.abs(x))
        s = 1 / (1 + e)
        ctx.save_for_backward(e, s)
        return np.where(x >= 0, s, e * s)

    @staticmethod
    def backward(ctx, g):
        e, s = ctx.saved
        return g * (e * s * s)


class ReLU(Function):
    """z = max(x, 0)     dx = g * (x > 0)"""

    @staticmethod
    def forward(ctx, x):
        z = np.maximum(x, 0)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * (z > 0)


class Maximum(Function):
    """z = max(a, b)     da = g * [not a < b],  db = g * [not b < a]; a tie splits g in halves

    As in PyTorch: where a or b is NaN, z is NaN and neither side is smaller, so both get g
    (a NaN must reach every input it came from, so `detect_anomaly` can trace it).
    """

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


class Minimum(Function):
    """z = min(a, b)     da = g * [not a > b],  db = g * [not b > a]; a tie splits g in halves"""

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


def _split_ties(g, a, b, loses, needs):
    """Route g to the winner of max/min; on a tie each side gets half. A side gets nothing
    only where it loses (`loses(a, b)`: np.less for max), so at a NaN (no side loses) both
    get g, as in PyTorch."""
    zero = np.zeros((), dtype=g.dtype)
    tie = a == b
    g = np.where(tie, g * 0.5, g)
    da = np.where(loses(a, b), zero, g) if needs[0] else None
    db = np.where(loses(b, a), zero, g) if needs[1] else None
    return da, db


class Clip(Function):
    """z = min(max(x, lo), hi)  (no bound where lo or hi is left out)
    dx  = g * [lo <= x <= hi]                  (a value exactly on a bound keeps its gradient)
    dlo = g * [x < lo and lo < hi],   dhi = g * [x > hi or hi < lo]

    The bounds are arrays that broadcast against x (numbers become 0-d arrays), inputs of
    the graph, so a tensor bound gets its gradient. Where lo > hi every z is hi, as in
    PyTorch; the rules above are PyTorch's, also there.
    """

    @staticmethod
    def forward(ctx, x, *bounds, low=True, high=True):
        lo = bounds[0] if low else None
        hi = bounds[-1] if high else None
        dtype = result_type(x, *bounds)
        x, lo, hi = (None if a is None else a.astype(dtype, copy=False) for a in (x, lo, hi))
        ctx.save_for_backward(x, lo, hi)
        return np.clip(x, lo, hi)

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
            grads[0] = np.where(inside, g, zero)
        if lo is not None:
            below = None
            if needs[1]:
                below = x < lo
                if hi is not None:
                    below = below & (lo < hi)
            grads.append(None if below is None else np.where(below, g, zero))
        if hi is not None:
            above = None
            if needs[-1]:
                above = x > hi
                if lo is not None:
                    above = above | (hi < lo)
            grads.append(None if above is None else np.where(above, g, zero))
        return tuple(grads)


class Where(Function):
    """z = where(cond, a, b)     da = g * cond,  db = g * ~cond   (cond carries no gradient)"""

    @staticmethod
    def forward(ctx, cond, a, b):
        cond = cond.astype(bool, copy=False)
        ctx.save_for_backward(cond)
        return np.where(cond, *promote(a, b))  # (not a hot path: no inline check)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved
        zero = np.zeros((), dtype=g.dtype)
        da = np.where(cond, g, zero) if ctx.needs_input_grad[1] else None
        db = np.where(cond, zero, g) if ctx.needs_input_grad[2] else None
        return None, da, db


class MaskedFill(Function):
    """z = where(mask, v, x)     dx = g * ~mask,   dv = sum of g over the filled places

    v is a number (the keyword `value`, no gradient) or a 0-d array input (`fill`).
    """

    @staticmethod
    def forward(ctx, x, mask, fill=None, *, value=None):
        mask = mask.astype(bool, copy=False)
        ctx.save_for_backward(mask)
        v = value if fill is None else fill
        return np.where(mask, np.asarray(v, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved
        needs = ctx.needs_input_grad
        zero = np.zeros((), dtype=g.dtype)
        dx = np.where(mask, zero, g) if needs[0] else None
        if len(needs) == 2:
            return dx, None
        return dx, None, (np.where(mask, g, zero).sum() if needs[2] else None)
