"""The autograd engine: `Function` (one differentiable op) and reverse-mode backward.

An op is a `Function` subclass with `forward(ctx, *arrays, **options)` and
`backward(ctx, g)` side by side, both on plain numpy arrays. `Op.apply(*tensors)` runs the
forward and, when a gradient is wanted, records the node that `Tensor.backward` later visits.
Grad mode, the module scope and the debugging hooks are per thread (grad_mode.py); a
tensor changed in place after an op saved it makes backward raise (versions.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import versions as _versions
from .grad_mode import DEFAULT as _DEFAULT
from .grad_mode import (  # noqa: F401  (re-exported: minigrad and nn import them from here)
    current_scope,
    enable_grad,
    is_grad_enabled,
    module_scope,
    no_grad,
)
from .grad_mode import get as _get_state
from .grad_mode import own as _own_state

# The names this module had before grad mode became per thread; reading one gives the
# calling thread's value (so `autograd._forward_checks.append(check)` hooks this thread only).
_PER_THREAD = {"_grad_enabled": "grad_enabled", "_scope": "scope",
               "_forward_checks": "forward_checks", "_backward_observers": "backward_observers"}


def __getattr__(name: str) -> Any:
    if name in _PER_THREAD:
        return getattr(_own_state(), _PER_THREAD[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- Function


class Function:
    """One differentiable op; an instance is the node of the graph (PyTorch's `ctx`).

    Subclasses define two staticmethods on numpy arrays:
        forward(ctx, *arrays, **options) -> np.ndarray
        backward(ctx, g) -> one gradient (or None) per array input
    Options (`dim`, `keepdim`, `shape`) are keyword arguments, stored on ctx by forward;
    they are never graph inputs. The engine sums a returned gradient back to its input's
    shape where the forward broadcast it, so backward may return the broadcast shape.
    """

    # Set by apply on recorded nodes only.
    inputs: tuple = ()
    needs_input_grad: tuple = ()
    saved: tuple | None = ()
    scope: tuple = ()
    out_hooks: list | None = None  # hooks of the output tensor (register_hook on a non-leaf)
    retained: Any = None  # weakref to the output tensor when it asked to retain_grad()
    grad_out: np.ndarray | None = None  # the gradient of the output after backward, if small
    grad_norm: float | None = None  # its norm, kept inside viz.keep_grads()
    edits: int = 0  # the global count of in-place edits when forward ran (see versions.py)

    def save_for_backward(self, *arrays: Any) -> None:
        """Keep arrays for backward; the engine frees them once backward has used them.

        Saving an input's array (or the output) is safe against in-place changes: if that
        tensor is changed in place before backward, backward raises instead of using it.
        """
        self.saved = arrays

    @classmethod
    def apply(cls, *inputs: Tensor, **options: Any) -> Tensor:
        """Run forward on the inputs' arrays and record the node when a gradient is wanted."""
        ctx = cls()
        out = cls.forward(ctx, *[t.data for t in inputs], **options)
        if type(out) is not np.ndarray:  # numpy reductions return scalars
            out = np.asarray(out)
        state = _get_state(_DEFAULT)  # this thread's grad mode, module scope and hooks
        if state.forward_checks:
            for check in state.forward_checks:
                check(ctx, inputs, out)
        if state.grad_enabled:
            needs = tuple([t.requires_grad for t in inputs])
            if True in needs:
                ctx.inputs = inputs
                ctx.needs_input_grad = needs
                ctx.scope = state.scope
                ctx.edits = _versions.edits
                return Tensor._make(out, ctx)
        return Tensor._make(out, None)

    @staticmethod
    def forward(ctx: Function, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError  # abstract: every op defines its own

    @staticmethod
    def backward(ctx: Function, g: np.ndarray) -> Any:
        raise NotImplementedError  # abstract: every op defines its own

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name}>"


# ----------------------------------------------------------------------------- the engine


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum `grad` over the axes that broadcasting added or stretched, giving `shape`.

    The adjoint of broadcasting is summation: if y = broadcast_to(x, grad.shape) then
    dx = unbroadcast(dy, x.shape). Raises ValueError when `shape` does not broadcast to
    `grad.shape`.
    """
    if grad.shape == shape:
        return grad
    return grad.sum(axis=broadcast_axes(grad.shape, shape), keepdims=True).reshape(shape)


def broadcast_axes(big: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Axes of `big` that broadcasting `shape` to `big` added (leading) or stretched (size 1)."""
    lead = len(big) - len(shape)
    if lead < 0 or any(s != 1 and s != b for s, b in zip(shape, big[lead:])):
        raise ValueError(f"unbroadcast: shape {shape} does not broadcast to {big}")
    stretched = [lead + i for i, s in enumerate(shape) if s == 1 and big[lead + i] != 1]
    return tuple(range(lead)) + tuple(stretched)


def _toposort(root: Function) -> list[Function]:
    """Nodes reachable from `root`, root first, each before the nodes that made its inputs.

    Iterative depth-first post-order (no recursion limit on long chains), reversed.
    """
    order: list[Function] = []
    visited: set[int] = set()
    stack: list[tuple[Function, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for t in node.inputs:
            parent = t._node
            if parent is not None and id(parent) not in visited:
                stack.append((parent, False))
    order.reverse()
    return order


# On graphs of at most KEEP_GRAD_NODES nodes, output gradients of at most KEEP_GRAD elements
# are kept on their node (`grad_out`) for drawings. Intermediate inputs of more than
# KEEP_VALUES elements are released after backward (see `Released`).
KEEP_GRAD, KEEP_GRAD_NODES, KEEP_VALUES = 64, 256, 64


def run_backward(root: Tensor, grad: np.ndarray, retain_graph: bool = False) -> None:
    """Propagate `grad` (d loss / d root) to every leaf that requires grad.

    Pending gradients live in a dict keyed by id(node) and are popped once consumed, so an
    intermediate gradient is freed as soon as its node has passed it on. Leaf gradients are
    summed over the whole pass first, then hooks run once and `.grad` accumulates.
    Before a node's backward uses its saved arrays, they are checked against in-place changes
    made since its forward (versions.py): one integer comparison per node when there were none.
    """
    leaves: dict[int, list] = {}  # id(leaf) -> [leaf, summed gradient]
    if root._node is None:
        _add_leaf(leaves, root, grad)
    else:
        pending: dict[int, np.ndarray] = {id(root._node): grad}
        released: dict[int, Released] = {}
        observers = _get_state(_DEFAULT).backward_observers
        edits = _versions.edits
        order = _toposort(root._node)
        # On a graph small enough to draw value by value, keep each small gradient on its node
        # (drawings show it, as micrograd's do); a large graph skips this bookkeeping.
        keep_small = len(order) <= KEEP_GRAD_NODES
        for node in order:
            g = pending.pop(id(node), None)
            if g is None:  # no gradient reached this node (e.g. an unused output)
                continue
            if node.saved is None:
                raise RuntimeError(
                    f"backward: the graph through {node.name} was already freed by an earlier "
                    "backward; pass retain_graph=True to the first backward to go back twice"
                )
            if node.edits != edits:  # something was changed in place since its forward ran
                _versions.check(node)
            if node.out_hooks:
                for hook in node.out_hooks:
                    g = _run_hook(hook, g)
            if node.retained is not None:
                out = node.retained()
                if out is not None:
                    out.grad = g.copy() if out.grad is None else out.grad + g
            if keep_small and g.size <= KEEP_GRAD:
                node.grad_out = g.copy()
            grads = type(node).backward(node, g)
            if type(grads) is not tuple:
                grads = (grads,)
            if len(grads) != len(node.inputs):  # zip below would drop the extra inputs silently
                raise RuntimeError(
                    f"{node.name}.backward returned {len(grads)} gradients for "
                    f"{len(node.inputs)} inputs (return None for an input without one)"
                )
            for observer in observers:
                observer(node, g, grads)
            if not retain_graph:
                node.saved = None
            holds_activation = False
            for t, gi in zip(node.inputs, grads):
                if gi is None or not t.requires_grad:
                    continue
                if gi.shape != t.data.shape:
                    gi = _fit(gi, t.data.shape, node)
                if t._node is None:
                    _add_leaf(leaves, t, gi)
                else:
                    key = id(t._node)
                    prev = pending.get(key)
                    pending[key] = gi if prev is None else prev + gi
                    if t.data.size > KEEP_VALUES:
                        holds_activation = True
            if holds_activation and not retain_graph:
                node.inputs = _release(node.inputs, released)
    for leaf, g in leaves.values():
        if leaf._hooks:
            for hook in leaf._hooks:
                g = _run_hook(hook, g)
        if leaf.grad is None:
            leaf.grad = g
        else:
            leaf.grad += g


class Released:
    """What a node keeps of an intermediate input once backward has freed the graph.

    Holding the input Tensors would keep every activation alive for as long as anyone keeps
    the loss (`losses.append(loss)`). A drawing or an error message needs only the shape,
    dtype, name and the node that made it. Only nodes with an intermediate input of more than
    `KEEP_VALUES` elements are released (small ones cost nothing to keep, and a drawing of a
    small graph can still print their values); leaves (parameters, inputs) are the user's own
    tensors and stay as they are.
    """

    __slots__ = ("shape", "dtype", "name", "_node", "grad", "_small")
    requires_grad = True
    released = True

    def __init__(self, t: Tensor) -> None:
        a = t.data
        self.shape, self.dtype, self.name, self._node, self.grad = a.shape, a.dtype, t.name, t._node, t.grad
        self._small = a if a.size <= KEEP_VALUES else None

    @property
    def data(self) -> np.ndarray:
        """The kept values, or a read-only stand-in of the right shape (zeros, no memory)."""
        if self._small is not None:
            return self._small
        return np.broadcast_to(np.zeros((), self.dtype), self.shape)

    @property
    def values_kept(self) -> bool:
        return self._small is not None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def grad_fn(self) -> Function:
        return self._node

    is_leaf = False

    def __repr__(self) -> str:
        return f"<released tensor {self.shape} {self.dtype}>"


def _release(inputs: tuple, records: dict) -> tuple:
    """The inputs with every intermediate tensor replaced by its `Released` record.

    `records` (id of the node that made a tensor -> its record) is shared by one backward
    pass, so all users of one tensor get the same record: drawings tell tensors apart by
    identity.
    """
    out = []
    for t in inputs:
        if t._node is not None and type(t) is not Released:
            r = records.get(id(t._node))
            if r is None:
                r = records[id(t._node)] = Released(t)
            t = r
        out.append(t)
    return tuple(out)


def _add_leaf(leaves: dict, t: Tensor, g: np.ndarray) -> None:
    entry = leaves.get(id(t))
    if entry is None:
        # Copy: a backward rule may hand the same array to several inputs, and .grad is
        # updated in place later. The copy also gives the gradient the leaf's dtype.
        leaves[id(t)] = [t, g.astype(t.data.dtype)]
    else:
        entry[1] += g


def _fit(gi: np.ndarray, shape: tuple[int, ...], node: Function) -> np.ndarray:
    """Undo the forward's broadcasting of one input, or name the op whose backward is wrong."""
    try:
        return unbroadcast(gi, shape)
    except ValueError:
        raise RuntimeError(
            f"{node.name}.backward returned a gradient of shape {gi.shape} for an input of "
            f"shape {shape}"
        ) from None


def _run_hook(hook: Callable, g: np.ndarray) -> np.ndarray:
    out = hook(g)
    if out is None:
        return g
    out = np.array(getattr(out, "data", out))  # a copy: the engine may update it in place
    if out.shape != g.shape:
        raise RuntimeError(f"hook returned a gradient of shape {out.shape}, expected {g.shape}")
    return out


from .tensor import Tensor  # noqa: E402  (tensor.py uses Function; apply needs Tensor)
