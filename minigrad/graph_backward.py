"""Backward that builds a graph (`create_graph=True`): gradients that can be differentiated again.

The first-order pass (autograd.run_backward) computes on arrays. This pass visits the same
nodes in the same order and applies the same chain rule, but every gradient is a Tensor made
by ops, so the gradient has a graph of its own: `autograd.grad(..., create_graph=True)` of it
gives second derivatives, and so on to any order.

Each op's backward is written once. This pass calls that same `backward(ctx, g)` with Tensors
in place of arrays: g, and what forward saved (an input's values become that input, the
output's values the output tensor). A backward written with operators (`g * b`, `g @ w.T`) and
the functions of `minigrad.ops.either` (`either.where`, `either.log`), which take arrays or
tensors, then builds the graph of its own derivative; its op says so with
`differentiable_backward = True`. A fused kernel instead names `reference(ctx, *inputs)`, the
composition of Tensor ops it computes: its gradient is this pass through that composition
(recomputed, so the kernel's speed is kept for first order).

Any other op met here raises an error naming it, rather than give a silently wrong second
derivative, and so does a numpy function given a tensor that requires grad inside a backward
(`np.exp(x)` would cut the graph: Tensor.__array__ refuses while this pass runs).
"""

from __future__ import annotations

import weakref

import numpy as np

from . import autograd
from . import grad_mode as _grad_mode
from .autograd import Function, _check_saved, _one_per_input, broadcast_axes, toposort
from .tensor import Tensor


def run(roots: list[Tensor], grads: list[Tensor], inputs: list[Tensor] | None = None,
        stop: set[int] | None = None) -> list[Tensor | None] | None:
    """The chain rule from `roots` (each with its gradient, a Tensor) with every gradient a
    Tensor in a graph. Without `inputs`, the leaves' `.grad` accumulate (each a Tensor with
    a graph, see autograd.graph_grads); with them, their gradients are returned instead.
    `stop` holds the ids of nodes not to go past (the inputs of a fused kernel's reference)."""
    leaves: dict[int, list] = {}
    wanted = None if inputs is None else {id(t._node): None for t in inputs if t._node is not None}
    pending: dict[int, Tensor] = {}
    outputs: dict[int, Tensor] = {}  # id(node) -> the tensor it made (whose values it may have saved)
    for r, g in zip(roots, grads):
        if r._node is None:
            _add(leaves, id(r), r, g)
        else:
            key = id(r._node)
            pending[key] = g if key not in pending else pending[key] + g
            outputs[key] = r
    order = toposort(*{id(r._node): r._node for r in roots if r._node is not None}.values(), stop=stop)
    with _grad_mode.enable_grad():
        for node in order:
            g = pending.pop(id(node), None)
            if g is None:
                continue
            if wanted is not None and id(node) in wanted:
                wanted[id(node)] = g
            if stop is not None and id(node) in stop:
                continue
            _check_saved(node)
            if node.out_hooks or node.retained is not None:
                g = _output_hooks(node, g)
            grads = node_grads(node, g, outputs.get(id(node)))
            for t, parent, need, gi in zip(node.inputs, node.parents, node.needs_input_grad, grads):
                if gi is None or not need:
                    continue
                if gi.shape != t.shape:
                    gi = _fit(gi, t.shape, node)
                if parent is None:
                    _add(leaves, id(t), t, gi)
                else:
                    key = id(parent)
                    pending[key] = gi if key not in pending else pending[key] + gi
                    outputs[key] = t
    if inputs is None:
        for leaf, g in leaves.values():
            set_grad(leaf, _leaf_hooks(leaf, g))
        return None
    found = []
    for t in inputs:
        if t._node is not None:
            found.append(wanted.get(id(t._node)))
        else:
            entry = leaves.get(id(t))
            found.append(None if entry is None else _leaf_hooks(t, entry[1]))
    return found


def node_grads(node: Function, g: Tensor, out: Tensor | None) -> tuple:
    """One gradient (a Tensor in the graph, or None) per input of `node`, given g = d/d output."""
    cls = type(node)
    reference = getattr(cls, "reference", None)
    if reference is not None:
        return _through_reference(node, g)
    if not getattr(cls, "differentiable_backward", False):
        raise RuntimeError(
            f"backward(create_graph=True): the backward of {node.name} is first order only (it "
            "computes on arrays), so the gradient through it cannot be differentiated again; "
            "an op's backward builds a graph when written with operators and minigrad.ops.either "
            "(see CONTRIBUTING.md, 'Higher-order gradients')"
        )
    saved = node.saved
    graph_saved = getattr(cls, "graph_saved", None)
    if graph_saved is not None:  # an op that saved intermediates rebuilds them as tensors
        node.saved = graph_saved(node, *node.inputs, out)
    else:
        node.saved = _saved_tensors(node, out)
    state = _grad_mode.own()
    state.graph_backward += 1
    try:
        grads = cls.backward(node, g)
    finally:
        state.graph_backward -= 1
        node.saved = saved
    if type(grads) is not tuple or len(grads) != len(node.inputs):
        grads = _one_per_input(node, grads)
    return tuple(gi if gi is None or isinstance(gi, Tensor) else Tensor._make(np.asarray(gi), None)
                 for gi in grads)


def _saved_tensors(node: Function, out: Tensor | None) -> tuple:
    """What the node's forward saved, as tensors of the graph: an input's array is that input,
    the output's array the output. An op that saved anything else must give a `reference`."""
    found = []
    for k, a in enumerate(node.saved):
        if a is None or not isinstance(a, (np.ndarray, np.generic)):
            found.append(a)  # an option or a Python number: a constant of the op
            continue
        for t in node.inputs:
            if t._data is a:
                found.append(t)
                break
        else:
            if out is not None and out._data is a:
                found.append(out)
            elif _promoted(node, k, a):  # input k in the dtype the op computed in (promotion.py)
                found.append(node.inputs[k].to(a.dtype))
            else:
                raise RuntimeError(
                    f"backward(create_graph=True): {node.name} saved an array that is neither an input "
                    "nor its output, so its backward cannot be followed by the graph; give the op a "
                    "`reference` (the composition it computes)"
                )
    return tuple(found)


def _promoted(node: Function, k: int, a: np.ndarray) -> bool:
    """Whether saved array k is input k cast to another dtype (as mixed-dtype ops save it)."""
    if k >= len(node.inputs):
        return False
    t = node.inputs[k]._data
    if a.shape != t.shape or a.dtype == t.dtype:
        return False
    return bool(np.array_equal(a, t.astype(a.dtype), equal_nan=a.dtype.kind in "fc"))


def _through_reference(node: Function, g: Tensor) -> tuple:
    """A fused kernel's input gradients: this pass through its composed reference, recomputed
    from the very inputs (so the gradients hang from the same graph), stopped at them."""
    inputs = node.inputs
    with _grad_mode.enable_grad():
        y = type(node).reference(node, *inputs)
    if not y.requires_grad:  # the result does not depend on any input that needs a gradient
        return tuple(None for _ in inputs)
    need = [t for t, n in zip(inputs, node.needs_input_grad) if n]
    stop = {id(t._node) for t in need if t._node is not None}
    found = iter(run([y], [g], inputs=need, stop=stop))
    return tuple(next(found) if n else None for n in node.needs_input_grad)


def _fit(gi: Tensor, shape: tuple[int, ...], node: Function) -> Tensor:
    """Sum a gradient back over the axes the forward broadcast (autograd.unbroadcast, as ops)."""
    try:
        axes = broadcast_axes(gi.shape, shape)
    except ValueError:
        axes = None
    if axes is None or np.broadcast_shapes(gi.shape, shape) != gi.shape:
        raise RuntimeError(f"{node.name}.backward returned a gradient of shape {gi.shape} for an input of "
                           f"shape {shape}")
    return gi.sum(dim=axes, keepdim=True).reshape(shape) if axes else gi.reshape(shape)


def _add(leaves: dict, key: int, t: Tensor, g: Tensor) -> None:
    if g.dtype != t.dtype:
        g = g.to(t.dtype)
    entry = leaves.get(key)
    if entry is None:
        leaves[key] = [t, g]
    else:
        entry[1] = entry[1] + g


def _leaf_hooks(leaf: Tensor, g: Tensor) -> Tensor:
    if leaf._hooks:
        for hook in leaf._hooks.values():
            out = hook(g)
            if out is not None:
                g = out if isinstance(out, Tensor) else Tensor._make(np.array(out), None)
    return g


def _output_hooks(node: Function, g: Tensor) -> Tensor:
    if node.out_hooks:
        for hook in node.out_hooks.values():
            out = hook(g)
            if out is not None:
                g = out if isinstance(out, Tensor) else Tensor._make(np.array(out), None)
    if node.retained is not None:
        t = node.retained()
        if t is not None:
            set_grad(t, g)
    return g


def set_grad(t: Tensor, g: Tensor) -> None:
    """`t.grad` += g, both Tensors with graphs (the sum is one too), as torch accumulates."""
    if t._grad is not None:
        g = t.grad + g
    if g._node is None:  # a gradient that depends on nothing requiring grad: a plain value
        t._grad = np.array(g._data, dtype=t.dtype)
        autograd.graph_grads.pop(id(t), None)
        return
    t._grad = g._data
    if id(t) not in autograd.graph_grads:
        weakref.finalize(t, autograd.graph_grads.pop, id(t), None)
    autograd.graph_grads[id(t)] = g

