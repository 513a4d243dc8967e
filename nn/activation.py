"""Activations, as torch.nn's activation.py: the functional forms (relu, tanh, sigmoid, gelu,
softmax, log_softmax, and the others with `torch.nn.functional`'s names, arguments and
defaults: softplus, elu, ..., relu6, hardswish, selu, glu, prelu, rrelu, ...) and their modules
(ReLU, GELU, ..., LogSoftmax, ReLU6, ..., Softmax2d, PReLU). `inplace=True` writes the result
into the input and returns it, as torch (`_in_place`); so do torch's `F.relu_`, `F.elu_`, ...

Each function is a composition of differentiable Tensor ops or one Function with forward and
backward side by side: gelu is the fused kernel GELUOp (its tanh form in cache-sized pieces,
nn/_pieces.py); softplus and elu need log1p and expm1 on the array for their stable forms
(SoftplusOp, ELUOp; selu and celu are ELUOp with torch's scale and input_scale), and
logsigmoid and mish are built on softplus. relu, tanh, sigmoid, softmax and log_softmax are the
core's ops (minigrad/ops/).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from minigrad import Tensor, where
from minigrad.autograd import Function
from minigrad.errors import ShapeError
from minigrad.ops import either
from minigrad.ops.erf import erf, erf_float32
from minigrad.ops.reduce import LogSoftmaxOp, SoftmaxOp, narrowed, widened
from minigrad.random import generator
from minigrad.runtime import compiled

from . import init as nn_init
from ._checks import _need_tensor as _need
from ._pieces import by_pieces
from .module import Module, Parameter


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    _need("relu", "the input", input)
    return input.relu_() if inplace else input.relu()


def tanh(input: Tensor) -> Tensor:
    _need("tanh", "the input", input)
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    _need("sigmoid", "the input", input)
    return input.sigmoid()


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CLIP = 1e3  # see `_gelu_tanh_grad`
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_tanh(x: np.ndarray, t: np.ndarray, y: np.ndarray) -> None:
    """t = tanh(u), u = sqrt(2/pi) * (x + 0.044715 x^3), and y = x / 2 * (1 + t), in place."""
    np.multiply(x, x, out=t)
    t *= 0.044715 * _SQRT_2_OVER_PI
    t += _SQRT_2_OVER_PI
    t *= x
    np.tanh(t, out=t)
    np.add(t, 1, out=y)
    y *= 0.5  # before x: (1 + t) x would overflow for x past half the dtype's max
    y *= x


def _gelu_tanh_grad(x: np.ndarray, t: np.ndarray, g: np.ndarray, dx: np.ndarray) -> None:
    """dx = g * (1 + t + x (1 - t^2) du) / 2,  du = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
          = g * (1 + t) * (1/2 + (1 - t) * x du / 2)     (1 - t^2 = (1 - t)(1 + t)):
    eleven passes over x's size instead of twelve.

    x du / 2 is taken at x clipped to [-GELU_CLIP, GELU_CLIP]: past |x| ~ 20, t is exactly +-1
    (in float64 too), so the term is multiplied by 0 and the clip changes nothing, but x^3 of
    an unclipped |x| > 1.8e19 (float32) would be inf, and inf * 0 NaN instead of the limit 1
    (x -> inf) or 0 (x -> -inf)."""
    other = np.clip(x, -GELU_CLIP, GELU_CLIP, out=np.empty_like(dx))
    np.multiply(other, other, out=dx)
    dx *= 0.5 * 3 * 0.044715 * _SQRT_2_OVER_PI
    dx += 0.5 * _SQRT_2_OVER_PI
    dx *= other  # x du / 2
    np.subtract(1, t, out=other)
    dx *= other
    dx += 0.5
    dx *= np.add(t, 1, out=other)  # reuse the buffer for 1 + t
    dx *= g


# The loop forms of the two functions above, for float32 (minigrad.runtime.compiled): one pass
# each, in float64 inside. numba's tanh is a call per element (five times numpy's vector tanh),
# so the forward computes its own, in vector instructions:
#   |u| < 1/4:   tanh u = u - u^3/3 + 2u^5/15 - 17u^7/315 + 62u^9/2835 - 1382u^11/155925 (+ < 1e-13 u)
#   otherwise:   tanh |u| = (1 - e) / (1 + e),  e = exp(-2|u|) = (exp(-2|u| / 64))^64, the inner
#                exp by its Taylor series to r^9 (|r| <= 0.3 below |u| = 9: error < 1e-12, so
#                under 1e-10 after the six squarings)
#   |u| > 9:     tanh u = +-1 (1 - 3e-8 rounds to 1 in float32), so no term of a huge |u| is used.
# Within 0.51 ulp of tanh in float32 over the whole line (np.tanh: 1.37; tests/nn/test_compiled_kernels.py).


@compiled.kernel(fastmath=compiled.REORDER_FMA)
def _gelu_tanh_loop(x, t, y, start, stop):
    """t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3), and y = x / 2 (1 + t), elements start..stop-1."""
    x, t, y = x[start:stop], t[start:stop], y[start:stop]  # (a loop from 0 is one the compiler vectorizes)
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        u = _SQRT_2_OVER_PI * v * (1.0 + 0.044715 * v * v)
        a = abs(u)
        a2 = a * a
        small = a * (1.0 + a2 * (-1.0 / 3 + a2 * (2.0 / 15 + a2 * (-17.0 / 315 + a2 * (
            62.0 / 2835 + a2 * (-1382.0 / 155925))))))
        r = a * (-2.0 / 64)
        e = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
            1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r / 362880))))))))
        e = e * e
        e = e * e
        e = e * e
        e = e * e
        e = e * e
        e = e * e
        th = 1.0 if a > 9.0 else (small if a < 0.25 else (1.0 - e) / (1.0 + e))
        th = th if u >= 0 else -th
        t[i] = th
        y[i] = 0.5 * v * (1.0 + th)


@compiled.kernel(fastmath=compiled.REORDER_FMA)
def _gelu_tanh_grad_loop(x, t, g, dx, start, stop):
    """dx = g (1 + t) (1/2 + (1 - t) x du / 2), x clipped to +-GELU_CLIP (see `_gelu_tanh_grad`)."""
    x, t, g, dx = x[start:stop], t[start:stop], g[start:stop], dx[start:stop]
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        v = GELU_CLIP if v > GELU_CLIP else (-GELU_CLIP if v < -GELU_CLIP else v)
        th = np.float64(t[i])
        half_x_du = v * (0.5 * _SQRT_2_OVER_PI + (0.5 * 3 * 0.044715 * _SQRT_2_OVER_PI) * v * v)
        dx[i] = g[i] * ((1.0 + th) * (0.5 + (1.0 - th) * half_x_du))


class GELUOp(Function):
    """Gaussian error linear unit: y = x * Phi(x), Phi the standard normal CDF.

    approximate="none":  Phi(x) = (1 + erf(x / sqrt 2)) / 2
        dx = g * (Phi(x) + x * phi(x)),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    approximate="tanh":  y = x / 2 * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3)
        dx = g * ((1 + t) / 2 + x / 2 * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2)),  t = tanh(u)
    The tanh form runs in cache-sized pieces (`by_pieces`). float16 is computed in float32
    and rounded once (`accumulation_dtype`), as in PyTorch: in float16 itself x du / 2 passes
    65504 at |x| ~ 100, and inf * (1 - t) = inf * 0 made the gradient NaN.
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True)."""
        if ctx.approximate == "tanh":
            return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())
        return x * (0.5 * (1 + (x * math.sqrt(0.5)).erf()))

    @staticmethod
    def forward(ctx, x, *, approximate="none"):
        ctx.approximate, ctx.dtype = approximate, x.dtype
        x = widened(x)
        return narrowed(GELUOp._forward(ctx, x, approximate), ctx.dtype)

    @staticmethod
    def _forward(ctx, x, approximate):
        if approximate == "tanh":
            x = np.ascontiguousarray(x).reshape(x.shape)  # (reshape: ascontiguousarray makes 0-d 1-d)
            t, y = np.empty_like(x), np.empty_like(x)
            if compiled.enabled() and x.dtype == np.float32:
                compiled.over_rows(_gelu_tanh_loop, x.size, 1, x.reshape(-1), t.reshape(-1), y.reshape(-1))
            else:
                with np.errstate(over="ignore"):  # x^3 = inf for huge |x|: tanh(+-inf) = +-1, right
                    by_pieces(_gelu_tanh, (x,), (t, y))
            ctx.save_for_backward(x, t)
            return y
        u = x * math.sqrt(0.5)
        with np.errstate(over="ignore"):  # u^2 = inf for huge |u|: erf is then +-1, right
            cdf = 0.5 * (1 + (erf_float32(u) if x.dtype == np.float32 and u.ndim else erf(u)))
        ctx.save_for_backward(x, cdf)
        return (x * cdf).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved
        out_dtype, g = np.result_type(ctx.dtype, g), widened(g)
        if ctx.approximate == "tanh":
            g = np.ascontiguousarray(g).reshape(g.shape)
            dx = np.empty(np.broadcast_shapes(x.shape, g.shape), np.result_type(x, g))
            if compiled.enabled() and g.shape == x.shape and dx.dtype == np.float32:
                flat = (a.reshape(-1) for a in (x, s, g, dx))
                compiled.over_rows(_gelu_tanh_grad_loop, x.size, 1, *flat)
            else:
                by_pieces(_gelu_tanh_grad, (x, s, g), (dx,))
            return narrowed(dx, out_dtype)
        with np.errstate(over="ignore"):  # x^2 = inf for huge |x|: exp(-inf) = 0, right
            return narrowed(g * (s + x * (_INV_SQRT_2PI * np.exp(-0.5 * x * x))), out_dtype)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """input * Phi(input), with the exact erf form ("none") or the tanh approximation ("tanh")."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    _need("gelu", "the input", input)
    return GELUOp.apply(input, approximate=approximate)


def softmax(input: Tensor, dim: int = -1) -> Tensor:
    _need("softmax", "the input", input)
    return SoftmaxOp.apply(input, dim=dim)


def log_softmax(input: Tensor, dim: int = -1) -> Tensor:
    _need("log_softmax", "the input", input)
    return LogSoftmaxOp.apply(input, dim=dim)


def _need_tensor(fn: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        kind = f"a numpy array of shape {x.shape}" if isinstance(x, np.ndarray) else f"a {type(x).__name__}"
        raise TypeError(f"{fn}: the input is {kind}, not a Tensor; wrap it with mg.tensor(...)")


def _need_float(fn: str, x: Tensor) -> None:
    if x.dtype.kind != "f":  # numpy would compute in float64 and change the dtype; torch refuses
        raise TypeError(f"{fn}: the input has dtype {x.dtype}; convert it with x.float() or x.double()")


def _in_place(input: Tensor, inplace: bool, fn: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """compute(input), or with inplace=True its result written into input and input returned, as
    torch's F.<fn>(x, inplace=True) (`Tensor._take_result`: a leaf that requires grad is
    refused). The composition then runs on a clone of the input: the ops inside it that saved
    their input for backward saved the clone, which the write leaves as it was."""
    if not inplace:
        return compute(input)
    return input._take_result(compute(input.clone()), f"{fn}_")


# ----------------------------------------------------------------------------- fused: softplus, elu


def _sigmoid(u: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-u)) without overflow and exact in both tails (exp(-|u|) never overflows)."""
    e = np.exp(-np.abs(u))
    return np.where(u >= 0, 1 / (1 + e), e / (1 + e))


def _sigmoid_of(u: Any) -> Any:
    """`_sigmoid` of an array, the core's sigmoid op of a Tensor (for create_graph)."""
    return u.sigmoid() if isinstance(u, Tensor) else _sigmoid(u)


class SoftplusOp(Function):
    """z = log(1 + exp(beta * x)) / beta, and z = x where beta * x > threshold
    dx = g * sigmoid(beta * x), and dx = g where beta * x > threshold

    Computed as (max(u, 0) + log1p(exp(-|u|))) / beta with u = beta * x: exp never overflows,
    and log1p keeps the tail exact (softplus(-20) is 2.06e-9, not 0). threshold=inf gives
    the exact function everywhere (logsigmoid and binary_cross_entropy_with_logits use it).
    The second derivative is g * beta * sigmoid(u) (1 - sigmoid(u)) below the threshold, 0 from
    it on (at u = threshold too, as torch's: its first derivative takes the smooth branch there,
    its second derivative the other).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        """u = beta * x, the intermediate forward saved, as a Tensor of the graph (a constant at
        u = threshold, whose derivative torch takes as 0)."""
        u = x * x.dtype.type(ctx.beta)
        return (where(u._data < ctx.threshold, u, u.detach()),)

    @staticmethod
    def forward(ctx, x, *, beta=1.0, threshold=20.0):
        u = x * x.dtype.type(beta)
        ctx.save_for_backward(u)
        ctx.threshold, ctx.beta = threshold, beta
        smooth = (np.maximum(u, 0) + np.log1p(np.exp(-np.abs(u)))) / x.dtype.type(beta)
        return np.where(u > threshold, x, smooth).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (u,) = ctx.saved
        return either.astype(either.where(either.values(u) > ctx.threshold, g, g * _sigmoid_of(u)), g.dtype)


class ELUOp(Function):
    """z = scale * x for x > 0, scale * alpha * (exp(input_scale * x) - 1) otherwise
    dx = g * scale for x > 0, g * scale * alpha * input_scale * exp(input_scale * x) otherwise

    torch's elu kernel: elu is scale = input_scale = 1, selu its fixed alpha and scale, celu
    input_scale = 1 / alpha (the factors of 1 are exact, so elu's values are those of
    alpha * expm1(x)). expm1 keeps small negative x exact (exp(x) - 1 loses every digit below
    1e-8); exp is taken of min(x, 0), so a large positive x never overflows in the unused branch.
    The second derivative is g * scale * alpha * input_scale^2 * exp(input_scale * x) for
    x < 0, and 0 for x >= 0 (at 0 too, as torch's: its first derivative takes the exp branch
    there, its second derivative the other).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        """x and min(x, 0) * input_scale, the intermediate forward saved, as Tensors of the graph
        (the constant 0 at x = 0, whose derivative torch takes as 0)."""
        return x, where(x._data < 0, x, 0.0) * x.dtype.type(ctx.input_scale)

    @staticmethod
    def forward(ctx, x, *, alpha=1.0, scale=1.0, input_scale=1.0):
        neg = np.minimum(x, 0) * x.dtype.type(input_scale)
        ctx.save_for_backward(x, neg)
        ctx.alpha, ctx.scale, ctx.input_scale = alpha, scale, input_scale
        pos = x if scale == 1 else x * x.dtype.type(scale)
        return np.where(x > 0, pos, x.dtype.type(alpha * scale) * np.expm1(neg))

    @staticmethod
    def backward(ctx, g):
        x, neg = ctx.saved
        t = g.dtype.type
        pos = g if ctx.scale == 1 else g * t(ctx.scale)
        neg_grad = g * t(ctx.alpha * ctx.scale * ctx.input_scale) * either.exp(neg)
        return either.astype(either.where(either.values(x) > 0, pos, neg_grad), g.dtype)


# ----------------------------------------------------------------------------- activations


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold (as torch)."""
    _need_tensor("softplus", input)
    _need_float("softplus", input)
    if beta == 0:
        raise ValueError("softplus: beta must be nonzero (it divides the result)")
    return SoftplusOp.apply(input, beta=float(beta), threshold=float(threshold))


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), exact for any x (log of a sigmoid that rounded to 0
    would be -inf)."""
    _need_tensor("logsigmoid", input)
    _need_float("logsigmoid", input)
    return -SoftplusOp.apply(-input, beta=1.0, threshold=float("inf"))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    _need_tensor("elu", input)
    _need_float("elu", input)
    return _in_place(input, inplace, "elu", lambda x: ELUOp.apply(x, alpha=float(alpha)))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise (the gradient at 0 is negative_slope, as torch)."""
    _need_tensor("leaky_relu", input)
    _need_float("leaky_relu", input)
    return _in_place(input, inplace, "leaky_relu", lambda x: where(x._data > 0, x, x * negative_slope))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    _need_tensor("silu", input)
    _need_float("silu", input)
    return _in_place(input, inplace, "silu", lambda x: x * x.sigmoid())


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    _need_tensor("mish", input)
    _need_float("mish", input)
    return _in_place(input, inplace, "mish",
                     lambda x: x * SoftplusOp.apply(x, beta=1.0, threshold=20.0).tanh())


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val]; as in torch the gradient is 0 at the bounds themselves
    (clip would pass it there), so the mask is strict."""
    _need_tensor("hardtanh", input)
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} must not exceed max_val {max_val}")
    return _in_place(input, inplace, "hardtanh", lambda x: _hardtanh(x, min_val, max_val))


def _hardtanh(x: Tensor, min_val: float, max_val: float) -> Tensor:
    inside = (x._data > min_val) & (x._data < max_val)
    return where(inside, x, x.detach().clip(min_val, max_val))


def softmin(input: Tensor, dim: int = -1) -> Tensor:
    """softmax(-x) along dim: the smallest entries get the largest weights. (dim defaults to
    the last axis, as minigrad's softmax.)"""
    _need_tensor("softmin", input)
    _need_float("softmin", input)
    return (-input).softmax(dim)


# ----------------------------------------------------------------------------- more activations
# torch's relu6 ... rrelu, prelu, glu. Each is a composition of Tensor ops (selu and celu: of
# ELUOp, torch's elu kernel); the kinks follow torch's one-sided rules, stated per function.
# An unused branch of a `where` gets the gradient 0, and 0 * inf is NaN, so no branch is
# computed where it could be infinite for a finite input or for +-inf (hardswish's middle piece
# is taken of x clipped to [-3, 3], prelu's w * x of min(x, 0)).

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): hardtanh(x, 0, 6), so the gradient is 0 at 0 and at 6 themselves, as torch."""
    _need_tensor("relu6", input)
    return _in_place(input, inplace, "relu6", lambda x: _hardtanh(x, 0.0, 6.0))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between; the gradient 1/6 strictly inside
    (-3, 3), 0 at -3 and 3 themselves (as torch)."""
    _need_tensor("hardsigmoid", input)
    _need_float("hardsigmoid", input)
    return _in_place(input, inplace, "hardsigmoid", lambda x: _hardtanh(x + 3, 0.0, 6.0) / 6)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6: 0 for x <= -3, x * (x + 3) / 6 for -3 < x < 3, x for x >= 3.
    The gradient (2x + 3) / 6 inside; at the kinks torch's: 0 at -3, 1 at 3. hardswish(-inf) is
    0 (torch's -inf * 0 gives NaN there); NaN gives NaN, with the gradient 1 (as torch)."""
    _need_tensor("hardswish", input)
    _need_float("hardswish", input)
    return _in_place(input, inplace, "hardswish", _hardswish)


def _hardswish(x: Tensor) -> Tensor:
    middle = x.clip(-3.0, 3.0)  # equal to x where it is used, finite everywhere
    return where(x._data <= -3, 0.0, where(x._data < 3, middle * (middle + 3) / 6, x))


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * (x for x > 0, alpha * (exp(x) - 1) otherwise), with Klambauer et al.'s fixed
    alpha = 1.6732632423543772 and scale = 1.0507009873554805 (torch's constants)."""
    _need_tensor("selu", input)
    _need_float("selu", input)
    return _in_place(input, inplace, "selu", lambda x: ELUOp.apply(x, alpha=_SELU_ALPHA, scale=_SELU_SCALE))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise: continuously differentiable (the
    gradient is 1 at 0 from both sides)."""
    _need_tensor("celu", input)
    _need_float("celu", input)
    if alpha == 0:
        raise ZeroDivisionError("celu: alpha cannot be 0 (it divides the input)")
    alpha = float(alpha)
    return _in_place(input, inplace, "celu", lambda x: ELUOp.apply(x, alpha=alpha, input_scale=1.0 / alpha))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the first and second halves of the input along dim.

    Shape: input (*, 2N, *) along dim; output (*, N, *).
    """
    _need_tensor("glu", input)
    _need_float("glu", input)
    if input.ndim == 0:
        raise ShapeError("glu: a 0-d input has no dimension to halve (glu needs an even size along dim)")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"glu: dim {dim} is out of range for an input of shape {input.shape}")
    if input.shape[dim] % 2:
        raise ShapeError(f"glu: the halved dimension must be even, but dimension {dim % input.ndim} of "
                         f"the input of shape {input.shape} is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|); the gradient 1 / (1 + |x|)^2. As torch, which computes the same quotient,
    +-inf gives inf / inf = NaN."""
    _need_tensor("softsign", input)
    _need_float("softsign", input)
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    _need_tensor("tanhshrink", input)
    _need_float("tanhshrink", input)
    return input - input.tanh()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value; the gradient 1 where x > threshold, 0 at and below it.
    NaN stays NaN (torch's test is x <= threshold)."""
    _need_tensor("threshold", input)
    return _in_place(input, inplace, "threshold", lambda x: where(x._data <= threshold, value, x))


def _need_lambd(fn: str, lambd: float, non_negative: bool) -> None:
    if not isinstance(lambd, (int, float, np.number)) or isinstance(lambd, bool):
        raise TypeError(f"{fn}: lambd must be a number, not a {type(lambd).__name__}")
    if non_negative and lambd < 0:
        raise ValueError(f"{fn}: lambd must be at least 0, not {lambd}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd for x > lambd, x + lambd for x < -lambd, 0 in [-lambd, lambd] (gradient 0 there,
    the bounds included, as torch); lambd must be >= 0."""
    _need_tensor("softshrink", input)
    _need_float("softshrink", input)
    _need_lambd("softshrink", lambd, non_negative=True)
    x = input._data
    inside = (x >= -lambd) & (x <= lambd)  # NaN is outside, so it stays NaN (as torch)
    return where(inside, 0.0, where(x > 0, input - lambd, input + lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x for |x| > lambd, 0 in [-lambd, lambd] (gradient 0 there, the bounds included, as torch)."""
    _need_tensor("hardshrink", input)
    _need_float("hardshrink", input)
    _need_lambd("hardshrink", lambd, non_negative=False)
    x = input._data
    return where((x >= -lambd) & (x <= lambd), 0.0, input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU (Xu et al., 2015): x for x > 0, a * x otherwise. In training each
    element's slope a is drawn uniformly from [lower, upper] (minigrad's global generator, see
    `minigrad.manual_seed`) and is its gradient; in evaluation a = (lower + upper) / 2, as
    leaky_relu."""
    _need_tensor("rrelu", input)
    _need_float("rrelu", input)
    if lower > upper:
        raise ValueError(f"rrelu: lower {lower} must not exceed upper {upper}")
    if not training:
        return _in_place(input, inplace, "rrelu", lambda x: leaky_relu(x, (lower + upper) / 2))
    slopes = generator().uniform(lower, upper, input.shape).astype(input.dtype)
    return _in_place(input, inplace, "rrelu", lambda x: where(x._data > 0, x, x * slopes))


# torch.nn.functional's in-place forms: F.relu_(x) is F.relu(x, inplace=True).


def relu_(input: Tensor) -> Tensor:
    """relu written into the input, which is returned."""
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """elu written into the input, which is returned."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """leaky_relu written into the input, which is returned."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """hardtanh written into the input, which is returned."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """threshold written into the input, which is returned."""
    return _threshold(input, threshold, value, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """celu written into the input, which is returned."""
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """selu written into the input, which is returned."""
    return selu(input, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """rrelu written into the input, which is returned."""
    return rrelu(input, lower, upper, training, inplace=True)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, weight * x otherwise, the weight broadcast over dim 1 (the channels): one
    value for every channel (weight of one element), or one per channel (weight of shape (C,)).
    As torch, the gradient at x = 0 is the weight's, and the weight's gradient sums g * min(x, 0).

    Shape: input (N, C, *), or any shape with a one-element weight; weight () , (1,) or (C,).
    """
    _need_tensor("prelu", input)
    _need_tensor("prelu", weight)
    _need_float("prelu", input)
    if weight.ndim > 1:
        raise ShapeError(f"prelu: the weight must be a number or 1-D, but got a weight of shape "
                         f"{weight.shape}")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() not in (1, channels):
        raise ShapeError(f"prelu: the weight of shape {weight.shape} must have 1 element or one per channel "
                         f"(dim 1): {channels} for the input of shape {input.shape}")
    w = weight.reshape(()) if weight.numel() == 1 else weight.reshape((channels,) + (1,) * (input.ndim - 2))
    positive = input._data > 0
    negative_part = where(positive, 0.0, input)  # min(x, 0), finite where x = inf
    return where(positive, input, w * negative_part)


# ----------------------------------------------------------------------------- one_hot, normalize


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """The int64 one-hot code of integer class ids: shape (*, num_classes); num_classes=-1
    takes max(ids) + 1, as torch."""
    ids = tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"one_hot: the ids must be integers, not {ids.dtype} "
                        "(make them with dtype=minigrad.int64)")
    if ids.size and ids.min() < 0:
        raise ValueError(f"one_hot: class ids must be non-negative, got {int(ids.min())}")
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor; pass num_classes")
        num_classes = int(ids.max()) + 1
    elif num_classes < 0 or (ids.size and ids.max() >= num_classes):
        raise ShapeError(f"one_hot: class id {int(ids.max()) if ids.size else '-'} does not fit "
                         f"num_classes={num_classes} (ids must lie in [0, num_classes))")
    out = (ids[..., None] == np.arange(num_classes)).astype(np.int64)  # (*, C)
    return Tensor._make(out, None)


def _norm_at_least(x: Tensor, p: float, dim: Any, eps: float) -> Tensor:
    """max(||x||_p over dim, eps), keepdim, as torch: the vector norm (`Tensor.norm`, which
    neither overflows nor underflows, and sums float16 in float32: 64 values of 40 have the
    norm 320, though their sum of squares is past float16's 65504), clamped at eps with no
    gradient where it is clamped. (The norm's gradient at a zero vector is 0, not NaN.)"""
    norm = x.norm(p, dim, keepdim=True)
    return norm.masked_fill(norm._data < eps, eps)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along dim: unit vectors, and zero vectors stay zero. Any p the
    vector norm takes, as torch: p = 0 divides by the count of nonzeros, p < 0 by a norm that
    a zero entry makes 0 (so eps)."""
    _need_tensor("normalize", input)
    _need_float("normalize", input)
    return input / _norm_at_least(input, float(p), dim, eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim; x1 and x2 broadcast."""
    _need_tensor("cosine_similarity", x1)
    _need_tensor("cosine_similarity", x2)
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ShapeError(f"cosine_similarity: x1 of shape {x1.shape} and x2 of shape {x2.shape} "
                         "do not broadcast") from None
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    return ((x1 / _norm_at_least(x1, 2.0, dim, eps)) * (x2 / _norm_at_least(x2, 2.0, dim, eps))).sum(dim)


class ReLU(Module):
    """max(x, 0), elementwise.

    Args:
        inplace: write the result into the input and return it (as torch).

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return relu(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x), Phi the standard normal CDF: exact ("none") or the tanh approximation.

    Args:
        approximate: "none" (the erf form) or "tanh".

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', not {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        return tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        return sigmoid(input)


class Softmax(Module):
    """exp(x_i) / sum_j exp(x_j) along `dim`.

    Args:
        dim: the axis whose entries sum to 1.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Activation(Module):
    """The activations below. Shape: Input any shape (*), Output the same shape."""

    def extra_repr(self) -> str:  # inplace is shown when True, as torch
        return ", ".join(f"{k}={v!r}" for k, v in vars(self).items()
                         if k != "training" and not (k == "inplace" and not v))


class LeakyReLU(_Activation):
    """x for x > 0, negative_slope * x otherwise: `F.leaky_relu`."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return leaky_relu(input, self.negative_slope, self.inplace)


class ELU(_Activation):
    """x for x > 0, alpha * (exp(x) - 1) otherwise: `F.elu`."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return elu(input, self.alpha, self.inplace)


class SiLU(_Activation):
    """x * sigmoid(x): `F.silu`."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return silu(input, self.inplace)


class Softplus(_Activation):
    """log(1 + exp(beta * x)) / beta, x above the threshold: `F.softplus`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return softplus(input, self.beta, self.threshold)


class Mish(_Activation):
    """x * tanh(softplus(x)): `F.mish`."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return mish(input, self.inplace)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]: `F.hardtanh`."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val {min_val} must not exceed max_val {max_val}")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return hardtanh(input, self.min_val, self.max_val, self.inplace)


class LogSigmoid(_Activation):
    """log(sigmoid(x)), exact for any x: `F.logsigmoid`."""

    def forward(self, input: Tensor) -> Tensor:
        return logsigmoid(input)


class Softmin(_Activation):
    """softmax(-x) along dim: `F.softmin`."""

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return softmin(input, self.dim)


class LogSoftmax(_Activation):
    """log(softmax(x)) along dim, computed as x - logsumexp(x): `F.log_softmax`."""

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return log_softmax(input, self.dim)


class ReLU6(_Activation):
    """min(max(x, 0), 6): `F.relu6`."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return relu6(input, self.inplace)


class Hardsigmoid(_Activation):
    """relu6(x + 3) / 6: `F.hardsigmoid`."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return hardsigmoid(input, self.inplace)


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6 (Howard et al., 2019): `F.hardswish`."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return hardswish(input, self.inplace)


class SELU(_Activation):
    """scale * elu(x, alpha) with the self-normalizing constants: `F.selu`."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return selu(input, self.inplace)


class CELU(_Activation):
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise: `F.celu`."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return celu(input, self.alpha, self.inplace)


class GLU(_Activation):
    """a * sigmoid(b), a and b the halves of the input along dim: `F.glu`.

    Shape:
        - Input: (*, 2N, *), the even size along dim
        - Output: (*, N, *)
    """

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return glu(input, self.dim)


class Softsign(_Activation):
    """x / (1 + |x|): `F.softsign`."""

    def forward(self, input: Tensor) -> Tensor:
        return softsign(input)


class Tanhshrink(_Activation):
    """x - tanh(x): `F.tanhshrink`."""

    def forward(self, input: Tensor) -> Tensor:
        return tanhshrink(input)


class Threshold(_Activation):
    """x where x > threshold, else value: `F.threshold`."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return threshold(input, self.threshold, self.value, self.inplace)


class Softshrink(_Activation):
    """x - lambd above lambd, x + lambd below -lambd, 0 between: `F.softshrink`."""

    def __init__(self, lambd: float = 0.5):
        _need_lambd("Softshrink", lambd, non_negative=True)
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return softshrink(input, self.lambd)


class Hardshrink(_Activation):
    """x where |x| > lambd, 0 elsewhere: `F.hardshrink`."""

    def __init__(self, lambd: float = 0.5):
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return hardshrink(input, self.lambd)


class RReLU(_Activation):
    """x for x > 0, a * x otherwise, a drawn from [lower, upper] per element in training and
    (lower + upper) / 2 in evaluation: `F.rrelu` with training=self.training."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        if lower > upper:
            raise ValueError(f"RReLU: lower {lower} must not exceed upper {upper}")
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return rrelu(input, self.lower, self.upper, self.training, self.inplace)


class Softmax2d(_Activation):
    """softmax over the channels at each position: softmax along dim -3.

    Shape:
        - Input: (N, C, H, W) or (C, H, W)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        _need_tensor("Softmax2d", input)
        if input.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected an input of 3 or 4 dimensions, (C, H, W) or (N, C, H, W), "
                             f"but got one of shape {input.shape}")
        return softmax(input, -3)


class PReLU(Module):
    """x for x > 0, weight * x otherwise, with a learned weight: one for all channels
    (num_parameters=1) or one per channel (num_parameters=C, the input's dim 1): `F.prelu`.

    Args:
        num_parameters: 1, or C, the number of channels.
        init: the weight's first value.

    Shape:
        - Input: (N, C, *), or any shape with num_parameters=1
        - Output: the same shape as the input

    Attributes:
        weight: (num_parameters,), float32, every entry `init` at first.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25):
        if not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive integer, not {num_parameters!r}")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.empty(num_parameters, dtype=np.float32))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every entry of the weight back to `init`, as torch."""
        nn_init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


_threshold = threshold  # threshold_'s first argument is named threshold, as torch's
