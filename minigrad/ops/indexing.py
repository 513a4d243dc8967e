"""Ops that pick and place elements by an integer index: gather, scatter, scatter_add,
index_select, index_add, index_fill, and the assignment `y[index] = value` (IndexPut).

The index is an option (an int array, never a graph input: it has no gradient). Wherever an
index may repeat an element, the backward accumulates every copy with np.add.at. As in
PyTorch, a 0-d tensor counts as one element along dim 0 (or -1); an index out of range raises
an IndexError naming the op, the index, the dim and its size.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .. import grad_mode, versions
from ..autograd import Function
from ..creation import as_tensor
from ..errors import RangeError, ShapeError
from ..tensor import Tensor
from . import either
from .arguments import check_index, index_array, one_axis
from .promotion import promote, result_type
from .shape import GetItem, PutAt, _ints_first, _to_index
from .table import function, method, op


def _check_writable_in_graph(t: Tensor, value: Tensor) -> None:
    """PyTorch's leaf rule, and a refusal where minigrad's answer would be wrong: t a view of
    another tensor that requires grad (minigrad does not rewrite the graph of a view's base)."""
    if t.requires_grad and t._node is None:
        raise RuntimeError("setitem: a leaf Variable that requires grad is being used in an in-place "
                           "operation; write into a copy (y = x.clone(); y[i] = v) or under no_grad()")
    node = t._node
    while node is not None and type(node) is IndexPut:  # an earlier write: the same tensor
        node = node.inputs[0]._node
    if node is not None:
        s = versions.storage(t._data)
        for inp in node.inputs:
            if inp.requires_grad and versions.storage(inp._data) is s:
                base = "a leaf Variable" if inp._node is None else "a tensor"
                raise RuntimeError(f"setitem: a view of {base} that requires grad (made by "
                                   f"{node.name}) is being used in an in-place operation; "
                                   "clone() it first")


def check_range(index: np.ndarray, size: int, dim: int, op: str) -> None:
    """Every entry of `index` in [0, size), as PyTorch's gather, scatter and index_select want."""
    if index.size:
        low, high = index.min(), index.max()
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise RangeError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


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
        raise ShapeError(f"{op}: index must have as many dimensions as the input ({shapes})")
    x1, i1 = np.atleast_1d(x), np.atleast_1d(index)
    s1 = None if src is None else np.atleast_1d(src)
    if any(i > s for d, (i, s) in enumerate(zip(i1.shape, x1.shape)) if d != axis) or (
            s1 is not None and any(i > s for i, s in zip(i1.shape, s1.shape))):
        extra = "" if src is None else f" and no larger than src {src.shape}"
        raise ShapeError(f"{op}: index of shape {index.shape} must be no larger than the input "
                         f"{x.shape} apart from dim {dim}{extra}")
    check_range(i1, x1.shape[axis], dim, op)
    return axis, i1, _grid(i1, axis), tuple(slice(0, n) for n in i1.shape)


def _same_dtype(x: np.ndarray, src: np.ndarray, op: str, what: str = "src") -> None:
    if x.dtype != src.dtype:
        raise TypeError(f"{op}: {what} is {src.dtype} but the input is {x.dtype}; they must have "
                        f"the same dtype (convert with {what}.to(input.dtype))")


def _zeros_like_input(shape: tuple[int, ...], g: Tensor) -> Tensor:
    """A constant tensor of zeros (no graph), of `shape` and g's dtype."""
    return Tensor._make(np.zeros(shape, dtype=g.dtype), None)


def _placed(t: Tensor, used: tuple, shape: tuple[int, ...]) -> Tensor:
    """t (of the index's extent) at the start of zeros of `shape` (src's), as ops: the
    gradient of the src of scatter / scatter_add under create_graph (0 beyond the index)."""
    lengths = tuple(u.stop for u in used)
    t = t.reshape(lengths)
    full = shape or (1,)
    if lengths != tuple(full):
        t = PutAt.apply(t, index=used, shape=full)
    return t.reshape(shape)


def _kept(g: Tensor, drop: np.ndarray) -> Tensor:
    """g with zeros where the constant mask `drop` holds (the graph's form of `g[drop] = 0`)."""
    return either.where(drop, np.zeros((), dtype=g.dtype), g)


class Gather(Function):
    """z[i, j, k] = x[i, index[i, j, k], k]   (dim 1)       dx = 0, then dx at index += g

    The output has the index's shape; an index may repeat an element, and every copy's
    gradient adds up in dx (np.add.at). Under create_graph dx is that scatter_add as an op.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dim, index):
        ctx.shape, ctx.dim = x.shape, dim
        _, ctx.index, ctx.grid, _ = _along(x, index, dim, "gather")
        return np.atleast_1d(x)[ctx.grid].reshape(np.shape(index))

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):  # create_graph: the adjoint scatter_add, as an op
            return ScatterAdd.apply(_zeros_like_input(ctx.shape, g), g.reshape(ctx.index.shape),
                                    dim=ctx.dim, index=ctx.index)
        dx = np.zeros(ctx.shape or (1,), dtype=g.dtype)
        np.add.at(dx, ctx.grid, g.reshape(ctx.index.shape))
        return dx.reshape(ctx.shape)


@op
def gather(self, dim: int, index: Any) -> Tensor:
    """out[i][j][k] = self[i][index[i][j][k]][k] (dim 1): the index's shape, which must be
    no larger than self apart from `dim`."""
    return Gather.apply(self, dim=dim, index=index_array(index))


class Scatter(Function):
    """z = x, then z[i, index[i, j, k], k] = src[i, j, k]   (dim 1)
    dx = g with zeros where z was overwritten       dsrc[i, j, k] = g[i, index[i, j, k], k]

    Only src's first index.shape elements are used (the rest get gradient 0). Where an index
    repeats, one of the copies is written, yet each copy's src gets the gradient at its place,
    as in PyTorch (dsrc = gather(g, dim, index)).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, src, *, dim, index):
        _same_dtype(x, src, "scatter")
        ctx.shape, ctx.src_shape, ctx.dim = x.shape, src.shape, dim
        _, ctx.index, ctx.grid, ctx.used = _along(x, index, dim, "scatter", src)
        z = np.atleast_1d(x).copy()
        z[ctx.grid] = np.atleast_1d(src)[ctx.used]
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            return _scatter_graph_backward(ctx, g, overwrites=True)
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


def _scatter_graph_backward(ctx: Function, g: Tensor, overwrites: bool) -> tuple:
    """scatter's (overwrites) and scatter_add's backward as ops: dx = g (with zeros at the
    places written over), dsrc = gather(g, dim, index) placed in src's shape."""
    dx = dsrc = None
    if ctx.needs_input_grad[0]:
        dx = g
        if overwrites:
            drop = np.zeros(ctx.shape or (1,), bool)
            drop[ctx.grid] = True
            dx = _kept(g, drop.reshape(ctx.shape))
    if ctx.needs_input_grad[1]:
        dsrc = _placed(Gather.apply(g, dim=ctx.dim, index=ctx.index), ctx.used, ctx.src_shape)
    return dx, dsrc


@op(inplace=True)
def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """A copy of self with out[i][index[i][j][k]][k] = src[i][j][k] (dim 1); a number, as src
    or as value=, goes to every index entry. reduce="add" or "multiply" combines instead of
    writing (PyTorch deprecates it for scatter_reduce, which this calls)."""
    if reduce is not None and reduce not in ("add", "multiply"):
        raise ValueError(f"scatter: reduce must be 'add' or 'multiply', not {reduce!r}")
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src (a tensor) and value (a number)")
    if value is None and isinstance(src, (bool, int, float)):
        src, value = None, src  # x.scatter(1, index, 2.5): the number is the value
    index = index_array(index)
    if value is not None:
        src = self._make(np.full(index.shape, value, dtype=self.dtype), None)
    if reduce is not None:
        return ScatterReduce.apply(self, self._other(src), dim=dim, index=index, include_self=True,
                                   reduce="sum" if reduce == "add" else "prod")
    return Scatter.apply(self, self._other(src), dim=dim, index=index)


class ScatterAdd(Function):
    """z = x, then z[i, index[i, j, k], k] += src[i, j, k]   (dim 1)
    dx = g       dsrc[i, j, k] = g[i, index[i, j, k], k]   (0 beyond index.shape)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, src, *, dim, index):
        _same_dtype(x, src, "scatter_add")
        ctx.shape, ctx.src_shape, ctx.dim = x.shape, src.shape, dim
        _, ctx.index, ctx.grid, ctx.used = _along(x, index, dim, "scatter_add", src)
        z = np.atleast_1d(x).copy()
        np.add.at(z, ctx.grid, np.atleast_1d(src)[ctx.used])  # repeated places add up
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            return _scatter_graph_backward(ctx, g, overwrites=False)
        dsrc = None
        if ctx.needs_input_grad[1]:
            dsrc = np.zeros(ctx.src_shape or (1,), dtype=g.dtype)
            dsrc[ctx.used] = np.atleast_1d(g)[ctx.grid]
            dsrc = dsrc.reshape(ctx.src_shape)
        return g, dsrc


@op(inplace=True)
def scatter_add(self, dim: int, index: Any, src: Any) -> Tensor:
    """A copy of self with out[i][index[i][j][k]][k] += src[i][j][k] (dim 1); repeated
    index entries add up."""
    return ScatterAdd.apply(self, self._other(src), dim=dim, index=index_array(index))


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Function):
    """z = x, then each place p that index names gets reduce(x_p if include_self, the src
    values sent to p) (dim 1: p = [i, index[i, j, k], k] for src[i, j, k]); other places keep x.

        sum:   dx_p = g_p (0 at a named place without include_self)   dsrc = g_p
        mean:  z_p = sum / n_p (n_p the values reduced; integers floor-divide, as PyTorch)
               dx_p = g_p / n_p at named places        dsrc = g_p / n_p
        prod:  d(one value) = g_p * the product of the others at p, counted without dividing
               (so zeros are right: with one zero only its own value gets a gradient)
        amax, amin: g_p shared evenly by the values equal to z_p (PyTorch's rule for ties)

    Under create_graph the gradients come from `reference`, the composition of ops.
    """

    @staticmethod
    def reference(ctx, x, src):
        """The composition this op computes, for backward(create_graph=True). At the places
        index names: sum and mean add src's values (PutAt accumulates) to x or to 0; prod
        multiplies by one factor per rank of arrival (1 where a place has no value of that
        rank), so zeros need no division; amax and amin weigh each winner by its constant
        share, 1 / (number of ties), and the others by 0."""
        grid, named, keep, reduce = ctx.grid, ctx.named, ctx.include_self, ctx.reduce
        shape = named.shape
        x1 = x.reshape(shape)
        values = GetItem.apply(src.reshape(np.atleast_1d(src._data).shape), index=ctx.used)
        zero = np.zeros((), dtype=x.dtype)
        if reduce in ("sum", "mean"):
            z = PutAt.apply(values, index=grid, shape=shape)
            z = z + (x1 if keep else either.where(named, zero, x1))
            if reduce == "mean":
                z = either.where(named, z / np.maximum(ctx.count, 1).astype(x.dtype), x1)
        elif reduce == "prod":
            z = x1 if keep else either.where(named, np.ones((), dtype=x.dtype), x1)
            dest = np.ravel_multi_index(np.broadcast_arrays(*grid), shape).reshape(-1)
            order = np.argsort(dest, kind="stable")
            first = np.searchsorted(dest[order], dest[order])  # where each run of one place starts
            rank = np.empty_like(dest)
            rank[order] = np.arange(dest.size) - first
            flat = values.reshape(-1)
            for r in range(int(rank.max()) + 1 if rank.size else 0):
                picked = np.nonzero(rank == r)[0]
                at = np.zeros(int(np.prod(shape)), bool)
                at[dest[picked]] = True
                factor = PutAt.apply(GetItem.apply(flat, index=picked), index=dest[picked], shape=at.shape)
                z = z * either.where(at, factor, np.ones((), dtype=x.dtype)).reshape(shape)
        else:
            x_vals, src_vals, out = ctx.saved
            x_vals, src_vals, out = either.values(x_vals), either.values(src_vals), either.values(out)
            ties = np.zeros(shape, np.int64)
            np.add.at(ties, grid, src_vals == out[grid])
            if keep:
                ties += named & (x_vals == out)
            share = (1 / np.maximum(ties, 1)).astype(x.dtype)
            wins = src_vals == out[grid]
            z = PutAt.apply(either.where(wins, values * share[grid], zero), index=grid, shape=shape)
            if keep:
                z = z + either.where(named & (x_vals == out), x1 * share, zero)
            z = either.where(named, z, x1)
        return z.reshape(x.shape)

    @staticmethod
    def forward(ctx, x, src, *, dim, index, reduce, include_self):
        op = "scatter_reduce"
        _same_dtype(x, src, op)
        if reduce not in _REDUCTIONS:
            raise ValueError(f"{op}: reduce must be one of {', '.join(_REDUCTIONS)}, not {reduce!r}")
        _, _, grid, used = _along(x, index, dim, op, src)
        x1, values = np.atleast_1d(x), np.atleast_1d(src)[used]
        named = np.zeros(x1.shape, bool)
        named[grid] = True
        count = np.zeros(x1.shape, np.int64)
        np.add.at(count, grid, 1)
        if include_self:
            count += named
        z = x1.copy()
        start = {"sum": 0, "mean": 0, "prod": 1, "amax": _lowest(x1.dtype), "amin": _highest(x1.dtype)}
        if not include_self:
            z[named] = start[reduce]
        ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
        ufunc[reduce].at(z, grid, values)
        if reduce == "mean":
            n = np.maximum(count, 1).astype(z.dtype)
            z = np.where(named, z // n if z.dtype.kind in "iub" else z / n, z)
        ctx.shape, ctx.src_shape, ctx.grid, ctx.used = x.shape, src.shape, grid, used
        ctx.reduce, ctx.include_self, ctx.named, ctx.count = reduce, include_self, named, count
        if reduce in ("prod", "amax", "amin"):
            ctx.save_for_backward(x1, values, z)
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        g1 = np.atleast_1d(g)
        grid, named, keep = ctx.grid, ctx.named, ctx.include_self
        if ctx.reduce in ("sum", "mean"):
            share = g1 / np.maximum(ctx.count, 1) if ctx.reduce == "mean" else g1
            dx = np.where(named, share if keep else 0, g1)
            dsrc_used = share[grid]
        elif ctx.reduce == "prod":
            dx, dsrc_used = _prod_gradients(ctx, g1)
        else:
            x1, values, z = ctx.saved
            ties = np.zeros(x1.shape, np.int64)
            np.add.at(ties, grid, values == z[grid])
            if keep:
                ties += named & (x1 == z)
            share = g1 / np.maximum(ties, 1)
            dx = np.where(named, np.where(x1 == z, share, 0) if keep else 0, g1)
            dsrc_used = np.where(values == z[grid], share[grid], 0)
        dx = dx.astype(g.dtype, copy=False).reshape(ctx.shape) if ctx.needs_input_grad[0] else None
        dsrc = None
        if ctx.needs_input_grad[1]:
            dsrc = np.zeros(ctx.src_shape or (1,), dtype=g.dtype)
            dsrc[ctx.used] = dsrc_used
            dsrc = dsrc.reshape(ctx.src_shape)
        return dx, dsrc


def _prod_gradients(ctx: Function, g1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """prod's gradients: each value's is g times the product of the other values at its place,
    from the product of the nonzero values and the count of zeros there (no division by 0)."""
    x1, values, _ = ctx.saved
    grid, named, keep = ctx.grid, ctx.named, ctx.include_self
    nonzero_prod = np.ones(x1.shape, x1.dtype)
    np.multiply.at(nonzero_prod, grid, np.where(values == 0, 1, values))
    zeros = np.zeros(x1.shape, np.int64)
    np.add.at(zeros, grid, values == 0)
    if keep:
        nonzero_prod = np.where(named & (x1 != 0), nonzero_prod * x1, nonzero_prod)
        zeros = zeros + (named & (x1 == 0))

    def others(v: np.ndarray, p_prod: np.ndarray, p_zeros: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v != 0, np.where(p_zeros == 0, p_prod / np.where(v == 0, 1, v), 0),
                            np.where(p_zeros == 1, p_prod, 0))

    dx = np.where(named, g1 * others(x1, nonzero_prod, zeros) if keep else 0, g1)
    dsrc_used = g1[grid] * others(values, nonzero_prod[grid], zeros[grid])
    return dx, dsrc_used


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind in "fc" else (False if dtype.kind == "b" else np.iinfo(dtype).min)


def _highest(dtype: np.dtype) -> Any:
    return np.inf if dtype.kind in "fc" else (True if dtype.kind == "b" else np.iinfo(dtype).max)


@op(inplace=True)
def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True) -> Tensor:
    """A copy of self where each place index names holds `reduce` ("sum", "prod", "mean",
    "amax", "amin") of the src values sent there, and of self's value with include_self."""
    return ScatterReduce.apply(self, self._other(src), dim=dim, index=index_array(index), reduce=reduce,
                               include_self=include_self)


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
    Under create_graph dx is that index_add as an op.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dim, index):
        axis, idx = _vector_index(x, index, dim, "index_select")
        if x.ndim == 0 and idx.size != 1:
            raise IndexError(f"index_select: a 0-d input takes a single index, not {idx.size}")
        ctx.shape, ctx.where, ctx.axis, ctx.idx = x.shape, (slice(None),) * axis + (idx,), axis, idx
        z = np.take(np.atleast_1d(x), idx, axis=axis)
        return z.reshape(()) if x.ndim == 0 else z

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):  # create_graph: the adjoint index_add, as an op
            return IndexAdd.apply(_zeros_like_input(ctx.shape, g), g, dim=ctx.axis, index=ctx.idx)
        dx = np.zeros(ctx.shape or (1,), dtype=g.dtype)
        np.add.at(dx, ctx.where, np.atleast_1d(g))
        return dx.reshape(ctx.shape)


@op
def index_select(self, dim: int, index: Any) -> Tensor:
    """The slices of self along `dim` at the entries of the 0-d or 1-d `index`, in order."""
    return IndexSelect.apply(self, dim=dim, index=index_array(index))


class IndexAdd(Function):
    """z = x, then z[..., index[k], ...] += alpha * source[..., k, ...] (along dim)
    dx = g       dsource = alpha * g[..., index, ...]   (under create_graph: index_select, an op)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, source, *, dim, index, alpha=1):
        _same_dtype(x, source, "index_add", "source")
        axis, idx = _vector_index(x, index, dim, "index_add")
        x1, s1 = np.atleast_1d(x), np.atleast_1d(source)
        want = x1.shape[:axis] + (idx.size,) + x1.shape[axis + 1:]
        if s1.shape != want or max(source.ndim, 1) != max(x.ndim, 1):
            raise ShapeError(f"index_add: source of shape {source.shape} must have the input's shape "
                             f"{x.shape} apart from dim {dim}, and {idx.size} there (one per index)")
        ctx.alpha, ctx.source_shape, ctx.axis, ctx.idx = alpha, source.shape, axis, idx
        z = x1.copy()
        np.add.at(z, (slice(None),) * axis + (idx,), s1 if alpha == 1 else (alpha * s1).astype(x.dtype))
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        dsource = None
        if ctx.needs_input_grad[1] and isinstance(g, Tensor):
            dsource = IndexSelect.apply(g, dim=ctx.axis, index=ctx.idx)
            dsource = (dsource if ctx.alpha == 1 else ctx.alpha * dsource).reshape(ctx.source_shape)
        elif ctx.needs_input_grad[1]:
            dsource = np.take(np.atleast_1d(g), ctx.idx, axis=ctx.axis)
            dsource = (dsource if ctx.alpha == 1 else ctx.alpha * dsource).reshape(ctx.source_shape)
        return g, dsource


@op(inplace=True)
def index_add(self, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Tensor:
    """A copy of self with slice index[k] along `dim` increased by alpha * source's slice k."""
    return IndexAdd.apply(self, self._other(source), dim=dim, index=index_array(index), alpha=alpha)


class IndexFill(Function):
    """z = x, then z[..., index[k], ...] = v (along dim)
    dx = g with zeros in the filled slices       dv = sum of g over the filled slices (each once)

    v is a number (the keyword `value`, no gradient) or a 0-d array input (`fill`). As in
    PyTorch, an index entry may be negative (counted from the end) and may repeat.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, fill=None, *, dim, index, value=None):
        index = check_index(index, "index_fill")
        if index.ndim > 1:
            raise IndexError(f"index_fill: index must be 0-d or 1-d, not of shape {index.shape}")
        axis = one_axis(dim, x.ndim, "index_fill")
        size = np.atleast_1d(x).shape[axis]
        idx = index.reshape(-1)
        if idx.size and (idx.min() < -size or idx.max() >= size):
            bad = idx.min() if idx.min() < -size else idx.max()
            raise IndexError(f"index_fill: index {bad} is out of bounds for dimension {dim} with size {size}")
        ctx.shape, ctx.where = x.shape, (slice(None),) * axis + (np.unique(idx % size if size else idx),)
        z = np.atleast_1d(x).copy()
        z[ctx.where] = np.asarray(value if fill is None else fill).astype(x.dtype)
        return z.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad
        if isinstance(g, Tensor):  # create_graph: the same with a constant mask, as ops
            filled = np.zeros(np.atleast_1d(either.values(g)).shape, bool)
            filled[ctx.where] = True  # each place once (ctx.where holds unique entries)
            filled = filled.reshape(ctx.shape)
            dx = _kept(g, filled) if needs[0] else None
            if len(needs) == 1:
                return dx
            return dx, (_kept(g, ~filled).sum() if needs[1] else None)
        g1 = np.atleast_1d(g)
        dx = None
        if needs[0]:
            dx = g1.copy()
            dx[ctx.where] = 0
            dx = dx.reshape(ctx.shape)
        if len(needs) == 1:
            return dx
        return dx, (g1[ctx.where].sum().astype(g.dtype) if needs[1] else None)


@op(inplace=True)
def index_fill(self, dim: int, index: Any, value: float | Tensor) -> Tensor:
    """A copy of self with the slices at the entries of the 0-d or 1-d `index` along `dim` set
    to `value`: a number, or a 0-d tensor that then gets the gradients of the places it filled,
    summed (as in PyTorch)."""
    if isinstance(value, Tensor):  # a Tensor: a graph input, so that it gets a gradient
        if value.ndim != 0:
            raise ShapeError(f"index_fill: a tensor value must be 0-d, not of shape {value.shape}")
        return IndexFill.apply(self, value, dim=dim, index=index_array(index))
    return IndexFill.apply(self, dim=dim, index=index_array(index), value=value)


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
        raise ShapeError(f"setitem: shape mismatch: value of shape {value.shape} cannot be broadcast "
                         f"to the indexed part of shape {target} (tensor of shape {a.shape})") from None


class IndexPut(Function):
    """z = y with z[index] = value (value broadcast to the indexed part)
    dy = g with zeros at index       dvalue = g[index], summed over what value was broadcast to

    `y[index] = value` rewrites y in place: forward writes into y's array and returns it, and
    the Tensor method makes y this node's output (see `Tensor.__setitem__`). Nothing
    is saved: neither gradient needs a value. A repeated index writes one of its copies, yet
    each copy of value gets the gradient at its place, as PyTorch's index_put.
    `steps`: the index, or the two steps an int beside an index array takes (PyTorch's order).
    Under create_graph: dy with a constant mask, dvalue by GetItem (whose backward is PutAt).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, y, value, *, steps):
        ctx.steps, ctx.value_shape, ctx.value_dtype = steps, value.shape, value.dtype
        put(y, steps, value)
        return y

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, Tensor):
            return _index_put_graph_backward(ctx, g)
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


def _index_put_graph_backward(ctx: Function, g: Tensor) -> tuple:
    dy = dvalue = None
    if ctx.needs_input_grad[0]:
        written = np.zeros(g.shape, bool)
        view_at(written, ctx.steps)[ctx.steps[-1]] = True
        dy = _kept(g, written)
    if ctx.needs_input_grad[1]:
        dvalue = g
        for step in ctx.steps:
            dvalue = GetItem.apply(dvalue, index=step)
        lead = len(ctx.value_shape) - dvalue.ndim
        if lead > 0:
            dvalue = dvalue.reshape((1,) * lead + dvalue.shape)
        dvalue = either.astype(dvalue, ctx.value_dtype) if dvalue.dtype != ctx.value_dtype else dvalue
    return dy, dvalue


@method
def __setitem__(self, index: Any, value: Any) -> None:
    """self[index] = value, in place (ints, slices, None, ..., boolean masks, int arrays).

    With a gradient wanted, self becomes the output of an IndexPut node whose inputs are
    the old self and value: the overwritten places get gradient 0, and value gets the
    gradient at its places (summed where it was broadcast). As in PyTorch, a leaf that
    requires grad cannot be written (clone() it, or write under no_grad()), and nodes that
    saved the old values make backward raise (the version counter). Ops that used self
    before the write keep the node self had then (the engine records each op's parents
    when it runs), so y[i] = f(y) and a use of y before the write get PyTorch's gradients.
    """
    try:
        index = _to_index(index)
    except IndexError as e:
        raise IndexError(str(e).replace("getitem", "setitem", 1)) from None
    steps = (_ints_first(index) if type(index) is tuple else None) or (index,)
    v = value if isinstance(value, Tensor) else self._make(np.asarray(value, self.dtype), None)
    graph = grad_mode.is_grad_enabled() and (self.requires_grad or v.requires_grad)
    if graph:
        _check_writable_in_graph(self, v)
    if not self._data.flags.writeable:
        raise RuntimeError(f"setitem: this tensor's array (shape {self.shape}) is read-only, as "
                           "an expand or broadcast_to result, whose elements share memory; "
                           "clone() it first")
    if not graph:
        put(self._data, steps, v._data)
    else:
        old = self._make(self._data, self._node)
        old.requires_grad = self.requires_grad
        out = IndexPut.apply(old, v, steps=steps)
        if self._node is not None and self._node.retained is not None:
            self._node.retained = None  # retain_grad() asked for the gradient of the tensor,
            out._node.retained = weakref.ref(self)  # which is now the new value
        self._node, self.requires_grad = out._node, True
    versions.bump(self._data)


# ----------------------------------------------------------------------------- selection

class Where(Function):
    """z = where(cond, a, b)     da = g * cond,  db = g * ~cond   (cond carries no gradient)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, cond, a, b):
        cond = cond.astype(bool, copy=False)
        ctx.save_for_backward(cond)
        return np.where(cond, *promote(a, b))  # (not a hot path: no inline check)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved
        zero = np.zeros((), dtype=g.dtype)
        cond = either.values(cond)
        da = either.where(cond, g, zero) if ctx.needs_input_grad[1] else None
        db = either.where(cond, zero, g) if ctx.needs_input_grad[2] else None
        return None, da, db


@function
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
    a = a if a is not None else ref._other(input, fill="where")
    b = b if b is not None else a._other(other, fill="where")
    try:
        return Where.apply(cond, a, b)
    except ValueError:
        raise ShapeError(
            f"where: shapes {cond.shape}, {a.shape} and {b.shape} do not broadcast"
        ) from None


class MaskedFill(Function):
    """z = where(mask, v, x)     dx = g * ~mask,   dv = sum of g over the filled places

    v is a number (the keyword `value`, no gradient) or a 0-d array input (`fill`).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, mask, fill=None, *, value=None):
        mask = mask.astype(bool, copy=False)
        ctx.save_for_backward(mask)
        v = value if fill is None else fill
        return np.where(mask, np.asarray(v, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, g):
        mask = either.values(ctx.saved[0])
        needs = ctx.needs_input_grad
        zero = np.zeros((), dtype=g.dtype)
        dx = either.where(mask, zero, g) if needs[0] else None
        if len(needs) == 2:
            return dx, None
        return dx, None, (either.where(mask, g, zero).sum() if needs[2] else None)


@op(inplace=True)
def masked_fill(self, mask: Any, value: float | Tensor) -> Tensor:
    """Put `value` where `mask` is True (mask broadcasts to self's shape).

    `value` is a number, or a 0-d tensor that then gets the gradients of the places it
    filled, summed (as in PyTorch)."""
    m = mask if isinstance(mask, Tensor) else self._make(np.asarray(mask), None)
    if m.dtype != np.bool_:
        raise TypeError(f"masked_fill: the mask must be boolean, not {m.dtype}")
    try:
        fits = np.broadcast_shapes(m.shape, self.shape) == self.shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"masked_fill: mask of shape {m.shape} does not broadcast to {self.shape}")
    if isinstance(value, Tensor):  # a Tensor: a graph input, so that it gets a gradient
        if value.ndim != 0:
            raise ShapeError(f"masked_fill: a tensor value must be 0-d, not of shape {value.shape}")
        return MaskedFill.apply(self, m, value)
    return MaskedFill.apply(self, m, value=value)


# ----------------------------------------------------------------------------- methods


@op
def take_along_dim(self, indices: Any, dim: int | None = None) -> Tensor:
    """gather, with self and indices broadcast against each other apart from `dim` and
    negative indices counted from the end; dim=None: both flattened first."""
    idx = check_index(index_array(indices), "take_along_dim", "indices")
    if dim is None:
        flat = self.reshape(-1)
        n = flat.shape[0]
        check_range(idx, n, 0, "take_along_dim")  # flattened, torch takes no negative index
        return flat.gather(0, idx.reshape(-1))
    axis = one_axis(dim, self.ndim, "take_along_dim")
    if max(idx.ndim, 1) != max(self.ndim, 1):
        raise ShapeError(f"take_along_dim: input of shape {self.shape} and indices of shape "
                         f"{idx.shape} need the same number of dimensions")
    x = self
    if self.ndim:
        mine, theirs = list(self.shape), list(idx.shape)
        mine[axis] = theirs[axis] = 1
        try:
            lead = np.broadcast_shapes(tuple(mine), tuple(theirs))
        except ValueError:
            raise ShapeError(f"take_along_dim: input of shape {self.shape} and indices of shape "
                             f"{idx.shape} do not broadcast apart from dim {dim}") from None
        x_shape = lead[:axis] + (self.shape[axis],) + lead[axis + 1:]
        idx = np.broadcast_to(idx, lead[:axis] + (idx.shape[axis],) + lead[axis + 1:])
        x = self if x_shape == self.shape else self.expand(x_shape)
    n = x.shape[axis] if x.ndim else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):  # -n <= index < n, as PyTorch
        bad = idx.min() if idx.min() < -n else idx.max()
        raise IndexError(f"take_along_dim: index {bad} is out of bounds for dimension {dim} "
                         f"with size {n}")
    return x.gather(axis, np.where(idx < 0, idx + n, idx))


@op
def masked_select(self, mask: Any) -> Tensor:
    """The 1-d tensor of self's elements where the boolean `mask` is True, both broadcast."""
    m = index_array(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"masked_select: the mask must be boolean, not {m.dtype}")
    try:
        shape = np.broadcast_shapes(self.shape, m.shape)
    except ValueError:
        raise ShapeError(f"masked_select: input of shape {self.shape} and mask of shape "
                         f"{m.shape} do not broadcast") from None
    x = self if shape == self.shape else self.expand(shape)
    return x[np.broadcast_to(m, shape)]


@op
def nonzero(self, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The int64 indices of the nonzero elements, one row each, shape (n, ndim); with
    as_tuple, one 1-d tensor per dim (a 0-d tensor counts as 1-d). Not differentiable."""
    if as_tuple:
        return tuple(self._make(i.astype(np.int64), None) for i in np.nonzero(np.atleast_1d(self._data)))
    return self._make(np.argwhere(self._data).astype(np.int64), None)
