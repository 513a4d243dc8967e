"""Shape ops: reshape, permute, expand, indexing, concatenation and stacking.

None of them changes a value, so each backward only moves gradients back into place.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from .promotion import promote


class Reshape(Function):
    """z = x viewed with a new shape       dx = g reshaped to x's shape"""

    @staticmethod
    def forward(ctx, x, *, shape):
        ctx.in_shape = x.shape
        try:
            return x.reshape(shape)
        except ValueError:
            raise ValueError(
                f"reshape: cannot view a tensor of shape {x.shape} ({x.size} elements) "
                f"as shape {tuple(shape)}"
            ) from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)


class Permute(Function):
    """z = x with its axes reordered by dims       dx = g with the inverse order"""

    @staticmethod
    def forward(ctx, x, *, dims):
        n = x.ndim
        if sorted(d % n if -n <= d < n else -1 for d in dims) != list(range(n)):
            raise ValueError(f"permute: dims {tuple(dims)} is not an ordering of {x.ndim} axes")
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, g):
        return g.transpose(np.argsort([d % g.ndim for d in ctx.dims]))


class Expand(Function):
    """z = x broadcast to shape       dx = g summed over the broadcast axes (done by the engine)"""

    @staticmethod
    def forward(ctx, x, *, shape):
        try:
            return np.broadcast_to(x, shape)
        except ValueError:
            raise ValueError(f"expand: shape {x.shape} cannot be expanded to {tuple(shape)}") from None

    @staticmethod
    def backward(ctx, g):
        return g  # the engine sums g back to the input's shape: the adjoint of broadcast


class GetItem(Function):
    """z = x[index]       dx = zeros like x, with g scattered-added at index

    Integer-array indices may repeat an element; np.add.at accumulates every copy.
    """

    @staticmethod
    def forward(ctx, x, *, index):
        ctx.index, ctx.shape = index, x.shape
        try:
            return x[index]
        except IndexError as e:
            raise IndexError(f"getitem: {e} (tensor of shape {x.shape})") from None

    @staticmethod
    def backward(ctx, g):
        dx = np.zeros(ctx.shape, dtype=g.dtype)
        if _has_int_array(ctx.index):
            np.add.at(dx, ctx.index, g)
        else:  # slices, ints, None, Ellipsis, boolean masks: every element appears once
            dx[ctx.index] = g
        return dx


def _has_int_array(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, np.ndarray) and p.dtype.kind in "iu" for p in parts)


def _check_dim(op: str, dim: int, ndim: int, shape: tuple[int, ...]) -> None:
    """`dim` must name an axis of the result (of `ndim` dimensions); inputs have `shape`."""
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}: dim {dim} is out of range for inputs of shape {shape}")


class Cat(Function):
    """z = concatenate(x_1, ..., x_n) along dim       dx_k = the slice of g where x_k went"""

    @staticmethod
    def forward(ctx, *xs, dim=0):
        _check_dim("cat", dim, xs[0].ndim, xs[0].shape)
        xs = promote(*xs)  # int64 with float32 gives float32 (numpy's concatenate: float64)
        try:
            z = np.concatenate(xs, axis=dim)
        except (ValueError, np.exceptions.AxisError):
            shapes = ", ".join(str(x.shape) for x in xs)
            raise ValueError(f"cat: shapes {shapes} do not match outside dim {dim}") from None
        ctx.dim = dim % z.ndim
        ctx.bounds = np.cumsum([x.shape[ctx.dim] for x in xs])[:-1]
        return z

    @staticmethod
    def backward(ctx, g):
        return tuple(np.split(g, ctx.bounds, axis=ctx.dim))


class Stack(Function):
    """z = stack(x_1, ..., x_n) along a new axis dim       dx_k = g[..., k, ...] at that axis"""

    @staticmethod
    def forward(ctx, *xs, dim=0):
        _check_dim("stack", dim, xs[0].ndim + 1, xs[0].shape)  # the new axis may also go last
        xs = promote(*xs)  # the one dtype rule, as in cat
        try:
            z = np.stack(xs, axis=dim)
        except ValueError:
            shapes = ", ".join(str(x.shape) for x in xs)
            raise ValueError(f"stack: all tensors need the same shape, got {shapes}") from None
        ctx.dim = dim % z.ndim
        return z

    @staticmethod
    def backward(ctx, g):
        return tuple(np.moveaxis(g, ctx.dim, 0))
