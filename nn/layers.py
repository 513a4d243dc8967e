"""Basic layers: Linear, Embedding, LayerNorm, Dropout and the activations, as in `torch.nn`.

Each layer holds its parameters and calls the functional API (`minigrad.nn.functional`);
names, arguments, weight layouts and initialisations are PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from minigrad import Tensor

from . import functional as F
from . import init
from .module import Module, Parameter


def _empty(*shape: int) -> Parameter:
    return Parameter(np.zeros(shape, dtype=np.float32))


class Linear(Module):
    """An affine map y = x W^T + b.

    Both W and b start as U(-1/sqrt(in_features), 1/sqrt(in_features)), as in PyTorch
    (kaiming_uniform_ with a = sqrt(5) for the weight).

    Args:
        in_features: size of each input's last dimension.
        out_features: size of each output's last dimension.
        bias: whether to add the learned bias b.

    Shape:
        - Input: (*, in_features)
        - Output: (*, out_features)

    Attributes:
        weight: (out_features, in_features).
        bias: (out_features), or None.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        self.in_features, self.out_features = in_features, out_features
        self.weight = _empty(out_features, in_features)
        self.bias = _empty(out_features) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in_features == 0:  # nothing to draw, and no fan to divide by
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={bias}"


class Embedding(Module):
    """A lookup table: row i of the weight is the vector of id i.

    The weight starts as N(0, 1), with the `padding_idx` row (if any) zero; that row gets no
    gradient, so it stays zero in training.

    Args:
        num_embeddings: number of ids (the vocabulary size).
        embedding_dim: size of each vector.
        padding_idx: an id whose vector stays zero (negative counts from the end).

    Shape:
        - Input: (*), integer ids in [0, num_embeddings)
        - Output: (*, embedding_dim)

    Attributes:
        weight: (num_embeddings, embedding_dim).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx {padding_idx} is out of range for {num_embeddings} embeddings"
                )
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        self.weight = _empty(num_embeddings, embedding_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, input: Any) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """Layer normalization (Ba et al., 2016) over the last dimensions, then scale and shift:
    y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance.

    Args:
        normalized_shape: the trailing shape to normalize over (an int for the last axis).
        eps: added to the variance, so that constant rows give 0 instead of NaN.
        elementwise_affine: learn `weight` (ones at first) and `bias` (zeros at first).
        bias: with elementwise_affine, whether to learn the bias too.

    Shape:
        - Input: (*, *normalized_shape)
        - Output: the same shape as the input

    Attributes:
        weight, bias: normalized_shape, or None.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if elementwise_affine and bias else None

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Dropout(Module):
    """Inverted dropout in training (zero with probability p, scale the rest by 1 / (1 - p));
    the identity in evaluation (`model.eval()`).

    Args:
        p: probability of zeroing an element, in [0, 1).

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, p: float = 0.5):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must lie in [0, 1), not {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


# ----------------------------------------------------------------------------- activations


class ReLU(Module):
    """max(x, 0), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input)


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
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


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
        return F.softmax(input, self.dim)

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
        return F.leaky_relu(input, self.negative_slope)


class ELU(_Activation):
    """x for x > 0, alpha * (exp(x) - 1) otherwise: `F.elu`."""

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha)


class SiLU(_Activation):
    """x * sigmoid(x): `F.silu`."""

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input)


class Softplus(_Activation):
    """log(1 + exp(beta * x)) / beta, x above the threshold: `F.softplus`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)


class Mish(_Activation):
    """x * tanh(softplus(x)): `F.mish`."""

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]: `F.hardtanh`."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val {min_val} must not exceed max_val {max_val}")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val)


class LogSigmoid(_Activation):
    """log(sigmoid(x)), exact for any x: `F.logsigmoid`."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softmin(_Activation):
    """softmax(-x) along dim: `F.softmin`."""

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


class LogSoftmax(_Activation):
    """log(softmax(x)) along dim, computed as x - logsumexp(x): `F.log_softmax`."""

    def __init__(self, dim: int = -1):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


# ----------------------------------------------------------------------------- shape


class Flatten(Module):
    """Merge the axes start_dim..end_dim into one (by default all but the batch axis).

    Shape:
        - Input: (*, S_start, ..., S_end, *)
        - Output: (*, S_start * ... * S_end, *)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis `dim` into `unflattened_size` (one entry may be -1), Flatten's inverse.

    Shape:
        - Input: (*, S_dim, *), S_dim the product of unflattened_size
        - Output: (*, U_1, ..., U_n, *)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]):
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        d, sizes = (self.dim + input.ndim if self.dim < 0 else self.dim), self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        if not 0 <= d < input.ndim or sizes.count(-1) > 1 or (
                input.shape[d] != known if -1 not in sizes else known == 0 or input.shape[d] % known):
            raise ValueError(f"Unflatten: cannot split axis {self.dim} of an input of shape {input.shape} "
                             f"into {sizes} (their product must equal that axis' size; at most one -1)")
        return input.reshape(input.shape[:d] + sizes + input.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for an optional layer); any
    constructor arguments are ignored, as in PyTorch.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def forward(self, input: Any) -> Any:
        return input
