"""The Tensor: one numpy array, its gradient, and the node of the graph that made it.

Every method is written out here (no attributes attached at import time) and hands the math
to an op in `minigrad.ops`, where forward and backward sit side by side.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import autograd
from .ops.elementwise import (
    Abs,
    Add,
    Clip,
    Div,
    Exp,
    Log,
    MaskedFill,
    Maximum,
    Minimum,
    Mul,
    Neg,
    Pow,
    ReLU,
    Sigmoid,
    Sqrt,
    Sub,
    Tanh,
)
from .ops.linalg import Cast, MatMul
from .ops.reduce import LogSoftmax, LogSumExp, Max, Mean, Min, Softmax, Sum, Var, normalize_dims
from .ops.shape import Expand, GetItem, Permute, Reshape

Dim = int | Sequence[int] | None


def to_array(data: Any, dtype: Any = None) -> np.ndarray:
    """The dtype policy: Python scalars and lists become float32 (bools stay bool), numpy
    arrays keep their dtype, an explicit `dtype` wins."""
    if isinstance(data, Tensor):
        data = data.data
    if dtype is not None:
        return np.asarray(data, dtype=dtype)
    if isinstance(data, (np.ndarray, np.generic)):
        return np.asarray(data)
    arr = np.asarray(data)
    if arr.dtype.kind in "iuf":
        return arr.astype(np.float32)
    if arr.dtype.kind not in "b":
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} ({arr.dtype})")
    return arr


class Tensor:
    """An n-dimensional array that records how it was computed, for reverse-mode autodiff.

    Attributes:
        data: the numpy array of values.
        grad: d(loss)/d(self) as a numpy array of the same shape, filled by `backward()` on
            leaves (and on intermediates that called `retain_grad()`), else None.
        requires_grad: whether gradients flow to this tensor.
    """

    __slots__ = ("data", "grad", "requires_grad", "_node", "_hooks", "name", "__weakref__")
    __array_ufunc__ = None  # numpy defers to our reflected operators: array * tensor works

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None):
        self.data = to_array(data, dtype)
        self.grad: np.ndarray | None = None
        self._node: autograd.Function | None = None
        self._hooks: list[Callable] | None = None
        self.name: str | None = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: np.ndarray, node: autograd.Function | None) -> Tensor:
        """Wrap an op's output (fast path for Function.apply)."""
        t = object.__new__(Tensor)
        t.data, t.grad, t._node, t._hooks, t.name = data, None, node, None, None
        t.requires_grad = node is not None
        return t

    # ------------------------------------------------------------------ properties

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def grad_fn(self) -> autograd.Function | None:
        """The node (op) that made this tensor; None for a leaf."""
        return self._node

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.data.size

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="tensor(", precision=4)
        extra = ""
        if self.dtype != np.float32:
            extra += f", dtype={self.dtype}"
        if self._node is not None:
            extra += f", grad_fn=<{self._node.name}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # ------------------------------------------------------------------ autograd

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires grad, into `leaf.grad`.

        Args:
            gradient: d(loss)/d(self), needed when self is not a scalar (the upstream
                gradient of a vector-Jacobian product).
            retain_graph: keep saved arrays so that backward can run through the graph again.
        """
        if not self.requires_grad:
            kind = "an integer" if self.dtype.kind in "iub" else "a"
            raise RuntimeError(
                f"backward: {kind} tensor that does not require grad has no graph to go back "
                "through; create inputs with requires_grad=True"
            )
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward: the output has shape {self.shape}, not a scalar; pass the "
                    "gradient of the loss with respect to it: y.backward(g)"
                )
            g = np.ones(self.shape, dtype=self.dtype)
        else:
            g = to_array(gradient, self.dtype)
            if g.shape != self.shape:
                raise RuntimeError(
                    f"backward: gradient of shape {g.shape} for an output of shape {self.shape}"
                )
        autograd.run_backward(self, g, retain_graph=retain_graph)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError(
                f"requires_grad: only floating-point tensors can require grad, not {self.dtype}"
            )
        if not requires_grad and self._node is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use detach()")
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """The same values (shared array), cut from the graph."""
        return Tensor._make(self.data, None)

    def retain_grad(self) -> None:
        """Keep `.grad` on this intermediate tensor after backward (leaves always keep it)."""
        if self._node is not None:
            self._node.retained = weakref.ref(self)

    def register_hook(self, hook: Callable[[np.ndarray], Any]) -> Callable[[], None]:
        """Call `hook(grad)` when this tensor's gradient is computed, once per backward.

        The hook may return a replacement gradient. Returns a function that removes it.
        """
        if not self.requires_grad:
            raise RuntimeError("register_hook: this tensor does not require grad")
        owner = self._node if self._node is not None else self
        hooks = owner.out_hooks if self._node is not None else self._hooks
        if hooks is None:
            hooks = []
            if self._node is not None:
                owner.out_hooks = hooks
            else:
                self._hooks = hooks
        hooks.append(hook)
        return lambda: hooks.remove(hook)

    def zero_grad(self) -> None:
        self.grad = None

    # ------------------------------------------------------------------ conversion

    def item(self) -> float | int | bool:
        if self.data.size != 1:
            raise ValueError(f"item: only a one-element tensor has an item, not shape {self.shape}")
        return self.data.item()

    def numpy(self) -> np.ndarray:
        """The underlying array (shared, not copied)."""
        return self.data

    def tolist(self) -> Any:
        return self.data.tolist()

    def to(self, dtype: Any) -> Tensor:
        if self.dtype == np.dtype(dtype):
            return self
        if np.dtype(dtype).kind not in "fc":  # integer and boolean tensors never require grad
            return Tensor._make(self.data.astype(dtype), None)
        return Cast.apply(self, dtype=dtype)

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def long(self) -> Tensor:
        return self.to(np.int64)

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.data if dtype is None else self.data.astype(dtype)

    # ------------------------------------------------------------------ arithmetic

    def _other(self, other: Any) -> Tensor:
        """Python scalars take this tensor's float dtype, so they never promote float32."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, (bool, int, float)):
            kind = self.dtype.kind
            if kind == "f" or (kind in "iu" and not isinstance(other, float)):
                dtype = self.dtype  # also keeps `index + 1` an integer index
            else:
                dtype = np.float32
            return Tensor._make(np.asarray(other, dtype=dtype), None)
        return Tensor._make(to_array(other), None)

    def _binary(self, op: type[autograd.Function], a: Tensor, b: Tensor) -> Tensor:
        try:
            return op.apply(a, b)
        except ValueError:
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                raise ValueError(
                    f"{op.__name__.lower()}: shapes {a.shape} and {b.shape} do not broadcast"
                ) from None
            raise

    def __add__(self, other: Any) -> Tensor:
        return self._binary(Add, self, self._other(other))

    def __radd__(self, other: Any) -> Tensor:
        return self._binary(Add, self._other(other), self)

    def __sub__(self, other: Any) -> Tensor:
        return self._binary(Sub, self, self._other(other))

    def __rsub__(self, other: Any) -> Tensor:
        return self._binary(Sub, self._other(other), self)

    def __mul__(self, other: Any) -> Tensor:
        return self._binary(Mul, self, self._other(other))

    def __rmul__(self, other: Any) -> Tensor:
        return self._binary(Mul, self._other(other), self)

    def __truediv__(self, other: Any) -> Tensor:
        return self._binary(Div, self, self._other(other))

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._binary(Div, self._other(other), self)

    def __pow__(self, exponent: Any) -> Tensor:
        return self._binary(Pow, self, self._other(exponent))

    def __rpow__(self, base: Any) -> Tensor:
        return self._binary(Pow, self._other(base), self)

    def __neg__(self) -> Tensor:
        return Neg.apply(self)

    def __matmul__(self, other: Any) -> Tensor:
        return MatMul.apply(self, self._other(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return MatMul.apply(self._other(other), self)

    def matmul(self, other: Any) -> Tensor:
        return self @ other

    def _inplace(self, other: Any, op: Callable) -> Tensor:
        # In-place updates are for optimizers and initializers, outside the graph.
        if autograd.is_grad_enabled() and self.requires_grad:
            raise RuntimeError(
                "in-place update of a tensor that requires grad; wrap it in `with no_grad():`"
            )
        op(self.data, getattr(other, "data", other), out=self.data, casting="unsafe")
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(other, np.add)

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(other, np.subtract)

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(other, np.multiply)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(other, np.true_divide)

    # ------------------------------------------------------------------ comparisons (no grad)

    def _compare(self, other: Any, op: Callable) -> Tensor:
        return Tensor._make(np.asarray(op(self.data, getattr(other, "data", other))), None)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater_equal)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    __hash__ = object.__hash__  # identity, as in PyTorch; __eq__ is elementwise

    def __invert__(self) -> Tensor:
        return self._compare(None, lambda a, _: ~a)

    def __and__(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_and)

    def __or__(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_or)

    def all(self) -> Tensor:
        return Tensor._make(np.asarray(self.data.all()), None)

    def any(self) -> Tensor:
        return Tensor._make(np.asarray(self.data.any()), None)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return Tensor._make(np.asarray(np.argmax(self.data, axis=dim, keepdims=keepdim)), None)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return Tensor._make(np.asarray(np.argmin(self.data, axis=dim, keepdims=keepdim)), None)

    # ------------------------------------------------------------------ elementwise math

    def exp(self) -> Tensor:
        return Exp.apply(self)

    def log(self) -> Tensor:
        return Log.apply(self)

    def sqrt(self) -> Tensor:
        return Sqrt.apply(self)

    def abs(self) -> Tensor:
        return Abs.apply(self)

    def tanh(self) -> Tensor:
        return Tanh.apply(self)

    def sigmoid(self) -> Tensor:
        return Sigmoid.apply(self)

    def relu(self) -> Tensor:
        return ReLU.apply(self)

    def clip(self, min: float | None = None, max: float | None = None) -> Tensor:
        if min is None and max is None:
            raise ValueError("clip: give at least one of min and max")
        return Clip.apply(self, low=min, high=max)

    clamp = clip

    def maximum(self, other: Any) -> Tensor:
        return self._binary(Maximum, self, self._other(other))

    def minimum(self, other: Any) -> Tensor:
        return self._binary(Minimum, self, self._other(other))

    def masked_fill(self, mask: Any, value: float) -> Tensor:
        """Put `value` where `mask` is True (mask broadcasts to self's shape)."""
        m = mask if isinstance(mask, Tensor) else Tensor._make(np.asarray(mask), None)
        if m.dtype != np.bool_:
            raise TypeError(f"masked_fill: the mask must be boolean, not {m.dtype}")
        if np.broadcast_shapes(m.shape, self.shape) != self.shape:
            raise ValueError(f"masked_fill: mask of shape {m.shape} does not broadcast to {self.shape}")
        return MaskedFill.apply(self, m, value=value)

    # ------------------------------------------------------------------ reductions

    def sum(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        return Sum.apply(self, dim=dim, keepdim=keepdim)

    def mean(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        return Mean.apply(self, dim=dim, keepdim=keepdim)

    def max(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        """The largest values over dim (ties share the gradient). Returns values only, like
        PyTorch's `amax`; use `argmax` for the positions."""
        return Max.apply(self, dim=dim, keepdim=keepdim)

    def min(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        return Min.apply(self, dim=dim, keepdim=keepdim)

    amax, amin = max, min

    def var(self, dim: Dim = None, keepdim: bool = False, correction: int = 1) -> Tensor:
        """Variance over dim; correction=1 divides by n - 1 (unbiased), as PyTorch."""
        return Var.apply(self, dim=dim, keepdim=keepdim, correction=correction)

    def std(self, dim: Dim = None, keepdim: bool = False, correction: int = 1) -> Tensor:
        return self.var(dim, keepdim, correction).sqrt()

    def logsumexp(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        return LogSumExp.apply(self, dim=dim, keepdim=keepdim)

    def softmax(self, dim: int = -1) -> Tensor:
        return Softmax.apply(self, dim=dim)

    def log_softmax(self, dim: int = -1) -> Tensor:
        return LogSoftmax.apply(self, dim=dim)

    # ------------------------------------------------------------------ shape

    def reshape(self, *shape: Any) -> Tensor:
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self if shape == self.shape else Reshape.apply(self, shape=shape)

    view = reshape

    def permute(self, *dims: Any) -> Tensor:
        dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
        if len(dims) != self.ndim:
            raise ValueError(f"permute: {len(dims)} dims given for a tensor of {self.ndim} dimensions")
        return Permute.apply(self, dims=dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        dims = list(range(self.ndim))
        if self.ndim:
            (d0,), (d1,) = (normalize_dims(d, self.ndim, "transpose") for d in (dim0, dim1))
            dims[d0], dims[d1] = dims[d1], dims[d0]
        return self.permute(*dims)

    def expand(self, *sizes: Any) -> Tensor:
        """Broadcast to a larger shape without copying; -1 keeps a size."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
        lead = len(sizes) - self.ndim
        shape = tuple(
            self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes)
        )
        return Expand.apply(self, shape=shape)

    def unsqueeze(self, dim: int) -> Tensor:
        d = dim % (self.ndim + 1) if -self.ndim - 1 <= dim <= self.ndim else None
        if d is None:
            raise IndexError(f"unsqueeze: dim {dim} is out of range for {self.ndim} dimensions")
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim: Dim = None) -> Tensor:
        """Drop axes of size 1 (all of them, or those in dim that have size 1)."""
        axes = normalize_dims(dim, self.ndim, "squeeze")
        return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return self.reshape(1)
        s, e = _axis(start_dim, self.ndim, "flatten"), _axis(end_dim, self.ndim, "flatten")
        if s > e:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces of `split_size` along dim (the last may be smaller), or of the given sizes."""
        dim = _axis(dim, self.ndim, "split")
        n = self.shape[dim]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            sizes = [min(step, n - i) for i in range(0, n, step)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ValueError(f"split: sizes {sizes} do not add up to {n} (dim {dim})")
        pieces, start = [], 0
        lead = (slice(None),) * dim
        for size in sizes:
            pieces.append(self[lead + (slice(start, start + size),)])
            start += size
        return tuple(pieces)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        n = self.shape[_axis(dim, self.ndim, "chunk")]
        return self.split(max(-(-n // chunks), 1), dim)

    def __getitem__(self, index: Any) -> Tensor:
        return GetItem.apply(self, index=_to_index(index))


def _axis(dim: int, ndim: int, op: str) -> int:
    """`dim` as a non-negative axis of a tensor of `ndim` >= 1 dimensions, checked."""
    if ndim == 0:
        raise IndexError(f"{op}: a 0-d tensor has no dim {dim}")
    return normalize_dims(dim, ndim, op)[0]


def _to_index(index: Any) -> Any:
    """Index parts as numpy understands them: tensors and lists become arrays."""
    if isinstance(index, tuple):
        return tuple(_to_index(i) for i in index)
    if isinstance(index, Tensor):
        index = index.data
    elif isinstance(index, list):
        index = np.asarray(index)
    if isinstance(index, np.ndarray) and index.dtype.kind not in "iub":
        raise IndexError(
            f"getitem: index arrays must be integer or boolean, not {index.dtype} "
            "(make them with dtype=minigrad.int64)"
        )
    return index
