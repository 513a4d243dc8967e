"""Functions that make tensors: from data, filled, random, ranges; and joining tensors."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .ops.elementwise import Where
from .ops.promotion import result_type
from .ops.shape import Cat, Stack
from .random import generator
from .tensor import Tensor, to_array


def _shape(size: tuple, op: str) -> tuple[int, ...]:
    """`size` (sizes, or one sequence of them) as a shape, or an error naming op and size."""
    shape = tuple(size[0]) if len(size) == 1 and hasattr(size[0], "__iter__") else size
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, (bool, np.bool_)):
            raise TypeError(f"{op}: sizes must be integers, got {s!r} in {tuple(shape)}")
        if s < 0:
            raise ValueError(f"{op}: sizes must not be negative, got {s} in {tuple(shape)}")
    return tuple(int(s) for s in shape)


def _made(data: np.ndarray, requires_grad: bool) -> Tensor:
    return Tensor(data, requires_grad=requires_grad)


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None) -> Tensor:
    """A new leaf tensor holding a copy of `data` (float32 for Python numbers and lists).

    `name` labels it in graph drawings (the same as setting `t.name` later).
    """
    t = _made(np.array(to_array(data, dtype), copy=True), requires_grad)
    t.name = name
    return t


def zeros(*size: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return _made(np.zeros(_shape(size, "zeros"), dtype=dtype), requires_grad)


def ones(*size: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return _made(np.ones(_shape(size, "ones"), dtype=dtype), requires_grad)


def full(size: Sequence[int], fill_value: float, dtype: Any = np.float32,
         requires_grad: bool = False) -> Tensor:
    return _made(np.full(_shape((size,), "full"), fill_value, dtype=dtype), requires_grad)


def eye(n: int, m: int | None = None, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    return _made(np.eye(n, m, dtype=dtype), requires_grad)


def randn(*size: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the global generator (see `manual_seed`)."""
    return _made(generator().standard_normal(_shape(size, "randn")).astype(dtype), requires_grad)


def rand(*size: Any, dtype: Any = np.float32, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from the global generator."""
    return _made(generator().random(_shape(size, "rand")).astype(dtype), requires_grad)


def randint(low: int, high: int, size: Sequence[int]) -> Tensor:
    return _made(generator().integers(low, high, _shape((size,), "randint"), dtype=np.int64), False)


def arange(start: float, end: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Like torch.arange: int64 when every argument is an int, else float32."""
    if end is None:
        start, end = 0, start
    if dtype is None:  # numpy integers count as ints (np.int64(4), a shape entry)
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                   for v in (start, end, step))
        dtype = np.int64 if ints else np.float32
    return _made(np.arange(start, end, step, dtype=dtype), requires_grad)


def _like(x: Tensor, fill: Any, dtype: Any, requires_grad: bool) -> Tensor:
    return _made(np.full(x.shape, fill, dtype=dtype or x.dtype), requires_grad)


def zeros_like(x: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(x, 0, dtype, requires_grad)


def ones_like(x: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(x, 1, dtype, requires_grad)


def full_like(x: Tensor, fill_value: float, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(x, fill_value, dtype, requires_grad)


def randn_like(x: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return randn(*x.shape, dtype=dtype or x.dtype, requires_grad=requires_grad)


def rand_like(x: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return rand(*x.shape, dtype=dtype or x.dtype, requires_grad=requires_grad)


def as_tensor(x: Any) -> Tensor:
    """`x` itself if it is a Tensor, else a constant tensor (no copy of numpy arrays)."""
    return x if isinstance(x, Tensor) else Tensor(x)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing axis."""
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    return Cat.apply(*[as_tensor(t) for t in tensors], dim=dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new axis."""
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    return Stack.apply(*[as_tensor(t) for t in tensors], dim=dim)


def where(condition: Any, input: Any, other: Any) -> Tensor:
    """Elementwise `input` where condition is True, else `other` (all three broadcast)."""
    cond = as_tensor(condition)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: the condition must be boolean, not {cond.dtype}")
    a = input if isinstance(input, Tensor) else None
    b = other if isinstance(other, Tensor) else None
    ref = a if a is not None else b
    if ref is None:  # two numbers: where(c, 1, 0) is int64, where(c, 1, 0.5) float32 (as PyTorch)
        dtype = result_type(input, other)
        a, b = (Tensor._make(np.asarray(v, dtype=dtype), None) for v in (input, other))
    a = a if a is not None else ref._other(input)
    b = b if b is not None else a._other(other)
    try:
        return Where.apply(cond, a, b)
    except ValueError:
        raise ValueError(
            f"where: shapes {cond.shape}, {a.shape} and {b.shape} do not broadcast"
        ) from None


def maximum(a: Any, b: Any) -> Tensor:
    return as_tensor(a).maximum(b)


def minimum(a: Any, b: Any) -> Tensor:
    return as_tensor(a).minimum(b)
