"""Ops that pick and place elements by an integer index: gather, scatter, scatter_add,
index_select, index_add, and the assignment `y[index] = value` (IndexPut).

The index is an option (an int array, never a graph input: it has no gradient). Wherever an
index may repeat an element, the backward accumulates every copy with np.add.at. As in
PyTorch, a 0-d tensor counts as one element along dim 0 (or -1); an index out of range raises
an IndexError naming the op, the index, the dim and its size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Function
from .ordering import one_axis


def check_index(index: Any, op: str, what: str = "index") -> np.ndarray:
    """`index` as an integer array, or a TypeError naming the op (floats and bools refused)."""
    index = np.asarray(index)
    if index.dtype.kind not in "iu":
        raise TypeError(f"{op}: {what} must be an integer tensor, not {index.dtype} "
                        "(make it with dtype=minigrad.int64)")
    return index


def check_range(index: np.ndarray, size: int, dim: int, op: str) -> None:
    """Every entry of `index` in [0, size), as PyTorch's gather, scatter and index_select want."""
    if index.size:
        low, high = index.min(), index.max()
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise IndexError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


def _grid(index: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """The advanced index that reads out[i, j, k] = x[i, index[i, j, k], k] (axis 1): `index`
    along axis, an open arange over every other axis (index's extent there)."""
    n = index.ndim
    return tuple(index if d == axis else np.arange(s).reshape([-1 if k == d else 1 for k in range(n)])
                 for d, s in enumerate(index.shape))


def _along(x: np.ndarray, index: Any, dim: int, op: str, src: np.ndarray | None = None) -> tuple:
    """Checks shared by gather, scatter and scatter_add: the index is an integer tensor with as
    many dims as x (and src), no larger than x apart from `dim` (and no larger than src), with
    every entry in range. Returns (axis, index, the advanced index, the slices of src used)."""
    index = check_index(index, op)
    axis = one_axis(dim, x.ndim, op)
    if max(index.ndim, 1) != max(x.ndim, 1) or (src is not None and max(src.ndim, 1) != max(x.ndim, 1)):
        shapes = f"input {x.shape}, index {index.shape}" + ("" if src is None else f", src {src.shape}")
        raise ValueError(f"{op}: index must have as many dimensions as the input ({shapes})")
    x1, i1 = np.atleast_1d(x), np.atleast_1d(index)
    s1 = None if src is None else np.atleast_1d(src)
    if any(i > s for d, (i, s) in enumerate(zip(i1.shape, x1.shape)) if d != axis) or (
            s1 is not None and any(i > s for i, s in zip(i1.shape, s1.shape))):
        extra = "" if src is None else f" and no larger than src {src.shape}"
        raise ValueError(f"{op}: index of shape {index.shape} must be no larger than the input "
                         f"{x.shape} apart from dim {dim}{extra}")
    check_range(i1, x1.shape[axis], dim, op)
    return axis, i1, _grid(i1, axis), tuple(slice(0, n) for n in i1.shape)


def _same_dtype(x: np.ndarray, src: np.ndarray, op: str, what: str = "src") -> None:
    if x.dtype != src.dtype:
        raise TypeError(f"{op}: {what} is {src.dtype} but the input is {x.dtype}; they must have "
                        f"the same dtype (convert with {what}.to(input.dtype))")


class Gather(Function):
    """z[i, j, k] = x[i, index[i, j, k], k]   (dim 1)       dx = 0, then dx at index += g

    The output has the index's shape; an index may repeat an element, and every copy's
    gradient adds up in dx (np.add.at).
    """

    @staticmethod
    def forward(ctx, x, *, dim, index):
        ctx.shape = x.shape
        _, ctx.index, ctx.grid, _ = _along(x, index, dim, "gather")
        return np.atleast_1d(x)[ctx.grid].reshape(np.shape(index))

    @staticmethod
    def backward(ctx, g):
        dx = np.zeros(ctx.shape or (1,), dtype=g.dtype)
        np.add.at(dx, ctx.grid, g.reshape(ctx.index.shape))
        return dx.reshape(ctx.shape)


class Scatter(Function):
    """z = x, then z[i, index[i, j, k], k] = src[i, j, k]   (dim 1)
    dx = g with zeros where z was overwritten       dsrc[i, j, k] = g[i, index[i, j, k], k]

    Only src's first index.shape elements are used (the rest get gradient 0). Where an index
    repeats, one of the copies is written, yet each copy's src gets the gradient at its place,
    as in PyTorch (dsrc = gather(g, dim, index)).
    """

    @staticmethod
    def forward(ctx, x, src, *, dim, index):
        _same_dtype(x, src, "scatter")
        ctx.shape, ctx.src_shape = x.shape, src.shape
        _, _, ctx.grid, ctx.used = _along(x, index, dim, "scatter", src)
        z = np.atleast_1d(x).copy()
        z[ctx.grid] = np.atleast_1d(src)[ctx.used]
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        g1 = np.atleast_1d(g)
        dx = dsrc = None
        if ctx.needs_input_grad[0]:
            dx = g1.copy()
            dx[ctx.grid] = 0
            dx = dx.reshape(ctx.shape)
        if ctx.needs_input_grad[1]:
            dsrc = np.zeros(ctx.src_shape or (1,), dtype=g.dtype)
            dsrc[ctx.used] = g1[ctx.grid]
            dsrc = dsrc.reshape(ctx.src_shape)
        return dx, dsrc


class ScatterAdd(Function):
    """z = x, then z[i, index[i, j, k], k] += src[i, j, k]   (dim 1)
    dx = g       dsrc[i, j, k] = g[i, index[i, j, k], k]   (0 beyond index.shape)"""

    @staticmethod
    def forward(ctx, x, src, *, dim, index):
        _same_dtype(x, src, "scatter_add")
        ctx.src_shape = src.shape
        _, _, ctx.grid, ctx.used = _along(x, index, dim, "scatter_add", src)
        z = np.atleast_1d(x).copy()
        np.add.at(z, ctx.grid, np.atleast_1d(src)[ctx.used])  # repeated places add up
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        dsrc = None
        if ctx.needs_input_grad[1]:
            dsrc = np.zeros(ctx.src_shape or (1,), dtype=g.dtype)
            dsrc[ctx.used] = np.atleast_1d(g)[ctx.grid]
            dsrc = dsrc.reshape(ctx.src_shape)
        return g, dsrc


def _vector_index(x: np.ndarray, index: Any, dim: int, op: str) -> tuple[int, np.ndarray]:
    """index_select's and index_add's index: 0-d or 1-d integers in range for x's axis `dim`."""
    index = check_index(index, op)
    if index.ndim > 1:
        raise IndexError(f"{op}: index must be 0-d or 1-d, not of shape {index.shape}")
    axis = one_axis(dim, x.ndim, op)
    check_range(index, np.atleast_1d(x).shape[axis], dim, op)
    return axis, index.reshape(-1)


class IndexSelect(Function):
    """z = x[..., index, ...] (index along dim)       dx = 0, then dx[..., index, ...] += g

    A repeated index entry selects its slice again; their gradients add up (np.add.at).
    """

    @staticmethod
    def forward(ctx, x, *, dim, index):
        axis, idx = _vector_index(x, index, dim, "index_select")
        if x.ndim == 0 and idx.size != 1:
            raise IndexError(f"index_select: a 0-d input takes a single index, not {idx.size}")
        ctx.shape, ctx.where = x.shape, (slice(None),) * axis + (idx,)
        z = np.take(np.atleast_1d(x), idx, axis=axis)
        return z.reshape(()) if x.ndim == 0 else z

    @staticmethod
    def backward(ctx, g):
        dx = np.zeros(ctx.shape or (1,), dtype=g.dtype)
        np.add.at(dx, ctx.where, np.atleast_1d(g))
        return dx.reshape(ctx.shape)


class IndexAdd(Function):
    """z = x, then z[..., index[k], ...] += alpha * source[..., k, ...] (along dim)
    dx = g       dsource = alpha * g[..., index, ...]"""

    @staticmethod
    def forward(ctx, x, source, *, dim, index, alpha=1):
        _same_dtype(x, source, "index_add", "source")
        axis, idx = _vector_index(x, index, dim, "index_add")
        x1, s1 = np.atleast_1d(x), np.atleast_1d(source)
        want = x1.shape[:axis] + (idx.size,) + x1.shape[axis + 1:]
        if s1.shape != want or max(source.ndim, 1) != max(x.ndim, 1):
            raise ValueError(f"index_add: source of shape {source.shape} must have the input's shape "
                             f"{x.shape} apart from dim {dim}, and {idx.size} there (one per index)")
        ctx.alpha, ctx.source_shape, ctx.axis, ctx.idx = alpha, source.shape, axis, idx
        z = x1.copy()
        np.add.at(z, (slice(None),) * axis + (idx,), s1 if alpha == 1 else (alpha * s1).astype(x.dtype))
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        dsource = None
        if ctx.needs_input_grad[1]:
            dsource = np.take(np.atleast_1d(g), ctx.idx, axis=ctx.axis)
            dsource = (dsource if ctx.alpha == 1 else ctx.alpha * dsource).reshape(ctx.source_shape)
        return g, dsource


# ----------------------------------------------------------------------------- assignment


def view_at(a: np.ndarray, steps: tuple) -> np.ndarray:
    """a indexed by every step but the last: basic indices only, so a view of a."""
    for step in steps[:-1]:
        a = a[step]
    return a


def put(a: np.ndarray, steps: tuple, value: np.ndarray) -> None:
    """a[steps] = value in place, errors naming setitem (the steps are `_ints_first`'s)."""
    try:
        view_at(a, steps)[steps[-1]] = value
    except IndexError as e:
        raise IndexError(f"setitem: {e} (tensor of shape {a.shape})") from None
    except ValueError:
        try:
            target = view_at(a, steps)[steps[-1]].shape
        except (IndexError, ValueError):
            target = "?"
        raise ValueError(f"setitem: shape mismatch: value of shape {value.shape} cannot be broadcast "
                         f"to the indexed part of shape {target} (tensor of shape {a.shape})") from None


class IndexPut(Function):
    """z = y with z[index] = value (value broadcast to the indexed part)
    dy = g with zeros at index       dvalue = g[index], summed over what value was broadcast to

    `y[index] = value` rewrites y in place: forward writes into y's array and returns it, and
    the Tensor method makes y this node's output (see `IndexingMethods.__setitem__`). Nothing
    is saved: neither gradient needs a value. A repeated index writes one of its copies, yet
    each copy of value gets the gradient at its place, as PyTorch's index_put.
    `steps`: the index, or the two steps an int beside an index array takes (PyTorch's order).
    """

    @staticmethod
    def forward(ctx, y, value, *, steps):
        ctx.steps, ctx.value_shape, ctx.value_dtype = steps, value.shape, value.dtype
        put(y, steps, value)
        return y

    @staticmethod
    def backward(ctx, g):
        dy = dvalue = None
        if ctx.needs_input_grad[0]:
            dy = g.copy()
            view_at(dy, ctx.steps)[ctx.steps[-1]] = 0
        if ctx.needs_input_grad[1]:
            dvalue = np.asarray(view_at(g, ctx.steps)[ctx.steps[-1]])
            lead = len(ctx.value_shape) - dvalue.ndim
            if lead > 0:  # value had extra leading axes of size 1, which numpy strips
                dvalue = dvalue.reshape((1,) * lead + dvalue.shape)
            dvalue = dvalue.astype(ctx.value_dtype, copy=False)
        return dy, dvalue
