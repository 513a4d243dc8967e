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

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

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

    def forward(self, idx: Any) -> Tensor:
        return F.embedding(idx, self.weight, self.padding_idx)

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

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

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

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


# ----------------------------------------------------------------------------- activations


class ReLU(Module):
    """max(x, 0), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


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

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


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

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for an optional layer); any
    constructor arguments are ignored, as in PyTorch.

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def forward(self, x: Any) -> Any:
        return x
