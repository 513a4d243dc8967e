"""Higher-order gradients of the nn kernels: the attention kernels (Attention, TiledAttention,
PackedAttention, through their composed `reference`, dropout's mask reused), softplus and elu,
dropout, the binary cross entropies, embedding and the module backward hooks' taps. Each by
gradgradcheck on hypothesis shapes and against torch's double backward (float64)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.nn.attention import dispatch
from minigrad.nn.attention.cache import KVCache
from minigrad.nn.attention.functional import packed_self_attention, tiled_attention
from minigrad.random import generator
from minigrad.testing import arrays, broadcastable_shapes, shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 3), deadline=None)


def _torch():
    return pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


def _second(L, f, xs, seed=0):
    """(first gradients, gradient of sum of their squares) of sum(v * f(xs)) for a fixed v, with
    create_graph; as numpy arrays, in either library."""
    ts = [L.tensor(x, requires_grad=True) for x in xs]
    out = f(L, *ts)
    v = np.cos(np.arange(out.numel()) + seed).reshape(tuple(out.shape))
    grads = L.autograd.grad(out, ts, L.tensor(v), create_graph=True)
    s = sum((g * g).sum() for g in grads)
    seconds = L.autograd.grad(s, ts)
    as_np = (lambda t: t.numpy()) if L is mg else (lambda t: t.detach().numpy())
    return [as_np(g) for g in grads], [as_np(t) for t in seconds]


def _same(f, xs, rtol=1e-10, atol=1e-12):
    torch = _torch()
    mine, theirs = _second(mg, f, xs), _second(torch, f, xs)
    for a, b in zip(mine[0] + mine[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return mine


def _fn(L):
    return F if L is mg else L.nn.functional


# ----------------------------------------------------------------------------- attention


@st.composite
def attention_case(draw):
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) with broadcasting lead axes, and a bool
    mask (None, or random: rows with nothing allowed included)."""
    leads = draw(broadcastable_shapes(3, max_dims=2, max_side=2))
    tq, tk, d, dv = (draw(st.integers(1, 3)) for _ in range(4))
    q = draw(arrays(leads[0] + (tq, d), -1.5, 1.5))
    k = draw(arrays(leads[1] + (tk, d), -1.5, 1.5))
    v = draw(arrays(leads[2] + (tk, dv), -1.5, 1.5))
    mask = None
    if draw(st.booleans()):
        mask = np.array(draw(st.lists(st.booleans(), min_size=tq * tk, max_size=tq * tk))).reshape(tq, tk)
    return q, k, v, mask


@fewer
@given(case=attention_case(), causal=st.booleans(), with_bias=st.booleans())
def test_attention_second_derivatives_pass_gradgradcheck(case, causal, with_bias):
    q, k, v, mask = case
    ts = [mg.tensor(x, requires_grad=True) for x in (q, k, v)]
    if with_bias and mask is None:  # a float mask: a learned bias, differentiated too
        bias = np.sin(np.arange(q.shape[-2] * k.shape[-2])).reshape(q.shape[-2], k.shape[-2])
        ts.append(mg.tensor(bias, requires_grad=True))
        assert mg.gradgradcheck(lambda a, b, c, m: F.scaled_dot_product_attention(
            a, b, c, attn_mask=m, is_causal=causal), ts)
        return
    m = None if mask is None else mg.tensor(mask)
    assert mg.gradgradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=m, is_causal=causal), ts)


@fewer
@given(case=attention_case(), causal=st.booleans(), block=st.integers(1, 2))
def test_tiled_attention_second_derivatives_pass_gradgradcheck(case, causal, block):
    q, k, v, mask = case
    ts = [mg.tensor(x, requires_grad=True) for x in (q, k, v)]
    m = None if mask is None else mg.tensor(mask)
    assert mg.gradgradcheck(
        lambda a, b, c: tiled_attention(a, b, c, m, causal, block_size=(block, block)), ts)


def _packed(L, qkv, heads, causal, bias=None):
    """Packed self-attention: minigrad's op, or torch's heads split by hand."""
    if L is mg:
        return packed_self_attention(qkv, heads, mask=bias, is_causal=causal)
    B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    q, k, v = qkv.reshape(B, T, 3, heads, E // heads).permute(2, 0, 3, 1, 4)
    if causal:  # torch takes a mask or is_causal, not both
        allowed = L.tensor(np.tri(T, T, dtype=bool))
        bias = allowed if bias is None else bias.masked_fill(~allowed, -np.inf)
    o = L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    return o.permute(0, 2, 1, 3).reshape(B, T, E)


@fewer
@given(b=st.integers(1, 2), t=st.integers(1, 3), heads=st.integers(1, 2), d=st.integers(1, 2),
       causal=st.booleans(), data=st.data())
def test_packed_attention_second_derivatives_pass_gradgradcheck(b, t, heads, d, causal, data):
    qkv = mg.tensor(data.draw(arrays((b, t, 3 * heads * d), -1.5, 1.5)), requires_grad=True)
    assert mg.gradgradcheck(lambda x: packed_self_attention(x, heads, is_causal=causal), [qkv])


def _inputs(seed=0, lead=(2,), tq=3, tk=4, d=3, dv=2):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.5, 1.5, lead + s) for s in [(tq, d), (tk, d), (tk, dv)]]


@pytest.mark.parametrize("kind", ["plain", "bool mask", "causal", "float bias", "broadcast heads"])
def test_attention_double_backward_equals_torchs(kind):
    rng = np.random.default_rng(1)
    xs = _inputs()
    if kind == "broadcast heads":
        xs = [xs[0][None].repeat(2, 0), xs[1][:1][None], xs[2][None]]  # (2, 2, ..), (1, 1, ..), (1, 2, ..)
    mask = rng.random((3, 4)) > 0.4
    mask[1] = False  # a row with nothing allowed: output 0, every gradient 0
    bias = rng.standard_normal((3, 4))

    def f(L, q, k, v, *rest):
        options = {"bool mask": {"attn_mask": L.tensor(mask)}, "causal": {"is_causal": True}}.get(kind, {})
        if kind == "float bias":
            options = {"attn_mask": rest[0]}
        return _fn(L).scaled_dot_product_attention(q, k, v, **options)

    _same(f, xs + ([bias] if kind == "float bias" else []))


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_double_backward_equals_torchs(causal):
    xs = _inputs(2, lead=(2, 2), tq=5, tk=5)

    def f(L, q, k, v):
        if L is mg:
            return tiled_attention(q, k, v, is_causal=causal, block_size=(2, 3))
        return L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    _same(f, xs)


@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_packed_attention_double_backward_equals_torchs(tiled, causal, monkeypatch):
    if tiled:  # the tiled kernel inside the packed op, at a small size
        monkeypatch.setattr(dispatch, "TILED_MIN_SCORES", 0)
        monkeypatch.setattr(dispatch, "TILED_MIN_LENGTH", 1)
    rng = np.random.default_rng(3)
    qkv, bias = rng.uniform(-1.5, 1.5, (2, 4, 12)), rng.standard_normal((4, 4))
    out = packed_self_attention(mg.tensor(qkv, requires_grad=True), 2, is_causal=causal)
    assert (out._node.tiles is not None) == tiled  # the kernel under test ran
    _same(lambda L, x, m: _packed(L, x, 2, causal, m), [qkv, bias])


def _with_keep(L, q, k, v, keep):
    """Attention with the dropout multipliers `keep` given, written out."""
    a = (q @ k.transpose(-2, -1) * (1 / np.sqrt(q.shape[-1]))).softmax(-1)
    return (a * L.tensor(keep)) @ v


def _keep_drawn(seed, shape, p):
    """The multipliers the kernels draw after manual_seed(seed) (helpers._dropout_keep)."""
    mg.manual_seed(seed)
    keep = generator().random(shape, dtype=np.float32) >= p
    return keep / (1 - p)


@pytest.mark.parametrize("packed", [False, True])
def test_attention_with_dropout_reuses_the_forwards_mask(packed):
    """Under create_graph the reference multiplies by the very mask the forward drew: the first
    gradients equal first order's, and the second derivatives torch's with that mask."""
    torch = _torch()
    p = 0.4
    if packed:
        qkv = np.random.default_rng(4).uniform(-1.5, 1.5, (2, 3, 12))
        keep = _keep_drawn(7, (2, 2, 3, 3), p)

        def f(L, x):
            if L is mg:
                mg.manual_seed(7)
                return packed_self_attention(x, 2, dropout_p=p)
            q, k, v = x.reshape(2, 3, 3, 2, 2).permute(2, 0, 3, 1, 4)
            return _with_keep(L, q, k, v, keep).permute(0, 2, 1, 3).reshape(2, 3, 4)

        xs = [qkv]
    else:
        xs = _inputs(5)
        keep = _keep_drawn(7, (2, 3, 4), p)

        def f(L, q, k, v):
            if L is mg:
                mg.manual_seed(7)
                return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
            return _with_keep(L, q, k, v, keep)

    assert (keep == 0).any() and (keep != 0).any()
    mine = _same(f, xs)
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    out = f(mg, *ts)
    v = np.cos(np.arange(out.numel())).reshape(out.shape)
    first = mg.autograd.grad(out, ts, mg.tensor(v))  # first order: the kernel's own backward
    for a, b in zip(first, mine[0]):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-14)  # another mask: far off
    assert torch is not None


def test_attention_edges_fully_masked_rows_no_keys_and_huge_scores():
    """A row with nothing allowed, no keys at all, and scores of 1e4: second derivatives stay
    finite (0 where the softmax saturates or nothing is attended), as torch's."""
    q, k, v = _inputs(6)
    mask = np.ones((3, 4), bool)
    mask[0] = False
    ts = [mg.tensor(x, requires_grad=True) for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*ts, attn_mask=mg.tensor(mask))
    gs = mg.autograd.grad((out * out).sum(), ts, create_graph=True)
    second = mg.autograd.grad(sum((g * g).sum() for g in gs), ts)
    for g in second:
        assert np.isfinite(g.numpy()).all()
    np.testing.assert_array_equal(second[0].numpy()[:, 0], 0)  # the masked query: nothing
    # no keys: the output is 0 and so is every derivative
    empty = [mg.tensor(x, requires_grad=True) for x in (q, k[:, :0], v[:, :0])]
    out = F.scaled_dot_product_attention(*empty)
    g, = mg.autograd.grad((out * out).sum() + (empty[0] ** 3).sum(), empty[:1], create_graph=True)
    h, = mg.autograd.grad((g * g).sum(), empty[:1])
    np.testing.assert_allclose(h.numpy(), 36 * q ** 3)  # from the q^3 term alone
    # huge scores: the weights saturate to one key per row
    _same(lambda L, a, b, c: _fn(L).scaled_dot_product_attention(a, b, c, scale=1e4), [q, k, v], atol=1e-9)


def test_packed_attention_with_a_kv_cache_refuses_create_graph_naming_the_op():
    cache = KVCache()
    bias = mg.tensor(np.zeros((2, 2)), requires_grad=True)
    qkv = mg.tensor(np.random.default_rng(8).standard_normal((1, 2, 6)))
    out = packed_self_attention(qkv, 1, mask=bias, cache=cache)
    with pytest.raises(RuntimeError, match="PackedAttention with a KV cache"):
        mg.autograd.grad(out.sum(), [bias], create_graph=True)


# ----------------------------------------------------------------------------- softplus, elu


def _celu(L, x):
    """celu(x, 1.3); torch's as 1.3 elu(x / 1.3), the same function: torch's own celu backward
    rounds 1 / alpha to float32 (derivatives.yaml: 1.0 / alpha.toFloat())."""
    return F.celu(x, 1.3) if L is mg else 1.3 * L.nn.functional.elu(x / 1.3)


ACTIVATIONS = [
    ("softplus", lambda L, x: _fn(L).softplus(x)),
    ("softplus beta threshold", lambda L, x: _fn(L).softplus(x, beta=2.0, threshold=3.0)),
    ("softplus negative beta", lambda L, x: _fn(L).softplus(x, beta=-1.5, threshold=2.0)),
    ("logsigmoid", lambda L, x: _fn(L).logsigmoid(x)),
    ("elu", lambda L, x: _fn(L).elu(x, 0.7)),
    ("selu", lambda L, x: _fn(L).selu(x)),
    ("celu", _celu),
]


@pytest.mark.parametrize("name, f", ACTIVATIONS, ids=[n for n, _ in ACTIVATIONS])
@fewer
@given(data=st.data())
def test_activation_second_derivatives_pass_gradgradcheck(name, f, data):
    x = data.draw(arrays(shapes(), -3, 3, away_from_zero=0.05))  # not at the kinks (0, thresholds)
    x = np.where((np.abs(x - 1.5) < 0.05) | (np.abs(x + 4 / 3) < 0.05), x + 0.1, x)  # 2x = 3, -1.5x = 2
    assert mg.gradgradcheck(lambda t: f(mg, t), [mg.tensor(x, requires_grad=True)])


@pytest.mark.parametrize("name, f", ACTIVATIONS, ids=[n for n, _ in ACTIVATIONS])
def test_activation_double_backward_equals_torchs(name, f):
    x = np.random.default_rng(9).uniform(-4, 4, (3, 5))
    _same(lambda L, t: f(L, t * t * 0.3 - t), [x])


@pytest.mark.parametrize("name, f", ACTIVATIONS, ids=[n for n, _ in ACTIVATIONS])
def test_activation_edges_kinks_and_huge_values_as_torch(name, f):
    """At 0 (elu's kink), at the thresholds themselves (softplus: beta x = threshold exactly,
    x = 20, 1.5 and -4/3), where both take torch's sides, and at +-1e4 and +-1e300 (no overflow,
    no NaN)."""
    x = np.array([0.0, 1.5, -1.5, -4 / 3, 20.0, -20.0, 1e4, -1e4, 1e300, -1e300])
    mine = _same(f, [x])
    assert all(np.isfinite(a).all() for a in mine[0] + mine[1])


# ----------------------------------------------------------------------------- dropout


def _dropped(L, x, scaled=None):
    if L is mg:
        mg.manual_seed(11)
        return F.dropout(x * x * x, 0.4)
    return x * x * x * L.tensor(scaled)


@fewer
@given(x=arrays(shapes(), -2, 2))
def test_dropout_second_derivatives_pass_gradgradcheck(x):
    assert mg.gradgradcheck(lambda t: _dropped(mg, t), [mg.tensor(x, requires_grad=True)])


def test_dropout_double_backward_equals_torchs_with_the_same_mask():
    x = np.random.default_rng(12).uniform(-2, 2, (4, 5))
    y = _dropped(mg, mg.tensor(x, requires_grad=True))
    scaled = y._node.saved[0]  # the mask the op drew, / (1 - p)
    assert (scaled == 0).any() and (scaled != 0).any()
    mine = _same(lambda L, t: _dropped(L, t, scaled), [x])
    np.testing.assert_array_equal(mine[1][0] == 0, scaled == 0)  # dropped entries: no derivative


# ----------------------------------------------------------------------------- binary cross entropy


@fewer
@given(shape=shapes(), data=st.data())
def test_bce_second_derivatives_pass_gradgradcheck(shape, data):
    p = data.draw(arrays(shape, 0.05, 0.95))
    y = data.draw(arrays(shape, 0, 1))
    x = data.draw(arrays(shape, -3, 3))
    ps, ys, xs = (mg.tensor(a, requires_grad=True) for a in (p, y, x))
    assert mg.gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), [ps, ys])
    # of a sigmoid's output: SigmoidBinaryCrossEntropy, one op of the logits
    assert mg.gradgradcheck(lambda a, b: F.binary_cross_entropy(a.sigmoid(), b, reduction="none"), [xs, ys])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_double_backward_equals_torchs(reduction):
    rng = np.random.default_rng(13)
    p, y, x = rng.uniform(0.05, 0.95, (3, 4)), rng.random((3, 4)), rng.uniform(-3, 3, (3, 4))
    w = rng.uniform(0.5, 2, (4,))
    _same(lambda L, a, b: _fn(L).binary_cross_entropy(a, b, L.tensor(w), reduction=reduction), [p, y])
    _same(lambda L, a, b: _fn(L).binary_cross_entropy(a.sigmoid(), b, reduction=reduction), [x, y])


def test_bce_edges_clamped_probabilities_and_saturated_logits():
    """p = 0 or 1: dp = g (p - y) / 1e-12 with a constant denominator, so d dp / dp = g / 1e-12
    (finite); logits of +-40, whose sigmoid rounds to 1 or 0 (clamped too): dx and its
    derivatives are 0 or finite, never NaN."""
    p = mg.tensor(np.array([0.0, 1.0, 0.0, 1.0]), requires_grad=True)
    y = mg.tensor(np.array([0.0, 0.0, 1.0, 1.0]))
    loss = F.binary_cross_entropy(p, y, reduction="sum")
    g, = mg.autograd.grad(loss, [p], create_graph=True)
    h, = mg.autograd.grad(g.sum(), [p])
    eps = float(np.float32(1e-12))
    np.testing.assert_allclose(g.numpy(), (p.numpy() - y.numpy()) / eps)
    np.testing.assert_allclose(h.numpy(), np.full(4, 1 / eps))
    x = mg.tensor(np.array([40.0, -40.0, 40.0, -40.0]), requires_grad=True)
    loss = F.binary_cross_entropy(x.sigmoid(), y, reduction="sum")
    g, = mg.autograd.grad(loss, [x], create_graph=True)
    h, = mg.autograd.grad((g * g).sum() + g.sum(), [x])
    assert np.isfinite(g.numpy()).all() and np.isfinite(h.numpy()).all()


# ----------------------------------------------------------------------------- embedding


@fewer
@given(ids_shape=shapes(max_dims=2), n=st.integers(1, 4), dim=st.integers(1, 3), data=st.data())
def test_embedding_second_derivatives_pass_gradgradcheck(ids_shape, n, dim, data):
    """Without padding_idx: the padding row's gradient is 0 by design, not the finite
    differences' (torch's double backward and the test below check it)."""
    ids = data.draw(st.lists(st.integers(0, n - 1), min_size=int(np.prod(ids_shape)),
                             max_size=int(np.prod(ids_shape))))
    ids = np.array(ids, dtype=np.int64).reshape(ids_shape)  # repeated ids included
    w = mg.tensor(data.draw(arrays((n, dim), -2, 2)), requires_grad=True)
    assert mg.gradgradcheck(lambda t: F.embedding(ids, t * t) * t[:1], [w])


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_double_backward_equals_torchs(padding_idx):
    torch = _torch()
    rng = np.random.default_rng(14)
    w = rng.standard_normal((5, 3))
    ids = np.array([[0, 1, 1], [4, 1, 0]])
    mine = _same(lambda L, t: _fn(L).embedding(
        L.tensor(ids) if L is torch else ids, t * t, padding_idx=padding_idx) * t[:1], [w])
    if padding_idx is not None:  # the padding row gets nothing through the lookup, of any order
        assert np.isfinite(mine[1][0]).all()


def test_embedding_padding_row_gets_no_gradient_of_any_order():
    w = mg.tensor(np.random.default_rng(15).standard_normal((3, 2)), requires_grad=True)
    out = F.embedding(np.array([0, 1, 1, 2]), w, padding_idx=1)
    g, = mg.autograd.grad((out ** 3).sum(), [w], create_graph=True)
    h, = mg.autograd.grad((g * g).sum(), [w])
    np.testing.assert_array_equal(g.numpy()[1], 0)
    np.testing.assert_array_equal(h.numpy()[1], 0)
    assert (h.numpy()[[0, 2]] != 0).all()


# ----------------------------------------------------------------------------- module backward hooks


def _hooked(L, x0, w, b, seen):
    lin = (nn if L is mg else L.nn).Linear(3, 4)
    lin.weight = (nn.Parameter if L is mg else L.nn.Parameter)(L.tensor(w))
    lin.bias = (nn.Parameter if L is mg else L.nn.Parameter)(L.tensor(b))
    lin.register_full_backward_hook(lambda m, gi, go: (seen.append((gi, go)), (gi[0] * 2,))[1])
    x = L.tensor(x0, requires_grad=True)
    out = lin(x).tanh() ** 3
    g, = L.autograd.grad(out.sum(), [x], create_graph=True)
    h, = L.autograd.grad((g * g).sum(), [x])
    return (g.numpy() if L is mg else g.detach().numpy()), h.numpy()


def test_backward_hooks_under_create_graph_see_graph_tensors_and_equal_torch():
    """The hooks get the gradients as Tensors of the graph, what they return stays in it, and
    they fire again in the second backward (which goes through the module's forward): as torch."""
    torch = _torch()
    rng = np.random.default_rng(16)
    x0, w, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    seen, seen_t = [], []
    mine, theirs = _hooked(mg, x0, w, b, seen), _hooked(torch, x0, w, b, seen_t)
    for a, c in zip(mine, theirs):
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
    assert len(seen) == len(seen_t) == 2
    gi, go = seen[0]
    assert isinstance(gi[0], mg.Tensor) and gi[0].requires_grad and go[0].requires_grad
