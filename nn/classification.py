"""Cross entropy and negative log likelihood with `torch.nn.functional`'s arguments, in its
order: class ids (rows whose target is ignore_index are never read), class weights, label
smoothing, and class-probability targets.

The unweighted cross entropy of class ids is one fused kernel (CrossEntropy); the
other cases are compositions of Tensor ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor, cat
from minigrad.autograd import Function
from minigrad.errors import RangeError, ShapeError
from minigrad.ops.reduce import LogSoftmaxOp, log_softmax_last

from ._checks import _check_reduction, _int_array, _need_tensor


class CrossEntropy(Function):
    """Cross entropy of logits x (*, C) against class ids t (*), with label smoothing eps.

    p = softmax(x);  loss_i = (1 - eps) * (-log p_i[t_i]) + eps * mean_c(-log p_i[c])
    dx_i = g_i * (p_i - (1 - eps) * onehot(t_i) - eps / C)

    Rows whose target equals `ignore_index` give loss 0 and no gradient. reduction="mean"
    divides by the number of rows not ignored; when every row is ignored the mean is 0.0
    (PyTorch returns nan there) and the gradient is zero.
    """

    @staticmethod
    def reference(ctx, x, target):
        """The composition this kernel computes, for backward(create_graph=True)."""
        _, safe_t, keep = ctx.saved
        logp = x.reshape(-1, x.shape[-1]).log_softmax(-1)
        loss = -logp[np.arange(safe_t.size), safe_t]
        if ctx.eps:
            loss = (1 - ctx.eps) * loss - ctx.eps * logp.mean(-1)
        loss = loss * keep
        if ctx.reduction == "none":
            return loss.reshape(target.shape)
        return loss.sum() if ctx.reduction == "sum" else loss.sum() / max(ctx.count, 1)

    @staticmethod
    def forward(ctx, x, target, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        C = x.shape[-1]
        logp = log_softmax_last(x.reshape(-1, C))  # (N, C)
        t = target.reshape(-1)
        keep = t != ignore_index
        safe_t = np.where(keep, t, 0)  # any valid column; ignored rows are zeroed below
        rows = np.arange(t.size)
        loss = -logp[rows, safe_t]
        eps = label_smoothing
        if eps:
            loss = (1 - eps) * loss - eps * logp.mean(axis=-1)
        loss = np.where(keep, loss, 0).astype(x.dtype, copy=False)
        ctx.save_for_backward(logp, safe_t, keep)
        ctx.reduction, ctx.eps, ctx.shape = reduction, eps, x.shape
        ctx.count = int(keep.sum())
        if reduction == "none":
            return loss.reshape(target.shape)
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / x.dtype.type(max(ctx.count, 1))  # all ignored: 0.0, not nan

    @staticmethod
    def backward(ctx, g):
        logp, safe_t, keep = ctx.saved
        if ctx.reduction == "none":
            gi = g.reshape(-1, 1)
        elif ctx.reduction == "sum":
            gi = g
        else:
            gi = g / max(ctx.count, 1)
        dx = np.exp(logp)
        dx[np.arange(safe_t.size), safe_t] -= 1 - ctx.eps
        if ctx.eps:
            dx -= ctx.eps / logp.shape[-1]
        dx *= keep[:, None] * gi
        return dx.reshape(ctx.shape), None


def _check_targets(fn: str, logits: Tensor, target: Any, ignore_index: int) -> np.ndarray:
    _need_tensor(fn, "the logits" if fn == "cross_entropy" else "the input", logits)
    t = _int_array(fn, "target", target)
    if logits.ndim == 0:
        raise ShapeError(f"{fn}: logits must have a class dimension, got a 0-d tensor")
    if t.shape != logits.shape[:-1]:
        raise ShapeError(
            f"{fn}: target of shape {t.shape} does not match logits of shape {logits.shape} "
            f"(expected target shape {logits.shape[:-1]}: one class id per row)"
        )
    C = logits.shape[-1]
    bad = (t != ignore_index) & ((t < 0) | (t >= C))
    if bad.any():
        raise RangeError(
            f"{fn}: target holds class id {int(t[bad].flat[0])}, out of range for {C} classes "
            f"(ids must lie in [0, {C - 1}] or equal ignore_index={ignore_index})"
        )
    return t


def _classes_last(fn: str, input: Any, target: Any) -> tuple[Any, Any]:
    """PyTorch's layout, classes on dim 1 of an (N, C, d1, ..., dk) input, as the kernels'
    (N, d1, ..., dk, C), classes last (a view: the gradient flows back through it); a
    probability target of the input's shape is moved alike. (C,) and (N, C) are both already.

    Class ids shaped input.shape[:-1], as a (B, T, V) language model's targets (B, T) are,
    would be read with T as the classes: that call is refused, naming the flattening."""
    if not isinstance(input, Tensor) or input.ndim < 3:
        return input, target
    soft = isinstance(target, Tensor) and target.dtype.kind == "f"
    if soft:
        return input.movedim(1, -1), (target.movedim(1, -1) if target.ndim == input.ndim else target)
    shape = getattr(target, "shape", np.shape(target))
    expected = input.shape[:1] + input.shape[2:]
    if tuple(shape) != expected:
        C = input.shape[-1]
        flatten = (f": for classes on the last dim, flatten as in PyTorch, {fn}(input.reshape(-1, {C}), "
                   "target.reshape(-1))") if tuple(shape) == input.shape[:-1] else ""
        raise ShapeError(f"{fn}: input of shape {input.shape} has its classes on dim 1, as in PyTorch, so "
                         f"the target must have shape {expected}, but it has {tuple(shape)}{flatten}")
    return input.movedim(1, -1), target


def _no_legacy(fn: str, size_average: Any, reduce: Any) -> None:
    """size_average and reduce hold their places in PyTorch's argument order (so that a weight,
    ignore_index or reduction given by position means the same); they are deprecated there."""
    if size_average is not None or reduce is not None:
        raise ShapeError(f"{fn}: size_average and reduce are deprecated in PyTorch and not supported; "
                         "use reduction='mean', 'sum' or 'none'")


def cross_entropy(input: Tensor, target: Any, weight: Tensor | None = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross entropy of the logits `input` against class ids, fused (see
    CrossEntropy), or against class probabilities. PyTorch's arguments, in its order.

    The classes are on dim 1, as in PyTorch: logits (N, C) or (N, C, d1, ..., dk) with class
    ids (N) or (N, d1, ..., dk), and (C,) with a 0-d target. A language model's logits
    (B, T, V) go in flattened, as in PyTorch: `cross_entropy(logits.reshape(-1, V),
    targets.reshape(-1))` (`_classes_last` refuses the unflattened call).

    Rows whose target is `ignore_index` are never read: they give loss 0 and a gradient of
    exactly 0, whatever they hold (a PAD row masked to -inf, NaN). With reduction="mean" they
    are left out of the average; if every row is ignored the result is 0.0 (PyTorch gives
    nan), so a batch of padding only does not poison training.

    `weight` (C,) weighs each class, as in PyTorch: row i's loss is multiplied by w[t_i] (the
    smoothing term by each class's own weight), and "mean" divides by sum_i w[t_i] instead of
    the row count. With weights the loss is composed from Tensor ops (see `_weighted_nll`).

    A float target of the input's shape holds class probabilities, as in PyTorch: row i's loss
    is -sum_c w_c q_ic log p_ic with q smoothed to (1 - s) q + s / C, and "mean" divides by the
    row count (ignore_index does not apply).

    Shape:
        input: (C), (N, C) or (N, C, d1, ..., dk); target: (), (N) or (N, d1, ..., dk), integer
        ids in [0, C) or ignore_index, or probabilities of the input's shape; weight: (C,);
        output: () for "mean" and "sum", the target's shape for "none".
    """
    _no_legacy("cross_entropy", size_average, reduce)
    _check_reduction("cross_entropy", reduction)
    input, target = _classes_last("cross_entropy", input, target)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], not {label_smoothing}")
    logits = input
    if isinstance(target, Tensor) and target.dtype.kind == "f":
        return _soft_cross_entropy(logits, target, weight, reduction, float(label_smoothing))
    t = _check_targets("cross_entropy", logits, target, ignore_index)
    keep = t != ignore_index
    if keep.all():  # the common case: no copy
        x, t_kept = logits, t
    else:  # only the kept rows reach the kernel: log-softmax of an all -inf row would be nan
        x, t_kept = logits.reshape(-1, logits.shape[-1])[keep.reshape(-1)], t[keep]  # (K, C), (K,)
    if weight is not None:
        w = _class_weight("cross_entropy", weight, logits)
        logp = LogSoftmaxOp.apply(x.reshape(-1, x.shape[-1]), dim=-1)  # (K, C)
        return _weighted_nll(logp, t_kept.reshape(-1), keep, w, reduction, float(label_smoothing))
    loss = CrossEntropy.apply(
        x, Tensor._make(t_kept, None), ignore_index=ignore_index, reduction=reduction,
        label_smoothing=float(label_smoothing),
    )
    return _put_back(loss, keep) if reduction == "none" else loss


def _soft_cross_entropy(logits: Tensor, q: Tensor, weight: Any, reduction: str, smoothing: float) -> Tensor:
    """-sum_c w_c q_ic log_softmax(x)_ic per row, for probability targets q (*, C)."""
    _need_tensor("cross_entropy", "the logits", logits)
    if q.shape != logits.shape or logits.ndim == 0:
        raise ShapeError(f"cross_entropy: a float target holds class probabilities and must have the "
                         f"input's shape {logits.shape}, got {q.shape} (class ids must be integers)")
    C = logits.shape[-1]
    if smoothing:
        q = q * (1 - smoothing) + smoothing / C
    logp = LogSoftmaxOp.apply(logits, dim=-1)
    terms = logp * q if weight is None else logp * q * _class_weight("cross_entropy", weight, logits)
    loss = -terms.sum(-1)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / max(loss.numel(), 1)


def nll_loss(input: Tensor, target: Any, weight: Tensor | None = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood: -log_probs[..., target], for log-probabilities (e.g. from
    `log_softmax`); ignored rows are never read, and `weight` (C,) weighs the classes, as in
    `cross_entropy`.

    Shape:
        input: (C), (N, C) or (N, C, d1, ..., dk), classes on dim 1 as in `cross_entropy`;
        target: (), (N) or (N, d1, ..., dk); weight: (C,); output: () for "mean" and "sum",
        the target's shape for "none".
    """
    _no_legacy("nll_loss", size_average, reduce)
    _check_reduction("nll_loss", reduction)
    input, target = _classes_last("nll_loss", input, target)
    log_probs = input
    t = _check_targets("nll_loss", log_probs, target, ignore_index)
    keep = t != ignore_index
    rows = log_probs.reshape(-1, log_probs.shape[-1])  # (N, C)
    t_kept = t.reshape(-1)
    if not keep.all():  # pick from the kept rows only (0 * -inf would be nan)
        rows, t_kept = rows[keep.reshape(-1)], t[keep]  # (K, C), (K,)
    if weight is not None:
        return _weighted_nll(rows, t_kept, keep, _class_weight("nll_loss", weight, log_probs), reduction, 0.0)
    loss = -rows[np.arange(t_kept.size), t_kept]  # (K,)
    if reduction == "none":
        return _put_back(loss, keep)
    total = loss.sum()
    return total if reduction == "sum" else total / max(t_kept.size, 1)


def _class_weight(fn: str, weight: Any, logits: Tensor) -> Tensor:
    """The class weights as a (C,) Tensor, or an error naming fn and the shapes."""
    _need_tensor(fn, "weight", weight)
    if weight.shape != logits.shape[-1:]:
        raise ShapeError(f"{fn}: weight has shape {weight.shape} but the input's {logits.shape[-1]} "
                         f"classes need ({logits.shape[-1]},): one weight per class")
    return weight


def _weighted_nll(logp: Tensor, t: np.ndarray, keep: np.ndarray, w: Tensor, reduction: str,
                  smoothing: float) -> Tensor:
    """PyTorch's class-weighted loss of kept rows, from log-probabilities logp (K, C):
        loss_i = (1 - s) * w[t_i] * -logp[i, t_i] + s / C * sum_c w[c] * -logp[i, c]
    "mean" divides the sum by sum_i w[t_i]; "none" puts each row back in place (0 if ignored)."""
    picked = -logp[np.arange(t.size), t] * w[t]  # (K,)
    if smoothing:
        picked = (1 - smoothing) * picked - (logp * w).sum(-1) * (smoothing / logp.shape[-1])
    loss = picked
    if reduction == "none":
        return _put_back(loss, keep)
    total = loss.sum()
    return total if reduction == "sum" else total / w[t].sum()


def _put_back(loss: Tensor, keep: np.ndarray) -> Tensor:
    """The losses (K,) of the kept rows in their places in keep's shape (*), 0 at the ignored
    ones. Each ignored place reads an appended constant 0, so its upstream gradient (even a
    nan) goes nowhere."""
    if keep.all():
        return loss.reshape(keep.shape)
    flat = keep.reshape(-1)
    pos = np.where(flat, np.cumsum(flat) - 1, loss.shape[0])  # (N,): kept row k -> k, ignored -> K
    padded = cat([loss.reshape(-1), Tensor(np.zeros(1, dtype=loss.dtype))])  # (K + 1,)
    return padded[pos].reshape(keep.shape)
