"""minigrad.hooks, the public way to watch the engine: per thread, undone on leaving (also on an
error), nested; and the engine knows nothing of drawings (viz keeps small gradients through a
hook of its own)."""

import ast
import threading
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad import autograd, hooks
from minigrad.viz import grads as viz_grads

ROOT = Path(__file__).resolve().parents[2]


def test_observe_backward_sees_each_node_with_its_gradients_then_stops():
    seen = []
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    with hooks.observe_backward(lambda node, g, grads: seen.append((node.name, g.copy(), grads))):
        (w * w).sum().backward()
    (w * w).sum().backward()  # outside the block: not seen
    assert [name for name, _, _ in seen] == ["Sum", "Mul"]
    (_, g_sum, _), (_, g_mul, (da, db)) = seen
    np.testing.assert_array_equal(g_sum, 1.0)
    np.testing.assert_array_equal(g_mul, [1.0, 1.0])
    np.testing.assert_array_equal(da, [1.0, 2.0])  # d(w*w)/da = w
    assert hooks.backward_observers() == ()


def test_observe_forward_sees_every_op_and_can_stop_it():
    names = []
    with hooks.observe_forward(lambda ctx, inputs, out: names.append((ctx.name, out.shape))):
        mg.tensor([1.0, 2.0]).exp().sum()
    assert names == [("Exp", (2,)), ("Sum", ())]

    def refuse(ctx, inputs, out):
        raise ValueError(f"no {ctx.name}")

    with pytest.raises(ValueError, match="no Log"):
        with hooks.observe_forward(refuse):
            mg.tensor([1.0]).log()
    assert hooks.forward_checks() == ()  # removed although the block raised


def test_hooks_nest_and_leaving_removes_exactly_ones_own():
    def a(*args):
        pass

    def b(*args):
        pass

    with hooks.observe_backward(a):
        with hooks.observe_backward(b), hooks.observe_backward(a):
            assert hooks.backward_observers() == (a, b, a)
        assert hooks.backward_observers() == (a,)
    assert hooks.backward_observers() == ()


def test_observe_backward_decorates_a_function():
    seen = []

    @hooks.observe_backward(lambda node, g, grads: seen.append(node.name))
    def step(w):
        (w * 2.0).sum().backward()

    step(mg.tensor([1.0], requires_grad=True))
    step(mg.tensor([1.0], requires_grad=True))
    assert seen == ["Sum", "Mul"] * 2 and hooks.backward_observers() == ()


def test_the_engine_has_no_private_hook_lists_or_drawing_bookkeeping():
    for name in ("_backward_observers", "_forward_checks", "_grad_enabled", "_scope", "_PER_THREAD",
                 "KEEP_GRAD", "KEEP_GRAD_NODES"):
        assert not hasattr(autograd, name), name
    assert not hasattr(autograd.Function, "grad_out") and not hasattr(autograd.Function, "grad_norm")
    assert not hasattr(autograd, "observe_backward")  # one home: minigrad.hooks


def test_small_graphs_keep_small_gradients_in_every_thread_and_large_ones_none():
    """viz's own hook: intermediates of a graph of up to KEEP_GRAD_NODES ops keep a gradient of
    up to KEEP_GRAD elements for drawings, in any thread; a larger graph keeps none."""
    def small():
        x = mg.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        (h * h).sum().backward()
        return h._node.grad_out

    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("g", small()))
    worker.start()
    worker.join()
    np.testing.assert_array_equal(out["g"], [6.0, 12.0])  # d sum(h^2) / dh = 2h = 6x
    np.testing.assert_array_equal(small(), [6.0, 12.0])

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    first = y
    for _ in range(viz_grads.KEEP_GRAD_NODES):
        y = y + 0.0
    y.sum().backward()
    assert getattr(first._node, "grad_out", None) is None
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])
    big = mg.tensor(np.ones(viz_grads.KEEP_GRAD + 1), requires_grad=True) * 2
    big.sum().backward()
    assert getattr(big._node, "grad_out", None) is None  # too many elements to keep


def test_no_module_reaches_into_the_engines_private_names():
    """Hooks go through minigrad.hooks: no module outside autograd.py reads `autograd._x`."""
    found = []
    for folder in ("minigrad", "nn", "models"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "minigrad" / "autograd.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "autograd" and node.attr.startswith("_")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: autograd.{node.attr}")
    assert not found, "\n".join(found)
