"""Exercise 3, backprop_engine: the grader's reference engine against minigrad's autograd and
PyTorch on the grader's graphs, the stub's given ops against central differences, and the
messages of the engine mistakes that have no diagnosis code."""

from pathlib import Path

import numpy as np
import pytest
from test_exercise_diagnoses import ENGINE_BACKWARD, ENGINE_ORDER
from wrongfile import student_file

import minigrad as mg
from minigrad.exercises import TASKS, grade
from minigrad.exercises import engine_graphs as graphs
from minigrad.exercises import task_backprop_engine as engine
from minigrad.exercises.grader import load_file

GRAPHS = [graphs.chain, graphs.leaf_twice, graphs.shared_node, graphs.unused_branch,
          graphs.depth_trap(True), graphs.depth_trap(False)]


def stub_module(tmp_path):
    return load_file(student_file(tmp_path, "backprop_engine", [ENGINE_ORDER, ENGINE_BACKWARD]))


def replay(root, lib):
    """The graph of `root` rebuilt in minigrad or torch: id(node) -> tensor."""
    made = {}
    for node in reversed(graphs.reference_order(root)):
        if not node.parents:
            made[id(node)] = lib["leaf"](node.data)
            continue
        a, *rest = (made[id(p)] for p in node.parents)
        if node.op == "add":
            made[id(node)] = a + rest[0]
        elif node.op == "mul":
            made[id(node)] = a * rest[0]
        elif node.op == "tanh":
            made[id(node)] = a.tanh()
        elif node.op == "sum":
            made[id(node)] = a.sum()
        else:
            raise AssertionError(node.op)
    return made


@pytest.mark.parametrize("graph", GRAPHS, ids=lambda g: getattr(g, "__name__", "graph"))
def test_the_reference_engine_agrees_with_minigrads_autograd(tmp_path, graph):
    o = graphs.Ops(stub_module(tmp_path).Node)
    root = graph(o)
    want = graphs.reference_backward(root)
    made = replay(root, {"leaf": lambda d: mg.tensor(d, requires_grad=True)})
    made[id(root)].backward()
    leaves = [n for n in graphs.reference_order(root) if not n.parents]
    assert len(leaves) >= 2
    for leaf in leaves:
        np.testing.assert_allclose(made[id(leaf)].grad, want[id(leaf)], rtol=1e-12)


@pytest.mark.parametrize("graph", GRAPHS[:3], ids=lambda g: g.__name__)
def test_the_reference_engine_agrees_with_torch(tmp_path, graph):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    o = graphs.Ops(stub_module(tmp_path).Node)
    root = graph(o)
    want = graphs.reference_backward(root)
    made = replay(root, {"leaf": lambda d: torch.tensor(d, dtype=torch.float64, requires_grad=True)})
    made[id(root)].backward()
    for leaf in (n for n in graphs.reference_order(root) if not n.parents):
        got = made[id(leaf)].grad
        assert got.dtype == torch.float64
        np.testing.assert_allclose(got.numpy(), want[id(leaf)], rtol=1e-12)


def test_the_stubs_ops_match_central_differences(tmp_path):
    sub = stub_module(tmp_path)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=3), rng.normal(size=3)
    g = rng.normal(size=3)
    eps = 1e-6
    for op, arity in ((sub.add, 2), (sub.mul, 2), (sub.tanh, 1), (sub.total, 1)):
        inputs = [x, y][:arity]
        out = op(*(sub.Node(v) for v in inputs))
        up = g if out.data.ndim else np.float64(g[0])
        grads = out.local_backward(up)
        assert len(grads) == arity
        for i in range(arity):
            numeric = np.zeros(3)
            for j in range(3):
                hi, lo = [v.copy() for v in inputs], [v.copy() for v in inputs]
                hi[i][j] += eps
                lo[i][j] -= eps
                f = [(op(*(sub.Node(v) for v in vs)).data * up).sum() for vs in (hi, lo)]
                numeric[j] = (f[0] - f[1]) / (2 * eps)
            np.testing.assert_allclose(grads[i], numeric, rtol=1e-6, atol=1e-8)


def test_the_stub_filled_with_the_reference_passes(tmp_path):
    body = [ENGINE_ORDER, ENGINE_BACKWARD]
    report = grade("backprop_engine", student_file(tmp_path, "backprop_engine", body))
    assert report.passed, report.text()
    assert len(report.checks) == 8 and "10002 nodes" in report.text()
    assert TASKS["backprop_engine"].number == 3


def failure(tmp_path, body):
    report = grade("backprop_engine", student_file(tmp_path, "backprop_engine", body))
    first = next(c for c in report.checks if not c.passed)
    return first, report


NO_SEEN_SET = ("order, stack = [], [(root, False)]\nwhile stack:\n    node, done = stack.pop()\n"
               "    if done:\n        order.append(node)\n    else:\n        stack.append((node, True))\n"
               "        stack += [(p, False) for p in node.parents]\nreturn order[::-1]")
PRE_ORDER_BACKWARD = ENGINE_BACKWARD.replace(
    "order = topological_order(root)",
    "order, seen, stack = [], set(), [root]\nwhile stack:\n    n = stack.pop()\n"
    "    if id(n) not in seen:\n        seen.add(id(n))\n        order.append(n)\n        stack += n.parents")


@pytest.mark.parametrize("body, check, message, codes", [
    pytest.param([ENGINE_ORDER.replace("order[::-1]", "order"), ENGINE_BACKWARD.replace(
        "order = topological_order(root)", "order = topological_order(root)[::-1]")],
        "topological_order", "root comes last", [], id="leaves-first"),
    pytest.param([NO_SEEN_SET, ENGINE_BACKWARD], "topological_order", "h appears 3 times", [],
                 id="no-seen-set"),
    pytest.param([ENGINE_ORDER, ENGINE_BACKWARD.replace("if node.parents or node.grad is None:",
                                                        "if node.grad is None:")],
                 "backward twice", "holds the sum of both calls", [], id="intermediates-accumulate"),
    pytest.param([ENGINE_ORDER, PRE_ORDER_BACKWARD], "backward: a node used by three nodes",
                 "'s backward ran before", ["visited_before_consumers"], id="backward-ignores-the-order"),
])
def test_engine_mistakes_are_explained(tmp_path, body, check, message, codes):
    first, report = failure(tmp_path, body)
    assert first.name.startswith(check) and message in first.message, report.text()
    assert report.diagnosis == codes



def test_train_runs_minigrads_graph_through_the_students_engine(tmp_path, monkeypatch):
    """`--train` swaps the student's engine for minigrad's run_backward: on a small network
    (broadcast bias, a weight used twice, a leaf with a gradient from an earlier call) the
    gradients are minigrad's own, and the student's backward is what ran."""
    from minigrad import autograd

    sub = load_file(str(Path(__file__).parent / "correct" / "backprop_engine.py"))
    calls = []
    student = sub.backward
    monkeypatch.setattr(sub, "backward", lambda root: calls.append(root) or student(root))
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.normal(size=(4, 3)).astype(np.float32))
    w = mg.tensor(rng.normal(size=(3, 3)).astype(np.float32), requires_grad=True)
    b = mg.tensor(rng.normal(size=(3,)).astype(np.float32), requires_grad=True)

    def loss():
        h = (x @ w + b).tanh()
        return ((h @ w) * h).sum()

    grads = []
    for engine_fn in (None, engine.engine_from(sub)):
        w.grad = None
        b.grad = np.ones(3, dtype=np.float32)  # accumulated onto, as after an earlier backward
        if engine_fn is not None:
            monkeypatch.setattr(autograd, "run_backward", engine_fn)
        loss().backward()
        grads.append((w.grad.numpy().copy(), b.grad.numpy().copy()))
    assert len(calls) == 1 and grads[1][0].dtype == np.float32
    for mine, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(mine, want, rtol=1e-5)
