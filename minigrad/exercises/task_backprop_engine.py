"""Exercise 3 · backprop_engine: topological order and backward over a graph of given nodes.

The grader builds its graphs from the student's `Node` class with its own ops, whose local
backwards it watches: which node ran when, the gradient each received and what each sent to
its parents. That watching, and every call of the student's `topological_order` and
`backward`, happens inside `run_student()` blocks, which give back plain data only: node
names (the grader's own: x, w, h1, L...), gradients by name, depths, times. The same graphs,
built again from the grader's own node class outside the blocks, give the structure and the
reference engine's numbers; every verdict is reached there. The mistakes are named from that
record: a fan-out gradient equal to part of what its consumers sent (`fanout_overwritten`),
a local backward run before all of its consumers had run (`visited_before_consumers`),
leaves not summed over two calls (`leaf_grads_not_accumulated`), a RecursionError or a walk
nested once per node (`recursion_too_deep`).
"""

from __future__ import annotations

import time
from itertools import combinations
from typing import Any, Callable

import numpy as np

from minigrad import unbroadcast

from .catalogue import Task
from .diagnose import close
from .engine_graphs import (
    CHAIN,
    DEEPEST,
    DEPTH_CHAIN,
    GRAPHS,
    Depth,
    Ops,
    Structure,
    chain,
    depth_trap,
    long_chain,
    shared_node,
    structure,
    unused_branch,
)
from .grader import Check
from .transcript import Fail, run_student

# ----------------------------------------------------------------------------- the record
# (what runs in the student's process: inside run_student() blocks, giving back plain data)


class Record:
    """Wraps each non-leaf's local backward: the order they ran, what each received and sent,
    by the grader's names of the nodes."""

    def __init__(self, names: dict[str, Any]):
        self.names = {id(n): k for k, n in names.items()}
        self.ran: list[str] = []
        self.received: dict[str, np.ndarray] = {}
        self.sent: dict[str, list[np.ndarray]] = {}
        for node in names.values():
            if node.parents:
                node.local_backward = self._watch(node, node.local_backward)

    def _watch(self, node, inner):
        def local_backward(g):
            self.ran.append(self.names[id(node)])
            self.received[self.names[id(node)]] = np.array(g, dtype=np.float64)
            grads = inner(g)
            for p, gp in zip(node.parents, grads):
                self.sent.setdefault(self.names[id(p)], []).append(np.array(gp, dtype=np.float64))
            return grads
        return local_backward


def _grad(node: Any) -> np.ndarray | None:
    """A node's .grad as plain data (a float64 copy; None stays None)."""
    return None if node.grad is None else np.array(node.grad, dtype=np.float64)


def _labels(nodes: list, names: dict[str, Any]) -> dict:
    """The nodes of an order as names: the grader's for its graph's nodes, "?0", "?1"... for any
    other object (each once, its repr in `foreign`)."""
    known = {id(n): k for k, n in names.items()}
    others: dict[int, str] = {}
    foreign: dict[str, str] = {}
    order = []
    for n in nodes:
        if id(n) in known:
            order.append(known[id(n)])
            continue
        if id(n) not in others:
            others[id(n)] = key = f"?{len(others)}"
            try:
                foreign[key] = repr(n)
            except Exception:  # the student's __repr__: the name only needs some words
                foreign[key] = f"a {type(n).__name__} not in the graph"
        order.append(others[id(n)])
    return {"order": order, "foreign": foreign}


def _observed(sub: Any, graph: Callable, calls: int) -> dict:
    """The student's backward `calls` times on the student's build of `graph`: the record, and
    every node's .grad after the last call."""
    o = Ops(sub.Node)
    root = graph(o)
    record = Record(o.names)
    for _ in range(calls):
        sub.backward(root)
    return {"ran": record.ran, "received": record.received, "sent": record.sent,
            "grads": {k: _grad(n) for k, n in o.names.items()}}


def _order(sub: Any, graph: Callable) -> dict:
    o = Ops(sub.Node)
    root = graph(o)
    return _labels(list(sub.topological_order(root)), o.names)


def _depth(sub: Any, what: str) -> dict:
    """How deep `what` (topological_order or backward) nests Python calls on a chain of
    DEPTH_CHAIN nodes, or the RecursionError it raised."""
    o = Ops(sub.Node)
    root = long_chain(o, DEPTH_CHAIN)
    walk = sub.topological_order if what == "topological_order" else sub.backward
    try:
        with Depth() as depth:
            out = walk(root)
            if what == "topological_order":
                list(out)
    except RecursionError as e:
        return {"recursion": str(e)}
    return {"deepest": depth.deepest}


def _long(sub: Any) -> dict:
    """The order's length, x.grad and the seconds of both walks on the chain of CHAIN nodes,
    or the RecursionError raised."""
    o = Ops(sub.Node)
    root = long_chain(o)
    try:
        t0 = time.perf_counter()
        got = list(sub.topological_order(root))
        sub.backward(root)
    except RecursionError as e:
        return {"recursion": str(e)}
    seconds = time.perf_counter() - t0
    return {"nodes": len(got), "x": _grad(o.names["x"]), "seconds": seconds}


def _partial_sum(got, sent: list[np.ndarray]) -> bool:
    """got equals the sum of some, but not all, of the gradients sent to the node."""
    return any(close(got, sum(part)) for r in range(1, len(sent))
               for part in combinations(sent, r)) if got is not None else False


def _fmt(a) -> str:
    return np.array2string(np.asarray(a), precision=4, suppress_small=True, max_line_width=90)


def _early(ran: list[str], consumers: dict[str, list[str]]) -> tuple[str, str] | None:
    """The first (node, consumer) where the node's local backward ran before that consumer's."""
    done: set[str] = set()
    for k in ran:
        waiting = [c for c in consumers.get(k, []) if c not in done]
        if waiting:
            return k, waiting[0]
        done.add(k)
    return None


# ----------------------------------------------------------------------------- --train


def engine_from(sub: Any) -> Callable:
    """A replacement for minigrad's `run_backward`: the graph behind the loss, rebuilt as the
    student's Nodes (one per Function, whose local backward is the op's own, gradients summed
    back to each input's shape), handed to the student's `backward`; the leaf tensors' .grad
    then accumulate what their Nodes received. (It runs in the student's process, inside the
    training run's run_student() block.)"""
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
                    leaves.setdefault(id(t), (t, node(t._data)))
                    parents.append(leaves[id(t)][1])
                else:
                    nodes[id(made_by)].data = t._data
                    parents.append(nodes[id(made_by)])

            def local_backward(g, f=f, picks=picks):
                grads = type(f).backward(f, g)
                grads = grads if type(grads) is tuple else (grads,)
                return tuple(np.zeros_like(f.inputs[i]._data) if grads[i] is None
                             else unbroadcast(np.asarray(grads[i]), f.inputs[i]._data.shape)
                             for i in picks)

            nodes[id(f)] = node(None, parents, local_backward, f.name)
        top = nodes[id(root._node)]
        top.data = root._data
        sub.backward(top)
        for t, n in leaves.values():
            if n.grad is not None:
                t.grad = n.grad if t.grad is None else t.grad + n.grad

    return run_backward


def _trained(sub: Any) -> np.ndarray:
    """The tiny GPT's training losses with the student's engine as minigrad's run_backward (put
    back after)."""
    from minigrad import autograd

    from . import training

    original = autograd.run_backward
    autograd.run_backward = engine_from(sub)
    try:
        return np.array(training.losses({}), dtype=np.float64)
    finally:
        autograd.run_backward = original


def train(sub: Any) -> Check:
    """The tiny GPT trained with the student's engine in place of minigrad's; the loss curves
    must agree with minigrad's own run (same seed, same batches)."""
    from . import training

    def run() -> str:
        t0 = time.perf_counter()
        ref = training.reference_losses()
        mine = np.asarray(run_student("train", lambda: _trained(sub)), dtype=np.float64)
        if mine.shape != (len(ref),):
            raise Fail(f"--train: {mine.size} losses, not {len(ref)}")
        worst = float(np.nan_to_num(np.abs(np.array(ref) - mine), nan=np.inf).max())
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
    def observed(graph: Callable, calls: int = 1) -> tuple[dict, Structure]:
        """The student's backward on the graph (plain data), and the graph's structure."""
        seen = run_student("backward", lambda: _observed(sub, graph, calls))
        return seen, structure(graph)

    def compare(label: str, seen: dict, graph: Structure, times: int | None = None,
                first: int | None = None) -> None:
        """Fail unless every reachable node's .grad is the reference's (times `times` for the
        leaves); `first`: the runs of the first call (the rest are the second call's)."""
        ran = seen["ran"][:first]
        twice = next((k for i, k in enumerate(ran) if ran.index(k) < i), None)  # also ran too early
        if twice is not None:
            raise Fail(f"on {label}: {twice}'s local backward ran twice in one call")
        early = _early(seen["ran"], graph.consumers)
        if early is not None:
            node, consumer = early
            raise Fail(f"on {label}: {node}'s backward ran before {consumer}'s, which uses {node}",
                       diagnosis=["visited_before_consumers"])
        for k in graph.reachable:
            expected = graph.want[k] * (1 if times is None or graph.parents[k] else times)
            got = seen["grads"].get(k)
            if got is not None and close(got, expected):
                continue
            detail = f"{k}.grad, yours:\n{_fmt(got)}\nthe reference:\n{_fmt(expected)}"
            ran_with = seen["received"].get(k)  # (close(None, a) is False)
            if got is not None and close(ran_with, expected) and not close(got, ran_with):
                raise Fail(f"on {label}: {k} ran with the right gradient, then its .grad changed: is its "
                           "array another node's .grad too, changed in place?", detail)
            sent = seen["sent"].get(k, [])
            if got is not None and _partial_sum(got, sent):
                raise Fail(f"on {label}: {k} was sent {len(sent)} gradients, and its .grad holds only "
                           "part of their sum", detail, ["fanout_overwritten"])
            raise Fail(f"on {label}: {k}.grad differs from the reference", detail)

    def order() -> str:
        graphs = {"a chain": chain, "a node used by three nodes": shared_node,
                  "a graph with an unused branch": unused_branch,
                  "L = sum(h + tanh(h))": depth_trap(True), "L = sum(tanh(h) + h)": depth_trap(False)}
        for label, graph in graphs.items():
            found = run_student("topological_order", lambda graph=graph: _order(sub, graph))
            got, foreign, g = found["order"], found["foreign"], structure(graph)

            def name(k: str, foreign: dict = foreign) -> str:
                return foreign.get(k, k)

            if len(set(got)) != len(got):
                twice = next(k for k in got if got.count(k) > 1)
                raise Fail(f"on {label}: {name(twice)} appears {got.count(twice)} times; each node must "
                           "appear once (keep a set of the nodes already visited)")
            if set(got) != set(g.reachable):
                extra = ", ".join(name(k) for k in got if k not in g.consumers)
                raise Fail(f"on {label}: the order has {len(got)} nodes, the graph reachable from root "
                           f"{len(g.reachable)}" + (f" (not reachable: {extra})" if extra else ""))
            where = {k: i for i, k in enumerate(got)}
            if got[-1] == g.root and got[0] != g.root:
                raise Fail(f"on {label}: root comes last; this order is root first "
                           "(each node before its parents): reverse your list")
            for k in got:
                for p in g.parents[k]:
                    if where[p] < where[k]:
                        raise Fail(f"on {label}: {p} comes before {k}, which uses it",
                                   diagnosis=["visited_before_consumers"])
        return f"{len(graphs)} graphs"

    def gradients(label: str, graph: Callable) -> Callable[[], None]:
        return lambda: compare(label, *observed(graph))

    def unused() -> None:
        seen, g = observed(unused_branch)
        compare("a graph with an unused branch", seen, g)
        ran = [k for k in seen["ran"] if k not in g.reachable]
        if ran:  # (c feeds only d: no gradient reaches c unless d's backward ran)
            raise Fail(f"the backward of {', '.join(ran)} ran, but L does not depend on it",
                       f"c, which only d uses, has .grad {seen['grads']['c']}")

    def twice() -> None:
        for label, graph in (("a node used by three nodes", shared_node), ("a chain", chain)):  # b: s's g
            seen, g = observed(graph, calls=2)
            grads = seen["grads"]
            leaves = [k for k in g.reachable if not g.parents[k]]
            once = [k for k in leaves if close(grads[k], g.want[k])]  # (close(None, a) is False)
            if once:
                who = " and ".join(f"{k}.grad" for k in once)
                what, verb = f"on {label}: after two calls", "is" if len(once) == 1 else "are"
                detail = f"{once[0]}.grad:\n{_fmt(grads[once[0]])}"
                if len(once) == len(leaves):
                    raise Fail(f"{what} of backward, {who} {verb} the gradient of one call", detail,
                               ["leaf_grads_not_accumulated"])
                raise Fail(f"{what}, {who} {verb} the gradient of one call, though the other leaves add up "
                           f"both: what did the second call change in {once[0]}.grad?", detail)
            wrong = next((k for k in g.reachable if g.parents[k] and k != g.root and grads[k] is not None
                          and not close(grads[k], g.want[k]) and close(grads[k], 2 * g.want[k])), None)
            if wrong is not None:
                raise Fail(f"on {label}: after two calls, the intermediate {wrong}'s .grad holds the sum "
                           "of both calls; an intermediate's .grad is the last call's only")
            compare(f"{label}, two calls of backward", seen, g, times=2,
                    first=len(seen["ran"]) // 2)  # the order of the first call

    def recursion(error: str) -> Fail:
        return Fail(f"a chain of {CHAIN} nodes raised RecursionError ({error})",
                    diagnosis=["recursion_too_deep"])

    def deep() -> str:
        for what in ("topological_order", "backward"):
            measured = run_student("depth", lambda what=what: _depth(sub, what))
            if "recursion" in measured:
                raise recursion(measured["recursion"])
            deepest = int(measured["deepest"])
            if deepest > DEEPEST:  # passed only because the recursion limit was raised
                raise Fail(f"on a chain of {DEPTH_CHAIN} nodes, {what} nested {deepest} Python calls: it "
                           "recurses once per node (it passes only where the recursion limit is raised)",
                           diagnosis=["recursion_too_deep"])
        long = run_student("long chain", lambda: _long(sub))
        if "recursion" in long:
            raise recursion(long["recursion"])
        x, n, seconds = long["x"], int(long["nodes"]), float(long["seconds"])
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


# minigrad's own engine (autograd.toposort and run_backward, and Tensor.backward, which runs it):
# the stub's code never reads a `.backward` attribute (its nodes have local_backward).
TASK = Task("backprop_engine", "the engine: topological order and backward, fan-outs summed",
            ("Node", "topological_order", "backward"), checks, train,
            library=("toposort", "run_backward", "Tensor", "tensor"))
