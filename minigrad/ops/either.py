"""The functions an op's backward calls, for arrays and Tensors alike.

A backward runs on numpy arrays for first order and on Tensors under `create_graph=True`
(graph_backward.py), and it is written once: with operators (`g * b`, `g @ w.T`), which both
kinds have, and with these functions where numpy and Tensors spell a step differently. On
arrays each is the numpy call (first order pays one type test); on Tensors it is the
differentiable op, so the backward records the graph of its own derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _arrays(*xs: Any) -> bool:
    return not any(hasattr(x, "_node") for x in xs)


def broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """x broadcast to shape (a read-only view of an array, expand of a Tensor)."""
    return np.broadcast_to(x, shape) if _arrays(x) else x.expand(shape)


def expand_dims(x: Any, axes: tuple[int, ...]) -> Any:
    """x with size-1 axes inserted at `axes` (of the result)."""
    if _arrays(x):
        return np.expand_dims(x, axes)
    shape = list(x.shape)
    for a in sorted(a % (x.ndim + len(axes)) for a in axes):
        shape.insert(a, 1)
    return x.reshape(tuple(shape))


def permute(x: Any, dims: Any) -> Any:
    """x with its axes in the order `dims` (numpy's transpose, torch's permute)."""
    return x.transpose(dims) if _arrays(x) else x.permute(*dims)


def split(x: Any, bounds: Any, axis: int) -> tuple:
    """The pieces of x between the `bounds` along axis (numpy's split at indices)."""
    if _arrays(x):
        return tuple(np.split(x, bounds, axis=axis))
    edges = [0, *(int(b) for b in bounds), x.shape[axis]]
    lead = (slice(None),) * (axis % x.ndim)
    return tuple(x[(*lead, slice(a, b))] for a, b in zip(edges[:-1], edges[1:]))


def moveaxis(x: Any, source: int, destination: int) -> Any:
    return np.moveaxis(x, source, destination) if _arrays(x) else x.movedim(source, destination)


def where(condition: Any, a: Any, b: Any) -> Any:
    """a where condition holds, else b (the condition is never differentiated)."""
    if _arrays(a, b):
        return np.where(condition, a, b)
    from .indexing import where as tensor_where
    return tensor_where(getattr(condition, "_data", condition), a, b)


def exp(x: Any) -> Any:
    return np.exp(x) if _arrays(x) else x.exp()


def log(x: Any) -> Any:
    return np.log(x) if _arrays(x) else x.log()


def cos(x: Any) -> Any:
    return np.cos(x) if _arrays(x) else x.cos()


def sin(x: Any) -> Any:
    return np.sin(x) if _arrays(x) else x.sin()


def sign(x: Any) -> Any:
    """The sign, a constant of the graph (its derivative is 0 wherever it has one)."""
    return np.sign(x) if _arrays(x) else x.detach().sign()


def astype(x: Any, dtype: Any) -> Any:
    return x.astype(dtype, copy=False) if _arrays(x) else x.to(dtype)


def values(x: Any) -> np.ndarray:
    """The array of x, for a test on values that is not differentiated (x > 0, isnan(x))."""
    return getattr(x, "_data", x)


def sqrt(x: Any) -> Any:
    return np.sqrt(x) if _arrays(x) else x.sqrt()


def sinh(x: Any) -> Any:
    return np.sinh(x) if _arrays(x) else x.sinh()


def cosh(x: Any) -> Any:
    return np.cosh(x) if _arrays(x) else x.cosh()
