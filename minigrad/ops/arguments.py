"""The arguments ops share: a `dim` (one axis, several, or None for all) and an integer index,
checked with errors that name the op. Not a kind of op: every kind's module imports these."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

Dim = int | Sequence[int] | None  # a `dim` argument: one axis, several, or None for all


def normalize_dims(dim, ndim: int, op: str) -> tuple[int, ...]:
    """`dim` (None, int or tuple) as a sorted tuple of non-negative axes, checked."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dims = (dim,)
    elif isinstance(dim, (tuple, list)) and all(isinstance(d, (int, np.integer)) for d in dim):
        dims = tuple(dim)
    else:
        raise TypeError(f"{op}: dim must be an int or a tuple of ints, not {dim!r}")
    out = []
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"{op}: dim {d} is out of range for a tensor of {ndim} dimensions")
        out.append(int(d) % max(ndim, 1) if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {dim} repeats an axis")
    return tuple(sorted(out)) if ndim else ()


def one_axis(dim, ndim: int, op: str) -> int:
    """`dim` as a non-negative axis of an array with `ndim` dims (at least 1), checked."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, not {dim!r}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor of {ndim} dimensions "
                         f"(expected one in [{-n}, {n - 1}])")
    return int(dim) % n


def index_array(index: Any) -> np.ndarray:
    """An index argument (Tensor, array, list, int) as a numpy array; [] is an empty int64."""
    data = getattr(index, "_data", index)
    if isinstance(data, list) and not data:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(data)


def check_index(index: Any, op: str, what: str = "index") -> np.ndarray:
    """`index` as an integer array, or a TypeError naming the op (floats and bools refused)."""
    index = np.asarray(index)
    if index.dtype.kind not in "iu":
        raise TypeError(f"{op}: {what} must be an integer tensor, not {index.dtype} "
                        "(make it with dtype=minigrad.int64)")
    return index
