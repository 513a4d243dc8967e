"""The autograd engine: `Function` (one differentiable op) and reverse-mode backward.

An op is a `Function` subclass with `forward(ctx, *arrays, **options)` and
`backward(ctx, g)` side by side, both on plain numpy arrays. `Op.apply(*tensors)` runs the
forward and, when a gradient is wanted, records the node that `Tensor.backward` later visits.
Grad mode and the module scope are per thread (grad_mode.py), so are the hooks that watch
forward and backward (hooks.py: `observe_forward`, `observe_backward`); a tensor changed in
place after an op saved it makes backward raise (versions.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import hooks as _hooks
from . import memory as _memory
from . import versions as _versions
from .grad_mode import DEFAULT as _DEFAULT
from .grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401  (torch.autograd has them too)
from .grad_mode import get as _get_state

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
    edits: int = 0  # the global count of in-place edits as forward started (see versions.py)
    parents: tuple = ()  # the nodes that made the inputs, when forward ran (y[i] = v rebinds y)

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
        # The count as forward starts: a change during forward (another thread's) is later.
        edits = _versions.edits
        out = cls.forward(ctx, *[t._data for t in inputs], **options)
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
                ctx.parents = tuple([t._node for t in inputs])
                ctx.needs_input_grad = needs
                ctx.scope = state.scope
                ctx.edits = edits
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


def toposort(root: Function) -> list[Function]:
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
        for parent in node.parents:
            if parent is not None and id(parent) not in visited:
                stack.append((parent, False))
    order.reverse()
    return order


def run_backward(root: Tensor, grad: np.ndarray, retain_graph: bool = False) -> None:
    """Propagate `grad` (d loss / d root) to every leaf that requires grad: the chain rule.

    The nodes are visited root first, each before the nodes that made its inputs (`toposort`),
    so when a node is reached its pending gradient g (d loss / d its output) is complete. Its
    backward turns g into one gradient per input, each added to that input's pending gradient,
    or to the leaf's sum. A pending gradient is popped once consumed, so an intermediate
    gradient is freed as soon as its node has passed it on; leaf gradients are summed over the
    whole pass, then the leaves' hooks run once and `.grad` accumulates.

    The steps around the chain rule are named: `_check_saved` (the graph is not freed, nothing
    it saved was changed in place: one integer comparison per node when nothing was), the
    output tensor's hooks and retain_grad (`_output_hooks`), the observers of `minigrad.hooks`
    (`observe_backward`), the release of what the node held (memory.py's `release_inputs`,
    unless `retain_graph`) and the leaves' hooks and `.grad` (`_accumulate_leaves`).
    """
    leaves: dict[int, list] = {}  # id(leaf) -> [leaf, summed gradient]
    if root._node is None:
        _add_leaf(leaves, root, grad)
    else:
        order = toposort(root._node)
        observers = _hooks.observers_for(len(order))
        pending: dict[int, np.ndarray] = {id(root._node): grad}
        released: dict[int, _memory.Released] = {}
        edits = _versions.edits
        keep_values = _memory.KEEP_VALUES  # inputs up to this size stay (see memory.Released)
        for node in order:
            g = pending.pop(id(node), None)
            if g is None:  # no gradient reached this node (e.g. an unused output)
                continue
            if node.saved is None or node.edits != edits:
                _check_saved(node)
            if node.out_hooks or node.retained is not None:
                g = _output_hooks(node, g)
            grads = type(node).backward(node, g)
            if type(grads) is not tuple or len(grads) != len(node.inputs):
                grads = _one_per_input(node, grads)
            for observer in observers:
                observer(node, g, grads)
            holds_activation = False
            for t, parent, need, gi in zip(node.inputs, node.parents, node.needs_input_grad, grads):
                if gi is None or not need:  # the chain rule: add each input's share
                    continue
                if type(gi) is not np.ndarray or gi.shape != t._data.shape:
                    gi = _fit(gi, t._data.shape, node)  # a numpy scalar, or broadcast by forward
                if parent is None:
                    _add_leaf(leaves, t, gi)
                else:
                    key = id(parent)
                    prev = pending.get(key)
                    pending[key] = gi if prev is None else prev + gi
                    if t._data.size > keep_values:
                        holds_activation = True
            if not retain_graph:
                node.saved = None  # the node is done: free the arrays its forward saved
                if holds_activation:  # and the activations it holds (see Released)
                    node.inputs = _memory.release_inputs(node.inputs, released)
    _accumulate_leaves(leaves)


def _accumulate_leaves(leaves: dict) -> None:
    """Give each leaf its gradient, summed over the whole pass: its hooks run once on the sum,
    then `.grad` accumulates (+= across backward calls, as in PyTorch)."""
    for leaf, g in leaves.values():
        if leaf._hooks:
            for hook in leaf._hooks:
                g = _run_hook(hook, g)
        if leaf._grad is None:
            leaf.grad = g
        else:
            leaf._grad += g


def _check_saved(node: Function) -> None:
    """Refuse a node whose graph an earlier backward freed, or whose saved arrays were changed
    in place since its forward ran (versions.py raises, naming the tensor)."""
    if node.saved is None:
        raise RuntimeError(
            f"backward: the graph through {node.name} was already freed by an earlier "
            "backward; pass retain_graph=True to the first backward to go back twice"
        )
    _versions.check(node)


def _output_hooks(node: Function, g: np.ndarray) -> np.ndarray:
    """Run the hooks of the node's output tensor on g, then give g to it if it retains grad."""
    if node.out_hooks:
        for hook in node.out_hooks:
            g = _run_hook(hook, g)
    if node.retained is not None:
        out = node.retained()
        if out is not None:
            out.grad = np.array(g, dtype=out.dtype) if out._grad is None else out._grad + g
    return g


def _one_per_input(node: Function, grads: Any) -> tuple:
    """Backward's result as a tuple of one gradient per input, or name the op that got it wrong
    (zip would silently drop the extra inputs)."""
    if type(grads) is not tuple:
        grads = (grads,)
    if len(grads) != len(node.inputs):
        raise RuntimeError(
            f"{node.name}.backward returned {len(grads)} gradients for "
            f"{len(node.inputs)} inputs (return None for an input without one)"
        )
    return grads


def _add_leaf(leaves: dict, t: Tensor, g: np.ndarray) -> None:
    entry = leaves.get(id(t))
    if entry is None:
        # Copy: a backward rule may hand the same array to several inputs, and .grad is
        # updated in place later. The copy also gives the gradient the leaf's dtype.
        leaves[id(t)] = [t, g.astype(t._data.dtype)]
    else:
        entry[1] += g


def _fit(gi: Any, shape: tuple[int, ...], node: Function) -> np.ndarray:
    """Undo the forward's broadcasting of one input, or name the op whose backward is wrong.
    (numpy math on 0-d arrays gives numpy scalars: they become arrays first.)"""
    gi = np.asarray(gi)
    try:
        return unbroadcast(gi, shape)
    except ValueError:
        raise RuntimeError(
            f"{node.name}.backward returned a gradient of shape {gi.shape} for an input of "
            f"shape {shape}"
        ) from None


def _run_hook(hook: Callable, g: np.ndarray) -> np.ndarray:
    """hook(grad) with the gradient as a Tensor, as torch's hooks get it; what it returns (a
    Tensor or an array) replaces the gradient."""
    out = hook(Tensor._make(g, None))
    if out is None:
        return g
    out = np.array(getattr(out, "_data", out))  # a copy: the engine may update it in place
    if out.shape != g.shape:
        raise RuntimeError(f"hook returned a gradient of shape {out.shape}, expected {g.shape}")
    return out


from .tensor import Tensor  # noqa: E402  (tensor.py uses Function; apply needs Tensor)
