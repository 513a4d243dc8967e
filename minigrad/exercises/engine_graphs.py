"""The graphs of exercise 3 (`backprop_engine`), built on any node class (the student's, or the
grader's own `Plain`), with the reference engine's order and gradients and the depth a walk
nests to (Depth). task_backprop_engine.py runs the checks on them."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

CHAIN = 10_000
DEEPEST = 500  # Python frames a walk may nest (an iterative one needs a handful; a recursive one CHAIN)
DEPTH_CHAIN = 4 * DEEPEST  # the chain the nesting is measured on (the profile function costs per call)


# ----------------------------------------------------------------------------- the reference


def reference_order(root: Any) -> list:
    """Iterative depth-first post-order, reversed (as minigrad's own `toposort`): root first."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack += [(p, False) for p in node.parents if id(p) not in seen]
    return order[::-1]


def reference_backward(root: Any) -> dict[int, np.ndarray]:
    """id(node) -> d root / d node for every node reachable from root (one call, no state)."""
    grads = {id(root): np.ones_like(root.data)}
    for node in reference_order(root):
        if node.parents:
            for parent, gp in zip(node.parents, node.local_backward(grads[id(node)])):
                grads[id(parent)] = grads.get(id(parent), 0) + gp
    return grads


class Plain:
    """The grader's own node (the stub's Node, as given): the graphs the structure and the
    reference gradients are read from, outside the student's code."""

    def __init__(self, data, parents=(), local_backward=None, op=""):
        self.data = np.asarray(data, dtype=np.float64)
        self.parents = tuple(parents)
        self.local_backward = local_backward
        self.op = op
        self.grad = None


# ----------------------------------------------------------------------------- the graphs


class Ops:
    """The stub's ops (and a constant scale) on the student's Node class, each node named."""

    def __init__(self, node_class: type):
        self.Node, self.names = node_class, {}

    def _new(self, name, data, parents=(), local_backward=None, op=""):
        node = self.Node(data, parents, local_backward, op)
        self.names[name] = node
        return node

    def leaf(self, name, data):
        return self._new(name, np.asarray(data, dtype=np.float64))

    def add(self, name, a, b):
        return self._new(name, a.data + b.data, (a, b), lambda g: (g, g), "add")

    def mul(self, name, a, b):
        return self._new(name, a.data * b.data, (a, b), lambda g: (g * b.data, g * a.data), "mul")

    def tanh(self, name, a):
        z = np.tanh(a.data)
        return self._new(name, z, (a,), lambda g: (g * (1 - z**2),), "tanh")

    def scale(self, name, a, k):
        return self._new(name, a.data * k, (a,), lambda g: (g * k,), "scale")

    def total(self, name, a):
        return self._new(name, a.data.sum(), (a,),
                         lambda g: (np.broadcast_to(g, a.data.shape).copy(),), "sum")


def _values(seed: int, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 1, s) for s in shapes]


def chain(o: Ops):
    """L = sum(tanh(tanh(x * w) + b) * v): one path, four leaves."""
    x, w, b, v = (o.leaf(n, d) for n, d in zip("xwbv", _values(1, (3,), (3,), (3,), (3,))))
    h = o.tanh("h2", o.add("s", o.tanh("h1", o.mul("xw", x, w)), b))
    return o.total("L", o.mul("hv", h, v))


def leaf_twice(o: Ops):
    """L = sum((x * x + x) * w): x used three times (twice by one node, first by the add s)."""
    x, w = o.leaf("x", _values(2, (4,))[0]), o.leaf("w", _values(3, (4,))[0])
    return o.total("L", o.mul("sw", o.add("s", o.mul("xx", x, x), x), w))


def shared_node(o: Ops):
    """h = tanh(x), used by three nodes: L = sum(h * w + tanh(h) + h)."""
    x, w = (o.leaf(n, d) for n, d in zip("xw", _values(4, (2, 3), (2, 3))))
    h = o.tanh("h", x)
    return o.total("L", o.add("s2", o.add("s1", o.mul("hw", h, w), o.tanh("t", h)), h))


def unused_branch(o: Ops):
    """L = sum(tanh(x) * w); d = x * c is built from x too, but L does not depend on it."""
    x, w, c = (o.leaf(n, d) for n, d in zip("xwc", _values(5, (3,), (3,), (3,))))
    o.tanh("d2", o.mul("d", x, c))
    return o.total("L", o.mul("hw", o.tanh("h", x), w))


def depth_trap(first_short: bool):
    """L = sum(h + tanh(h)), h = x * w: a depth-first pre-order reaches h before tanh(h)."""
    def build(o: Ops):
        x, w = (o.leaf(n, d) for n, d in zip("xw", _values(6, (3,), (3,))))
        h = o.mul("h", x, w)
        t = o.tanh("t", h)
        return o.total("L", o.add("s", h, t) if first_short else o.add("s", t, h))
    return build


def long_chain(o: Ops, length: int = CHAIN):
    """`length` (10,000) scale nodes in a row (by 2 and by 1/2 in turn: dL/dx is exactly ones)."""
    y = o.leaf("x", np.arange(3.0))
    for i in range(length):
        y = o.scale(f"k{i}", y, 2.0 if i % 2 == 0 else 0.5)
    return o.total("L", y)


GRAPHS: dict[str, Callable] = {"a chain of four leaves": chain, "a leaf used three times": leaf_twice,
                               "a node used by three nodes": shared_node}


@dataclass
class Structure:
    """A graph as the grader built it (from Plain nodes, outside the student's code): the nodes
    by name, root's name, the nodes reachable from root (reference order), each one's parents
    and consumers (by name), and the reference gradients d root / d node (by name)."""

    root: str
    parents: dict[str, list[str]]
    reachable: list[str]
    consumers: dict[str, list[str]]
    want: dict[str, np.ndarray]


def structure(graph: Callable) -> Structure:
    o = Ops(Plain)
    root = graph(o)
    name = {id(n): k for k, n in o.names.items()}
    parents = {k: [name[id(p)] for p in n.parents] for k, n in o.names.items()}
    reachable = [name[id(n)] for n in reference_order(root)]
    consumers = {k: [c for c in reachable if k in parents[c]] for k in reachable}
    ref = reference_backward(root)
    want = {k: ref[id(n)] for k, n in o.names.items() if id(n) in ref}
    return Structure(name[id(root)], parents, reachable, consumers, want)


class Depth:
    """The deepest nesting of Python calls while it is entered, counted from where it was
    entered (a profile function sees every call and return; the recursion limit, which a
    submission can raise, plays no part). The profile function in place before is restored."""

    def __init__(self):
        self.now = self.deepest = 0

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.now += 1
            self.deepest = max(self.deepest, self.now)
        elif event == "return":
            self.now -= 1

    def __enter__(self) -> Depth:
        self.before = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.setprofile(self.before)
