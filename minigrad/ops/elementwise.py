"""Elementwise ops: arithmetic, unary math and activations, comparisons-free selection.

Each docstring gives the forward and the gradient; `g` is the upstream gradient. Binary ops
broadcast, and the engine sums their gradients back to each input's shape.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function

# ----------------------------------------------------------------------------- arithmetic


def promote(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's type promotion where numpy's differs: an integer or boolean array meeting a
    floating one takes the floating dtype (numpy turns int64 with float32 into float64; so
    `int_tensor + 0.5` is float32, as in PyTorch). Other pairs promote as in numpy."""
    da, db = a.dtype, b.dtype
    fa, fb = da.kind in "fc", db.kind in "fc"
    if fa and not fb and db.kind in "iub":
        return a, b.astype(da)
    if fb and not fa and da.kind in "iub":
        return a.astype(db), b
    return a, b


def true_div_operands(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`promote`, and two integer arrays become float32, the default float dtype: in
    PyTorch an integer divided by an integer is float32 (numpy: float64)."""
    a, b = promote(a, b)
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        return a.astype(np.float32), b.astype(np.float32)
    return a, b


class Add(Function):
    """z = a + b        da = g,  db = g"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # int with float: see promote
            a, b = promote(a, b)
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(Function):
    """z = a - b        da = g,  db = -g"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # int with float: see promote
            a, b = promote(a, b)
        return a - b

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


class Mul(Function):
    """z = a * b        da = g * b,  db = g * a"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # int with float: see promote
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
        if a.dtype is not b.dtype:  # int with float: see promote
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
    """z = 1 / (1 + exp(-x))     dx = g * z * (1 - z)

    Computed as (1 + tanh(x/2)) / 2, which never overflows for large |x|.
    """

    @staticmethod
    def forward(ctx, x):
        z = 0.5 * (1 + np.tanh(0.5 * x))
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved
        return g * z * (1 - z)


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
    """z = max(a, b)     da = g * [a > b],  db = g * [b > a]; a tie splits g in halves (as PyTorch)"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # int with float: see promote
            a, b = promote(a, b)
        ctx.save_for_backward(a, b)
        return np.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return _split_ties(g, a > b, a == b)


class Minimum(Function):
    """z = min(a, b)     da = g * [a < b],  db = g * [b < a]; a tie splits g in halves"""

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:  # int with float: see promote
            a, b = promote(a, b)
        ctx.save_for_backward(a, b)
        return np.minimum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return _split_ties(g, a < b, a == b)


def _split_ties(g, a_wins, tie):
    """Route g to the winner of max/min; on a tie each side gets half."""
    half = g * 0.5
    da = np.where(a_wins, g, np.where(tie, half, 0))
    db = np.where(a_wins, 0, np.where(tie, half, g))
    return da, db


class Clip(Function):
    """z = min(max(x, low), high)    dx = g * [low <= x <= high]   (None means no bound)"""

    @staticmethod
    def forward(ctx, x, *, low=None, high=None):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return np.clip(x, low, high)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        inside = np.ones(x.shape, dtype=bool)
        if ctx.low is not None:
            inside &= x >= ctx.low
        if ctx.high is not None:
            inside &= x <= ctx.high
        return g * inside


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
