"""Activations, as torch.nn's activation.py: the functional forms (relu, tanh, sigmoid, gelu,
softmax, log_softmax, and the others with `torch.nn.functional`'s names, arguments and
defaults: softplus, elu, ...) and their modules (ReLU, GELU, ..., LogSoftmax).

Each function is a composition of differentiable Tensor ops or one Function with forward and
backward side by side: gelu is the fused kernel GELUOp (its tanh form in cache-sized pieces,
nn/_pieces.py); softplus and elu need log1p and expm1 on the array for their stable forms
(SoftplusOp, ELUOp), and logsigmoid and mish are built on softplus. relu, tanh, sigmoid,
softmax and log_softmax are the core's ops (minigrad/ops/).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Tensor, where
from minigrad.autograd import Function
from minigrad.ops.erf import erf, erf_float32
from minigrad.ops.reduce import LogSoftmaxOp, SoftmaxOp, narrowed, widened

from ._checks import _need_tensor as _need
from ._pieces import by_pieces
from .module import Module


def relu(input: Tensor) -> Tensor:
    _need("relu", "the input", input)
    return input.relu()


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
    def forward(ctx, x, *, approximate="none"):
        ctx.approximate, ctx.dtype = approximate, x.dtype
        x = widened(x)
        return narrowed(GELUOp._forward(ctx, x, approximate), ctx.dtype)

    @staticmethod
    def _forward(ctx, x, approximate):
        if approximate == "tanh":
            x = np.ascontiguousarray(x).reshape(x.shape)  # (reshape: ascontiguousarray makes 0-d 1-d)
            t, y = np.empty_like(x), np.empty_like(x)
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


# ----------------------------------------------------------------------------- fused: softplus, elu


def _sigmoid(u: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-u)) without overflow and exact in both tails (exp(-|u|) never overflows)."""
    e = np.exp(-np.abs(u))
    return np.where(u >= 0, 1 / (1 + e), e / (1 + e))


class SoftplusOp(Function):
    """z = log(1 + exp(beta * x)) / beta, and z = x where beta * x > threshold
    dx = g * sigmoid(beta * x), and dx = g where beta * x > threshold

    Computed as (max(u, 0) + log1p(exp(-|u|))) / beta with u = beta * x: exp never overflows,
    and log1p keeps the tail exact (softplus(-20) is 2.06e-9, not 0). threshold=inf gives
    the exact function everywhere (logsigmoid and binary_cross_entropy_with_logits use it).
    """

    @staticmethod
    def forward(ctx, x, *, beta=1.0, threshold=20.0):
        u = x * x.dtype.type(beta)
        ctx.save_for_backward(u)
        ctx.threshold = threshold
        smooth = (np.maximum(u, 0) + np.log1p(np.exp(-np.abs(u)))) / x.dtype.type(beta)
        return np.where(u > threshold, x, smooth).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (u,) = ctx.saved
        return np.where(u > ctx.threshold, g, g * _sigmoid(u)).astype(g.dtype, copy=False)


class ELUOp(Function):
    """z = x for x > 0, alpha * (exp(x) - 1) otherwise
    dx = g for x > 0, g * alpha * exp(x) otherwise

    expm1 keeps small negative x exact (exp(x) - 1 loses every digit below 1e-8); exp is
    taken of min(x, 0), so a large positive x never overflows in the unused branch.
    """

    @staticmethod
    def forward(ctx, x, *, alpha=1.0):
        neg = np.minimum(x, 0)
        ctx.save_for_backward(x, neg)
        ctx.alpha = alpha
        return np.where(x > 0, x, x.dtype.type(alpha) * np.expm1(neg))

    @staticmethod
    def backward(ctx, g):
        x, neg = ctx.saved
        return np.where(x > 0, g, g * g.dtype.type(ctx.alpha) * np.exp(neg)).astype(g.dtype, copy=False)


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


def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    _need_tensor("elu", input)
    _need_float("elu", input)
    return ELUOp.apply(input, alpha=float(alpha))


def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, negative_slope * x otherwise (the gradient at 0 is negative_slope, as torch)."""
    _need_tensor("leaky_relu", input)
    _need_float("leaky_relu", input)
    return where(input._data > 0, input, input * negative_slope)


def silu(input: Tensor) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    _need_tensor("silu", input)
    _need_float("silu", input)
    return input * input.sigmoid()


def mish(input: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    _need_tensor("mish", input)
    _need_float("mish", input)
    return input * SoftplusOp.apply(input, beta=1.0, threshold=20.0).tanh()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clipped to [min_val, max_val]; as in torch the gradient is 0 at the bounds themselves
    (clip would pass it there), so the mask is strict."""
    _need_tensor("hardtanh", input)
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} must not exceed max_val {max_val}")
    inside = (input._data > min_val) & (input._data < max_val)
    return where(inside, input, input.detach().clip(min_val, max_val))


def softmin(input: Tensor, dim: int = -1) -> Tensor:
    """softmax(-x) along dim: the smallest entries get the largest weights. (dim defaults to
    the last axis, as minigrad's softmax.)"""
    _need_tensor("softmin", input)
    _need_float("softmin", input)
    return (-input).softmax(dim)


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
        raise ValueError(f"one_hot: class id {int(ids.max()) if ids.size else '-'} does not fit "
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
    """x / max(||x||_p, eps) along dim: unit vectors, and zero vectors stay zero."""
    _need_tensor("normalize", input)
    _need_float("normalize", input)
    if not p > 0:
        raise ValueError(f"normalize: p must be positive, not {p}")
    return input / _norm_at_least(input, float(p), dim, eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim; x1 and x2 broadcast."""
    _need_tensor("cosine_similarity", x1)
    _need_tensor("cosine_similarity", x2)
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"cosine_similarity: x1 of shape {x1.shape} and x2 of shape {x2.shape} "
                         "do not broadcast") from None
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    return ((x1 / _norm_at_least(x1, 2.0, dim, eps)) * (x2 / _norm_at_least(x2, 2.0, dim, eps))).sum(dim)


class ReLU(Module):
    """max(x, 0), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        return relu(input)


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

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k != "training")


class LeakyReLU(_Activation):
    """x for x > 0, negative_slope * x otherwise: `F.leaky_relu`."""

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:
        return leaky_relu(input, self.negative_slope)


class ELU(_Activation):
    """x for x > 0, alpha * (exp(x) - 1) otherwise: `F.elu`."""

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def forward(self, input: Tensor) -> Tensor:
        return elu(input, self.alpha)


class SiLU(_Activation):
    """x * sigmoid(x): `F.silu`."""

    def forward(self, input: Tensor) -> Tensor:
        return silu(input)


class Softplus(_Activation):
    """log(1 + exp(beta * x)) / beta, x above the threshold: `F.softplus`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return softplus(input, self.beta, self.threshold)


class Mish(_Activation):
    """x * tanh(softplus(x)): `F.mish`."""

    def forward(self, input: Tensor) -> Tensor:
        return mish(input)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]: `F.hardtanh`."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val {min_val} must not exceed max_val {max_val}")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input: Tensor) -> Tensor:
        return hardtanh(input, self.min_val, self.max_val)


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
