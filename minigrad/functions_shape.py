"""Function forms of the shape methods (copies, moves, repeats, joins), with PyTorch's names
and argument names: `minigrad.flip(x, (0,))` is `x.flip((0,))`. Beside functions.py only to keep
each file short; each is one line handing the work to the method or to `cat`."""

from __future__ import annotations

from typing import Any, Sequence

from .creation import as_tensor, cat
from .tensor import Tensor


def clone(input: Any) -> Tensor:
    return as_tensor(input).clone()


def tril(input: Any, diagonal: int = 0) -> Tensor:
    return as_tensor(input).tril(diagonal)


def triu(input: Any, diagonal: int = 0) -> Tensor:
    return as_tensor(input).triu(diagonal)


def flip(input: Any, dims: Sequence[int]) -> Tensor:
    return as_tensor(input).flip(dims)


def roll(input: Any, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    return as_tensor(input).roll(shifts, dims)


def movedim(input: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    return as_tensor(input).movedim(source, destination)


moveaxis = movedim


def swapaxes(input: Any, axis0: int, axis1: int) -> Tensor:
    return as_tensor(input).swapaxes(axis0, axis1)


def swapdims(input: Any, dim0: int, dim1: int) -> Tensor:
    return as_tensor(input).swapdims(dim0, dim1)


def unflatten(input: Any, dim: int, sizes: Sequence[int]) -> Tensor:
    return as_tensor(input).unflatten(dim, sizes)


def narrow(input: Any, dim: int, start: int, length: int) -> Tensor:
    return as_tensor(input).narrow(dim, start, length)


def unbind(input: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return as_tensor(input).unbind(dim)


def tile(input: Any, dims: Sequence[int]) -> Tensor:
    return as_tensor(input).tile(dims)


def concat(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Another name for cat: the tensors joined along an existing axis dim."""
    return cat(tensors, dim)


def concatenate(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Another name for cat (numpy's name): the tensors joined along an existing axis dim."""
    return cat(tensors, dim)


def hstack(tensors: Sequence[Any]) -> Tensor:
    """Join along the columns: dim 1, or dim 0 for 1-d tensors (0-d ones count as 1-d)."""
    ts = [t.reshape(1) if t.ndim == 0 else t for t in map(as_tensor, tensors)]
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Any]) -> Tensor:
    """Join along the rows (dim 0), a 1-d tensor of n (or a 0-d one) counting as a 1 x n row."""
    ts = [t.reshape(1, -1) if t.ndim < 2 else t for t in map(as_tensor, tensors)]
    return cat(ts, 0)


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return as_tensor(input).flatten(start_dim, end_dim)


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return as_tensor(input).chunk(chunks, dim)


def split(tensor: Any, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    return as_tensor(tensor).split(split_size_or_sections, dim)


def masked_fill(input: Any, mask: Any, value: Any) -> Tensor:
    return as_tensor(input).masked_fill(mask, value)


def detach(input: Any) -> Tensor:
    return as_tensor(input).detach()


def numel(input: Any) -> int:
    return as_tensor(input).numel()
