"""Exercise 3 · backprop_engine: topological order and backward over a graph of given nodes.

The grader builds its graphs from the student's `Node` class with its own ops, whose local
backwards it watches: which node ran when, the gradient each received and what each sent to
its parents. The mistakes are named from that record and the reference engine's numbers:
a fan-out gradient equal to part of what its consumers sent (`fanout_overwritten`), a local
backward run before all of its consumers had run (`visited_before_consumers`), leaves not
summed over two calls (`leaf_grads_not_accumulated`), a RecursionError (`recursion_too_deep`).
"""

from __future__ import annotations

import sys
import time
from itertools import combinations
from typing import Any, Callable

import numpy as np

from minigrad import unbroadcast

from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail

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


# ----------------------------------------------------------------------------- the record


class Record:
    """Wraps each non-leaf's local backward: the order they ran, what each received and sent."""

    def __init__(self, root: Any, names: dict[str, Any]):
        self.root, self.names = root, {id(n): k for k, n in names.items()}
        self.reachable = reference_order(root)
        self.consumers = {id(n): [c for c in self.reachable if any(p is n for p in c.parents)]
                          for n in self.reachable}
        # ran in order; early: (a node, a consumer not run yet); by id: copies of what was sent, ran with
        self.ran, self.early, self.sent, self.received = [], None, {}, {}
        for node in names.values():
            if node.parents:
                node.local_backward = self._watch(node, node.local_backward)

    def _watch(self, node, inner):
        def local_backward(g):
            done = {id(n) for n in self.ran}
            waiting = [c for c in self.consumers.get(id(node), []) if id(c) not in done]
            if waiting and self.early is None:
                self.early = (node, waiting[0])
            self.ran.append(node)
            self.received[id(node)] = np.array(g, dtype=np.float64)
            grads = inner(g)
            for p, gp in zip(node.parents, grads):
                self.sent.setdefault(id(p), []).append(np.array(gp, dtype=np.float64))
            return grads
        return local_backward

    def name(self, node) -> str:
        return self.names.get(id(node), repr(node))


def _partial_sum(got, sent: list[np.ndarray]) -> bool:
    """got equals the sum of some, but not all, of the gradients sent to the node."""
    return any(close(got, sum(part)) for r in range(1, len(sent))
               for part in combinations(sent, r)) if got is not None else False


def _fmt(a) -> str:
    return np.array2string(np.asarray(a), precision=4, suppress_small=True, max_line_width=90)


# ----------------------------------------------------------------------------- --train


def engine_from(sub: Any) -> Callable:
    """A replacement for minigrad's `run_backward`: the graph behind the loss, rebuilt as the
    student's Nodes (one per Function, whose local backward is the op's own, gradients summed
    back to each input's shape), handed to the student's `backward`; the leaf tensors' .grad
    then accumulate what their Nodes received."""
    from minigrad import autograd

    def node(data, parents=(), local_backward=None, op=""):
        n = sub.Node(np.zeros(()), parents, local_backward, op)
        n.data = data  # the op's own array (float32 in the GPT), not a float64 copy
        return n

    def run_backward(root: Any, grad: np.ndarray, retain_graph: bool = False) -> None:
        if root._node is None:
            raise Fail("--train: backward on a leaf")
        nodes: dict[int, Any] = {}
        leaves: dict[int, tuple] = {}
        for f in reversed(autograd.toposort(root._node)):  # inputs first: parents exist
            picks = [i for i, need in enumerate(f.needs_input_grad) if need]
            parents = []
            for i in picks:
                t, made_by = f.inputs[i], f.parents[i]
                if made_by is None:
                    leaves.setdefault(id(t), (t, node(t.data)))
                    parents.append(leaves[id(t)][1])
                else:
                    nodes[id(made_by)].data = t.data
                    parents.append(nodes[id(made_by)])

            def local_backward(g, f=f, picks=picks):
                grads = type(f).backward(f, g)
                grads = grads if type(grads) is tuple else (grads,)
                return tuple(np.zeros_like(f.inputs[i].data) if grads[i] is None
                             else unbroadcast(np.asarray(grads[i]), f.inputs[i].data.shape)
                             for i in picks)

            nodes[id(f)] = node(None, parents, local_backward, f.name)
        top = nodes[id(root._node)]
        top.data = root.data
        sub.backward(top)
        for t, n in leaves.values():
            if n.grad is not None:
                t.grad = n.grad if t.grad is None else t.grad + n.grad

    return run_backward


def train(sub: Any) -> Check:
    """The tiny GPT trained with the student's engine in place of minigrad's; the loss curves
    must agree with minigrad's own run (same seed, same batches)."""
    from minigrad import autograd

    from . import training

    def run() -> str:
        t0 = time.perf_counter()
        ref = training.losses({})
        original = autograd.run_backward
        autograd.run_backward = engine_from(sub)
        try:
            mine = training.losses({})
        finally:
            autograd.run_backward = original
        worst = float(np.nan_to_num(np.abs(np.array(ref) - np.array(mine)), nan=np.inf).max())
        rows = [f"  step   reference   yours     (tiny GPT, {training.STEPS} steps, "
                f"{time.perf_counter() - t0:.0f} s)"]
        rows += [f"  {i:4d}   {ref[i]:.5f}     {mine[i]:.5f}" for i in range(0, len(ref), training.EVERY)]
        curves = "\n".join(rows)
        if not worst <= training.TOLERANCE:
            raise Fail(f"the loss curves part (largest difference {worst:.3g})", detail=curves)
        return f"the loss curves agree (largest difference {worst:.2g})\n{curves}"

    return (f"--train: the tiny GPT trains with your engine as with minigrad's ({training.STEPS} steps)", run)


# ----------------------------------------------------------------------------- the checks


def checks(sub: Any) -> list[Check]:
    def build(graph):
        o = Ops(sub.Node)
        return graph(o), o.names

    def run(graph, calls=1):
        """The student's graph after `calls` backwards, its record, and the reference gradients
        (from an identical graph) keyed by the student's nodes."""
        root, names = build(graph)
        ref_root, ref_names = build(graph)
        ref = reference_backward(ref_root)
        want = {id(names[k]): ref[id(n)] for k, n in ref_names.items() if id(n) in ref}
        record = Record(root, names)
        for _ in range(calls):
            sub.backward(root)
        return root, names, record, want

    def compare(label, record, want, times=None) -> None:
        ids = [id(node) for node in record.ran]  # first: a node run twice also runs once too early
        twice = next((node for k, node in enumerate(record.ran) if ids.index(ids[k]) < k), None)
        if twice is not None:
            raise Fail(f"on {label}: {record.name(twice)}'s local backward ran twice in one call")
        if record.early is not None:
            node, consumer = record.early
            raise Fail(f"on {label}: {record.name(node)}'s backward ran before {record.name(consumer)}'s, "
                       f"which uses {record.name(node)}", diagnosis=["visited_before_consumers"])
        for node in record.reachable:
            expected = want[id(node)] * (1 if times is None or node.parents else times)
            got = node.grad
            if got is not None and close(got, expected):
                continue
            detail = (f"{record.name(node)}.grad, yours:\n{_fmt(got)}\nthe reference:\n{_fmt(expected)}")
            ran_with = record.received.get(id(node))  # (close(None, a) is False)
            if got is not None and close(ran_with, expected) and not close(got, ran_with):
                raise Fail(f"on {label}: {record.name(node)} ran with the right gradient, then its .grad "
                           "changed: is its array another node's .grad too, changed in place?", detail)
            if got is not None and _partial_sum(got, record.sent.get(id(node), [])):
                sent = len(record.sent.get(id(node), []))
                raise Fail(f"on {label}: {record.name(node)} was sent {sent} gradients, and its .grad "
                           "holds only part of their sum", detail, ["fanout_overwritten"])
            raise Fail(f"on {label}: {record.name(node)}.grad differs from the reference", detail)

    def order() -> str:
        graphs = {"a chain": chain, "a node used by three nodes": shared_node,
                  "a graph with an unused branch": unused_branch,
                  "L = sum(h + tanh(h))": depth_trap(True), "L = sum(tanh(h) + h)": depth_trap(False)}
        for label, graph in graphs.items():
            root, names = build(graph)
            record = Record(root, names)
            got = list(sub.topological_order(root))
            ids = [id(n) for n in got]
            if len(set(ids)) != len(ids):
                twice = next(n for n in got if ids.count(id(n)) > 1)
                raise Fail(f"on {label}: {record.name(twice)} appears {ids.count(id(twice))} times; "
                           "each node must appear once (keep a set of the nodes already visited)")
            if set(ids) != {id(n) for n in record.reachable}:
                extra = ", ".join(record.name(n) for n in got if id(n) not in record.consumers)
                raise Fail(f"on {label}: the order has {len(got)} nodes, the graph reachable from root "
                           f"{len(record.reachable)}" + (f" (not reachable: {extra})" if extra else ""))
            where = {i: k for k, i in enumerate(ids)}
            if got[-1] is root and got[0] is not root:
                raise Fail(f"on {label}: root comes last; this order is root first "
                           "(each node before its parents): reverse your list")
            for node in got:
                for p in node.parents:
                    if where[id(p)] < where[id(node)]:
                        raise Fail(f"on {label}: {record.name(p)} comes before {record.name(node)}, "
                                   f"which uses it", diagnosis=["visited_before_consumers"])
        return f"{len(graphs)} graphs"

    def gradients(label, graph) -> Callable[[], None]:
        return lambda: compare(label, *run(graph)[2:])

    def unused() -> None:
        root, names, record, want = run(unused_branch)
        compare("a graph with an unused branch", record, want)
        ran = [record.name(n) for n in record.ran if n not in record.reachable]
        if ran:  # (c feeds only d: no gradient reaches c unless d's backward ran)
            raise Fail(f"the backward of {', '.join(ran)} ran, but L does not depend on it",
                       f"c, which only d uses, has .grad {names['c'].grad}")

    def twice() -> None:
        for label, graph in (("a node used by three nodes", shared_node), ("a chain", chain)):  # b: s's g
            root, names, record, want = run(graph, calls=2)
            once = [n for n in record.reachable if not n.parents and close(n.grad, want[id(n)])]  # None: no
            if once:
                who, first = " and ".join(f"{record.name(n)}.grad" for n in once), record.name(once[0])
                what, verb = f"on {label}: after two calls", "is" if len(once) == 1 else "are"
                detail = f"{first}.grad:\n{_fmt(once[0].grad)}"
                if len(once) == sum(not n.parents for n in record.reachable):
                    raise Fail(f"{what} of backward, {who} {verb} the gradient of one call", detail,
                               ["leaf_grads_not_accumulated"])
                raise Fail(f"{what}, {who} {verb} the gradient of one call, though the other leaves add up "
                           f"both: what did the second call change in {first}.grad?", detail)
            wrong = next((n for n in record.reachable if n.parents and n is not root and n.grad is not None
                          and not close(n.grad, want[id(n)]) and close(n.grad, 2 * want[id(n)])), None)
            if wrong is not None:
                raise Fail(f"on {label}: after two calls, the intermediate {record.name(wrong)}'s .grad "
                           "holds the sum of both calls; an intermediate's .grad is the last call's only")
            record.ran = record.ran[: len(record.ran) // 2]  # the order of the first call
            compare(f"{label}, two calls of backward", record, want, times=2)

    def deep() -> str:
        short, _ = build(lambda o: long_chain(o, DEPTH_CHAIN))
        try:
            for what, walk in (("topological_order", sub.topological_order), ("backward", sub.backward)):
                with Depth() as depth:
                    out = walk(short)
                    if what == "topological_order":
                        list(out)
                if depth.deepest > DEEPEST:  # passed only because the recursion limit was raised
                    raise Fail(f"on a chain of {DEPTH_CHAIN} nodes, {what} nested {depth.deepest} Python "
                               "calls: it recurses once per node (it passes only where the recursion limit "
                               "is raised)",
                               diagnosis=["recursion_too_deep"])
            root, names = build(long_chain)
            t0 = time.perf_counter()
            got = list(sub.topological_order(root))
            sub.backward(root)
        except RecursionError as e:
            raise Fail(f"a chain of {CHAIN} nodes raised RecursionError ({e})",
                       diagnosis=["recursion_too_deep"]) from None
        seconds = time.perf_counter() - t0
        x, n = names["x"].grad, len(got)
        wrong = ([f"the order has {n} nodes, not {CHAIN + 2}"] if n != CHAIN + 2 else []) + (
            [f"x.grad is {x}, not ones"] if x is None or not np.allclose(x, 1) else [])
        if wrong:
            raise Fail(f"on a chain of {CHAIN} nodes, " + " and ".join(wrong))
        if seconds > 10:
            raise Fail(f"a chain of {CHAIN} nodes took {seconds:.1f} s: look for a list searched per node")
        return f"{CHAIN + 2} nodes in {seconds:.2f} s"

    return [("topological_order: each node once, root first, before its parents", order),
            *[(f"backward: {label}", gradients(label, g)) for label, g in GRAPHS.items()],
            ("backward: an unused branch gets no gradient", unused),
            ("backward twice: leaves accumulate, intermediates do not", twice),
            (f"a chain of {CHAIN} nodes (no recursion limit)", deep)]


TASK = Task("backprop_engine", "the engine: topological order and backward, fan-outs summed",
            ("Node", "topological_order", "backward"), checks, train)
