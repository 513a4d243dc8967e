"""`draw_graph`: the computation graph behind a tensor as a graphviz drawing.

Ops are boxes, tensors are ovals labelled by shape and dtype (parameters by their name), and
the modules the ops ran in are nested clusters. `depth` folds deep modules into one box each;
`module` draws a single module's part of the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..autograd import Function, toposort
from ..tensor import Tensor
from ._names import Names, dims, norm, shape_text, values_grid
from .dot import CLUSTER, STYLE, common_prefix, escape, expanded_kernel, prefixed, steps_text
from .pipelines import pipeline_of

if TYPE_CHECKING:
    import graphviz

def draw_graph(
    output: Tensor | Sequence[Tensor],
    params: Mapping[str, Tensor] | None = None,
    model: Any = None,
    depth: int | None = None,
    module: str | None = None,
    show_values: bool | str = "auto",
    rankdir: str = "TB",
    trace: Any = None,
    expand_fused: bool = False,
) -> graphviz.Digraph:
    """Draw the graph that computed `output`, inputs at the top and the output at the bottom.

    Ops are boxes named by their op, tensors are labelled by shape and dtype, parameters by
    their dotted name (`blocks.0.attn.q_proj.weight`), any tensor by the `.name` you gave it
    (`scores.name = "scores"`). After `backward()` tensors show their gradient: leaves their
    `.grad`, intermediates the gradient backward passed through them (kept automatically for
    tensors of up to 64 elements, as micrograd's drawing does; for larger ones run backward
    inside `keep_grads()`, which keeps every gradient's norm). Tiny tensors also show their
    values. Modules are nested clusters labelled with their path. A module called several
    times draws as one cluster holding every call.

    Args:
        output: the tensor (or tensors) whose graph to draw.
        params: parameter name -> tensor, e.g. `dict(model.named_parameters())`.
        model: the model, for module paths and parameter names. Without it, names are paths
            inside the outermost module the ops ran in (its class name labels it).
        depth: fold every module more than `depth` levels below the root into one box that
            shows its path, the shapes going in and out, and how many ops it holds. 0 draws
            the whole model as one box, 1 its children (a handful of boxes), and so on.
        module: a module path (`"blocks.0.attn"`): draw only the ops run inside it, plus the
            tensors coming in. `depth` then counts from this module.
        show_values: "auto" shows data and gradient values of tensors with at most 4 elements,
            True of every tensor (as a grid of rows, large ones summarized), False of none.
        rankdir: graphviz layout direction, "TB" (top to bottom) or "LR" (left to right).
        trace: a `BackwardTrace` (see `trace_backward`) whose step numbers are written on the
            edges the gradient went back along; `BackwardTrace.draw()` passes it.
        expand_fused: open every fused kernel that describes its steps (the attention
            kernel: scores, scale, mask, softmax, weights times values) and draw those steps,
            dashed, inside a box named after the kernel, as the composed ops would be drawn.

    Returns:
        A `graphviz.Digraph` that shows itself in Jupyter; `.save("graph.svg")` writes it (see
        `save_graph`), `.source` is the DOT text.

    Example:
        >>> loss = model(x).sum(); loss.backward()
        >>> draw_graph(loss, model=model, depth=1).save("model.svg")
    """
    if show_values not in ("auto", True, False):
        raise ValueError(f"draw_graph: show_values must be 'auto', True or False, not {show_values!r}")
    if depth is not None and (not isinstance(depth, int) or depth < 0):
        raise ValueError(f"draw_graph: depth must be None or an integer >= 0, not {depth!r}")
    outputs = [output] if isinstance(output, Tensor) else list(output)
    if not all(isinstance(t, Tensor) for t in outputs):
        raise TypeError("draw_graph: output must be a Tensor or a sequence of Tensors")
    limit = {"auto": 4, True: None, False: 0}[show_values]
    builder = _Builder(Names(model, params), limit, trace)
    builder.expand_fused = expand_fused
    return builder.build(outputs, depth, module, rankdir)


class _Box:
    """A module folded into one node (depth=N)."""

    def __init__(self, uid: str, module: Any, cluster: tuple | None):
        self.uid, self.module, self.cluster = uid, module, cluster
        self.ops = 0
        self.inputs: dict[int, Tensor] = {}
        self.outputs: dict[int, Tensor] = {}


class _Builder:
    """One drawing: collects the graph, decides what is drawn where, then writes DOT."""

    def __init__(self, names: Names, limit: int | None, trace: Any):
        self.names, self.limit = names, limit
        self.step: dict[int, int] = {}  # id(node) -> backward step
        self.upstream: dict[int, Any] = {}  # id(node) -> the trace step (grad of its output)
        for s in getattr(trace, "steps", ()):
            self.step[id(s.node)] = s.step
            self.upstream[id(s.node)] = s
        self._keys: dict[tuple[int, int], tuple] = {}
        self.clusters: dict[tuple, tuple] = {}  # key -> scope prefix (modules)
        self.expand_fused = False

    # ------------------------------------------------------------------ helpers

    def key(self, scope: tuple, length: int) -> tuple | None:
        """Cluster key (ids of the modules) of the first `length` modules of a scope."""
        if length <= 0:
            return None
        k = self._keys.get((id(scope), length))
        if k is None:
            k = self._keys[(id(scope), length)] = tuple(id(m) for m in scope[:length])
        return k

    def cluster(self, scope: tuple, length: int, base: int) -> tuple | None:
        """Register the clusters for scope[:base+1] .. scope[:length]; return the innermost."""
        if length <= base:
            return None
        k = self.key(scope, length)
        if k not in self.clusters:
            for n in range(base + 1, length + 1):
                self.clusters.setdefault(self.key(scope, n), scope[:n])
        return k

    # ------------------------------------------------------------------ building

    def build(self, outputs: list[Tensor], depth: int | None, module: str | None, rankdir: str):
        order, out_of, consumers = self._collect(outputs)
        order, base = self._select(order, module)
        ops = self._fold(order, base, depth)
        self._connect(order, outputs, out_of, consumers)
        return self._emit(ops, rankdir)

    def _collect(self, outputs: list[Tensor]) -> tuple[list[Function], dict, dict]:
        """Every node (inputs before the nodes using them), each node's output tensor, and
        the nodes using each tensor, over the whole graph."""
        order: list[Function] = []
        seen: set[int] = set()
        for out in outputs:
            if out._node is not None and id(out._node) not in seen:
                fresh = [n for n in toposort(out._node) if id(n) not in seen]
                seen.update(id(n) for n in fresh)
                order.extend(reversed(fresh))
        # A node does not hold its output; the tensor is found among the inputs of its users.
        out_of: dict[int, Tensor] = {id(t._node): t for t in outputs if t._node is not None}
        consumers: dict[int, list[Function]] = {}
        for n in order:
            self.names.see(n.scope)
            for t in n.inputs:
                if t._node is not None:
                    out_of[id(t._node)] = t
                consumers.setdefault(id(t), []).append(n)
        return order, out_of, consumers

    def _select(self, order: list[Function], module: str | None) -> tuple[list[Function], dict]:
        """With `module`, keep the nodes run inside it; base[id(node)] is its place in the scope."""
        base: dict[int, int] = {}
        if module is None:
            return order, base
        target = self.names.module(module)
        kept = []
        for n in order:
            for i, m in enumerate(n.scope):
                if m is target:
                    kept.append(n)
                    base[id(n)] = i
                    break
        if not kept:
            raise ValueError(f"draw_graph: module {module!r} ran no recorded op in this graph")
        return kept, base

    def _fold(self, order: list[Function], base: dict, depth: int | None) -> list[tuple[str, Function]]:
        """Give each node its unit: itself (returned, to be drawn) or its module's box."""
        self.unit: dict[int, str] = {}  # id(node) -> node or box id
        self.unit_cluster: dict[str, tuple | None] = {}
        self.boxes: dict[str, _Box] = {}
        box_at: dict[tuple, _Box] = {}
        ops = []
        for i, n in enumerate(order):
            b, scope = base.get(id(n), 0), n.scope
            if depth is not None and len(scope) > b + depth:
                k = self.key(scope, b + depth + 1)
                box = box_at.get(k)
                if box is None:
                    parent = self.cluster(scope, b + depth, b)
                    box = box_at[k] = _Box(f"b{len(box_at)}", scope[b + depth], parent)
                    self.boxes[box.uid] = box
                    self.unit_cluster[box.uid] = parent
                box.ops += 1
                self.unit[id(n)] = box.uid
            else:
                uid = self.unit[id(n)] = f"n{i}"
                self.unit_cluster[uid] = self.cluster(scope, len(scope), b)
                ops.append((uid, n))
        return ops

    def _connect(self, order: list[Function], outputs: list[Tensor], out_of: dict, consumers: dict):
        """Decide which tensors are drawn, in which cluster, and the edges between units.

        A tensor made and used inside one box is not drawn; nor is a parameter the box's
        module owns, or a scalar constant used only there.
        """
        unit, boxes = self.unit, self.boxes
        self.tensors: dict[int, Tensor] = {}
        self.kind: dict[int, str] = {}
        self.placed: dict[int, list] = {}  # id(tensor) -> clusters it belongs near
        self.edges: dict[tuple, list[int]] = {}  # (from, to) -> backward steps along it
        self.edge_input: dict[tuple, int] = {}  # (tensor, op unit) -> which input of the op
        for n in order:
            cu = unit[id(n)]
            box = boxes.get(cu)
            for i, t in enumerate(n.inputs):
                p = t._node
                if p is not None:  # one tensor per node (a freed graph's users may hold stand-ins)
                    t = out_of.get(id(p), t)
                pu = unit.get(id(p)) if p is not None else None
                if pu is not None and pu == cu:
                    continue
                if box is not None and p is None and self._hidden_in(box, t):
                    continue
                if id(t) not in self.tensors:
                    self.tensors[id(t)] = t
                    if pu is None:
                        self.kind[id(t)] = self._leaf_kind(t) if p is None else "entering"
                        self.placed[id(t)] = []
                if pu is None and (self.kind[id(t)] == "param" or t._data.size <= 1):
                    # Parameters and scalar constants sit by their use; inputs stay outside.
                    self.placed[id(t)].append(self.unit_cluster[cu])
                if box is not None:
                    box.inputs.setdefault(id(t), t)
                steps = self.edges.setdefault((id(t), cu), [])
                self.edge_input.setdefault((id(t), cu), i)
                if id(n) in self.step and t.requires_grad:  # constants get no gradient
                    steps.append(self.step[id(n)])
        root_ids = {id(t) for t in outputs}
        kept_ids = {id(n) for n in order}
        for n in order:
            t, pu = out_of[id(n)], unit[id(n)]
            box = boxes.get(pu)
            if box is not None:
                leaves_box = (id(t) in root_ids or id(t) in self.tensors
                              or any(id(c) not in kept_ids for c in consumers.get(id(t), ())))
                if not leaves_box:
                    continue
                box.outputs.setdefault(id(t), t)
            self.tensors[id(t)] = t
            self.kind[id(t)] = "output" if id(t) in root_ids else "tensor"
            self.placed[id(t)] = [self.unit_cluster[pu]]
            self.edges.setdefault((pu, id(t)), [])
        for t in outputs:  # an output that is a leaf has no op; draw it alone
            if t._node is None:
                self.tensors[id(t)], self.kind[id(t)], self.placed[id(t)] = t, "output", []

    def _hidden_in(self, box: _Box, t: Tensor) -> bool:
        if t.requires_grad:
            return self.names.owns(box.module, t)
        return t._data.size <= 1

    def _leaf_kind(self, t: Tensor) -> str:
        if not t.requires_grad:
            return "const"
        return "param" if self.names.param(t) else "leaf"

    # ------------------------------------------------------------------ labels

    def _tensor_label(self, t: Tensor) -> str:
        lines = []
        name = self.names.param(t)
        if name:
            lines.append(name)
        lines.append(shape_text(t.shape, t.dtype))
        show = (self.limit is None or t._data.size <= self.limit) and getattr(t, "values_kept", True)
        if show:
            lines += prefixed("data", values_grid(t._data))
        grad, gnorm = t._grad, None
        node = t._node
        if grad is None and node is not None:
            if id(node) in self.upstream:
                s = self.upstream[id(node)]
                gnorm, grad = s.grad_norm, s.grad_values
            else:  # what backward passed through this tensor (see keep_grads)
                grad, gnorm = getattr(node, "grad_out", None), getattr(node, "grad_norm", None)
        if grad is not None and gnorm is None:
            gnorm = norm(grad)
        if gnorm is not None:
            if show and grad is not None and np.size(grad) == 1:
                lines += prefixed("grad", values_grid(grad))  # a scalar's norm is its value
            else:
                lines.append(f"|grad| = {gnorm:.4g}")
                if show and grad is not None:
                    lines += prefixed("grad", values_grid(grad))
        return "\\n".join(escape(s) for s in lines)

    def _box_label(self, box: _Box) -> str:
        def shapes(ts: dict) -> str:
            # Integer and boolean inputs (token ids, masks) say so; floats are the usual case.
            return ", ".join(
                dims(t.shape) + ("" if t.dtype.kind == "f" else f" {t.dtype}") for t in ts.values()
            ) or "-"

        lines = [self.names.describe(box.module), f"in: {shapes(box.inputs)}"]
        lines += [f"out: {shapes(box.outputs)}", f"{box.ops} op" + ("s" if box.ops != 1 else "")]
        return "\\n".join(escape(s) for s in lines)

    # ------------------------------------------------------------------ DOT

    def _emit(self, ops: list[tuple[str, Function]], rankdir: str) -> graphviz.Digraph:
        from .drawing import Drawing  # graphviz is imported only once something is drawn

        tensors, kind, placed, unit_cluster = self.tensors, self.kind, self.placed, self.unit_cluster
        # Statements are written as text: graphviz's per-attribute quoting would be most of
        # the time on a graph of thousands of nodes. Our ids need no quoting; labels are
        # escaped by escape.
        body: dict[tuple | None, list[str]] = {None: []}
        for k in self.clusters:
            body[k] = []

        def into(cluster: tuple | None) -> list[str]:
            # A common prefix shorter than the drawn clusters (module=...) is the top level.
            return body.get(cluster, body[None])

        self.ends: dict[str, tuple[str, dict[int, str]]] = {}  # expanded op -> (last step, input -> step)
        for uid, n in ops:
            label = escape(n.name)
            if id(n) in self.step:
                label += f"\\nbackward step {self.step[id(n)]}"
            pipeline = pipeline_of(type(n)) if self.expand_fused else None  # see pipelines.py
            if pipeline is not None:
                text, self.ends[uid] = expanded_kernel(uid, n, pipeline(n), label, self.limit)
                into(unit_cluster[uid]).append(text)
                continue
            into(unit_cluster[uid]).append(f'\t{uid} [label="{label}" {STYLE["op"]}]\n')
        for box in self.boxes.values():
            into(box.cluster).append(f'\t{box.uid} [label="{self._box_label(box)}" {STYLE["box"]}]\n')
        # Short, stable names for tensors (not their ids), so the same graph gives the same DOT.
        tname = {tid: f"t{i}" for i, tid in enumerate(tensors)}
        for tid, t in tensors.items():
            line = f'\t{tname[tid]} [label="{self._tensor_label(t)}" {STYLE[kind[tid]]}]\n'
            into(common_prefix(placed[tid])).append(line)

        cid = {k: i for i, k in enumerate(self.clusters)}
        children: dict[tuple | None, list[tuple]] = {}
        for k in self.clusters:
            parent = k[:-1] if k[:-1] in self.clusters else None
            children.setdefault(parent, []).append(k)

        def nest(k: tuple | None, indent: str) -> list[str]:
            lines = [indent + line for line in body[k]]
            for child in children.get(k, ()):
                label = escape(self.names.describe(self.clusters[child][-1]))
                lines.append(f"{indent}\tsubgraph cluster_{cid[child]} {{\n")
                lines.append(f'{indent}\t\tgraph [label="{label}" {CLUSTER}]\n')
                lines += nest(child, indent + "\t")
                lines.append(f"{indent}\t}}\n")
            return lines

        lines = nest(None, "")
        for (a, b), steps in self.edges.items():
            if b in self.ends:  # into an expanded kernel: to the step that reads this input
                b = self.ends[b][1].get(self.edge_input.get((a, b), -1), b + "_s0")
            if a in self.ends:  # out of an expanded kernel: from its last step
                a = self.ends[a][0]
            a, b = tname.get(a, a), tname.get(b, b)  # one end is a tensor (int id), one a unit
            label = steps_text(steps)
            lines.append(f'\t{a} -> {b} [label="{label}"]\n' if label else f"\t{a} -> {b}\n")
        return Drawing(
            name="minigrad",
            graph_attr=dict(rankdir=rankdir, nodesep="0.25", ranksep="0.35", fontname="Helvetica"),
            node_attr=dict(fontname="Helvetica", fontsize="10", height="0.3"),
            edge_attr=dict(fontname="Helvetica", fontsize="9", arrowsize="0.6"),
            body=lines,
        )
