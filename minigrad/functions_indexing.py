"""Function forms of the indexing methods and matrix products, with PyTorch's names and
argument names (`minigrad.gather(x, 1, index)` is `x.gather(1, index)`), and `einsum`, which
has no method. Beside functions.py only to keep each file short."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .creation import as_tensor
from .ops.einsum import Einsum
from .ops.indexing import check_index
from .tensor import Tensor


def gather(input: Any, dim: int, index: Any) -> Tensor:
    return as_tensor(input).gather(dim, index)


def scatter(input: Any, dim: int, index: Any, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    return as_tensor(input).scatter(dim, index, src, value=value, reduce=reduce)


def scatter_add(input: Any, dim: int, index: Any, src: Any) -> Tensor:
    return as_tensor(input).scatter_add(dim, index, src)


def index_select(input: Any, dim: int, index: Any) -> Tensor:
    return as_tensor(input).index_select(dim, index)


def index_add(input: Any, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Tensor:
    return as_tensor(input).index_add(dim, index, source, alpha=alpha)


def take_along_dim(input: Any, indices: Any, dim: int | None = None) -> Tensor:
    return as_tensor(input).take_along_dim(indices, dim)


def masked_select(input: Any, mask: Any) -> Tensor:
    return as_tensor(input).masked_select(mask)


def nonzero(input: Any, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    return as_tensor(input).nonzero(as_tuple=as_tuple)


def diagonal(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return as_tensor(input).diagonal(offset, dim1, dim2)


def repeat_interleave(input: Any, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Without repeats, `input` holds the counts: the int64 tensor of 0, 1, ... each repeated
    its count of times (repeat_interleave([1, 0, 2]) is [0, 2, 2])."""
    if repeats is None:
        counts = check_index(getattr(input, "data", input), "repeat_interleave", "repeats")
        return repeat_interleave(Tensor(np.arange(counts.size, dtype=np.int64)), counts,
                                 output_size=output_size)
    return as_tensor(input).repeat_interleave(repeats, dim, output_size=output_size)


def broadcast_to(input: Any, size: Sequence[int]) -> Tensor:
    return as_tensor(input).broadcast_to(size)


def outer(input: Any, vec2: Any) -> Tensor:
    return as_tensor(input).outer(vec2)


def mm(input: Any, mat2: Any) -> Tensor:
    return as_tensor(input).mm(mat2)


def bmm(input: Any, mat2: Any) -> Tensor:
    return as_tensor(input).bmm(mat2)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation: `einsum("bij,bjk->bik", a, b)` is a batched matmul, `"ii->"` a
    trace, `"ii->i"` a diagonal, `"i,j->ij"` an outer product, `"...ij->...ji"` a transpose of
    the last two axes. Without '->' the output is the '...' axes, then the letters seen once,
    in alphabetical order. The operands may also come as one list: einsum(eq, [a, b])."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string, not {type(equation).__name__}")
    return Einsum.apply(*[as_tensor(x) for x in operands], equation=equation)
