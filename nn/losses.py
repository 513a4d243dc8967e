"""Regression, binary and divergence losses with `torch.nn.functional`'s names, arguments (in
its order: the deprecated size_average and reduce hold their places, and must be None),
defaults and reductions ("none", "mean", "sum"; kl_div also "batchmean").

Each is a composition of differentiable Tensor ops, except binary_cross_entropy: PyTorch
clamps its logs at -100 and bounds its gradient's denominator, which one Function states
exactly (forward and backward side by side). Of a sigmoid's output it is one op of the
logits (`SigmoidBinaryCrossEntropy`), so that its gradient is PyTorch's and never huge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor, where
from minigrad.autograd import Function
from minigrad.errors import ShapeError
from minigrad.ops.pointwise import SigmoidOp
from minigrad.ops.promotion import promote

from ._checks import _check_reduction, _need_tensor
from .activation import SoftplusOp
from .classification import _no_legacy, cross_entropy, nll_loss
from .module import Module

_REDUCTIONS = ("none", "mean", "sum")


def mse_loss(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Mean squared error (input - target)^2, averaged, summed, or elementwise ("none").

    Shape:
        input and target: the same shape (*); output: () or (*) for "none".
    """
    _no_legacy("mse_loss", size_average, reduce)
    _check_reduction("mse_loss", reduction)
    _need_tensor("mse_loss", "the input", input)
    target = target if isinstance(target, Tensor) else Tensor(np.asarray(target, dtype=input.dtype))
    if target.shape != input.shape:
        raise ShapeError(f"mse_loss: input of shape {input.shape} and target of shape "
                         f"{target.shape} differ")
    d = input - target
    sq = d * d
    if reduction == "none":
        return sq
    return sq.sum() if reduction == "sum" else sq.mean()


def _reduce(fn: str, loss: Tensor, reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> Tensor:
    if reduction not in allowed:
        raise ValueError(f"{fn}: reduction must be one of {allowed}, not {reduction!r}")
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _pair(fn: str, input: Any, target: Any, what: str = "input") -> tuple[Tensor, Tensor]:
    """input as a float Tensor, target as a Tensor (a number or array takes input's dtype),
    of the same shape (torch broadcasts some losses with a warning; a mismatch is nearly
    always a bug, a (B, 1) against a (B,), so minigrad refuses it as mse_loss does)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: the {what} is a {type(input).__name__}, not a Tensor; "
                        "wrap it with mg.tensor(...)")
    if input.dtype.kind != "f":
        raise TypeError(f"{fn}: the {what} has dtype {input.dtype}; convert it with x.float() or x.double()")
    if not isinstance(target, Tensor):
        target = Tensor(np.asarray(target, dtype=input.dtype))
    if target.shape != input.shape:
        raise ShapeError(f"{fn}: {what} of shape {input.shape} and target of shape {target.shape} "
                         "differ (give the target the input's shape, e.g. with .reshape)")
    return input, target


# ----------------------------------------------------------------------------- regression


def l1_loss(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean") -> Tensor:
    """|input - target|, averaged, summed or elementwise ("none"); the gradient at a tie is 0.

    Shape:
        input and target: the same shape (*); output: () or (*) for "none".
    """
    _no_legacy("l1_loss", size_average, reduce)
    input, target = _pair("l1_loss", input, target)
    return _reduce("l1_loss", (input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 * d**2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (d = input - target);
    beta = 0 is l1_loss.

    Shape:
        input and target: the same shape (*); output: () or (*) for "none".
    """
    _no_legacy("smooth_l1_loss", size_average, reduce)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, not {beta}")
    input, target = _pair("smooth_l1_loss", input, target)
    d = input - target
    if beta == 0:  # the quadratic branch would divide by 0, and its gradient be NaN
        return _reduce("smooth_l1_loss", d.abs(), reduction)
    a = d.abs()
    return _reduce("smooth_l1_loss", where(a._data < beta, d * d * (0.5 / beta), a - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Any, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """0.5 * d**2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere (d = input - target):
    smooth_l1_loss times delta.

    Shape:
        input and target: the same shape (*); output: () or (*) for "none".
    """
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, not {delta}")
    input, target = _pair("huber_loss", input, target)
    d = input - target
    a = d.abs()
    return _reduce("huber_loss", where(a._data < delta, d * d * 0.5, (a - 0.5 * delta) * delta), reduction)


# ----------------------------------------------------------------------------- binary


class BinaryCrossEntropy(Function):
    """z = -(y * max(log p, -100) + (1 - y) * max(log(1 - p), -100))
    dp = g * (p - y) / max(p * (1 - p), 1e-12)
    dy = g * (log(1 - p) - log p)

    The clamps are PyTorch's: p = 0 or 1 gives a loss of at most 100 instead of inf, and a
    gradient dp bounded by 1e12 instead of inf or NaN. dy is PyTorch's too, unclamped (inf
    at p = 0 or 1). Second derivatives are those of these formulas, the clamped denominator
    a constant where the clamp holds.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, p, y, out):
        return _bce_graph_saved(ctx, p, y)

    @staticmethod
    def forward(ctx, p, y):
        return _bce_forward(ctx, p, y)

    @staticmethod
    def backward(ctx, g):
        return _bce_backward(ctx, g, through_sigmoid=False)


def _bce_forward(ctx, p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PyTorch's loss -(y max(log p, -100) + (1 - y) max(log(1 - p), -100)), with p, y (in one
    dtype) and both logs saved: the forward of both BCE ops."""
    if p.dtype is not y.dtype:
        p, y = promote(p, y)
    floor = p.dtype.type(-100)
    with np.errstate(divide="ignore"):  # log(0) = -inf, clamped just below
        log_p, log_q = np.log(p), np.log1p(-p)
    ctx.save_for_backward(p, y, log_p, log_q)
    return -(y * np.maximum(log_p, floor) + (1 - y) * np.maximum(log_q, floor))


def _bce_graph_saved(ctx, p: Tensor, y: Tensor) -> tuple:
    """What `_bce_forward` saved (p, y in the dtype it computed in, log p and log(1 - p)) as
    Tensors of the graph, for backward(create_graph=True). p is the first input (BCE) or the
    sigmoid of it (SigmoidBinaryCrossEntropy, whose first input is the logits)."""
    dtype = ctx.saved[0].dtype
    p, y = (t if t.dtype == dtype else t.to(dtype) for t in (p, y))
    return p, y, p.log(), (1 - p).log()


def _clamp_below(x, floor):
    """max(x, floor) (np.maximum on arrays); on Tensors floor is a constant where it holds."""
    if isinstance(x, Tensor):
        return where(x._data >= floor, x, floor)
    return np.maximum(x, floor)


def _bce_backward(ctx, g: np.ndarray, through_sigmoid: bool) -> tuple[np.ndarray | None, ...]:
    """(d first input, dy): dp = g (p - y) / max(p (1 - p), 1e-12), PyTorch's bound (a float32
    constant in either dtype); through_sigmoid multiplies it by the sigmoid's (1 - p) p, giving
    the logits' gradient. Written for arrays and Tensors alike (create_graph)."""
    p, y, log_p, log_q = ctx.saved
    first, dy = ctx.needs_input_grad
    d = None
    if first:
        d = g * (p - y) / _clamp_below(p * (1 - p), p.dtype.type(np.float32(1e-12)))
        if through_sigmoid:
            d = d * (1 - p) * p
    return d, (g * (log_q - log_p) if dy else None)


class SigmoidBinaryCrossEntropy(Function):
    """binary_cross_entropy(sigmoid(x), y) as one op of the logits x, with p = sigmoid(x) the
    sigmoid's (rounded) output, as PyTorch computes it:
        z  = BinaryCrossEntropy's loss of p
        dx = [g * (p - y) / max(p * (1 - p), 1e-12)] * (1 - p) * p
        dy = g * (log(1 - p) - log p)

    The bracket is BCE's gradient dp, and (1 - p) * p PyTorch's sigmoid backward, both of the
    rounded p, so they cancel: |dx| <= |g (p - y)|, and where p(1 - p) rounds below 1e-12 (p
    rounded to 1, or a tail below 1e-12) dx goes to 0 with the clamped, flat loss. Chaining
    BCE's dp into minigrad's exact sigmoid derivative instead would divide a rounded 1 - p by
    an exact one: float32 x = 17, y = 0 gave 41399 (p rounds to 1, so dp = 1e12), x = 15 was
    15% off. Under create_graph p is recomputed as x's sigmoid, so that dx is differentiated
    through it.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, y, out):
        return _bce_graph_saved(ctx, x.sigmoid(), y)

    @staticmethod
    def forward(ctx, x, y, p):
        return _bce_forward(ctx, p, y)

    @staticmethod
    def backward(ctx, g):
        return _bce_backward(ctx, g, through_sigmoid=True)


def _sigmoid_logits(p: Tensor) -> Tensor | None:
    """The logits x when p is the output of a sigmoid recorded in the graph (and nothing watches
    p's own gradient: no hook, no retain_grad), else None."""
    node = p._node
    if type(node) is not SigmoidOp or node.saved is None or node.out_hooks or node.retained is not None:
        return None
    return node.inputs[0]


def _weight_tensor(fn: str, weight: Any, like: Tensor, what: str = "weight", fix: str = "") -> Tensor:
    """`weight` as a Tensor of like's dtype that broadcasts to like's shape, or a ValueError
    naming fn, the weight and both shapes."""
    w = weight if isinstance(weight, Tensor) else Tensor(np.asarray(weight, dtype=like.dtype))
    try:
        np.broadcast_shapes(w.shape, like.shape)
    except ValueError:
        raise ShapeError(f"{fn}: {what} of shape {w.shape} does not broadcast to the input's shape "
                         f"{like.shape}{fix}") from None
    return w


def _weighted(fn: str, loss: Tensor, weight: Any) -> Tensor:
    return loss if weight is None else loss * _weight_tensor(fn, weight, loss)


def binary_cross_entropy(input: Tensor, target: Any, weight: Any = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Tensor:
    """-(y log p + (1 - y) log(1 - p)) for probabilities p = input in [0, 1], each log
    clamped at -100 as in PyTorch; `weight` (broadcast to the input) rescales each element.
    For logits use binary_cross_entropy_with_logits: it is exact where sigmoid rounds to 0 or 1.

    The gradient is PyTorch's: dp = (p - y) / max(p (1 - p), 1e-12). When p is a sigmoid's
    output, the loss is one op of the logits (`SigmoidBinaryCrossEntropy`): its gradient is
    PyTorch's through the sigmoid, at most |p - y|, however confident the prediction.

    Shape:
        input and target: the same shape (*); weight: broadcasts to (*); output: () or (*).
    """
    _no_legacy("binary_cross_entropy", size_average, reduce)
    input, target = _pair("binary_cross_entropy", input, target)
    p = input._data
    if p.size and not ((p >= 0) & (p <= 1)).all():
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise ValueError(f"binary_cross_entropy: the input holds {bad}, but every element must be a "
                         "probability in [0, 1] (pass logits to binary_cross_entropy_with_logits)")
    logits = _sigmoid_logits(input)
    if logits is None:
        loss = BinaryCrossEntropy.apply(input, target)
    else:
        loss = SigmoidBinaryCrossEntropy.apply(logits, target, p=p)
    return _reduce("binary_cross_entropy", _weighted("binary_cross_entropy", loss, weight), reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Any, weight: Any = None, size_average: Any = None,
                                     reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Any = None) -> Tensor:
    """binary_cross_entropy(sigmoid(x), y), computed from the logits x without the sigmoid:
    (1 - y) * x + l * softplus(-x) with l = 1 + (pos_weight - 1) * y, PyTorch's form, exact
    for any |x| (softplus never overflows). pos_weight (broadcast along the last axis, one
    per class) weighs the positive term; weight rescales each element.

    Shape:
        input and target: the same shape (*); weight: broadcasts to (*); pos_weight: (C,)
        or broadcasts to (*); output: () or (*).
    """
    fn = "binary_cross_entropy_with_logits"
    _no_legacy(fn, size_average, reduce)
    x, y = _pair(fn, input, target)
    soft = SoftplusOp.apply(-x, beta=1.0, threshold=float("inf"))  # -log(sigmoid(x))
    if pos_weight is None:
        loss = (1 - y) * x + soft
    else:
        pw = _weight_tensor(fn, pos_weight, x, "pos_weight", " (give one weight per class, the last axis)")
        loss = (1 - y) * x + (1 + (pw - 1) * y) * soft
    return _reduce(fn, _weighted(fn, loss, weight), reduction)


# ----------------------------------------------------------------------------- divergence


def kl_div(input: Tensor, target: Any, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL(target || model) pointwise, with `input` the model's log-probabilities:
    target * (log target - input), 0 where target = 0 (PyTorch's xlogy); with log_target the
    target is given as log-probabilities too: exp(target) * (target - input).
    "batchmean" divides the sum by input.shape[0] (the true KL per sample); "mean" divides
    by the number of elements, as in PyTorch. input and target broadcast.

    Shape:
        input: (N, *); target: broadcasts with input; output: () or the broadcast shape.
    """
    fn = "kl_div"
    _no_legacy(fn, size_average, reduce)
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: the input is a {type(input).__name__}, not a Tensor; "
                        "wrap it with mg.tensor(...)")
    t = target if isinstance(target, Tensor) else Tensor(np.asarray(target, dtype=input.dtype))
    try:
        np.broadcast_shapes(input.shape, t.shape)
    except ValueError:
        raise ShapeError(f"{fn}: input of shape {input.shape} and target of shape {t.shape} do not "
                         "broadcast") from None
    if log_target:
        loss = t.exp() * (t - input)
    else:  # log of 1 where target = 0: the term is 0 there, and its gradient finite
        zero = t._data == 0
        loss = t * t.masked_fill(zero, 1.0).log() - t * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total  # the input's batch, as torch
    return _reduce(fn, loss, reduction, ("none", "mean", "sum", "batchmean"))


# ----------------------------------------------------------------------------- modules


class _Loss(Module):
    """A loss as a module: its options at construction, (input, target) at call.

    Shape:
        - Input: (*); Target: as the functional form says
        - Output: () for "mean" and "sum" (and "batchmean"), (*) for "none"
    """

    def __init__(self, reduction: str = "mean"):
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """Softmax cross entropy of logits (N, C) or (N, C, d1, ..., dk) against class ids (N) or
    (N, d1, ..., dk): `F.cross_entropy` (classes on dim 1, as in PyTorch)."""

    def __init__(self, weight: Any = None, *, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        self.weight, self.reduction = weight, reduction
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return cross_entropy(input, target, ignore_index=self.ignore_index, reduction=self.reduction,
                             label_smoothing=self.label_smoothing, weight=self.weight)


class NLLLoss(_Loss):
    """Negative log likelihood of log-probabilities (N, C) or (N, C, d1, ..., dk) at class ids
    (N) or (N, d1, ..., dk): `F.nll_loss` (classes on dim 1, as in CrossEntropyLoss)."""

    def __init__(self, weight: Any = None, *, ignore_index: int = -100, reduction: str = "mean"):
        self.weight, self.reduction, self.ignore_index = weight, reduction, ignore_index

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return nll_loss(input, target, ignore_index=self.ignore_index, reduction=self.reduction,
                        weight=self.weight)


class MSELoss(_Loss):
    """(input - target)**2: `F.mse_loss`."""

    def __init__(self, *, reduction: str = "mean"):
        self.reduction = reduction

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """|input - target|: `F.l1_loss`."""

    def __init__(self, *, reduction: str = "mean"):
        self.reduction = reduction

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below beta, linear above: `F.smooth_l1_loss`."""

    def __init__(self, *, reduction: str = "mean", beta: float = 1.0):
        self.reduction, self.beta = reduction, beta

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below delta, delta-linear above: `F.huber_loss`."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        self.reduction, self.delta = reduction, delta

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities: `F.binary_cross_entropy`."""

    def __init__(self, weight: Any = None, *, reduction: str = "mean"):
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits: `F.binary_cross_entropy_with_logits`."""

    def __init__(self, weight: Any = None, *, reduction: str = "mean", pos_weight: Any = None):
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target distribution: `F.kl_div`."""

    def __init__(self, *, reduction: str = "mean", log_target: bool = False):
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
