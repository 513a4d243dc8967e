"""Embeddings, as torch.nn's sparse.py: `embedding` (rows of a weight at integer ids; the
padding row gets no gradient) and the module Embedding."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor

from . import init, kernels
from ._checks import _int_array, _need_tensor
from .module import Module, Parameter


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
        self.weight = Parameter(np.zeros((num_embeddings, embedding_dim), dtype=np.float32))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, input: Any) -> Tensor:
        return embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
