"""Shape ops: reshape, permute, expand, indexing, concatenation and stacking.

None of them changes a value, so each backward only moves gradients back into place.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..autograd import Function
from ..creation import as_tensor
from ..errors import ShapeError
from ..tensor import Tensor
from . import either
from .arguments import Dim, check_index, index_array, normalize_dims, one_axis
from .dtype import Cast
from .promotion import promote
from .table import function, method, op


def _axis(dim: int, ndim: int, op: str) -> int:
    """`dim` as a non-negative axis of a tensor of `ndim` >= 1 dimensions, checked."""
    if ndim == 0:
        raise IndexError(f"{op}: a 0-d tensor has no dim {dim}")
    return normalize_dims(dim, ndim, op)[0]


def _matrix(x: Any, op: str) -> tuple[int, int]:
    """The sizes of x's last two axes (x a matrix or a batch of them), checked."""
    if x.ndim < 2:
        raise ShapeError(f"{op}: expected a tensor of at least 2 dimensions, not of shape {x.shape}")
    return x.shape[-2], x.shape[-1]


def _is_count(n: Any) -> bool:
    """An integer (Python or numpy) that is not a bool."""
    return isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))


def _is_int(part: Any) -> bool:
    """An integer index (a 0-d integer array counts, as in PyTorch; a bool does not)."""
    if isinstance(part, np.ndarray):
        return part.ndim == 0 and part.dtype.kind in "iu"
    return isinstance(part, (int, np.integer)) and not isinstance(part, (bool, np.bool_))


def _ints_first(index: tuple) -> tuple[tuple, tuple] | None:
    """Split an index that mixes integers and index arrays into two steps: the integers
    (with the slices, None and Ellipsis), then the arrays on what is left. None when it
    mixes nothing, and numpy's one step already agrees with PyTorch."""
    arrays = [isinstance(p, np.ndarray) and p.ndim > 0 for p in index]
    if True not in arrays:  # the common x[:, -1]: nothing to split, decided in one pass
        return None
    ints = [_is_int(p) for p in index]
    if True not in ints:
        return None
    first, then = [], []
    for part, is_array, is_int in zip(index, arrays, ints):
        if is_array:  # kept for the second step; a boolean mask covers one axis per dimension
            first.extend([slice(None)] * (part.ndim if part.dtype.kind == "b" else 1))
            then.append(part)
        elif is_int:  # applied (and its axis gone) in the first step
            first.append(part)
        elif part is Ellipsis:
            first.append(part)
            then.append(part)
        else:  # a slice or None: applied in the first step, a whole axis in the second
            first.append(part)
            then.append(slice(None))
    return tuple(first), tuple(then)


def _to_index(index: Any, top: bool = True) -> Any:
    """Index parts as numpy understands them: tensors, lists, and tuples inside the index
    tuple become arrays (y[1, (2, 1, 0), idx] indexes with three positions, as PyTorch)."""
    if isinstance(index, tuple) and top:
        return tuple(_to_index(i, top=False) for i in index)
    if isinstance(index, Tensor):  # a Tensor
        index = index._data
    elif isinstance(index, (list, tuple)):
        # An empty list is an integer index that selects nothing (t[[]] has shape (0, ...), as
        # in PyTorch); numpy alone would make it a float array and refuse it.
        index = np.asarray(index) if index else np.zeros(0, dtype=np.int64)
    if isinstance(index, np.ndarray) and index.dtype.kind not in "iub":
        raise IndexError(
            f"getitem: index arrays must be integer or boolean, not {index.dtype} "
            "(make them with dtype=minigrad.int64)"
        )
    return index


class Reshape(Function):
    """z = x viewed with a new shape       dx = g reshaped to x's shape"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, shape):
        ctx.in_shape = x.shape
        try:
            return x.reshape(shape)
        except ValueError:
            raise ShapeError(
                f"reshape: cannot view a tensor of shape {x.shape} ({x.size} elements) "
                f"as shape {tuple(shape)}"
            ) from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)


@method
def reshape(self, *shape: Any) -> Tensor:
    shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return self if shape == self.shape else Reshape.apply(self, shape=shape)


@function(name="reshape")
def reshape_form(input: Any, shape: Any) -> Tensor:
    return as_tensor(input).reshape(shape)


class Permute(Function):
    """z = x with its axes reordered by dims       dx = g with the inverse order"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, dims):
        n = x.ndim
        if sorted(d % n if -n <= d < n else -1 for d in dims) != list(range(n)):
            raise ValueError(f"permute: dims {tuple(dims)} is not an ordering of {x.ndim} axes")
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, g):
        return either.permute(g, np.argsort([d % g.ndim for d in ctx.dims]))


@method
def permute(self, *dims: Any) -> Tensor:
    dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
    if len(dims) != self.ndim:
        raise ShapeError(f"permute: {len(dims)} dims given for a tensor of {self.ndim} dimensions")
    return Permute.apply(self, dims=dims)


@function(name="permute")
def permute_form(input: Any, dims: Any) -> Tensor:
    return as_tensor(input).permute(dims)


class Expand(Function):
    """z = x broadcast to shape       dx = g summed over the broadcast axes (done by the engine)"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, shape):
        try:
            return np.broadcast_to(x, shape)
        except ValueError:
            raise ShapeError(f"expand: shape {x.shape} cannot be expanded to {tuple(shape)}") from None

    @staticmethod
    def backward(ctx, g):
        return g  # the engine sums g back to the input's shape: the adjoint of broadcast


@method
def expand(self, *sizes: Any) -> Tensor:
    """Broadcast to a larger shape without copying; -1 keeps a size."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    lead = len(sizes) - self.ndim
    shape = tuple(
        self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes)
    )
    return Expand.apply(self, shape=shape)


class GetItem(Function):
    """z = x[index]       dx = zeros like x, with g scattered-added at index

    Integer-array indices may repeat an element; np.add.at accumulates every copy.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, index):
        ctx.index, ctx.shape = index, x.shape
        try:
            return x[index]
        except IndexError as e:
            raise IndexError(f"getitem: {e} (tensor of shape {x.shape})") from None

    @staticmethod
    def backward(ctx, g):
        if not isinstance(g, Tensor):  # an array (or, for a 0-d result, a numpy scalar)
            return _put_at(np.asarray(g), ctx.index, ctx.shape)
        return PutAt.apply(g, index=ctx.index, shape=ctx.shape)


def _put_at(g: np.ndarray, index: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Zeros of `shape` with g added at index: the adjoint of x[index]."""
    dx = np.zeros(shape, dtype=g.dtype)
    if _has_int_array(index):
        np.add.at(dx, index, g)
    else:  # slices, ints, None, Ellipsis, boolean masks: every element appears once
        dx[index] = g
    return dx


class PutAt(Function):
    """z = zeros(shape) with g added at index (GetItem's backward, as an op, for
    create_graph)       dg = gz[index]"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, g, *, index, shape):
        ctx.index = index
        return _put_at(g, index, shape)

    @staticmethod
    def backward(ctx, gz):
        return gz[ctx.index]


@method
def __getitem__(self, index: Any) -> Tensor:
    """Basic and advanced indexing, with PyTorch's rule where it differs from numpy's.

    An integer next to an index array (`t[0, :, [0, 1, 2]]`) selects first, as a basic
    index, and the arrays then index what is left. numpy instead broadcasts the integer
    with the arrays and, when a slice separates them, moves the result's axes to the
    front: on square sizes that is the transpose of PyTorch's answer, with no error.
    """
    index = _to_index(index)
    if type(index) is tuple:
        steps = _ints_first(index)
        if steps is not None:
            return GetItem.apply(GetItem.apply(self, index=steps[0]), index=steps[1])
    return GetItem.apply(self, index=index)


def _has_int_array(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, np.ndarray) and p.dtype.kind in "iu" for p in parts)


def _check_dim(op: str, dim: int, ndim: int, shape: tuple[int, ...]) -> None:
    """`dim` must name an axis of the result (of `ndim` dimensions); inputs have `shape`."""
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}: dim {dim} is out of range for inputs of shape {shape}")


class Cat(Function):
    """z = concatenate(x_1, ..., x_n) along dim       dx_k = the slice of g where x_k went"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, *xs, dim=0):
        _check_dim("cat", dim, xs[0].ndim, xs[0].shape)
        xs = promote(*xs)  # int64 with float32 gives float32 (numpy's concatenate: float64)
        try:
            z = np.concatenate(xs, axis=dim)
        except (ValueError, np.exceptions.AxisError):
            shapes = ", ".join(str(x.shape) for x in xs)
            raise ShapeError(f"cat: shapes {shapes} do not match outside dim {dim}") from None
        ctx.dim = dim % z.ndim
        ctx.bounds = np.cumsum([x.shape[ctx.dim] for x in xs])[:-1]
        return z

    @staticmethod
    def backward(ctx, g):
        return either.split(g, ctx.bounds, ctx.dim)


@op
def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements moved `shifts` places along `dims`, those pushed off the end coming back at
    the start; without dims, over the flattened tensor, then reshaped back."""
    if dims is None:
        if not isinstance(shifts, int):
            raise ValueError(f"roll: without dims, shifts must be one integer, not {shifts}")
        return self.flatten().roll(shifts, 0).reshape(self.shape)
    shifts, dims = (tuple(v) if isinstance(v, (tuple, list)) else (v,) for v in (shifts, dims))
    if len(shifts) != len(dims):
        raise ValueError(f"roll: shifts {shifts} and dims {dims} need the same length")
    out = self
    for shift, dim in zip(shifts, dims):
        d = _axis(dim, self.ndim, "roll")
        n = self.shape[d]
        if n:  # two slices joined in the other order: a cheap backward (no scatter-add)
            cut, lead = n - shift % n, (slice(None),) * d
            out = Cat.apply(out[lead + (slice(cut, None),)], out[lead + (slice(0, cut),)], dim=d)
    return out if out is not self else self.clone()


class Stack(Function):
    """z = stack(x_1, ..., x_n) along a new axis dim       dx_k = g[..., k, ...] at that axis"""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, *xs, dim=0):
        _check_dim("stack", dim, xs[0].ndim + 1, xs[0].shape)  # the new axis may also go last
        xs = promote(*xs)  # the one dtype rule, as in cat
        try:
            z = np.stack(xs, axis=dim)
        except ValueError:
            shapes = ", ".join(str(x.shape) for x in xs)
            raise ShapeError(f"stack: all tensors need the same shape, got {shapes}") from None
        ctx.dim = dim % z.ndim
        return z

    @staticmethod
    def backward(ctx, g):
        return tuple(either.moveaxis(g, ctx.dim, 0))


@function
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing axis."""
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    return Cat.apply(*[as_tensor(t) for t in tensors], dim=dim)


@function
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new axis."""
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    return Stack.apply(*[as_tensor(t) for t in tensors], dim=dim)


@function
def concat(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Another name for cat: the tensors joined along an existing axis dim."""
    return cat(tensors, dim)


@function
def concatenate(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """Another name for cat (numpy's name): the tensors joined along an existing axis dim."""
    return cat(tensors, dim)


@function
def hstack(tensors: Sequence[Any]) -> Tensor:
    """Join along the columns: dim 1, or dim 0 for 1-d tensors (0-d ones count as 1-d)."""
    ts = [t.reshape(1) if t.ndim == 0 else t for t in map(as_tensor, tensors)]
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


@function
def vstack(tensors: Sequence[Any]) -> Tensor:
    """Join along the rows (dim 0), a 1-d tensor of n (or a 0-d one) counting as a 1 x n row."""
    ts = [t.reshape(1, -1) if t.ndim < 2 else t for t in map(as_tensor, tensors)]
    return cat(ts, 0)


# ----------------------------------------------------------------------------- methods


@method
def view(self, *shape: Any) -> Tensor:
    """`reshape` (minigrad's arrays are always viewable), or with a dtype, the same bytes
    read as that dtype, as PyTorch's view(dtype): x.view(np.int32) of float32 gives the bit
    patterns; the last dim scales by the ratio of the item sizes. The bits carry no gradient."""
    if len(shape) == 1 and isinstance(shape[0], (type, np.dtype, str)):
        return _view_dtype(self, np.dtype(shape[0]))
    return self.reshape(*shape)


def _view_dtype(self, dtype: np.dtype) -> Tensor:
    if dtype == self.dtype:
        return self  # type: ignore[return-value]
    if self.requires_grad and dtype.kind in "fc":
        raise RuntimeError(f"view: reading the bytes of a {self.dtype} tensor that requires grad as "
                           f"{dtype} has no gradient; call .detach().view({dtype}) to say so")
    if self.ndim == 0 and dtype.itemsize != self.dtype.itemsize:
        raise RuntimeError(f"view: a 0-d {self.dtype} tensor cannot be viewed as {dtype}, whose "
                           "item size differs")
    try:
        data = np.ascontiguousarray(self._data).view(dtype)
    except ValueError:
        raise RuntimeError(f"view: the last dim of shape {self.shape} ({self.shape[-1]} x "
                           f"{self.dtype.itemsize} bytes) does not divide into {dtype} items "
                           f"of {dtype.itemsize} bytes") from None
    return self._make(data, None)


@op
def transpose(self, dim0: int, dim1: int) -> Tensor:
    """Axes dim0 and dim1 swapped; gradient: the same swap."""
    dims = list(range(self.ndim))
    if self.ndim:
        (d0,), (d1,) = (normalize_dims(d, self.ndim, "transpose") for d in (dim0, dim1))
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return self.permute(*dims)


@op
def unsqueeze(self, dim: int) -> Tensor:
    """A new axis of size 1 at position dim (a negative dim counts from the end)."""
    d = dim % (self.ndim + 1) if -self.ndim - 1 <= dim <= self.ndim else None
    if d is None:
        raise IndexError(f"unsqueeze: dim {dim} is out of range for {self.ndim} dimensions")
    return self.reshape(self.shape[:d] + (1,) + self.shape[d:])


@op
def squeeze(self, dim: Dim = None) -> Tensor:
    """Drop axes of size 1 (all of them, or those in dim that have size 1)."""
    axes = normalize_dims(dim, self.ndim, "squeeze")
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1)))


@op
def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Axes start_dim ... end_dim merged into one (a 0-d tensor becomes 1-d)."""
    if self.ndim == 0:
        return self.reshape(1)
    s, e = _axis(start_dim, self.ndim, "flatten"), _axis(end_dim, self.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])


@method
def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of `split_size` along dim (the last may be smaller), or of the given sizes."""
    dim = _axis(dim, self.ndim, "split")
    n = self.shape[dim]
    if _is_count(split_size):
        step = int(split_size)
        if step < 0 or (step == 0 and n != 0):
            raise ShapeError(
                f"split: split_size must be a positive integer, not {step} (dim {dim} has size {n})"
            )
        sizes = [min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        if not isinstance(split_size, (list, tuple)):
            raise TypeError(f"split: expected a split size (int) or a list of sizes, not {split_size!r}")
        sizes = list(split_size)
        if not all(_is_count(s) and s >= 0 for s in sizes):
            raise ShapeError(f"split: the sizes must be integers >= 0, not {split_size!r}")
        if sum(sizes) != n:
            raise ShapeError(f"split: sizes {sizes} do not add up to {n} (dim {dim})")
    pieces, start = [], 0
    lead = (slice(None),) * dim
    for size in sizes:
        pieces.append(self[lead + (slice(start, start + size),)])
        start += size
    return tuple(pieces)


@function(name="split")
def split_form(tensor: Any, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    return as_tensor(tensor).split(split_size_or_sections, dim)


@op
def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `chunks` pieces along dim, the last smaller if the size does not divide."""
    if not _is_count(chunks):
        raise TypeError(f"chunk: chunks must be an integer, not {chunks!r}")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, not {chunks}")
    n = self.shape[_axis(dim, self.ndim, "chunk")]
    return self.split(max(-(-n // int(chunks)), 1), dim)


@op
def clone(self) -> Tensor:
    """A copy with its own storage (in-place changes to it leave self alone); dx = g."""
    return Cast.apply(self, dtype=self.dtype)  # astype always copies


@method
def contiguous(self) -> Tensor:
    """self when its array is already C-ordered, else a C-ordered copy (as PyTorch)."""
    # clone keeps the strides' order; a flat view of a strided array is a C-ordered copy
    return self if self._data.flags.c_contiguous else self.reshape(-1).reshape(self.shape)


@op
def tril(self, diagonal: int = 0) -> Tensor:
    """Zero above the `diagonal`-th diagonal of the last two axes (0: the main one)."""
    m, n = _matrix(self, "tril")
    return self.masked_fill(~np.tri(m, n, k=diagonal, dtype=bool), 0)


@op
def triu(self, diagonal: int = 0) -> Tensor:
    """Zero below the `diagonal`-th diagonal of the last two axes (0: the main one)."""
    m, n = _matrix(self, "triu")
    return self.masked_fill(np.tri(m, n, k=diagonal - 1, dtype=bool), 0)


@method
@property
def mT(self) -> Tensor:
    """The last two axes swapped (a batch of matrices transposed)."""
    _matrix(self, "mT")
    return self.transpose(-2, -1)


@op
def swapaxes(self, axis0: int, axis1: int) -> Tensor:
    """Axes axis0 and axis1 swapped (numpy's name for transpose)."""
    return self.transpose(axis0, axis1)


@op
def swapdims(self, dim0: int, dim1: int) -> Tensor:
    """Axes dim0 and dim1 swapped (another name for transpose)."""
    return self.transpose(dim0, dim1)


@op(aliases=("moveaxis",))
def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Axes `source` moved to positions `destination`; the others keep their order."""
    src, dst = (tuple(d) if isinstance(d, (tuple, list)) else (d,) for d in (source, destination))
    if len(src) != len(dst):
        raise ValueError(f"movedim: source {source} and destination {destination} "
                         "need the same number of dims")
    n = max(self.ndim, 1)  # a 0-d tensor takes dim 0 or -1, as in PyTorch
    src, dst = (tuple(normalize_dims(d, n, "movedim")[0] for d in ds) for ds in (src, dst))
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"movedim: repeated dim in source {source} or destination {destination}")
    if self.ndim == 0:
        return self.reshape(())
    order = [d for d in range(self.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return self.permute(*order)


@op
def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
    """Axis `dim` split into axes of `sizes` (one of them may be -1)."""
    d = _axis(dim, self.ndim, "unflatten")
    sizes = tuple(sizes)
    if not sizes:
        raise ShapeError("unflatten: sizes must be a non-empty sequence of integers")
    known = int(np.prod([s for s in sizes if s != -1]))
    n = self.shape[d]
    if (known != n) if -1 not in sizes else (known == 0 or n % known or sizes.count(-1) > 1):
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to dim {dim}'s size "
                         f"{self.shape[d]} (tensor of shape {self.shape})")
    return self.reshape(self.shape[:d] + sizes + self.shape[d + 1:])


@method
def expand_as(self, other: Tensor) -> Tensor:
    """Broadcast to other's shape without copying (expand(other.shape))."""
    return self.expand(other.shape)


@op
def narrow(self, dim: int, start: int, length: int) -> Tensor:
    """Elements start ... start + length - 1 of axis `dim` (a negative start counts from the end)."""
    d = _axis(dim, self.ndim, "narrow")
    n = self.shape[d]
    begin = start + n if -n <= start < 0 else start
    if not 0 <= begin <= n or length < 0 or begin + length > n:
        raise IndexError(f"narrow: start {start} and length {length} do not fit dim {dim} "
                         f"of size {n} (tensor of shape {self.shape})")
    return self[(slice(None),) * d + (slice(begin, begin + length),)]


@op
def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along `dim`, each without that axis."""
    d = _axis(dim, self.ndim, "unbind")
    return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))


@method
def flip(self, *dims: Any) -> Tensor:
    """The order of the elements along each of `dims` reversed."""
    dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
    axes = normalize_dims(dims, self.ndim, "flip") if dims and self.ndim else ()  # checks repeats
    return self[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(self.ndim))]


@function(name="flip")
def flip_form(input: Any, dims: Sequence[int]) -> Tensor:
    return as_tensor(input).flip(dims)


@method
def repeat(self, *sizes: Any) -> Tensor:
    """self tiled sizes[i] times along axis i (more sizes than axes add leading axes)."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    if len(sizes) < self.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat counts given for a tensor of "
                         f"{self.ndim} dimensions (give at least {self.ndim})")
    if any(s < 0 for s in sizes):
        raise ShapeError(f"repeat: repeat counts must be >= 0, not {sizes}")
    shape = (1,) * (len(sizes) - self.ndim) + self.shape
    pairs = [(r, s) for r, s in zip(sizes, shape)]  # (copies, side): expand a new axis before each
    x = self.reshape(tuple(v for _, s in pairs for v in (1, s)))
    return x.expand(tuple(v for p in pairs for v in p)).reshape(tuple(r * s for r, s in pairs))


@method
def tile(self, *dims: Any) -> Tensor:
    """repeat, with fewer counts than axes allowed (leading axes then repeat once)."""
    dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
    return self.repeat((1,) * (self.ndim - len(dims)) + dims)


@function(name="tile")
def tile_form(input: Any, dims: Sequence[int]) -> Tensor:
    return as_tensor(input).tile(dims)


@op
def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The elements self[..., i, i + offset] of the (dim1, dim2) planes, as a last axis
    (offset > 0: above the main diagonal, < 0: below)."""
    if self.ndim < 2:
        raise IndexError(f"diagonal: needs a tensor of at least 2 dimensions, not of shape {self.shape}")
    d1, d2 = one_axis(dim1, self.ndim, "diagonal"), one_axis(dim2, self.ndim, "diagonal")
    if d1 == d2:
        raise ValueError(f"diagonal: dim1 and dim2 cannot be identical ({dim1}, {dim2})")
    planes = self.movedim((d1, d2), (-2, -1))
    rows, cols = self.shape[d1], self.shape[d2]
    k = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    i = np.arange(k) + max(-offset, 0)
    return planes[..., i, i + offset]


@method
def repeat_interleave(self, repeats: Any, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each element (dim=None: of the flattened tensor) or each slice along `dim` repeated
    `repeats` times: an int, or a 0-d or 1-d integer tensor with one count per slice."""
    if dim is None:
        x, axis = self.reshape(-1), 0
    else:
        if self.ndim == 0:
            raise IndexError(f"repeat_interleave: a 0-d tensor has no dim {dim}; leave dim=None")
        x, axis = self, one_axis(dim, self.ndim, "repeat_interleave")
    n = x.shape[axis]
    counts = check_index(index_array(repeats), "repeat_interleave", "repeats")
    if counts.ndim > 1:
        raise ShapeError(f"repeat_interleave: repeats must be an int or a 0-d or 1-d tensor, "
                         f"not of shape {counts.shape}")
    if counts.size != 1 and counts.size != n:
        raise ShapeError(f"repeat_interleave: {counts.size} repeats for {n} slices along dim "
                         f"{dim} (tensor of shape {self.shape}); give one, or one per slice")
    if (counts < 0).any():
        raise ValueError(f"repeat_interleave: repeats must be >= 0, not {counts.tolist()}")
    idx = np.repeat(np.arange(n), np.broadcast_to(counts.reshape(-1), (n,)))
    if output_size is not None and output_size != idx.size:
        raise ShapeError(f"repeat_interleave: output_size={output_size}, but the repeats "
                         f"give {idx.size} slices")
    return x.index_select(axis, idx)


@function(name="repeat_interleave")
def repeat_interleave_form(input: Any, repeats: Any = None, dim: int | None = None, *,
                           output_size: int | None = None) -> Tensor:
    """Without repeats, `input` holds the counts: the int64 tensor of 0, 1, ... each repeated
    its count of times (repeat_interleave([1, 0, 2]) is [0, 2, 2])."""
    if repeats is None:
        counts = check_index(getattr(input, "_data", input), "repeat_interleave", "repeats")
        return repeat_interleave(Tensor(np.arange(counts.size, dtype=np.int64)), counts,
                                 output_size=output_size)
    return as_tensor(input).repeat_interleave(repeats, dim, output_size=output_size)


@op
def broadcast_to(self, size: Sequence[int]) -> Tensor:
    """self expanded (without copying) to `size`, by broadcasting; a -1 in it keeps self's size."""
    try:
        return self.expand(tuple(size))
    except ValueError:
        raise ShapeError(f"broadcast_to: shape {self.shape} cannot be broadcast to "
                         f"{tuple(size)}") from None


@function
def detach(input: Any) -> Tensor:
    return as_tensor(input).detach()


@function
def numel(input: Any) -> int:
    return as_tensor(input).numel()
