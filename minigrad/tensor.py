"""The Tensor: one numpy array, its gradient, and the node of the graph that made it.

This file holds what a tensor is: its array, gradient, graph node and version, backward, and
Python's protocols (len, iteration, printing, conversions, the in-place operators). Its math is
filed by kind in `minigrad.ops`: each op's module declares the op's method beside its Function
(`ops/table.py`), so `x.exp()` is defined in ops/pointwise.py, `x.sum()` in ops/reduce.py;
docs/api.md lists where each name is defined.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Iterator

import numpy as np

from . import autograd, grad_mode, versions
from . import device as _device
from .errors import ShapeError
from .hooks import RemovableHandle
from .ops.promotion import result_type, scalar_array

# bool < integer < float < complex: an in-place result may not move up this order.
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


class Size(tuple):
    """The sizes of a tensor's axes, as torch.Size: a tuple (it prints as one), with numel(); a
    slice of it, or a sum with a tuple, is a Size too."""

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key: Any) -> Any:
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other: Any) -> Size:
        return Size(tuple(self) + tuple(other))


def to_array(data: Any, dtype: Any = None) -> np.ndarray:
    """The dtype policy, PyTorch's: Python floats (and lists with any float) become float32,
    ints int64, bools bool; numpy arrays keep their dtype; an explicit `dtype` wins."""
    if isinstance(data, Tensor):
        data = data._data
    try:
        arr = np.asarray(data, dtype=dtype)
    except ValueError as e:  # e.g. [[1, 2], [3]]: numpy's message alone does not name the call
        raise ValueError(f"tensor: cannot make an array from this {type(data).__name__}: nested lists "
                         f"need equal lengths at every level, and values must fit the dtype ({e})") from None
    if dtype is not None or isinstance(data, (np.ndarray, np.generic)):
        return arr
    if arr.dtype.kind == "f":
        return arr.astype(np.float32)
    if arr.dtype.kind == "u":  # numpy's choice for an int past int64's range
        raise OverflowError(f"tensor: a value does not fit in int64 (at most {np.iinfo(np.int64).max})")
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind not in "b":
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} ({arr.dtype})")
    return arr


class Tensor:
    """An n-dimensional array that records how it was computed, for reverse-mode autodiff.

    Attributes:
        data: this tensor's values as a Tensor cut from the graph, sharing the memory (as
            torch's `.data`); `numpy()` gives the array itself.
        grad: d(loss)/d(self) as a Tensor of the same shape, filled by `backward()` on
            leaves (and on intermediates that called `retain_grad()`), else None.
        requires_grad: whether gradients flow to this tensor.
        _version: how many times its storage was changed in place (`+=`, an optimizer step);
            shared with `detach()` and views. Backward raises if an array an op saved for it
            has changed since that op ran, rather than compute a wrong gradient.
    """

    # _data: the np.ndarray of values (what ops compute on); _grad: the gradient's array, or None
    __slots__ = ("_data", "_grad", "requires_grad", "_node", "_hooks", "name", "__weakref__")
    # numpy defers to our reflected operators (array * tensor is Tensor.__rmul__), as to torch's
    # tensors; a numpy function given a tensor computes on its array (np.exp(x) is an array).
    __array_priority__ = 1000
    __hash__ = object.__hash__  # identity, as in PyTorch; == is elementwise (ops/logic.py)

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None, name: str | None = None):
        if dtype is None and isinstance(data, (list, tuple, int, float)) and not isinstance(data, np.generic):
            dtype = np.float32  # torch.Tensor([1, 2]) is float32 (minigrad.tensor infers int64)
        self._data = to_array(data, dtype)
        self._grad: np.ndarray | None = None
        self._node: autograd.Function | None = None
        self._hooks: dict[int, Callable] | None = None
        self.name: str | None = name  # labels the tensor in graph drawings
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: np.ndarray, node: autograd.Function | None) -> Tensor:
        """Wrap an op's output (fast path for Function.apply)."""
        t = object.__new__(Tensor)
        t._data, t._grad, t._node, t._hooks, t.name = data, None, node, None, None
        t.requires_grad = node is not None
        return t

    # ------------------------------------------------------------------ properties

    @property
    def data(self) -> Tensor:
        """The values, cut from the graph, in a Tensor sharing this one's memory (as torch's
        `.data`): changing it changes this tensor, unseen by autograd. Setting `x.data = y`
        makes x hold y's values (any shape or dtype) and keeps x's place in the graph."""
        return Tensor._make(self._data, None)

    @data.setter
    def data(self, value: Any) -> None:
        self._data = value._data if isinstance(value, Tensor) else to_array(value)

    @property
    def grad(self) -> Tensor | None:
        """d(loss)/d(self): None, or a Tensor of this tensor's shape and dtype (it shares the
        gradient's memory: `x.grad.zero_()` zeroes it). After backward(create_graph=True) it is
        the gradient's own graph, which can be differentiated again."""
        g = self._grad
        if g is None:
            return None
        if autograd.graph_grads:
            t = autograd.graph_grads.get(id(self))
            if t is not None and t._data is g:
                return t
        return Tensor._make(g, None)

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            value = value._data if isinstance(value, Tensor) else value  # as PyTorch, a tensor; or an array
            if type(value) is not np.ndarray or value.dtype != self._data.dtype:
                value = np.array(value, dtype=self._data.dtype)
            if value.shape != self._data.shape:
                raise ShapeError(f"grad: a gradient of shape {value.shape} for a tensor of shape "
                                 f"{self._data.shape}; it must have the tensor's shape")
        self._grad = value

    @property
    def shape(self) -> Size:
        """The size of each axis, a Size (a tuple, as torch.Size)."""
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        """The number of axes (0 for a scalar)."""
        return self._data.ndim

    @property
    def dtype(self) -> np.dtype:
        """The element type, a numpy dtype (float32 unless made otherwise)."""
        return self._data.dtype

    @property
    def device(self) -> _device.device:
        """Where the tensor is: always device("cpu"), minigrad's one device (see device.py)."""
        return _device.CPU

    @property
    def is_cuda(self) -> bool:
        """False: minigrad computes on the CPU."""
        return False

    @property
    def grad_fn(self) -> autograd.Function | None:
        """The node (op) that made this tensor; None for a leaf."""
        return self._node

    @property
    def is_leaf(self) -> bool:
        """True for a tensor no op made (a parameter, an input); its .grad is kept after backward."""
        return self._node is None

    @property
    def T(self) -> Tensor:
        """The axes reversed (x.T of a matrix is its transpose); gradient: the same permutation undone."""
        return self.permute(*reversed(range(self.ndim)))

    def size(self, dim: int | None = None) -> Size | int:
        """The shape (a Size), or with dim the size of that one axis."""
        return self.shape if dim is None else self._data.shape[dim]

    def dim(self) -> int:
        """The number of axes, as ndim."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements (the product of the shape)."""
        return self._data.size

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        # Without this, Python iterates through __getitem__ until an IndexError, which a
        # 0-d tensor raises at once: list(tensor(3.0)) would be [] instead of an error.
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        body = np.array2string(self._data, separator=", ", prefix="tensor(", precision=4)
        extra = ""
        if self.dtype != np.float32:
            extra += f", dtype={self.dtype}"
        if self._node is not None:
            extra += f", grad_fn=<{self._node.name}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # ------------------------------------------------------------------ autograd

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires grad, into `leaf.grad`.

        Args:
            gradient: d(loss)/d(self), needed when self is not a scalar (the upstream
                gradient of a vector-Jacobian product).
            retain_graph: keep saved arrays so that backward can run through the graph again.
            create_graph: make each gradient a Tensor with a graph of its own, so that it can
                be differentiated again (higher-order gradients); the graph is kept.
            inputs: only these tensors' `.grad` accumulate (torch.autograd.backward's inputs).
        """
        if not self.requires_grad:
            kind = "an integer" if self.dtype.kind in "iub" else "a"
            raise RuntimeError(
                f"backward: {kind} tensor that does not require grad has no graph to go back "
                "through; create inputs with requires_grad=True"
            )
        if create_graph or inputs is not None:
            autograd.backward(self, gradient, retain_graph, create_graph, inputs)
            return
        if gradient is None:
            if self._data.size != 1:
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
        autograd.run_backward(self, g, retain_graph=bool(retain_graph))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make a leaf record its gradient (or stop recording, with False), in place; returns self."""
        if requires_grad and self.dtype.kind not in "fc":
            raise RuntimeError(
                f"requires_grad: only floating-point tensors can require grad, not {self.dtype}"
            )
        if not requires_grad and self._node is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use detach()")
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """The same values (shared array, so shared version counter), cut from the graph.

        Changing the result in place changes this tensor too, so backward through a graph
        that saved this tensor then raises (see `_version`).
        """
        return Tensor._make(self._data, None)

    @property
    def _version(self) -> int:
        """How many times this tensor's storage (shared with its views and detach()) was
        changed in place. Backward raises when an array some op saved has changed since."""
        return versions.version(self._data)

    def retain_grad(self) -> None:
        """Keep `.grad` on this intermediate tensor after backward (leaves always keep it)."""
        if self._node is not None:
            self._node.retained = weakref.ref(self)

    def register_hook(self, hook: Callable[[Tensor], Any]) -> RemovableHandle:
        """Call `hook(grad)` (grad a Tensor) when this tensor's gradient is computed, once per
        backward.

        The hook may return a replacement gradient. Returns a handle: `handle.remove()` takes
        the hook off, as in torch.
        """
        if not self.requires_grad:
            raise RuntimeError("register_hook: this tensor does not require grad")
        owner = self._node if self._node is not None else self
        hooks = owner.out_hooks if self._node is not None else self._hooks
        if hooks is None:
            hooks = {}
            if self._node is not None:
                owner.out_hooks = hooks
            else:
                self._hooks = hooks
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def zero_grad(self) -> None:
        """Forget the gradient: .grad becomes None."""
        self._grad = None

    # ------------------------------------------------------------------ conversion

    def item(self) -> float | int | bool:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise ShapeError(f"item: only a one-element tensor has an item, not shape {self.shape}")
        return self._data.item()

    def numpy(self) -> np.ndarray:
        """The underlying array (shared, not copied)."""
        return self._data

    def tolist(self) -> Any:
        """The values as (nested) Python lists of numbers."""
        return self._data.tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:  # `if x > 0:` on a whole tensor: say which tensor, as PyTorch does
            raise ShapeError(f"bool: the truth value of a tensor of shape {self.shape} is ambiguous; "
                             "use (x > 0).any() or .all(), or x.item() on a one-element tensor")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __format__(self, spec: str) -> str:
        """f"{loss:.3f}" formats a 0-d tensor as its number, as torch's."""
        return format(self.item(), spec) if self.ndim == 0 else object.__format__(self, spec)

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.requires_grad and grad_mode.get(grad_mode.DEFAULT).graph_backward:
            raise RuntimeError(
                "backward(create_graph=True): a numpy function was given a tensor that requires grad "
                "inside an op's backward, which would cut the graph of the gradient; use the Tensor "
                "method (x.exp()) or minigrad.ops.either"
            )
        return self._data if dtype is None else self._data.astype(dtype)

    # ------------------------------------------------------------------ operands and in-place updates

    def _other(self, other: Any, fill: str | None = None) -> Tensor:
        """A Python number takes this tensor's dtype unless its kind is higher (promotion.py):
        it never promotes float32, `index + 1` stays an integer index, `bool_mask + 1` is int64;
        an int too wide for an integer dtype wraps into it, as in PyTorch, unless it is a value
        to write (`fill` names the op: it is refused then; see `scalar_array`)."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, (bool, int, float)):
            return Tensor._make(scalar_array(self.dtype, other, fill), None)
        return Tensor._make(to_array(other), None)

    def _binary(self, op: type[autograd.Function], a: Tensor, b: Tensor, **options: Any) -> Tensor:
        try:
            return op.apply(a, b, **options)
        except ValueError:
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                raise ShapeError(
                    f"{op.__name__.lower()}: shapes {a.shape} and {b.shape} do not broadcast"
                ) from None
            raise

    def _inplace(self, other: Any, op: Callable, symbol: str) -> Tensor:
        """self <op>= other in this tensor's own array, then a new version (see `_version`).

        In-place updates are for optimizers and initializers, outside the graph. As in
        PyTorch, the result must keep this tensor's kind of dtype: `int_tensor += 0.7` raises
        rather than truncating (float32 += float64 is fine: same kind, rounded).
        """
        if grad_mode.is_grad_enabled() and self.requires_grad:
            raise RuntimeError(
                f"{symbol}: in-place update of a tensor that requires grad; wrap it in `with no_grad():`"
            )
        value = getattr(other, "_data", other)
        if not isinstance(value, (bool, int, float, complex)):
            value = np.asarray(value)  # Python scalars stay weak: int64 += 1 stays int64
        result = result_type(self._data, value)
        if op is np.true_divide and result.kind in "biu":
            result = np.dtype(np.float32)
        if _KIND_RANK[result.kind] > _KIND_RANK[self.dtype.kind]:
            what = type(value).__name__ if not isinstance(value, np.ndarray) else str(value.dtype)
            raise TypeError(
                f"{symbol}: the result of {self.dtype} {symbol[0]} {what} is {result}, which an "
                f"{self.dtype} tensor cannot hold in place; write x = x {symbol[0]} y for a new "
                "tensor, or convert first (x = x.float())"
            )
        op(self._data, value, out=self._data, casting="unsafe")
        versions.bump(self._data)
        return self

    def _take_result(self, result: Tensor, op: str) -> Tensor:
        """The last step of every in-place variant (ops/table.py): `x.exp_()` is `x.exp()`
        written into x's own array, as in PyTorch.

        Views of x see the new values and x's version moves on, so a node that saved x's old
        values refuses backward (versions.py). In the graph, x becomes the op's output: the
        node that made `result` is now x's node, and what that node saved of x is kept as it
        was (PyTorch's original self), so `scores.masked_fill_(mask, -inf)` inside a forward
        gets the gradients `masked_fill` gets. Refused, before anything is written: a leaf
        that requires grad (in grad mode), a result of another shape (x.add_(y) where y
        broadcasts x larger) or of a higher kind of dtype (int_x.exp_()).
        """
        if result is self:
            return self
        node = result._node
        if node is not None and self._node is None and self.requires_grad:
            raise RuntimeError(f"{op}: a leaf tensor that requires grad is used in an in-place operation; "
                               "wrap it in `with no_grad():` (as an optimizer step does), or use the "
                               f"out-of-place {op[:-1]}")
        if result.shape != self.shape:
            raise RuntimeError(f"{op}: the result has shape {result.shape}, which a tensor of shape "
                               f"{self.shape} cannot hold in place")
        if _KIND_RANK[result.dtype.kind] > _KIND_RANK[self.dtype.kind]:
            raise TypeError(f"{op}: the result is {result.dtype}, which a tensor of {self.dtype} cannot hold "
                            f"in place; use the out-of-place {op[:-1]}, or convert first (x = x.float())")
        if node is not None:
            mine = versions.storage(self._data)
            if node.saved:
                node.saved = tuple(a.copy() if isinstance(a, np.ndarray) and versions.storage(a) is mine
                                   else a for a in node.saved)
            before = Tensor._make(self._data, self._node)  # x as the op read it, for drawings
            before.requires_grad, before.name = self.requires_grad, self.name
            node.inputs = tuple(before if t is self else t for t in node.inputs)
        np.copyto(self._data, result._data, casting="unsafe")
        versions.bump(self._data)
        if node is not None:
            self._node, self.requires_grad = node, True
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(other, np.add, "+=")

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(other, np.subtract, "-=")

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(other, np.multiply, "*=")

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(other, np.true_divide, "/=")
