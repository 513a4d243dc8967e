"""autograd.grad, autograd.backward and Tensor.backward(inputs=): gradients of several outputs
with respect to chosen tensors, leaves or not, as torch's (first order)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg


def _graph(lib, xs, ws):
    x = lib.tensor(xs, requires_grad=True)
    w = lib.tensor(ws, requires_grad=True)
    h = (x * w).tanh()
    return x, w, h, (h ** 2).sum(), (h * x).sum()


@given(st.lists(st.floats(-2, 2), min_size=1, max_size=5), st.floats(-3, 3), st.floats(-3, 3))
def test_grad_of_two_outputs_is_the_sum_of_their_gradients(xs, a, b):
    ws = np.linspace(-1, 1, len(xs))
    x, w, h, y, z = _graph(mg, np.float64(xs), ws)
    gx, gw, gh = mg.autograd.grad([y, z], [x, w, h], grad_outputs=[mg.tensor(a, dtype=mg.float64),
                                                                    mg.tensor(b, dtype=mg.float64)])
    xv, hv = np.float64(xs), np.tanh(np.float64(xs) * ws)
    want_h = a * 2 * hv + b * xv
    want_x = want_h * (1 - hv ** 2) * ws + b * hv
    np.testing.assert_allclose(gh.numpy(), want_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), want_x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), want_h * (1 - hv ** 2) * xv, rtol=1e-12, atol=1e-12)
    assert x.grad is None and w.grad is None  # grad() leaves .grad alone


def test_grad_of_a_0d_output_and_a_dict_of_inputs():
    x = mg.tensor(3.0, requires_grad=True)
    (gx,) = mg.autograd.grad(x * x, x)
    assert gx.item() == 6.0 and gx.shape == ()
    w = mg.ones(2, requires_grad=True)
    got = mg.autograd.grad((w * x).sum(), {"w": w, "x": x})
    assert list(got) == ["w", "x"] and got["x"].item() == 2.0 and got["w"].numpy().tolist() == [3.0, 3.0]


def test_unused_inputs_and_materialize():
    x, unused = mg.ones(2, requires_grad=True), mg.ones(3, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match=r"autograd.grad: input 1 \(shape \(3,\)\) was not used"):
        mg.autograd.grad(y, [x, unused], retain_graph=True)
    assert mg.autograd.grad(y, [x, unused], allow_unused=True, retain_graph=True)[1] is None
    zeros = mg.autograd.grad(y, [unused], materialize_grads=True)[0]
    assert zeros.numpy().tolist() == [0.0, 0.0, 0.0]


def test_grad_frees_the_graph_unless_retained():
    x = mg.ones(2, requires_grad=True)
    y = (x.exp() * 2).sum()
    mg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="already freed"):
        mg.autograd.grad(y, x)


def test_backward_with_inputs_accumulates_into_those_only():
    x, w, h, y, z = _graph(mg, np.array([0.5, -1.0]), np.array([2.0, 0.25]))
    y.backward(inputs=[w, h], retain_graph=True)
    assert x.grad is None and w.grad is not None
    np.testing.assert_allclose(h.grad.numpy(), 2 * h.numpy())
    before = w.grad.numpy().copy()
    mg.autograd.backward([y], inputs=w)
    np.testing.assert_allclose(w.grad.numpy(), 2 * before)


def test_bad_calls_are_named():
    x = mg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"grad: output 0 has shape \(2,\), not a scalar"):
        mg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match=r"grad: gradient of shape \(3,\) for output 0 of shape \(2,\)"):
        mg.autograd.grad(y, x, grad_outputs=mg.ones(3))
    with pytest.raises(RuntimeError, match="grad: input 0 does not require grad"):
        mg.autograd.grad(y.sum(), mg.ones(2), retain_graph=True)
    with pytest.raises(RuntimeError, match="grad: output 0 does not require grad"):
        mg.autograd.grad(mg.ones(1), x)
    with pytest.raises(RuntimeError, match="grad: got 2 gradients for 1 outputs"):
        mg.autograd.grad([y], x, grad_outputs=[mg.ones(2), mg.ones(2)])
    (g,) = mg.autograd.grad((y * y).sum(), x, create_graph=True)  # tests/core/test_higher_order.py
    assert g.grad_fn is not None and g.tolist() == [8.0, 8.0]
    with pytest.raises(RuntimeError, match="is_grads_batched=True needs a grad_outputs tensor"):
        mg.autograd.grad(y, x, is_grads_batched=True, retain_graph=True)
    with pytest.raises(RuntimeError, match="needs one batch size, got \\[2, 3\\]"):
        mg.autograd.grad([y, y], x, [mg.ones(2, 2), mg.ones(3, 2)], is_grads_batched=True)


def test_hooks_run_for_grad_as_for_backward():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.register_hook(lambda g: g * 10)
    x.register_hook(lambda g: g + 1)
    (gx,) = mg.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(gx.numpy(), [31.0, 31.0])


def test_batched_grad_outputs_give_the_jacobian_as_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    xs, ws = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.75])
    rows = np.random.default_rng(0).standard_normal((4, 3))
    results = []
    for lib in (mg, torch):
        x, w, h, y, z = _graph(lib, xs, ws)
        jac = lib.autograd.grad(h, [x, w], lib.eye(3, dtype=lib.float64), is_grads_batched=True,
                                retain_graph=True)
        vjps = lib.autograd.grad([h, y], [x], [lib.tensor(rows), lib.tensor(np.arange(4.0))],
                                 is_grads_batched=True)
        results.append([t.detach().numpy() for t in (*jac, *vjps)])
    for mine, theirs in zip(*results):
        assert mine.shape == theirs.shape
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
    x, w, h, y, z = _graph(mg, xs, ws)  # the Jacobian of tanh(x * w) in x is diagonal
    (jac,) = mg.autograd.grad(h, x, mg.eye(3, dtype=mg.float64), is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), np.diag((1 - np.tanh(xs * ws) ** 2) * ws), rtol=1e-12)


def test_against_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    xs, ws = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.75])
    results = []
    for lib in (mg, torch):
        x, w, h, y, z = _graph(lib, xs, ws)
        g = lib.autograd.grad([y, z], [x, w, h], grad_outputs=[lib.tensor(2.0, dtype=lib.float64), None],
                              retain_graph=True)
        z.backward(inputs=[x], retain_graph=True)
        lib.autograd.backward([y, z], inputs=[w])
        results.append([t.detach().numpy() for t in g] + [x.grad.numpy(), w.grad.numpy()])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
