"""The autograd engine: `Function` (one differentiable op) and reverse-mode backward.

An op is a `Function` subclass with `forward(ctx, *arrays, **options)` and
`backward(ctx, g)` side by side, both on plain numpy arrays. `Op.apply(*tensors)` runs the
forward and, when a gradient is wanted, records the node that `Tensor.backward` later visits.
Grad mode and the module scope are per thread (grad_mode.py), so are the hooks that watch
forward and backward (hooks.py: `observe_forward`, `observe_backward`); a tensor changed in
place after an op saved it makes backward raise (versions.py).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from . import hooks as _hooks
from . import memory as _memory
from . import versions as _versions
from .grad_mode import DEFAULT as _DEFAULT
from .grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401  (torch.autograd has them too)
from .grad_mode import get as _get_state

__all__ = ["Function", "backward", "enable_grad", "grad", "no_grad", "set_grad_enabled"]

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
    out_hooks: dict | None = None  # hooks of the output tensor by handle id (register_hook on a non-leaf)
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
        if type(out) is not np.ndarray:  # numpy reductions (and 0-d math) return scalars
            scalar, out = out, np.asarray(out)
            if ctx.saved:  # a saved output is then the output's array (create_graph finds it)
                ctx.saved = tuple([out if s is scalar else s for s in ctx.saved])
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

    @property
    def next_functions(self) -> tuple:
        """One (node, 0) pair per input, as torch's: the node that made the input, an
        `AccumulateGrad` for a leaf that requires grad (its `.variable` is the leaf), or None for
        an input without a gradient. Walking these from `loss.grad_fn` visits the whole graph."""
        return tuple((parent if parent is not None else AccumulateGrad.of(t) if t.requires_grad else None, 0)
                     for t, parent in zip(self.inputs, self.parents))

    def __repr__(self) -> str:
        return f"<{self.name}>"


class AccumulateGrad:
    """Where a leaf's gradient goes (torch's node of that name, seen in `next_functions`): one
    per leaf, so a walk over the graph can keep the nodes it has seen in a set."""

    name = "AccumulateGrad"
    next_functions: tuple = ()
    _of: dict[int, AccumulateGrad] = {}  # id(leaf) -> its AccumulateGrad, while the leaf lives

    def __init__(self, variable: Tensor) -> None:
        self._variable = weakref.ref(variable)  # the table must not keep the leaf alive

    @property
    def variable(self) -> Tensor | None:
        """The leaf whose `.grad` this node fills."""
        return self._variable()

    @classmethod
    def of(cls, leaf: Tensor) -> AccumulateGrad:
        node = cls._of.get(id(leaf))
        if node is None or node.variable is not leaf:
            node = cls._of[id(leaf)] = cls(leaf)
            weakref.finalize(leaf, cls._of.pop, id(leaf), None)
        return node

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


# ----------------------------------------------------------------------------- the engine

# id(leaf) -> its .grad as a Tensor with a graph, after backward(create_graph=True); only while
# the leaf lives and its .grad is still that tensor's array (graph_backward.py keeps it).
graph_grads: dict[int, Tensor] = {}


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """torch.autograd.backward: the gradients of the sum of `tensors` (each weighted by its
    entry of `grad_tensors`; a scalar may have None) accumulated into the leaves' `.grad`,
    or into the `.grad` of `inputs` alone when given. With create_graph, each `.grad` is a
    Tensor with a graph of its own (graph_backward.py), and the graph is kept.
    """
    roots, gs = _roots("backward", tensors, grad_tensors, create_graph)
    if create_graph:
        from . import graph_backward
        wanted = None if inputs is None else _as_inputs("backward", inputs)
        found = graph_backward.run(roots, gs, inputs=wanted)
        for t, g in zip(wanted or (), found or ()):
            if g is not None:
                graph_backward.set_grad(t, g)
        return
    retain = bool(retain_graph)
    if inputs is None:
        run_backward(roots, gs, retain_graph=retain)
        return
    wanted = _as_inputs("backward", inputs)
    for t, g in zip(wanted, run_backward(roots, gs, retain_graph=retain, inputs=wanted)):
        if g is not None:
            if t._grad is None:
                t.grad = np.array(g, dtype=t.dtype)
            else:
                t._grad += g


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> Any:
    """torch.autograd.grad: the gradients of the sum of `outputs` (each weighted by its entry
    of `grad_outputs`) with respect to `inputs` (a tensor, a sequence of them, or a dict of
    them: then a dict comes back), without touching any `.grad`.

    An input the outputs do not depend on is an error unless allow_unused (then its gradient
    is None, or zeros with materialize_grads). The graph is freed unless retain_graph.
    With is_grads_batched, each grad_outputs tensor has one more (first) dimension than its
    output, and the gradients come stacked along it: one backward pass per row, as torch's
    vmap gives them. With create_graph, the gradients are Tensors with graphs of their own, to
    differentiate again (graph_backward.py); the graph is kept.
    """
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    roots, gs = _roots("grad", outputs, grad_outputs, create_graph)
    names = list(inputs) if isinstance(inputs, dict) else None
    wanted = _as_inputs("grad", list(inputs.values()) if names is not None else inputs)
    if create_graph:
        from . import graph_backward
        found = graph_backward.run(roots, gs, inputs=wanted)
    else:
        found = run_backward(roots, gs, retain_graph=bool(retain_graph), inputs=wanted)
    if allow_unused is None:
        allow_unused = materialize_grads
    out = []
    for i, (t, g) in enumerate(zip(wanted, found)):
        if g is None and not allow_unused:
            raise RuntimeError(f"autograd.grad: input {i} (shape {t.shape}) was not used in the graph "
                               "of the outputs; pass allow_unused=True to get None for it")
        if g is None:
            out.append(Tensor._make(np.zeros(t.shape, t.dtype), None) if materialize_grads else None)
        elif create_graph:
            out.append(g if g.dtype == t.dtype else g.to(t.dtype))
        else:
            out.append(Tensor._make(np.array(g, dtype=t.dtype), None))
    return dict(zip(names, out)) if names is not None else tuple(out)


def _batched_grad(outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: bool | None, create_graph: bool,
                  allow_unused: bool | None, materialize_grads: bool) -> Any:
    """grad with is_grads_batched: grad once per row of the grad_outputs, the results stacked
    (an input without a gradient in every row stays None)."""
    rows_of = [grad_outputs] if isinstance(grad_outputs, (Tensor, np.ndarray)) else list(grad_outputs or ())
    if not rows_of or any(g is None or np.ndim(getattr(g, "_data", g)) == 0 for g in rows_of):
        raise RuntimeError("grad: is_grads_batched=True needs a grad_outputs tensor for every output, "
                           "with the batch as its first dimension")
    batch = {np.shape(getattr(g, "_data", g))[0] for g in rows_of}
    if len(batch) != 1:
        raise RuntimeError(f"grad: is_grads_batched=True needs one batch size, got {sorted(batch)}")
    n = batch.pop()
    rows = [grad(outputs, inputs, [g[b] for g in rows_of], retain_graph=True if b < n - 1 else retain_graph,
                 create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
            for b in range(n)]
    keys = list(rows[0]) if isinstance(rows[0], dict) else range(len(rows[0]))
    if create_graph:
        from .ops.shape import stack
        stacked = [None if any(r[k] is None for r in rows) else stack([r[k] for r in rows]) for k in keys]
    else:
        stacked = [None if any(r[k] is None for r in rows) else
                   Tensor._make(np.stack([r[k]._data for r in rows]), None) for k in keys]
    return dict(zip(keys, stacked)) if isinstance(rows[0], dict) else tuple(stacked)


def _roots(who: str, tensors: Any, grads: Any, create_graph: bool) -> tuple[list, list]:
    """The tensors to go back from and d loss / d each, checked as torch does: as arrays, or
    with create_graph as Tensors (one given as a Tensor is kept, so that a vector-Jacobian
    product can be differentiated with respect to the vector too)."""
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grads is None or isinstance(grads, (Tensor, np.ndarray)):
        grads = [grads] * len(roots) if grads is None else [grads]
    grads = list(grads)
    if len(grads) != len(roots):
        raise RuntimeError(f"{who}: got {len(grads)} gradients for {len(roots)} outputs")
    arrays = []
    for i, (r, g) in enumerate(zip(roots, grads)):
        if not isinstance(r, Tensor) or not r.requires_grad:
            raise RuntimeError(f"{who}: output {i} does not require grad and has no graph to go back through")
        if g is None:
            if r._data.size != 1:
                raise RuntimeError(f"{who}: output {i} has shape {r.shape}, not a scalar; pass its "
                                   "gradient (grad_outputs)")
            arrays.append(np.ones(r.shape, r.dtype))
        else:
            a = np.asarray(getattr(g, "_data", g), dtype=r.dtype)
            if a.shape != r.shape:
                raise RuntimeError(f"{who}: gradient of shape {a.shape} for output {i} of shape {r.shape}")
            arrays.append(a)
    if create_graph:
        return roots, [g if isinstance(g, Tensor) and g.dtype == r.dtype else Tensor._make(a, None)
                       for r, g, a in zip(roots, grads, arrays)]
    return roots, arrays


def _as_inputs(who: str, inputs: Any) -> list:
    wanted = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for i, t in enumerate(wanted):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(f"{who}: input {i} does not require grad: only tensors that require "
                               "grad can be differentiated with respect to")
    return wanted


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


def toposort(*roots: Function, stop: set[int] | None = None) -> list[Function]:
    """Nodes reachable from the roots, each before the nodes that made its inputs (with one
    root, the root first); the inputs of a node whose id is in `stop` are not followed.

    Iterative depth-first post-order (no recursion limit on long chains), reversed.
    """
    order: list[Function] = []
    visited: set[int] = set()
    stack: list[tuple[Function, bool]] = [(root, False) for root in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        if stop is not None and id(node) in stop:
            continue
        for parent in node.parents:
            if parent is not None and id(parent) not in visited:
                stack.append((parent, False))
    order.reverse()
    return order


def run_backward(root: Tensor | list[Tensor], grad: np.ndarray | list[np.ndarray], retain_graph: bool = False,
                 inputs: list[Tensor] | None = None) -> list[np.ndarray | None] | None:
    """Propagate `grad` (d loss / d root) to every leaf that requires grad: the chain rule.
    (Several roots, each with its gradient, go back together, as torch.autograd.backward's.)

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

    With `inputs` (autograd.grad), no `.grad` changes: the gradients of those tensors, leaves
    or not, are returned (None for one the pass does not reach).
    """
    roots, root_grads = (root, grad) if isinstance(root, list) else ([root], [grad])
    leaves: dict[int, list] = {}  # id(leaf) -> [leaf, summed gradient]
    wanted = None if inputs is None else {id(t._node): None for t in inputs if t._node is not None}
    pending: dict[int, np.ndarray] = {}
    for r, g in zip(roots, root_grads):
        if r._node is None:
            _add_leaf(leaves, r, g)
        else:
            prev = pending.get(id(r._node))
            pending[id(r._node)] = g if prev is None else prev + g
    if pending:
        order = toposort(*[r._node for r in roots if r._node is not None])
        observers = _hooks.observers_for(len(order))
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
            if wanted is not None and id(node) in wanted:
                wanted[id(node)] = g
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
    if inputs is None:
        _accumulate_leaves(leaves)
        return None
    return [wanted.get(id(t._node)) if t._node is not None else _leaf_gradient(leaves, t) for t in inputs]


def _accumulate_leaves(leaves: dict) -> None:
    """Give each leaf its gradient, summed over the whole pass: its hooks run once on the sum,
    then `.grad` accumulates (+= across backward calls, as in PyTorch)."""
    for leaf, g in leaves.values():
        g = _leaf_hooks(leaf, g)
        if leaf._grad is None:
            leaf.grad = g
        else:
            leaf._grad += g


def _leaf_gradient(leaves: dict, leaf: Tensor) -> np.ndarray | None:
    """A leaf's summed gradient of the pass, after its hooks (autograd.grad's answer)."""
    entry = leaves.get(id(leaf))
    return None if entry is None else _leaf_hooks(leaf, entry[1])


def _leaf_hooks(leaf: Tensor, g: np.ndarray) -> np.ndarray:
    """g after the leaf's hooks, in the order registered (each may replace it)."""
    if leaf._hooks:
        for hook in leaf._hooks.values():
            g = _run_hook(hook, g)
    return g


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
        for hook in node.out_hooks.values():
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


def __getattr__(name: str) -> Any:
    """gradcheck and gradgradcheck, as torch.autograd has them, loaded on first use."""
    if name in ("gradcheck", "gradgradcheck"):
        from . import gradcheck
        return getattr(gradcheck, name)
    raise AttributeError(f"module 'minigrad.autograd' has no attribute {name!r}")


def _functional() -> Any:
    """`autograd.functional` (jacobian, hessian, vjp, jvp, hvp, vhp: autograd_functional.py),
    importable as `minigrad.autograd.functional` as in torch, and loaded on first use: it needs
    Tensor, which needs this module."""
    import importlib.util
    import os
    import sys

    name = f"{__name__}.functional"
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograd_functional.py"))
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = sys.modules[f"{__package__}.autograd_functional"] = module
    spec.loader.exec_module(module)
    return module


functional = _functional()
