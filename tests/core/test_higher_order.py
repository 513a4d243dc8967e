"""Higher-order gradients: backward(create_graph=True) and autograd.grad(create_graph=True) give
gradients with graphs of their own (graph_backward.py), differentiated again to any order;
gradgradcheck; autograd.functional; the ops whose backward is first order only refuse,
naming themselves. Against torch's double backward where torch is installed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.testing import arrays, broadcastable_shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 3), deadline=None)

# (name, f(lib, a, b)): each op family whose backward builds its graph
FAMILIES = [
    ("arithmetic", lambda L, a, b: a * b / (b * b + 1) - a + (-b)),
    ("pow", lambda L, a, b: (a * a + 1) ** (b * 0.5) + a ** 3),
    ("exp-log-sqrt", lambda L, a, b: (a * a + 0.5).log() * b.exp() + (b * b + 1).sqrt()),
    ("trig", lambda L, a, b: a.sin() * b.cos() + a.tanh() * b.sigmoid()),
    ("erf-abs-relu", lambda L, a, b: a.erf() * b + a.abs() * b * b + a.relu() * a),
    ("reductions", lambda L, a, b: (a * b).sum(-1, keepdim=True) * (a * a).mean() + b.sum()),
    ("softmax", lambda L, a, b: (a * b).softmax(-1) + (a + b).log_softmax(0)),
    ("where", lambda L, a, b: L.where(a > 0, a * b, b * b) + (a * b).masked_fill(b > 0.537, 1.5)),
    ("shape", lambda L, a, b: L.cat([(a * b).reshape(-1), b.expand(*np.broadcast_shapes(a.shape, b.shape))
                                     .reshape(-1)[:1]]).exp()[..., [0, -1, 0]].sum()
     * L.stack([a * a, a]).sum()),
    ("cast", lambda L, a, b: (a.float() * b).double().sin() * a),  # (float32 rounding: checked loosely)
]

# (name, f(a, b), the shapes a and b are drawn around): matmul and nn's fused kernels, whose
# inputs must fit each other
SHAPED = [
    ("matmul", lambda a, b: (a @ b).tanh() @ b.transpose(-1, -2), [(2, 3, 4), (4, 3)]),
    ("matmul-vector", lambda a, b: ((a @ b) ** 2).sum() * b, [(3, 4), (4,)]),
    ("linear-layer-norm-gelu", lambda a, b: F.gelu(F.layer_norm(F.linear(a, b), (3,)), approximate="tanh")
     + F.gelu(F.linear(a, b)), [(2, 4), (3, 4)]),
    ("cross-entropy", lambda a, b: F.cross_entropy(F.linear(a, b), mg.tensor([0, 2]), label_smoothing=0.2),
     [(2, 4), (3, 4)]),
    ("softmax-attention-scores", lambda a, b: F.softmax(a @ b.transpose(-1, -2) / 2, -1) @ b,
     [(1, 3, 4), (1, 2, 4)]),
]


def _second(L, f, xs):
    """The gradient of sum((d sum(v * f) / d x)^2 over the inputs), through create_graph, for
    a fixed v."""
    ts = [L.tensor(x, requires_grad=True) for x in xs]
    out = f(L, *ts)
    v = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
    grads = L.autograd.grad(out, ts, L.tensor(v), create_graph=True)
    s = sum((g * g).sum() for g in grads)
    return [t.numpy() if L is mg else t.detach().numpy() for t in L.autograd.grad(s, ts)]


@pytest.mark.parametrize("name, f", FAMILIES, ids=[n for n, _ in FAMILIES])
@fewer
@given(shapes_=broadcastable_shapes(2), data=st.data())
def test_second_derivatives_pass_gradgradcheck(name, f, shapes_, data):
    """Broadcast operands, size-1 and 0-d shapes included (0-d only where dim -1 exists)."""
    if name == "softmax" and not np.broadcast_shapes(*shapes_):
        shapes_ = [(1,) + s for s in shapes_]
    a = data.draw(arrays(shapes_[0], -1.5, 1.5, away_from_zero=0.05))
    b = data.draw(arrays(shapes_[1], -1.5, 1.5, away_from_zero=0.05))
    a_, b_ = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
    loose = name == "cast"  # finite differences through a float32 value see its rounding
    assert mg.gradgradcheck(lambda x, y: f(mg, x, y), [a_, b_], eps=1e-3 if loose else 1e-6,
                            atol=1e-3 if loose else 1e-5, rtol=5e-2 if loose else 1e-3)


@pytest.mark.parametrize("name, f, shapes_", SHAPED, ids=[n for n, _, _ in SHAPED])
@fewer
@given(data=st.data())
def test_matmul_and_the_fused_kernels_pass_gradgradcheck(name, f, shapes_, data):
    a, b = (data.draw(arrays(s, -1.5, 1.5)) for s in shapes_)
    assert mg.gradgradcheck(f, [mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)])


@pytest.mark.parametrize("name, f", FAMILIES, ids=[n for n, _ in FAMILIES])
def test_second_derivatives_equal_torchs(name, f):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1.5, 1.5, (3, 4)), rng.uniform(-1.5, 1.5, (4,))
    tol = 1e-6 if name == "cast" else 1e-12  # a float32 step rounds in each library's own order
    for mine, theirs in zip(_second(mg, f, [a, b]), _second(torch, f, [a, b])):
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)


def _layers(L, x, w1, b1, lnw, lnb, w2, target):
    Fn = F if L is mg else L.nn.functional
    h = Fn.layer_norm(Fn.linear(x, w1, b1), (w1.shape[0],), lnw, lnb)
    h = Fn.gelu(h) + Fn.gelu(h, approximate="tanh")
    h = h[:, [0, 2, 2, 1]] @ w2.T[:4] + h.reshape(-1)[: w2.shape[0]]
    return Fn.cross_entropy(h, target, label_smoothing=0.1)


def test_a_hessian_vector_product_of_an_mlp_with_layer_norm_equals_torchs():
    """Linear, layer norm, both GELUs, indexing, matmul and cross entropy: H v with respect to
    every parameter and the input, by autograd.functional.hvp and by hand (grad of grad . v)."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    rng = np.random.default_rng(1)
    arrays_ = [rng.standard_normal(s) for s in [(6, 5), (8, 5), (8,), (8,), (8,), (3, 8)]]
    target = rng.integers(0, 3, 6)
    vs = [rng.standard_normal(a.shape) for a in arrays_]
    results = []
    for L in (mg, torch):
        ts = tuple(L.tensor(a) for a in arrays_)
        _, hv = L.autograd.functional.hvp(lambda *p, L=L: _layers(L, *p, L.tensor(target)), ts,
                                          tuple(L.tensor(v) for v in vs))
        leaves = [L.tensor(a, requires_grad=True) for a in arrays_]
        grads = L.autograd.grad(_layers(L, *leaves, L.tensor(target)), leaves, create_graph=True)
        dot = sum((g * L.tensor(v)).sum() for g, v in zip(grads, vs))
        by_hand = L.autograd.grad(dot, leaves)
        results.append(([t.detach().numpy() for t in hv], [t.detach().numpy() for t in by_hand]))
    (mine_hv, mine_hand), (their_hv, their_hand) = results
    for a, b, c, d in zip(mine_hv, their_hv, mine_hand, their_hand):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(c, d, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)  # H is symmetric: hvp = grad(g . v)


def test_a_third_derivative_and_the_grad_attribute_have_graphs():
    x = mg.tensor([0.3, -1.2, 2.0], dtype=mg.float64, requires_grad=True)
    y = (x * x * x * x).sum()  # y = sum x^4
    (g,) = mg.autograd.grad(y, x, create_graph=True)  # 4 x^3
    (h,) = mg.autograd.grad(g.sum(), x, create_graph=True)  # 12 x^2
    (t,) = mg.autograd.grad(h.sum(), x)  # 24 x
    np.testing.assert_allclose(g.numpy(), 4 * x.numpy() ** 3, rtol=1e-15)
    np.testing.assert_allclose(h.numpy(), 12 * x.numpy() ** 2, rtol=1e-15)
    np.testing.assert_allclose(t.numpy(), 24 * x.numpy(), rtol=1e-15)
    assert g.grad_fn is not None and t.grad_fn is None
    y = (x * x * x * x).sum()  # (the last grad freed the graph, as torch's does)
    y.backward(create_graph=True)
    assert x.grad.grad_fn is not None  # .grad itself can be differentiated
    x.grad.sum().backward()  # accumulates d(4 x^3)/dx into x.grad: 4 x^3 + 12 x^2
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.numpy() ** 3 + 12 * x.numpy() ** 2, rtol=1e-14)


def test_a_gradient_penalty_trains_as_torchs():
    """The norm of an input gradient as a loss (as in WGAN-GP): the parameters' gradients of
    loss + (|d loss / d x| - 1)^2 equal torch's."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    rng = np.random.default_rng(2)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal(5)
    found = []
    for L in (mg, torch):
        Fn = F if L is mg else L.nn.functional
        xt, wt, bt = (L.tensor(a, requires_grad=True) for a in (x, w, b))
        loss = Fn.linear(xt, wt, bt).tanh().pow(2).sum()
        (gx,) = L.autograd.grad(loss, xt, create_graph=True)
        penalty = ((gx * gx).sum(1).sqrt() - 1).pow(2).mean()
        (loss + penalty).backward()
        found.append([t.grad.numpy() for t in (wt, bt)])
    for a, b_ in zip(*found):
        np.testing.assert_allclose(a, b_, rtol=1e-12, atol=1e-12)


def test_functional_matches_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    rng = np.random.default_rng(3)
    x, w, v, vw, u = (rng.standard_normal(s) for s in [(3,), (2, 3), (3,), (2, 3), (2,)])

    def f(x, w):
        return (w @ x).tanh() * (x * x).sum()

    def scalar(x, w):
        return f(x, w).sum()

    def run(L):
        AF = L.autograd.functional
        X, W, V, VW, U = (L.tensor(a) for a in (x, w, v, vw, u))
        return [AF.jacobian(f, (X, W)), AF.hessian(scalar, (X, W)), AF.vjp(f, (X, W), U),
                AF.jvp(f, (X, W), (V, VW)), AF.vhp(scalar, (X, W), (V, VW)), AF.hvp(scalar, (X, W), (V, VW)),
                AF.jacobian(lambda x: x.sin() * x[0], X), AF.hessian(lambda x: (x.exp() * x).sum(), X)]

    def flat(r):
        if isinstance(r, (tuple, list)):
            return [a for t in r for a in flat(t)]
        return [r.detach().numpy()]

    for mine, theirs in zip(run(mg), run(torch)):
        a, b = flat(mine), flat(theirs)
        assert [x.shape for x in a] == [y.shape for y in b]
        for p, q in zip(a, b):
            np.testing.assert_allclose(p, q, rtol=1e-12, atol=1e-14)


def test_functional_results_keep_their_graph_only_with_create_graph():
    x = mg.tensor([0.5, 1.5], dtype=mg.float64, requires_grad=True)
    _, hv = mg.autograd.functional.hvp(lambda t: (t ** 3).sum(), x, mg.ones(2, dtype=mg.float64))
    assert hv.grad_fn is None and np.allclose(hv.numpy(), 6 * x.numpy())
    _, hv = mg.autograd.functional.hvp(lambda t: (t ** 3).sum(), x, mg.ones(2, dtype=mg.float64),
                                       create_graph=True)
    (d,) = mg.autograd.grad(hv.sum(), x)  # d(6 x . 1)/dx = 6
    np.testing.assert_allclose(d.numpy(), [6.0, 6.0])
    with pytest.raises(RuntimeError, match="independent of input 1"):
        mg.autograd.functional.jacobian(lambda a, b: a * 2, (x, mg.ones(2)), strict=True)
    with pytest.raises(RuntimeError, match="v has 1 tensors for 2 inputs"):
        mg.autograd.functional.vhp(lambda a, b: (a * b).sum(), (x, x), mg.ones(2))


# ----------------------------------------------------------------------------- refusals


class FirstOrder(mg.Function):
    """A user op whose backward computes on arrays: fine for first order, refused beyond."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        return g * 3 * x ** 2


class CutsTheGraph(mg.Function):
    """Claims a differentiable backward but calls numpy on the saved tensor."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        return g * np.cos(x)


def test_an_op_without_a_differentiable_backward_is_refused_by_name():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    FirstOrder.apply(x).sum().backward()  # first order works
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    with pytest.raises(RuntimeError, match="the backward of FirstOrder is first order only"):
        mg.autograd.grad(FirstOrder.apply(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="a numpy function was given a tensor that requires grad"):
        mg.autograd.grad(CutsTheGraph.apply(x).sum(), x, create_graph=True)
    CutsTheGraph.apply(x).sum().backward()  # first order still fine: the guard is for graph mode only
    assert np.asarray(x).shape == (2,)  # and numpy reads a tensor as before


def test_gradgradcheck_names_a_detached_term():
    class Detached(FirstOrder):  # x ** 3, declared differentiable, its x cut from the graph
        differentiable_backward = True

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved
            return g * 3 * (x.detach() if isinstance(x, mg.Tensor) else x) ** 2

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(mg.GradcheckError, match=r"x \(input 0, shape \(2,\)\).*\n.*analytic 0") as e:
        mg.gradgradcheck(lambda x: Detached.apply(x), [x])
    assert "all zero" in str(e.value)
    assert mg.gradgradcheck(lambda x: x ** 3, [x])


def test_first_order_keeps_no_graph_of_gradients():
    from minigrad import autograd

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    before = dict(autograd.graph_grads)
    (x * x).sum().backward()
    assert x.grad.grad_fn is None and autograd.graph_grads == before


def test_a_reference_that_is_its_input_passes_the_gradient_on():
    """A fused kernel whose composition is the identity for some options (an interpolation to
    the same size): its create_graph gradient is g itself, for a leaf and for a non-leaf input."""

    class Identity(mg.Function):
        @staticmethod
        def reference(ctx, x):
            return x

        @staticmethod
        def forward(ctx, x):
            return x.copy()

        @staticmethod
        def backward(ctx, g):
            return g

    x = mg.tensor([1.0, 2.0], dtype=mg.float64, requires_grad=True)
    (g,) = mg.autograd.grad((Identity.apply(x) ** 2).sum(), x, create_graph=True)
    np.testing.assert_array_equal(mg.autograd.grad(g.sum(), x)[0].numpy(), [2.0, 2.0])
    (g,) = mg.autograd.grad((Identity.apply(x * 1) ** 3).sum(), x, create_graph=True)
    np.testing.assert_array_equal(mg.autograd.grad(g.sum(), x)[0].numpy(), [6.0, 12.0])
