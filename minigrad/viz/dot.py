"""DOT text for `draw_graph`: node styles, escaping, and a fused kernel drawn as its steps.

Statements are written as text, not through graphviz's per-attribute quoting, which would be
most of the time on a graph of thousands of nodes.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from ._names import shape_text, values_grid

# Node styles: parameters stand out, constants recede, the output is where the eye starts.
STYLE = {
    "op": 'shape=box style=filled fillcolor="#dbe5f1"',
    "box": 'shape=box3d style=filled fillcolor="#e2efda"',
    "param": 'shape=box style="rounded,filled" fillcolor="#fff2cc"',
    "leaf": 'shape=ellipse style=filled fillcolor="#d9ead3"',
    "const": "shape=ellipse style=dashed color=gray50 fontcolor=gray30",
    "tensor": "shape=ellipse",
    "entering": "shape=ellipse style=dashed",
    "output": 'shape=ellipse style=filled fillcolor="#f4cccc"',
    "inner_op": 'shape=box style="dashed,filled" fillcolor="#eef3f9"',
    "inner": "shape=ellipse style=dashed",
}
CLUSTER = "style=rounded color=gray55 fontcolor=gray25 labeljust=l fontsize=11"


def expanded_kernel(uid: str, node: Function, steps: list, label: str,
                    limit: int | None = 0) -> tuple[str, tuple[str, dict]]:
    """DOT for a fused kernel drawn as the steps it fuses, inside a box named after it.

    `steps` comes from the kernel's registered pipeline (`register_pipeline`): (op, inputs,
    result name, result shape) each, where an input is the index of one of the node's
    inputs or the name of an earlier step's result, and optionally a fifth item, the result's
    values (an array, or None), printed on its oval when it has at most `limit` elements
    (None: any size), as `draw_graph(show_values=...)` prints a tensor's. The last step's
    result is the node's own output. Returns the DOT text, and where edges attach: (the last
    step, input index -> the first step reading it).
    """
    dtype = node.inputs[0].dtype if node.inputs else None
    made: dict[str, str] = {}  # result name -> its oval's id
    reads: dict[int, str] = {}  # input index -> the first step that reads it
    out = [f"\tsubgraph cluster_{uid} {{\n",
           f'\t\tgraph [label="{label} (fused kernel, expanded)" {CLUSTER} style="rounded,dashed"]\n']
    last = uid
    for i, (op, inputs, result, shape, *values) in enumerate(steps):
        sid = f"{uid}_s{i}"
        out.append(f'\t\t{sid} [label="{escape(op)}" {STYLE["inner_op"]}]\n')
        for x in inputs:
            if isinstance(x, str):
                out.append(f"\t\t{made[x]} -> {sid}\n")
            else:
                reads.setdefault(x, sid)
        if i < len(steps) - 1:
            rid = made[result] = f"{uid}_r{i}"
            text = escape(result) + "\\n" + escape(shape_text(tuple(shape), dtype))
            if values and values[0] is not None and (limit is None or np.size(values[0]) <= limit):
                text += "".join("\\n" + escape(line) for line in prefixed("data", values_grid(values[0])))
            out.append(f'\t\t{rid} [label="{text}" {STYLE["inner"]}]\n')
            out.append(f"\t\t{sid} -> {rid}\n")
        last = sid
    out.append("\t}\n")
    return "".join(out), (last, reads)


def prefixed(word: str, lines: list[str]) -> list[str]:
    """`data [1, 2]` then the grid's further rows, each on its own line."""
    return [f"{word} {lines[0]}"] + lines[1:]


def common_prefix(keys: list) -> tuple | None:
    """The innermost cluster that holds all of `keys` (None = the top level)."""
    if not keys or any(k is None for k in keys):
        return None
    first = keys[0]
    n = len(first)
    for k in keys[1:]:
        n = min(n, len(k))
        while n and k[:n] != first[:n]:
            n -= 1
    return first[:n] if n else None


def steps_text(steps: list[int]) -> str:
    """The backward steps written on an edge: the first three, then `...`."""
    if not steps:
        return ""
    steps = sorted(set(steps))
    return ", ".join(map(str, steps[:3])) + (", ..." if len(steps) > 3 else "")


def escape(s: str) -> str:
    """Text safe inside a quoted DOT string: a backslash or quote in a name stays literal."""
    return s.replace("\\", "\\\\").replace('"', '\\"')
