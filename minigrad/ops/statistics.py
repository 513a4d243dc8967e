"""The median of all elements and the vector norms (`linalg.vector_norm`).

The median along a dim needs no op of its own: its indices come from a stable sort (numpy,
not differentiable) and its values are a gather by them (`GatherSorted`, ops/ordering.py).
Both ops here follow PyTorch's backward at the edges: ties share the gradient evenly, and
the places where the calculus has no answer (a norm of zeros) get a gradient of 0.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..autograd import Function
from ..creation import as_tensor
from ..random import numpy_generator
from ..tensor import Tensor
from . import either
from .arguments import one_axis
from .ordering import GatherSorted
from .reduce import accumulation_dtype, narrowed, reduce_dims, scale_of, widened
from .table import function, method, op


class MedianResult(NamedTuple):
    """What `median(dim)` returns, as torch.return_types.median: `values, indices = x.median(0)`."""

    values: Tensor
    indices: Tensor


def median_indices(a: np.ndarray, axis: int) -> np.ndarray:
    """The index of the lower median along axis, keeping that axis (size 1).

    The ((n - 1) // 2)-th place of a stable sort: among tied values the one PyTorch picks too
    (checked against torch.median on many tied inputs). A slice holding NaN gives the index
    of its first NaN, as PyTorch does (its median is NaN).
    """
    k = (a.shape[axis] - 1) // 2
    idx = np.take(np.argsort(a, axis=axis, kind="stable"), [k], axis=axis)
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        has_nan = nan.any(axis=axis, keepdims=True)
        idx = np.where(has_nan, np.argmax(nan, axis=axis, keepdims=True), idx)
    return idx


def norm_order(p: Any, dim: Any, op: str = "norm") -> float:
    """torch.norm's `p` as vector_norm's `ord`: "fro" (over at most two dims) is 2, a number
    stays; "nuc" and other strings name matrix norms, which minigrad does not have."""
    if isinstance(p, str):
        n_dims = 1 if dim is None or isinstance(dim, (int, np.integer)) else len(dim)
        if p == "fro" and (dim is None or n_dims <= 2):
            return 2.0
        raise ValueError(f"{op}: p={p!r} with dim={dim!r} asks for a matrix norm, which minigrad "
                         "does not have; use p='fro' over one or two dims, or a number")
    if p is None:
        return 2.0
    if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, (bool, np.bool_)):
        raise TypeError(f"{op}: the order must be a number, 'fro' or None, not {p!r}")
    return float(p)


def _fraction(mask: np.ndarray, axes: tuple[int, ...] | None) -> np.ndarray:
    """mask / (its count over axes, None: all): the even share of each tied element."""
    return mask / np.maximum(mask.sum(axis=axes, keepdims=True), 1)


class Median(Function):
    """z = the lower median of all n elements of x: the ((n - 1) // 2)-th smallest (NaN if x
    holds a NaN, or is empty)

        dx = g / m at each of the m elements equal to z (the NaNs when z is NaN), 0 elsewhere

    Ties share the gradient evenly, as in PyTorch (torch.median() without a dim). The shares
    are constants of the graph (the median moves with one element: its second derivative is 0).
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        if flat.size == 0:
            if x.dtype.kind not in "fc":
                raise RuntimeError(f"median: an empty {x.dtype} tensor of shape {x.shape} has no "
                                   "median (an empty float tensor gives NaN, as in PyTorch)")
            z = np.asarray(np.nan, dtype=x.dtype)
        elif x.dtype.kind == "f" and np.isnan(flat).any():
            z = np.asarray(np.nan, dtype=x.dtype)
        else:
            z = np.asarray(np.partition(flat, (flat.size - 1) // 2)[(flat.size - 1) // 2])
        ctx.save_for_backward(x, z)
        return z

    @staticmethod
    def backward(ctx, g):
        x, z = either.values(ctx.saved[0]), either.values(ctx.saved[1])
        mask = (x == z) | (np.isnan(x) & np.isnan(z))
        return either.astype(g * _fraction(mask, None), g.dtype)


@op
def median(self, dim: int | None = None, keepdim: bool = False) -> Tensor | MedianResult:
    """The lower median: of all elements (a 0-d tensor) when dim is None, else
    (values, indices) along `dim`, as torch.median.

    The lower median of n values is the ((n - 1) // 2)-th smallest (no averaging of the two
    middle ones). NaN propagates. Over all elements the gradient is shared by the elements
    equal to the median; along a dim it goes to the element `indices` names.
    """
    if self.dtype.kind == "b":
        raise TypeError("median: not implemented for bool tensors; convert with x.long() first")
    if dim is None:
        if keepdim:
            raise TypeError("median: keepdim=True needs a dim (the median of all elements is 0-d)")
        return Median.apply(self)
    axis = one_axis(dim, self.ndim, "median")
    data = self._data if self.ndim else self._data.reshape(1)
    if data.shape[axis] == 0:
        raise IndexError(f"median: expected reduction dim {dim} to have non-zero size, in a "
                         f"tensor of shape {self.shape}")
    idx = median_indices(data, axis)
    if self.ndim == 0:
        idx = idx.reshape(())
    values = GatherSorted.apply(self, indices=idx, dim=axis)
    if not keepdim and self.ndim:
        values, idx = values.squeeze(axis), idx.squeeze(axis)
    return MedianResult(values, self._make(idx.astype(np.int64, copy=False), None))


def check_norm_input(x: np.ndarray, ord: float, axes: tuple[int, ...]) -> None:
    """PyTorch's refusals: integer inputs, and an inf or negative norm over an empty axis."""
    if x.dtype.kind != "f":
        raise RuntimeError(f"vector_norm: expected a floating-point tensor, got {x.dtype} (shape "
                           f"{x.shape}); convert it first with x.float()")
    if any(x.shape[a] == 0 for a in axes) and (ord < 0 or ord == np.inf):
        raise RuntimeError(f"vector_norm: cannot compute the {ord} norm over an empty dimension "
                           f"of a tensor of shape {x.shape}: the operation has no identity")


def _sign(x: np.ndarray) -> np.ndarray:
    """sign(x), and 0 for NaN, as PyTorch's sgn."""
    return np.where(np.isnan(x), 0, np.sign(x))


class VectorNorm(Function):
    """z = (sum_i |x_i|^p)^(1/p) over dim, for p = ord; and the limits of that:

        p = 0      z = the number of nonzero x_i       no gradient (as in PyTorch)
        p = 1      z = sum |x_i|                       dx = g * sign(x)
        p = 2      z = sqrt(sum x_i^2)                 dx = g * x / z   (0 where z = 0)
        p = inf    z = max |x_i|                       dx = g * sign(x) / m at the m elements
        p = -inf   z = min |x_i|                            with |x_i| = z (or NaN), 0 elsewhere
        other p    as above                            dx = g * sign(x) |x|^(p-1) / z^(p-1)
                                                            (0 where x = 0 for p < 1, and where
                                                            z = 0 for p > 1)

    A p-norm for p other than 0, 1 and +-inf is computed on x / c, c = `scale_of(x)` (a power
    of two near max |x|, or for p < 0 near min |x|, whose term then dominates): z = c z', so
    no power can overflow or underflow where z itself fits the dtype (PyTorch's 2-norm of
    float32 [1e20, 1e20] is inf; here 1.4e20). Its backward uses the ratio |x| / z, at most 1
    for p >= 1. float16 is summed in float32 (`accumulation_dtype`). NaN propagates for every p.

    Under create_graph the backward is differentiated again (`graph_saved` gives z from the
    output); the masks and signs are constants of the graph, and where the gradient is a
    constant 0 (a zero norm, x = 0 for p < 1) so is every higher derivative.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, ord=2, dim=None, keepdim=False):
        axes = reduce_dims(dim, x.ndim, "vector_norm")
        check_norm_input(x, ord, axes)
        ctx.axes, ctx.keepdim, ctx.ord, ctx.dtype = axes, keepdim, ord, x.dtype
        x = widened(x)
        a = np.abs(x)
        with np.errstate(divide="ignore", over="ignore"):  # 0 ** negative p is inf, as it should be
            if ord == 0:
                z = (x != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
            elif ord == 1:
                z = a.sum(axis=axes, keepdims=True)
            elif ord == np.inf:
                z = a.max(axis=axes, keepdims=True)
            elif ord == -np.inf:
                z = a.min(axis=axes, keepdims=True)
            else:
                c = scale_of(a, axes) if ord > 0 else _min_scale(a, axes)
                scaled = a / c
                if ord == 2:
                    z = np.sqrt((scaled * scaled).sum(axis=axes, keepdims=True)) * c
                else:
                    z = (scaled ** ord).sum(axis=axes, keepdims=True) ** (1.0 / ord) * c
        ctx.save_for_backward(x, z)  # z keeps the reduced axes
        return narrowed(z if keepdim else np.squeeze(z, axis=axes), ctx.dtype)

    @staticmethod
    def graph_saved(ctx, x, out):
        """(x, z) as tensors of the graph: x in the dtype the kernel computed in, z the output
        with the reduced axes kept (in float16, the output's rounding of the float32 z)."""
        xs, zs = ctx.saved
        z = out.reshape(zs.shape)
        return (x if x.dtype == xs.dtype else x.to(xs.dtype),
                z if z.dtype == zs.dtype else z.to(zs.dtype))

    @staticmethod
    def backward(ctx, g):
        x, z = ctx.saved
        xv, zv = either.values(x), either.values(z)
        p = ctx.ord
        if p == 0:
            return None
        if accumulation_dtype(g.dtype) != g.dtype:
            g = either.astype(g, accumulation_dtype(g.dtype))
        if not ctx.keepdim and ctx.axes:
            g = either.expand_dims(g, ctx.axes)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == 1:
                dx = g * _sign(xv)
            elif p == 2:
                dx = g * either.where(zv == 0, 0, x / either.where(zv == 0, 1, z))
            elif np.isinf(p):
                a = np.abs(xv)
                mask = (a == zv) | np.isnan(a)
                dx = g * _sign(xv) * _fraction(mask, ctx.axes)
            elif isinstance(g, Tensor):
                dx = _p_norm_graph_grad(g, x, z, p)
            else:  # g sign(x) (|x| / z)^(p - 1): 0 where x = 0 (p < 1) and where z = 0 (p > 1;
                ratio = np.abs(x) / z  # for p < 1, a z of 0 gives inf ** (p - 1) = 0, right)
                zero = (x == 0) if p < 1 else (z == 0)
                dx = np.where(zero, 0, _sign(x) * ratio ** (p - 1)) * g
        if isinstance(dx, Tensor):
            return dx if accumulation_dtype(ctx.dtype) == ctx.dtype else dx.to(ctx.dtype)
        return narrowed(dx, ctx.dtype)


def _p_norm_graph_grad(g: Tensor, x: Tensor, z: Tensor, p: float) -> Tensor:
    """VectorNorm's gradient for a p other than 0, 1, 2 and +-inf, as ops (create_graph): the
    values of the first-order one, with the places where it is the constant 0 (x = 0 for
    p < 1, z = 0) kept out of the powers and quotients, whose derivatives there (0 * inf)
    would make the derivative NaN."""
    xv, zv = x._data, z._data
    zero = (xv == 0) if p < 1 else (zv == 0)
    dead = zero | (zv == 0)
    a = abs(x)
    if dead.any():
        z = either.where(zv == 0, 1, z)
        a = either.where(dead, 1, a)
    return either.where(dead, 0, (a / z) ** (p - 1) * _sign(xv)) * g


@method
def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """The vector p-norm over `dim` (None: all elements), as torch.norm: "fro" or None is
    the 2-norm; numbers as in `minigrad.linalg.vector_norm` (1, 2, inf, -inf, 0, any p)."""
    x = self if dtype is None else self.to(dtype)  # type: ignore[attr-defined]
    return VectorNorm.apply(x, ord=norm_order(p, dim), dim=dim, keepdim=keepdim)


@function(name="norm")
def norm_form(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, *,
              dtype: Any = None) -> Tensor:
    return as_tensor(input).norm(p, dim, keepdim, dtype)


def _min_scale(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """`scale_of` for a p-norm with p < 0, where the smallest |x| dominates: a power of two
    near min |x| over axes (1 where that is 0, the norm then being 0)."""
    low = np.min(np.where(np.isnan(a), np.inf, a), axis=axes, keepdims=True, initial=np.inf)
    return scale_of(np.where(np.isfinite(low), low, 0).astype(a.dtype, copy=False), ())


# ----------------------------------------------------------------------------- methods


@op
def multinomial(self, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """int64 indices of categories drawn from each row of weights (1-d or 2-d; each row
    non-negative, not necessarily normalised), as torch.multinomial.

    Draws from minigrad's global generator (`manual_seed`), or from `generator` (a
    minigrad.Generator). With replacement: inverse-CDF sampling. Without: the exponential race
    (PyTorch's algorithm): each category gets the key w / E with E ~ Exp(1), and the
    num_samples largest keys win, in order; a category of weight 0 is never drawn, so
    num_samples may not exceed a row's count of nonzero weights (PyTorch documents that
    rule but its CPU kernel then returns zero-weight categories).
    """
    w = _multinomial_weights(self, num_samples, replacement)
    rng = numpy_generator(generator, "multinomial")
    rows, k = w.shape
    if rows == 0:
        out = np.zeros((0, num_samples), dtype=np.int64)
    elif replacement:
        cdf = np.cumsum(w, axis=1)
        cdf = cdf / cdf[:, -1:]  # the last entry exactly 1
        offset = np.arange(rows)[:, None]
        u = rng.random((rows, num_samples))
        # one search for all rows: row r's CDF shifted into [r, r + 1]
        flat = np.searchsorted((cdf + offset).reshape(-1), (u + offset).reshape(-1), side="right")
        last = k - 1 - np.argmax(w[:, ::-1] > 0, axis=1)  # u + r rounded up to r + 1
        out = np.minimum(flat.reshape(rows, num_samples) - offset * k, last[:, None])
    else:
        with np.errstate(divide="ignore"):
            keys = np.log(w) - np.log(rng.standard_exponential((rows, k)))
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64, copy=False)
    return self._make(out.reshape(-1) if self.ndim == 1 else out, None)


def _multinomial_weights(self, num_samples: Any, replacement: bool) -> np.ndarray:
    """The weights as a float64 (rows, categories) array, after PyTorch's checks."""
    if self.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: the probabilities must be 1-d or 2-d, got shape {self.shape}")
    if self.dtype.kind != "f":
        raise RuntimeError(f"multinomial: only supports floating-point probabilities, got {self.dtype}")
    if not isinstance(num_samples, (int, np.integer)) or isinstance(num_samples, (bool, np.bool_)):
        raise TypeError(f"multinomial: num_samples must be an int, not {num_samples!r}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample num_samples={num_samples} <= 0 samples")
    w = self._data.astype(np.float64).reshape(-1, self.shape[-1])
    k = w.shape[1]
    if not replacement and num_samples > k:
        raise RuntimeError(f"multinomial: cannot sample num_samples={num_samples} > {k} "
                           f"categories (shape {self.shape}) without replacement")
    if not np.isfinite(w).all() or (w < 0).any():
        raise RuntimeError("multinomial: the probability tensor contains inf, nan or an "
                           f"element < 0 (shape {self.shape})")
    if w.shape[0] and (k == 0 or (w.sum(axis=1) <= 0).any()):
        raise RuntimeError("multinomial: invalid distribution (a row's sum of probabilities "
                           f"is <= 0) in a tensor of shape {self.shape}")
    nonzero = (w > 0).sum(axis=1)
    if not replacement and w.shape[0] and nonzero.min() < num_samples:
        raise RuntimeError(f"multinomial: cannot sample num_samples={num_samples} without "
                           f"replacement from a row with only {nonzero.min()} nonzero "
                           f"probabilities (shape {self.shape}); use replacement=True")
    return w
