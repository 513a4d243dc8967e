"""Embeddings, as torch.nn's sparse.py: the kernel EmbeddingOp (rows of a weight at integer
ids; its backward scatter-adds rows, with a fast path measured against its readable reference;
the padding row gets no gradient), `embedding` and the module Embedding."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor, where
from minigrad.autograd import Function
from minigrad.runtime import compiled

from . import init
from ._checks import _int_array, _need_tensor
from .module import Module, Parameter


class EmbeddingOp(Function):
    """Row lookup: y[..., :] = W[idx[...], :]     dW = zeros, with g scatter-added at rows idx

    A row used twice receives both gradients (np.add.at accumulates repeats); the row
    `padding_idx`, when given, receives none.
    """

    @staticmethod
    def reference(ctx, idx, weight):
        """The composition this kernel computes, for backward(create_graph=True): the rows at
        the ids (GetItem, whose backward is a scatter-add, differentiable again), the padding
        row detached so that it gets no gradient of any order."""
        if ctx.padding_idx is not None:
            live = np.ones((weight.shape[0],) + (1,) * (weight.ndim - 1), dtype=bool)
            live[ctx.padding_idx] = False
            weight = where(live, weight, weight.detach())
        return weight[idx._data]

    @staticmethod
    def forward(ctx, idx, weight, *, padding_idx=None):
        ctx.save_for_backward(idx)
        ctx.shape, ctx.padding_idx = weight.shape, padding_idx
        return weight[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved
        dw = scatter_add_rows(idx.reshape(-1), g.reshape(-1, ctx.shape[-1]), ctx.shape[0])
        if ctx.padding_idx is not None:
            dw[ctx.padding_idx] = 0
        return None, dw


def scatter_add_rows_reference(ids: np.ndarray, rows: np.ndarray, num_rows: int) -> np.ndarray:
    """out[ids[i]] += rows[i] for every i: the readable definition (np.add.at)."""
    out = np.zeros((num_rows, rows.shape[1]), dtype=rows.dtype)
    np.add.at(out, ids, rows)
    return out


def scatter_add_rows(ids: np.ndarray, rows: np.ndarray, num_rows: int) -> np.ndarray:
    """The same as `scatter_add_rows_reference`, about 3x faster: sort the ids so that equal
    ids are adjacent, then sum each run of equal ids with one np.add.reduceat. Ids without
    repeats (learned positions) are copied, not summed: at T = 1024 that is about 20x faster.
    With the compiled kernels on, `_scatter_add_rows_loop` instead."""
    out = np.zeros((num_rows, rows.shape[1]), dtype=rows.dtype)
    if ids.size == 0:
        return out
    if compiled.takes(rows) and ids.dtype.kind in "iu":
        _scatter_add_rows_loop(ids, rows, out)
        return out
    if np.all(ids[1:] > ids[:-1]):  # no repeats, in order (positions 0..T-1): a plain copy
        out[ids] = rows
        return out
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    if starts.size == ids.size:  # no repeats: reduceat over one-row runs is slow, and not needed
        out[sorted_ids] = rows[order]
    else:
        out[sorted_ids[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return out


@compiled.kernel
def _scatter_add_rows_loop(ids, rows, out):
    """out[ids[i]] += rows[i] for i = 0, 1, ... in order: np.add.at's sums, to the bit, in one
    pass with no sort (1024 ids of 64 features: 7 us against the numpy form's 140). One thread:
    rows of the same id would race. The ids are in range (`embedding` checks them): the compiled
    loop does not check its indices."""
    for i in range(ids.shape[0]):
        target, row = out[ids[i]], rows[i]
        for j in range(row.shape[0]):
            target[j] += row[j]


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
    return EmbeddingOp.apply(Tensor._make(ids, None), weight, padding_idx=padding_idx)


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
            self.weight._data[self.padding_idx] = 0

    def forward(self, input: Any) -> Tensor:
        return embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
