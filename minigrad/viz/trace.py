"""`trace_backward`: run backward and record what every node received and sent, in order.

Each step is one node visited by the engine: the gradient that reached it, and the gradient
it sent to each input, with where it went and which axes were summed to undo broadcasting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .. import hooks
from ..autograd import Function, broadcast_axes, unbroadcast
from ..tensor import Tensor
from ._names import Names, dims, norm, values_text

if TYPE_CHECKING:
    import graphviz


@dataclass
class GradSent:
    """The gradient one node sent to one of its inputs.

    Attributes:
        index: which input of the op (0 for the first).
        to: where it went: a parameter's name, `step k (Op)` for the node that made the input,
            or `leaf (shape)` for an unnamed leaf.
        shape: the shape the op's backward returned.
        input_shape: the input's shape; differs from `shape` where the forward broadcast.
        summed_axes: the axes of `shape` summed to get back to `input_shape` (() if none).
        norm: norm of the gradient as it reached the input (after the summing).
        values: that gradient, for tensors of at most `max_values` elements, else None.
        to_step: the step that visits the input's node; None for a leaf.
        stats: (min, max, mean) of that gradient, for any size (`explore` shows them).
    """

    index: int
    to: str
    shape: tuple[int, ...]
    input_shape: tuple[int, ...]
    summed_axes: tuple[int, ...]
    norm: float
    values: np.ndarray | None = None
    to_step: int | None = None
    tensor: Tensor | None = field(default=None, repr=False, compare=False)
    stats: tuple[float, float, float] | None = field(default=None, repr=False, compare=False)


@dataclass
class BackwardStep:
    """One node visited by backward, in the engine's order.

    Attributes:
        step: 0 for the node that made the output, then 1, 2, ... in visiting order.
        op: the op's name (`MatMul`).
        module: the module the op ran in (`blocks.0.attn.q_proj (Linear)`), "" outside any.
        grad_shape, grad_norm: shape and norm of the upstream gradient that reached the node.
        grad_values: that gradient, for tensors of at most `max_values` elements, else None.
        sent: one `GradSent` per input that requires grad and got a gradient.
        node: the graph node itself.
        grad_stats: (min, max, mean) of the upstream gradient.
    """

    step: int
    op: str
    module: str
    grad_shape: tuple[int, ...]
    grad_norm: float
    grad_values: np.ndarray | None
    sent: list[GradSent]
    node: Function = field(repr=False, compare=False)
    grad_stats: tuple[float, float, float] | None = field(default=None, repr=False, compare=False)


class BackwardTrace:
    """The record of one traced backward pass; `print()` it for a table, `.draw()` it."""

    def __init__(self, output: Tensor, steps: list[BackwardStep], model: Any = None,
                 params: Mapping[str, Tensor] | None = None):
        self.output = output
        self.steps = steps
        self._model, self._params = model, params

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, i: int) -> BackwardStep:
        return self.steps[i]

    def __repr__(self) -> str:
        return f"<BackwardTrace of {len(self.steps)} steps; print() it for the table>"

    def __str__(self) -> str:
        if not self.steps:
            return "(no node was visited: the output is a leaf)"
        # Rows of (where, shape, norm, broadcast note, values), one width per column.
        blocks = []
        for s in self.steps:
            rows = [("upstream", dims(s.grad_shape), _norm(s.grad_norm), "", _values(s.grad_values))]
            for g in s.sent:
                note = f"summed over axes {g.summed_axes} of {dims(g.shape)}" if g.summed_axes else ""
                rows.append(("-> " + g.to, dims(g.input_shape), _norm(g.norm), note, _values(g.values)))
            where = f"   in {s.module}" if s.module else ""
            blocks.append((f"#{s.step}  {s.op}{where}", rows))
        w = [max(len(r[c]) for _, rows in blocks for r in rows) for c in range(4)]
        lines = []
        for head, rows in blocks:
            lines.append(head)
            for r in rows:
                cells = [f"{r[c]:<{w[c]}}" for c in range(4) if w[c]] + [r[4]]
                lines.append(("      " + "  ".join(cells)).rstrip())
        return "\n".join(lines)

    def draw(self, **kwargs: Any) -> graphviz.Digraph:
        """The graph (see `draw_graph`, which takes the same keywords) with every edge a
        gradient went back along labelled by the step that sent it."""
        from .graph import draw_graph

        kwargs.setdefault("model", self._model)
        kwargs.setdefault("params", self._params)
        return draw_graph(self.output, trace=self, **kwargs)


def trace_backward(
    output: Tensor,
    gradient: Any = None,
    retain_graph: bool = False,
    *,
    model: Any = None,
    params: Mapping[str, Tensor] | None = None,
    max_values: int = 4,
) -> BackwardTrace:
    """Run `output.backward(gradient, retain_graph)` and record every step it takes.

    Leaves get their `.grad` exactly as from `backward()`. The steps come in the engine's
    order, which is topological: a node's step comes before the steps of the nodes that made
    its inputs.

    Args:
        output: the tensor to differentiate (a scalar, or pass `gradient`).
        gradient: d(loss)/d(output) when output is not a scalar.
        retain_graph: keep saved arrays for another backward.
        model: names modules and parameters (see `draw_graph`).
        params: parameter name -> tensor.
        max_values: keep gradient values of tensors with at most this many elements.

    Returns:
        A `BackwardTrace`: `.steps` for code, `print(trace)` for a table, `.draw()` for a graph.

    Example:
        >>> trace = trace_backward(loss, model=model)
        >>> print(trace)
        >>> trace.draw(depth=2)
    """
    names = Names(model, params)
    steps: list[BackwardStep] = []

    def observe(node: Function, g: np.ndarray, grads: tuple) -> None:
        sent = []
        for i, (t, gi) in enumerate(zip(node.inputs, grads)):
            if gi is None or not t.requires_grad:
                continue  # the engine drops these too
            try:
                axes = broadcast_axes(gi.shape, t.shape) if gi.shape != t.shape else ()
            except ValueError:
                continue  # a wrong shape: the engine raises next, naming the op
            arrived = unbroadcast(gi, t.shape) if axes else gi
            to = names.param(t) or ("" if t._node is not None else f"leaf {dims(t.shape)}")
            sent.append(
                GradSent(i, to, gi.shape, t.shape, axes, norm(arrived),
                         _small(arrived, max_values), None, t, _stats(arrived))
            )
        names.see(node.scope)
        steps.append(
            BackwardStep(len(steps), node.name, names.describe_scope(node.scope), g.shape,
                         norm(g), _small(g, max_values), sent, node, _stats(g))
        )

    with hooks.observe_backward(observe):
        output.backward(gradient, retain_graph=retain_graph)

    # Where a gradient went to another node, name that node by its step (known only now).
    step_of = {id(s.node): s.step for s in steps}
    for s in steps:
        for g in s.sent:
            made_by = g.tensor._node
            if made_by is not None:
                g.to_step = step_of.get(id(made_by))
                if not g.to:
                    g.to = f"step {g.to_step} ({made_by.name})"
    return BackwardTrace(output, steps, model, params)


def _small(a: np.ndarray, limit: int) -> np.ndarray | None:
    return np.array(a, copy=True) if a.size <= limit else None


def _stats(a: np.ndarray) -> tuple[float, float, float] | None:
    if a.size == 0 or a.dtype.kind not in "fiub":
        return None
    return float(a.min()), float(a.max()), float(a.mean(dtype=np.float64))


def _norm(n: float) -> str:
    return f"|g| = {n:.4g}"


def _values(values: np.ndarray | None) -> str:
    return values_text(values) if values is not None else ""
