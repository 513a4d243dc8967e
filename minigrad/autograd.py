"""The autograd engine: `Function` (one differentiable op), grad mode, and reverse-mode backward.

An op is a `Function` subclass with `forward(ctx, *arrays, **options)` and
`backward(ctx, g)` side by side, both on plain numpy arrays. `Op.apply(*tensors)` runs the
forward and, when a gradient is wanted, records the node that `Tensor.backward` later visits.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import numpy as np

# ----------------------------------------------------------------------------- grad mode

_grad_enabled = True


def is_grad_enabled() -> bool:
    """True when ops record the graph (the default); False inside `no_grad()`."""
    return _grad_enabled


class no_grad(contextlib.ContextDecorator):
    """Context manager and decorator that stops ops from recording the graph.

    Example:
        >>> with no_grad():
        ...     w -= lr * w.grad      # an update is not part of the model
    """

    def __init__(self) -> None:
        # A stack, not one slot: a decorated function that calls itself enters this same
        # object again before leaving it.
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        global _grad_enabled
        self._prev.append(_grad_enabled)
        _grad_enabled = False

    def __exit__(self, *exc: object) -> None:
        global _grad_enabled
        _grad_enabled = self._prev.pop()


class enable_grad(no_grad):
    """Turn graph recording back on inside a `no_grad()` block."""

    def __enter__(self) -> None:
        global _grad_enabled
        self._prev.append(_grad_enabled)
        _grad_enabled = True


# ----------------------------------------------------------------------------- module scope hook

# The core knows nothing of nn.Module. nn pushes the running module here (see
# `module_scope`), and every recorded node keeps the tuple of modules it ran inside, so that
# graph drawings can group nodes into clusters by module.
_scope: tuple = ()


@contextlib.contextmanager
def module_scope(module: Any):
    """Tag every node recorded inside the block as running inside `module`."""
    global _scope
    prev = _scope
    _scope = prev + (module,)
    try:
        yield
    finally:
        _scope = prev


def current_scope() -> tuple:
    """The modules (outermost first) that new nodes are tagged with; () outside any."""
    return _scope


# Called as check(ctx, inputs, out) after every forward (ctx.scope is not set yet; use
# current_scope()); `detect_anomaly` plugs in here. Costs one `if list:` when empty.
_forward_checks: list[Callable[..., None]] = []


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

    def save_for_backward(self, *arrays: Any) -> None:
        """Keep arrays for backward; the engine frees them once backward has used them."""
        self.saved = arrays

    @classmethod
    def apply(cls, *inputs: Tensor, **options: Any) -> Tensor:
        """Run forward on the inputs' arrays and record the node when a gradient is wanted."""
        ctx = cls()
        out = cls.forward(ctx, *[t.data for t in inputs], **options)
        if type(out) is not np.ndarray:  # numpy reductions return scalars
            out = np.asarray(out)
        if _forward_checks:
            for check in _forward_checks:
                check(ctx, inputs, out)
        if _grad_enabled:
            needs = tuple([t.requires_grad for t in inputs])
            if True in needs:
                ctx.inputs = inputs
                ctx.needs_input_grad = needs
                ctx.scope = _scope
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


# Called as observer(node, g, grads) after each node's backward, before the engine sums a
# gradient back over broadcast axes; `detect_anomaly` and `trace_backward` plug in here.
_backward_observers: list[Callable[..., None]] = []


def run_backward(root: Tensor, grad: np.ndarray, retain_graph: bool = False) -> None:
    """Propagate `grad` (d loss / d root) to every leaf that requires grad.

    Pending gradients live in a dict keyed by id(node) and are popped once consumed, so an
    intermediate gradient is freed as soon as its node has passed it on. Leaf gradients are
    summed over the whole pass first, then hooks run once and `.grad` accumulates.
    """
    leaves: dict[int, list] = {}  # id(leaf) -> [leaf, summed gradient]
    if root._node is None:
        _add_leaf(leaves, root, grad)
    else:
        pending: dict[int, np.ndarray] = {id(root._node): grad}
        for node in _toposort(root._node):
            g = pending.pop(id(node), None)
            if g is None:  # no gradient reached this node (e.g. an unused output)
                continue
            if node.saved is None:
                raise RuntimeError(
                    f"backward: the graph through {node.name} was already freed by an earlier "
                    "backward; pass retain_graph=True to the first backward to go back twice"
                )
            if node.out_hooks:
                for hook in node.out_hooks:
                    g = _run_hook(hook, g)
            if node.retained is not None:
                out = node.retained()
                if out is not None:
                    out.grad = g.copy() if out.grad is None else out.grad + g
            grads = type(node).backward(node, g)
            if type(grads) is not tuple:
                grads = (grads,)
            if len(grads) != len(node.inputs):  # zip below would drop the extra inputs silently
                raise RuntimeError(
                    f"{node.name}.backward returned {len(grads)} gradients for "
                    f"{len(node.inputs)} inputs (return None for an input without one)"
                )
            for observer in _backward_observers:
                observer(node, g, grads)
            if not retain_graph:
                node.saved = None
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
    for leaf, g in leaves.values():
        if leaf._hooks:
            for hook in leaf._hooks:
                g = _run_hook(hook, g)
        if leaf.grad is None:
            leaf.grad = g
        else:
            leaf.grad += g


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
