"""The functional API (`import minigrad.nn.functional as F`): layers as plain functions.

Names and arguments follow `torch.nn.functional`. The heavy lifting is done by fused kernels
(`minigrad.nn.kernels`, and the core's Softmax / LogSoftmax); these functions check their
arguments and give errors that name the function and the shapes.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from minigrad import Tensor
from minigrad.grad_mode import current_scope
from minigrad.ops.reduce import LogSoftmax, Softmax
from minigrad.viz import describe_scope

from . import kernels

__all__ = [
    "attention_reference", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "linear",
    "log_softmax", "nll_loss", "packed_self_attention", "relu", "scaled_dot_product_attention",
    "sigmoid", "softmax", "tanh", "tiled_attention",
    # activations.py
    "cosine_similarity", "elu", "hardtanh", "leaky_relu", "logsigmoid", "mish", "normalize", "one_hot",
    "silu", "softmin", "softplus",
    # losses.py
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss", "kl_div", "l1_loss",
    "mse_loss", "smooth_l1_loss",
    # padding.py, normalization.py, bilinear.py
    "bilinear", "group_norm", "pad",
    # batchnorm.py
    "batch_norm",
    # conv.py, pooling.py
    "adaptive_avg_pool2d", "avg_pool2d", "conv1d", "conv2d", "max_pool1d", "max_pool2d",
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


def _need_nc_input(fn: str, input: Any) -> None:
    """The input of a per-channel norm: a float Tensor of at least 2 dimensions (N, C, *)."""
    _need_tensor(fn, "the input", input)
    if input.ndim < 2:
        raise ValueError(f"{fn}: the input needs at least 2 dimensions (N, C, *), got shape "
                         f"{input.shape}{_where()}")
    if input.dtype.kind != "f":
        raise TypeError(f"{fn}: the input has dtype {input.dtype}; convert it with x.float()")


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


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight^T + bias, with weight (out_features, in_features) as in PyTorch.

    Shape:
        input: (*, in_features); weight: (out_features, in_features); bias: (out_features);
        output: (*, out_features).
    """
    _need_tensor("linear", "the input", input)
    _need_tensor("linear", "the weight", weight)
    if bias is not None:
        _need_tensor("linear", "the bias", bias)
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input of shape {input.shape} does not fit weight of shape {weight.shape} "
            "(the input's last dimension must equal weight.shape[1] = in_features)"
        )
    if bias is not None and bias.shape != weight.shape[:1]:  # numpy would broadcast, or fail unnamed
        raise ValueError(
            f"linear: bias has shape {bias.shape} but weight {weight.shape} needs {weight.shape[:1]}"
            f"{_where()} (one bias per output feature)"
        )
    if input.dtype.kind not in "fc":  # numpy would silently compute in float64; PyTorch raises
        # (A float64 input to float32 weights is allowed: it computes in float64, which the
        # float64 gradient checks of float32 modules rely on.)
        raise TypeError(
            f"linear: input of dtype {input.dtype} and weight of dtype {weight.dtype} differ{_where()}; "
            f"convert the input with {_CONVERT.get(weight.dtype.name, f'x.to({weight.dtype.name})')}"
        )
    # Fused (one matrix product, see kernels.Linear); the same as `input @ weight.T + bias`.
    return kernels.Linear.apply(input, weight) if bias is None else kernels.Linear.apply(input, weight, bias)


def embedding(input: Any, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """The rows of `weight` at the integer ids `input`; the padding row gets no gradient.

    Shape:
        input: any shape (*), integers in [0, num_embeddings); weight: (num_embeddings, dim);
        output: (*, dim).
    """
    _need_tensor("embedding", "the weight", weight)
    ids = _int_array("embedding", "the input", input)
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


def relu(input: Tensor) -> Tensor:
    _need_tensor("relu", "the input", input)
    return input.relu()


def tanh(input: Tensor) -> Tensor:
    _need_tensor("tanh", "the input", input)
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    _need_tensor("sigmoid", "the input", input)
    return input.sigmoid()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """input * Phi(input), with the exact erf form ("none") or the tanh approximation ("tanh")."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    _need_tensor("gelu", "the input", input)
    return kernels.GELU.apply(input, approximate=approximate)


def softmax(input: Tensor, dim: int = -1) -> Tensor:
    _need_tensor("softmax", "the input", input)
    return Softmax.apply(input, dim=dim)


def log_softmax(input: Tensor, dim: int = -1) -> Tensor:
    _need_tensor("log_softmax", "the input", input)
    return LogSoftmax.apply(input, dim=dim)


# ----------------------------------------------------------------------------- losses
# cross_entropy and nll_loss are in classification.py, the others in losses.py.

# ----------------------------------------------------------------------------- normalization, dropout


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last dimensions `normalized_shape` (see kernels.LayerNorm).

    Shape:
        input: (*, *normalized_shape); weight, bias: normalized_shape; output: like input.
    """
    _need_tensor("layer_norm", "the input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if input.shape[input.ndim - len(shape):] != shape or len(shape) > input.ndim:
        raise ValueError(f"layer_norm: input of shape {input.shape} does not end in normalized_shape {shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        _need_tensor("layer_norm", f"the {name}", p)
        if p.shape != shape:
            raise ValueError(f"layer_norm: {name} has shape {p.shape} but normalized_shape {shape} "
                             f"needs {shape}{_where()}")
    params = []
    if weight is not None or bias is not None:
        params.append(weight if weight is not None else Tensor(np.ones(shape, dtype=input.dtype)))
    if bias is not None:
        params.append(bias)
    return kernels.LayerNorm.apply(input, *params, ndim=len(shape), eps=eps)


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability p and scale the rest by 1 / (1 - p);
    the identity when not training or p == 0. p must lie in [0, 1)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1), not {p}")
    _need_tensor("dropout", "the input", input)
    if not training or p == 0.0:
        return input
    return kernels.Dropout.apply(input, p=p)


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
from .attention.functional import (  # noqa: E402, F401
    attention_reference,
    packed_self_attention,
    scaled_dot_product_attention,
    tiled_attention,
)
from .batchnorm import batch_norm  # noqa: E402, F401
from .bilinear import bilinear  # noqa: E402, F401
from .classification import cross_entropy, nll_loss  # noqa: E402, F401
from .conv import conv1d, conv2d  # noqa: E402, F401
from .losses import (  # noqa: E402, F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    smooth_l1_loss,
)
from .normalization import group_norm  # noqa: E402, F401
from .padding import pad  # noqa: E402, F401
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool1d, max_pool2d  # noqa: E402, F401
