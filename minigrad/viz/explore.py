"""`explore`: the graph of a loss as one interactive HTML page, with a backward stepper.

The page is self-contained (its script and style inline, nothing fetched), so it works offline,
from a file and inside Jupyter. Modules are folded into one box each (click to open); clicking
or hovering a node shows its shape, value and gradient; next / previous / play walk the steps of
`trace_backward`, the engine's own order, showing the gradient each op receives and what it
sends to each input (summed where a tensor is used twice). The layout is computed by the page
itself (ranks by longest path, then ordering by neighbours), so no Graphviz is needed. A fused
kernel (attention) lists the steps it fuses, with their values for small inputs, on its panel.

Edges are routed through the gaps between nodes (an edge that spans layers passes each layer in a
slot of its own), so no edge crosses a node it does not join. The stepper walks the steps grouped
by module (`group_steps`): a run of steps inside one module is one step at the outer level, and
"step in" follows its own steps. Step numbers on the page count from 1 ("step 1 of 18").
"""

from __future__ import annotations

import html
import json
import math
import os
from typing import Any, Mapping

import numpy as np

from ..autograd import toposort
from ..tensor import Tensor
from ._names import Names, norm, shape_text
from .explore_page import PAGE
from .explore_script import SCRIPT
from .pipelines import pipeline_of
from .trace import BackwardTrace, trace_backward

ON_NODE = 16  # tensors of at most this many elements print their values on the node itself


def explore(
    output: Tensor,
    model: Any = None,
    params: Mapping[str, Tensor] | None = None,
    *,
    depth: int | None = 1,
    gradient: Any = None,
    retain_graph: bool = False,
    max_values: int = 64,
    trace: BackwardTrace | None = None,
) -> ExplorePage:
    """Run backward on `output` (through `trace_backward`) and return the interactive page.

    Args:
        output: the tensor to differentiate, usually a loss; its graph must not have been freed
            by an earlier backward (explore runs the backward itself, so call it instead of
            `loss.backward()`).
        model: names modules and parameters (see `draw_graph`).
        params: parameter name -> tensor.
        depth: modules more than `depth` levels below the outermost are folded at first (0: the
            whole model as one box; None: every op shown). Click a box to open it.
        gradient: d(loss)/d(output) when output is not a scalar.
        retain_graph: keep saved arrays for another backward.
        max_values: tensors and gradients of at most this many elements are shown in full;
            larger ones as their shape, min, max and mean.
        trace: a `BackwardTrace` already taken of `output` (then no backward is run).

    Returns:
        An `ExplorePage`: `.save("graph.html")` writes it, Jupyter shows it inline, `.html` is
        the page's text.

    Example:
        >>> page = explore(model.loss(x, y), model=model)
        >>> page.save("loss.html")      # open it in a browser: no server needed
    """
    if not isinstance(output, Tensor):
        raise TypeError(f"explore: output must be a Tensor, not {type(output).__name__}")
    if depth is not None and (not isinstance(depth, int) or depth < 0):
        raise ValueError(f"explore: depth must be None or an integer >= 0, not {depth!r}")
    if trace is None:
        try:
            trace = trace_backward(output, gradient, retain_graph, model=model, params=params,
                                   max_values=max_values)
        except RuntimeError as e:
            if "already freed" not in str(e):
                raise
            raise RuntimeError(
                f"explore: the graph of this output was freed by an earlier backward; explore runs "
                f"the backward itself, so pass it a fresh output instead of calling backward first ({e})"
            ) from None
    elif trace.output is not output:
        raise ValueError("explore: trace= must be the trace of this output (trace_backward(output))")
    return ExplorePage(_Collector(Names(model, params), max_values).collect(output, trace, depth), trace)


class ExplorePage:
    """The page of `explore`: `.html` (the text), `.data` (what the page shows), `.trace`.

    `node_id(x)` gives the id of the element drawn for an op node or a tensor (tests and scripts
    find it in the page with `document.getElementById`).
    """

    def __init__(self, data: dict, trace: BackwardTrace):
        self.data, self.trace = data, trace
        self._ids: dict[Any, str] = data.pop("_ids")
        self._keep = data.pop("_keep")  # the objects whose ids `_ids` holds

    @property
    def html(self) -> str:
        title = f"minigrad: {self.data['title']}"
        # JSON inside <script> must not close the tag: escape <, > and & as JSON escapes.
        blob = json.dumps(self.data, separators=(",", ":"), allow_nan=False)
        blob = blob.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        page = PAGE.replace("__SCRIPT__", SCRIPT).replace("__TITLE__", html.escape(title))
        return page.replace("__DATA__", blob)  # last: nothing is replaced inside the data

    def node_id(self, x: Any) -> str:
        """The page id of an op node (a `Function`, e.g. `trace[0].node`) or of a tensor."""
        key = _tensor_key(x) if isinstance(x, Tensor) else id(x)
        if key not in self._ids:
            raise KeyError(f"explore: {x!r} is not in this page's graph")
        return self._ids[key]

    def save(self, path: str | os.PathLike) -> str:
        """Write the page to `path` (written whole, then renamed); returns the path."""
        path = os.fspath(path)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.html)
        os.replace(tmp, path)
        return path

    def _repr_html_(self) -> str:
        # In a frame of its own, so that two pages in one notebook do not share element ids.
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width: 100%; '
                'height: 640px; border: 1px solid #ccc"></iframe>')

    def __repr__(self) -> str:
        d = self.data
        return (f"<ExplorePage: {len(d['ops'])} ops, {len(d['tensors'])} tensors, "
                f"{len(d['modules'])} modules, {len(d['steps'])} backward steps>")


class _Collector:
    """Turns a graph and its trace into the page's JSON: ops, tensors, edges, modules, steps.

    Ops are keyed by id(node); tensors by `_tensor_key` (the node that made an intermediate, so
    that a tensor and the record backward leaves of it are one; a leaf itself otherwise).
    """

    def __init__(self, names: Names, max_values: int):
        self.names, self.limit = names, max_values
        self.ids: dict[Any, str] = {}  # key -> the page's element id
        self.keep: list[Any] = []  # what the keys are ids of, alive as long as the page
        self.modules: dict[int, dict] = {}

    def collect(self, output: Tensor, trace: BackwardTrace, depth: int | None) -> dict:
        order = list(reversed(toposort(output._node))) if output._node is not None else []
        step_of = {id(s.node): s.step for s in trace.steps}
        ops, edges = [], []
        tensors: dict[Any, Any] = {_tensor_key(output): output}
        users: dict[Any, list[int]] = {}
        for i, n in enumerate(order):
            self.names.see(n.scope)
            self.ids[id(n)] = f"op{i}"
            self.keep.append(n)
            ops.append({"id": f"op{i}", "kind": "op", "name": n.name, "order": i, "step": step_of.get(id(n)),
                        "mods": self.chain(n.scope, i), "module": self.names.describe_scope(n.scope),
                        "inside": self.inside(n)})
            for t in n.inputs:
                k = _tensor_key(t)
                tensors.setdefault(k, t)
                users.setdefault(k, []).append(i)
                edges.append((k, id(n)))
        for k, t in tensors.items():
            self.ids[k] = f"t{len(self.ids) - len(ops)}"
            if t._node is not None:
                edges.append((id(t._node), k))
        self.keep += tensors.values()
        received, parts = self.received(trace, output)
        modules = []
        for m in self.modules.values():
            d = m.pop("depth")
            modules.append(dict(m, open=depth is None or d < depth))
        data = {
            "title": f"{len(order)} ops, {len(trace.steps)} backward steps",
            "on_node": ON_NODE,
            "ops": ops,
            "tensors": [self.tensor(k, t, t is output, ops, users.get(k, []), received.get(k, []))
                        for k, t in tensors.items()],
            "edges": [[self.ids[a], self.ids[b]] for a, b in edges],
            "modules": modules,
            "steps": [self.step(s, received, parts) for s in trace.steps],
            "groups": group_steps([ops[int(self.ids[id(s.node)][2:])]["mods"] for s in trace.steps]),
            "_ids": self.ids,
            "_keep": self.keep,
        }
        return data

    def inside(self, node: Any) -> list[dict] | None:
        """The steps of a fused kernel (see `register_pipeline`), with the values of their
        results where the kernel's drawing knows them (the attention weights of a small input)."""
        pipeline = pipeline_of(type(node))
        if pipeline is None:
            return None
        return [{"op": op, "result": result, "shape": list(shape),
                 "values": self.values(more[0]) if more and more[0] is not None else None}
                for op, _, result, shape, *more in pipeline(node)]

    def chain(self, scope: tuple, i: int) -> list[str]:
        """The page ids of the modules of op i's scope, outermost first (registering new ones)."""
        ids = []
        for d, m in enumerate(scope):
            rec = self.modules.get(id(m))
            if rec is None:
                self.keep.append(m)
                # A folded module is laid out where its first op is.
                rec = self.modules[id(m)] = {"id": f"m{len(self.modules)}", "kind": "module", "order": i,
                                             "label": self.names.describe(m), "depth": d,
                                             "parent": ids[-1] if ids else None, "ops": 0}
            rec["ops"] += 1
            ids.append(rec["id"])
        return ids

    def tensor(self, k: Any, t: Any, is_output: bool, ops: list, used: list[int], received: list) -> dict:
        name = self.names.param(t)
        if is_output:
            kind = "output"
        elif t._node is not None:
            kind = "tensor"
        elif not t.requires_grad:
            kind = "const"
        else:
            kind = "param" if name and name != getattr(t, "name", None) else "leaf"
        made_by = int(self.ids[id(t._node)][2:]) if t._node is not None else None
        # A tensor sits in the modules its maker and all its users share; inputs and the output
        # stay outside, so that folding a module never hides them.
        chains = [ops[i]["mods"] for i in ([made_by] if made_by is not None else []) + used]
        inside = kind in ("param", "tensor") or (kind == "const" and t._data.size <= 1)
        mods = _common(chains) if chains and inside else []
        order = made_by + 0.5 if made_by is not None else (min(used) - 0.5 if used else 0)
        kept = getattr(t, "values_kept", True)
        return {"id": self.ids[k], "kind": kind, "label": name or "", "mods": mods, "order": order,
                "shape_text": shape_text(tuple(t.shape), t.dtype),
                "data": self.values(t._data) if kept else None, "contribs": received}

    def received(self, trace: BackwardTrace, output: Tensor) -> tuple[dict, dict]:
        """Per tensor key, the gradients it got in step order, each with the sum so far (the
        last sum is its whole gradient: its maker's upstream gradient, or a leaf's .grad); and
        per (step, position in its `sent`), which of its tensor's gradients that one was."""
        got: dict[Any, list] = {}
        if trace.steps:
            s0 = trace.steps[0]
            got[_tensor_key(output)] = [{"step": 0, "from": None, "total": self.grad(s0.grad_values, s0)}]
        sums: dict[Any, Any] = {}
        parts: dict[tuple[int, int], int] = {}
        for s in trace.steps:
            for j, g in enumerate(s.sent):
                k = _tensor_key(g.tensor)
                entries = got.setdefault(k, [])
                known = g.values is not None and (not entries or sums[k] is not None)
                sums[k] = (g.values if not entries else sums[k] + g.values) if known else None
                entries.append({"step": s.step, "from": s.step, "total": sums[k]})
                parts[(s.step, j)] = len(entries)
        maker = {_node_key(s.node): s for s in trace.steps}
        leaf = {_tensor_key(g.tensor): g.tensor for s in trace.steps for g in s.sent
                if g.tensor._node is None}
        for k, entries in got.items():
            for e in entries[:-1]:
                e["total"] = self.values(e["total"], with_norm=True) if e["total"] is not None else None
            last = entries[-1]
            if k in maker:
                last["total"] = self.grad(maker[k].grad_values, maker[k])
            elif last["total"] is not None:
                last["total"] = self.values(last["total"], with_norm=True)
            elif k in leaf and leaf[k]._grad is not None:
                last["total"] = self.values(leaf[k]._grad, with_norm=True)
        return got, parts

    def step(self, s: Any, received: dict, parts: dict) -> dict:
        sent = []
        for j, g in enumerate(s.sent):
            entries, part = received[_tensor_key(g.tensor)], parts[(s.step, j)]
            grad = (self.values(g.values, with_norm=True) if g.values is not None
                    else _stats(g.input_shape, g.stats, g.norm))
            to = g.to  # the page counts steps from 1: an intermediate is named by its maker's step
            if not self.names.param(g.tensor) and g.to_step is not None:
                to = f"step {g.to_step + 1} ({g.tensor._node.name})"
            sent.append({"index": g.index, "to": self.ids[_tensor_key(g.tensor)], "to_label": to,
                         "shape": list(g.shape), "input_shape": list(g.input_shape),
                         "summed_axes": list(g.summed_axes), "grad": grad, "part": part,
                         "parts": len(entries), "total": entries[part - 1]["total"]})
        return {"step": s.step, "op": self.ids[id(s.node)], "name": s.op, "module": s.module,
                "out": self.ids[_node_key(s.node)], "grad": self.grad(s.grad_values, s), "sent": sent}

    def grad(self, values: Any, s: Any) -> dict:
        """The upstream gradient of step s: its values, or its statistics when large."""
        if values is not None:
            return self.values(values, with_norm=True)
        return _stats(s.grad_shape, s.grad_stats, s.grad_norm)

    def values(self, a: Any, with_norm: bool = False) -> dict | None:
        """An array for the page: shape and values (rounded), or shape and min, max and mean."""
        a = np.asarray(a)
        if a.dtype.kind not in "fiub":
            return None
        out: dict[str, Any] = {"shape": list(a.shape)}
        if a.size <= self.limit:
            out["v"] = [_num(x) for x in a.ravel().tolist()]
        else:
            f = a.astype(np.float64)
            out.update(min=_num(f.min()), max=_num(f.max()), mean=_num(f.mean()))
        if with_norm:
            out["norm"] = _num(norm(a))
        return out


def group_steps(chains: list[list[Any]]) -> list:
    """The backward steps grouped by module, as the page's stepper walks them.

    `chains[k]` is the chain of modules (outermost first) step k ran in. At depth d the steps
    are cut into maximal runs of consecutive steps whose chains share their module at depth d;
    a run of two or more steps is a group `{"module": chains[k][d], "first": k, "last": j,
    "items": ...}` whose items are its steps grouped the same way at depth d + 1 (when those are
    one group, the run is that group, named by the module one level in); a step alone
    in its run, or outside any module at depth d, is its index k. The items of a level, read in
    order with every group replaced by its items, are thus the steps in backward order, each
    once. The model itself is not a step: while the outer level holds only one group, that
    group is opened in place (its items join the outer level where it stood).

    Returns:
        The items of the outer level.
    """
    def level(first: int, last: int, d: int) -> list:
        items: list = []
        k = first
        while k <= last:
            j = k
            if len(chains[k]) > d:
                while j < last and len(chains[j + 1]) > d and chains[j + 1][d] == chains[k][d]:
                    j += 1
            inner = level(k, j, d + 1) if j > k else []
            if len(inner) == 1:  # one module inside holds them all: the group is the inner one
                items.append(inner[0])
            else:
                items.append({"module": chains[k][d], "first": k, "last": j, "items": inner} if j > k else k)
            k = j + 1
        return items

    outer = level(0, len(chains) - 1, 0)
    while sum(isinstance(x, dict) for x in outer) == 1:
        outer = [y for x in outer for y in (x["items"] if isinstance(x, dict) else [x])]
    return outer


def _tensor_key(t: Any) -> tuple:
    return ("made by", id(t._node)) if t._node is not None else ("leaf", id(t))


def _node_key(node: Any) -> tuple:
    return ("made by", id(node))


def _stats(shape: tuple, stats: Any, n: float) -> dict:
    out: dict[str, Any] = {"shape": list(shape), "norm": _num(n)}
    lo, hi, mean = stats if stats is not None else ("?", "?", "?")
    out.update(min=_num(lo), max=_num(hi), mean=_num(mean))
    return out


def _num(x: Any) -> Any:
    """A number rounded for display (4 significant digits); NaN and infinities as text."""
    if isinstance(x, str):
        return x
    x = float(x)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return float(f"{x:.4g}")


def _common(chains: list[list[str]]) -> list[str]:
    """The longest module chain that starts every chain in `chains`."""
    first = chains[0]
    n = len(first)
    for c in chains[1:]:
        n = min(n, len(c))
        while n and c[:n] != first[:n]:
            n -= 1
    return first[:n]
