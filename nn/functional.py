"""The functional API (`import minigrad.nn.functional as F`): layers as plain functions.

Names and arguments follow `torch.nn.functional`. The heavy lifting is done by fused kernels
(`minigrad.nn.kernels`, and the core's Softmax / LogSoftmax); these functions check their
arguments and give errors that name the function and the shapes.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from minigrad import Tensor, cat
from minigrad.autograd import current_scope
from minigrad.ops.reduce import LogSoftmax, Softmax
from minigrad.viz import describe_scope

from . import kernels

__all__ = [
    "attention_reference", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "linear",
    "log_softmax", "mse_loss", "nll_loss", "packed_self_attention", "relu", "scaled_dot_product_attention",
    "sigmoid", "softmax", "tanh", "tiled_attention",
    # activations.py
    "cosine_similarity", "elu", "hardtanh", "leaky_relu", "logsigmoid", "mish", "normalize", "one_hot",
    "silu", "softmin", "softplus",
    # losses.py
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss", "kl_div", "l1_loss",
    "smooth_l1_loss",
]

_REDUCTIONS = ("mean", "sum", "none")
_CONVERT = {"float32": "x.float()", "float64": "x.double()"}


def _check_reduction(fn: str, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}: reduction must be one of {_REDUCTIONS}, not {reduction!r}")


def _where() -> str:
    """" (in the module blocks.0.fc (Linear))" when raised inside a module call, else "": a student
    then knows which layer got the bad input."""
    scope = current_scope()
    return f" (in the module {describe_scope(scope)})" if scope else ""


def _need_tensor(fn: str, what: str, x: Any) -> None:
    """A TypeError naming fn when `x` is not a Tensor (a numpy array's `.data` is a raw
    buffer, so without this check the error would come from deep inside a kernel)."""
    if not isinstance(x, Tensor):
        kind = (f"a numpy array of shape {x.shape}" if isinstance(x, np.ndarray)
                else f"a {type(x).__name__}")
        raise TypeError(f"{fn}: {what} is {kind}, not a Tensor{_where()}; wrap it with mg.tensor(...)")


def _int_array(fn: str, what: str, t: Any) -> np.ndarray:
    """The integer array inside `t` (Tensor, array, list or int), or a TypeError naming fn."""
    arr = t.data if isinstance(t, Tensor) else np.asarray(t)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"{fn}: {what} must hold integer ids, not {arr.dtype} "
            "(make them with dtype=minigrad.int64)"
        )
    return arr


# ----------------------------------------------------------------------------- linear, embedding


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x @ weight^T + bias, with weight (out_features, in_features) as in PyTorch.

    Shape:
        x: (*, in_features); weight: (out_features, in_features); bias: (out_features);
        output: (*, out_features).
    """
    _need_tensor("linear", "the input", x)
    _need_tensor("linear", "the weight", weight)
    if bias is not None:
        _need_tensor("linear", "the bias", bias)
    if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input of shape {x.shape} does not fit weight of shape {weight.shape} "
            "(the input's last dimension must equal weight.shape[1] = in_features)"
        )
    if bias is not None and bias.shape != weight.shape[:1]:  # numpy would broadcast, or fail unnamed
        raise ValueError(
            f"linear: bias has shape {bias.shape} but weight {weight.shape} needs {weight.shape[:1]}"
            f"{_where()} (one bias per output feature)"
        )
    if x.dtype.kind not in "fc":  # numpy would silently compute in float64; PyTorch raises
        # (A float64 input to float32 weights is allowed: it computes in float64, which the
        # float64 gradient checks of float32 modules rely on.)
        raise TypeError(
            f"linear: input of dtype {x.dtype} and weight of dtype {weight.dtype} differ{_where()}; "
            f"convert the input with {_CONVERT.get(weight.dtype.name, f'x.to({weight.dtype.name})')}"
        )
    # Fused (one matrix product, see kernels.Linear); the same as `x @ weight.T + bias`.
    return kernels.Linear.apply(x, weight) if bias is None else kernels.Linear.apply(x, weight, bias)


def embedding(idx: Any, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """The rows of `weight` at the integer ids `idx`; the padding row gets no gradient.

    Shape:
        idx: any shape (*), integers in [0, num_embeddings); weight: (num_embeddings, dim);
        output: (*, dim).
    """
    _need_tensor("embedding", "the weight", weight)
    ids = _int_array("embedding", "the input", idx)
    n = weight.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        bad = int(ids.max()) if ids.max() >= n else int(ids.min())
        raise IndexError(
            f"embedding: id {bad} is out of range for an embedding of {n} rows "
            f"(ids must lie in [0, {n - 1}]; the largest given is {int(ids.max())})"
        )
    if padding_idx is not None:
        padding_idx = _padding_index(padding_idx, n)
    return kernels.Embedding.apply(Tensor._make(ids, None), weight, padding_idx=padding_idx)


def _padding_index(padding_idx: int, n: int) -> int:
    """padding_idx in [0, n), negative counting from the end as in PyTorch."""
    if not -n <= padding_idx < n:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for {n} embeddings")
    return padding_idx % n


# ----------------------------------------------------------------------------- activations


def relu(x: Tensor) -> Tensor:
    _need_tensor("relu", "the input", x)
    return x.relu()


def tanh(x: Tensor) -> Tensor:
    _need_tensor("tanh", "the input", x)
    return x.tanh()


def sigmoid(x: Tensor) -> Tensor:
    _need_tensor("sigmoid", "the input", x)
    return x.sigmoid()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), with the exact erf form ("none") or the tanh approximation ("tanh")."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    _need_tensor("gelu", "the input", x)
    return kernels.GELU.apply(x, approximate=approximate)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    _need_tensor("softmax", "the input", x)
    return Softmax.apply(x, dim=dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    _need_tensor("log_softmax", "the input", x)
    return LogSoftmax.apply(x, dim=dim)


# ----------------------------------------------------------------------------- losses


def _check_targets(fn: str, logits: Tensor, target: Any, ignore_index: int) -> np.ndarray:
    _need_tensor(fn, "the logits" if fn == "cross_entropy" else "the input", logits)
    t = _int_array(fn, "target", target)
    if logits.ndim == 0:
        raise ValueError(f"{fn}: logits must have a class dimension, got a 0-d tensor")
    if t.shape != logits.shape[:-1]:
        raise ValueError(
            f"{fn}: target of shape {t.shape} does not match logits of shape {logits.shape} "
            f"(expected target shape {logits.shape[:-1]}: one class id per row, classes last)"
        )
    C = logits.shape[-1]
    bad = (t != ignore_index) & ((t < 0) | (t >= C))
    if bad.any():
        raise ValueError(
            f"{fn}: target holds class id {int(t[bad].flat[0])}, out of range for {C} classes "
            f"(ids must lie in [0, {C - 1}] or equal ignore_index={ignore_index})"
        )
    return t


def cross_entropy(logits: Tensor, target: Any, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0, *, weight: Tensor | None = None) -> Tensor:
    """Softmax cross entropy of `logits` against class ids, fused (see kernels.CrossEntropy).

    Unlike PyTorch, the class dimension is always the last one, for any number of leading
    dimensions. Rows whose target is `ignore_index` are never read: they give loss 0 and a
    gradient of exactly 0, whatever they hold (a PAD row masked to -inf, NaN). With
    reduction="mean" they are left out of the average; if every row is ignored the result
    is 0.0 (PyTorch gives nan), so a batch of padding only does not poison training.

    `weight` (C,) weighs each class, as in PyTorch: row i's loss is multiplied by w[t_i] (the
    smoothing term by each class's own weight), and "mean" divides by sum_i w[t_i] instead of
    the row count. With weights the loss is composed from Tensor ops (see `_weighted_nll`).

    Shape:
        logits: (*, C); target: (*), integer ids in [0, C) or ignore_index; weight: (C,);
        output: () for "mean" and "sum", (*) for "none".
    """
    _check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], not {label_smoothing}")
    t = _check_targets("cross_entropy", logits, target, ignore_index)
    keep = t != ignore_index
    if keep.all():  # the common case: no copy
        x, t_kept = logits, t
    else:  # only the kept rows reach the kernel: log-softmax of an all -inf row would be nan
        x, t_kept = logits.reshape(-1, logits.shape[-1])[keep.reshape(-1)], t[keep]  # (K, C), (K,)
    if weight is not None:
        w = _class_weight("cross_entropy", weight, logits)
        logp = LogSoftmax.apply(x.reshape(-1, x.shape[-1]), dim=-1)  # (K, C)
        return _weighted_nll(logp, t_kept.reshape(-1), keep, w, reduction, float(label_smoothing))
    loss = kernels.CrossEntropy.apply(
        x, Tensor._make(t_kept, None), ignore_index=ignore_index, reduction=reduction,
        label_smoothing=float(label_smoothing),
    )
    return _put_back(loss, keep) if reduction == "none" else loss


def nll_loss(log_probs: Tensor, target: Any, ignore_index: int = -100,
             reduction: str = "mean", *, weight: Tensor | None = None) -> Tensor:
    """Negative log likelihood: -log_probs[..., target], for log-probabilities (e.g. from
    `log_softmax`); ignored rows are never read, and `weight` (C,) weighs the classes, as in
    `cross_entropy`.

    Shape:
        log_probs: (*, C); target: (*); weight: (C,); output: () for "mean" and "sum", (*) for
        "none".
    """
    _check_reduction("nll_loss", reduction)
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
        raise ValueError(f"{fn}: weight has shape {weight.shape} but the input's {logits.shape[-1]} "
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


def mse_loss(input: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Mean squared error (input - target)^2, averaged, summed, or elementwise ("none").

    Shape:
        input and target: the same shape (*); output: () or (*) for "none".
    """
    _check_reduction("mse_loss", reduction)
    _need_tensor("mse_loss", "the input", input)
    target = target if isinstance(target, Tensor) else Tensor(np.asarray(target, dtype=input.dtype))
    if target.shape != input.shape:
        raise ValueError(f"mse_loss: input of shape {input.shape} and target of shape "
                         f"{target.shape} differ")
    d = input - target
    sq = d * d
    if reduction == "none":
        return sq
    return sq.sum() if reduction == "sum" else sq.mean()


# ----------------------------------------------------------------------------- normalization, dropout


def layer_norm(x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last dimensions `normalized_shape` (see kernels.LayerNorm).

    Shape:
        x: (*, *normalized_shape); weight, bias: normalized_shape; output: like x.
    """
    _need_tensor("layer_norm", "the input", x)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.shape[x.ndim - len(shape):] != shape or len(shape) > x.ndim:
        raise ValueError(f"layer_norm: input of shape {x.shape} does not end in normalized_shape {shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        _need_tensor("layer_norm", f"the {name}", p)
        if p.shape != shape:
            raise ValueError(f"layer_norm: {name} has shape {p.shape} but normalized_shape {shape} "
                             f"needs {shape}{_where()}")
    params = []
    if weight is not None or bias is not None:
        params.append(weight if weight is not None else Tensor(np.ones(shape, dtype=x.dtype)))
    if bias is not None:
        params.append(bias)
    return kernels.LayerNorm.apply(x, *params, ndim=len(shape), eps=eps)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability p and scale the rest by 1 / (1 - p);
    the identity when not training or p == 0. p must lie in [0, 1)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1), not {p}")
    _need_tensor("dropout", "the input", x)
    if not training or p == 0.0:
        return x
    return kernels.Dropout.apply(x, p=p)


from .activations import (  # noqa: E402, F401
    cosine_similarity,
    elu,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    normalize,
    one_hot,
    silu,
    softmin,
    softplus,
)
from .functional_attention import (  # noqa: E402, F401
    attention_reference,
    packed_self_attention,
    scaled_dot_product_attention,
    tiled_attention,
)
from .losses import (  # noqa: E402, F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    smooth_l1_loss,
)
