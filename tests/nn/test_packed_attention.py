"""The attention kernel's shortcuts: the first key's score as the softmax reference (and its
fallback to the row max), and PackedAttention (q, k, v packed in one array, heads split inside)
against the same attention written out with separate tensors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from maskdraw import draw_mask

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.attention import dispatch
from minigrad.nn.attention.functional import (
    attention_reference,
    packed_self_attention,
    scaled_dot_product_attention,
)
from minigrad.nn.attention.one_block import _first_key_weights, _max_weights
from minigrad.nn.attention.packed import PackedAttention
from minigrad.nn.attention.tiled import TiledAttention
from minigrad.testing import arrays

# ----------------------------------------------------------------------------- first-key reference


@st.composite
def first_key_case(draw):
    """q (B, Tq, d), k, v and a bool mask that allows key 0 to every row (or None)."""
    b, tq, tk, d, dv = (draw(st.integers(1, 4)) for _ in range(5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    q, k = draw(arrays((b, tq, d), -3, 3, dtype=dtype)), draw(arrays((b, tk, d), -3, 3, dtype=dtype))
    v = draw(arrays((b, tk, dv), -3, 3, dtype=dtype))
    allowed = None
    if draw(st.booleans()):
        allowed = draw(hnp.arrays(np.bool_, draw(st.sampled_from([(tq, tk), (b, 1, tk), (1, tq, tk)]))))
        allowed[..., 0] = True
    return q, k, v, allowed


@given(first_key_case())
def test_first_key_reference_gives_the_softmax_of_the_row_max_reference(case):
    q, k, v, allowed = case
    e, out, total = _first_key_weights(q, k, v, allowed, scale=0.8)
    a = _max_weights(q, k, None, allowed, scale=0.8)  # the softmax as written: A, rows summing to 1
    tol = 1e-12 if q.dtype == np.float64 else 2e-6
    np.testing.assert_allclose(e / total, a, rtol=tol, atol=tol)
    np.testing.assert_allclose(out, a @ v, rtol=tol, atol=tol)
    assert np.all(total >= 1 - tol)  # key 0 is in every row: l >= exp(0)
    if allowed is not None:
        assert np.all(e[~np.broadcast_to(allowed, e.shape)] == 0)


@pytest.mark.parametrize("dtype, gap", [pytest.param(np.float32, 100.0, id="float32"),
                                        pytest.param(np.float64, 800.0, id="float64")])
def test_a_score_far_above_the_first_falls_back_to_the_row_max(dtype, gap):
    """exp(S - S_i0) overflows: the shortcut says so, and the op still gives the softmax."""
    q = np.array([[1.0, 0.0]], dtype)
    k = np.array([[-gap / 2, 0.0], [gap / 2, 0.0], [gap / 2 - 1, 0.0]], dtype)
    v = np.arange(6, dtype=dtype).reshape(3, 2)
    assert _first_key_weights(q, k, v, None, scale=1.0) is None
    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    out, w = scaled_dot_product_attention(*ts, scale=1.0, need_weights=True)
    e = np.exp(np.array([0.0, -1.0]))
    np.testing.assert_allclose(w.numpy(), [[0.0, *(e / e.sum())]], rtol=1e-6, atol=1e-30)
    out.backward(np.ones(out.shape, dtype))
    assert all(np.all(np.isfinite(t.grad)) for t in ts)


def test_a_masked_overflow_is_caught_and_masked_keys_stay_at_zero():
    """A masked score far above S_i0 overflows to inf, and inf * 0 is NaN: the op redoes the row."""
    q = np.array([[1.0], [1.0]], np.float32)
    k = np.array([[0.0], [1.0], [500.0]], np.float32)
    v = np.array([[1.0], [2.0], [3.0]], np.float32)
    allowed = np.array([[True, True, False], [True, False, False]])
    assert _first_key_weights(q, k, v, allowed, scale=1.0) is None
    out = scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), mask=allowed, scale=1.0)
    e = np.exp([0.0, 1.0])
    np.testing.assert_allclose(out.numpy(), [[(e @ [1.0, 2.0]) / e.sum()], [1.0]], rtol=1e-6)


def test_without_key_0_for_every_row_the_row_max_is_used():
    q, k, v = (np.ones((2, 3, 2)) for _ in range(3))
    allowed = np.array([[True, True, False], [False, True, True], [True, False, True]])
    assert _first_key_weights(q, k, v, allowed, scale=1.0) is None
    assert _first_key_weights(q, k, v, None, scale=1.0) is not None
    assert _first_key_weights(q.astype(np.float32), k, v, None, scale=1.0) is None  # mixed dtypes


# ----------------------------------------------------------------------------- PackedAttention


@st.composite
def packed_case(draw):
    """qkv (B, T, 3E), heads, a mask (none, bool or float, broadcasting to (B, H, T, T)), is_causal."""
    b, t = draw(st.integers(1, 2)), draw(st.integers(1, 5))
    heads, d = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    qkv = draw(arrays((b, t, 3 * heads * d), -2, 2))
    mask = draw_mask(draw, [(t, t), (1, t), (t, 1), (b, 1, 1, t), (1, heads, t, t)])
    return qkv, heads, mask, draw(st.booleans())


def split_heads_attention(qkv, heads, attend=attention_reference, **kw):
    """The same attention from separate q, k, v tensors: split, heads, attend, merge."""
    B, T, E3 = qkv.shape
    E = E3 // 3
    q, k, v = (qkv[:, :, i * E:(i + 1) * E].reshape(B, T, heads, E // heads).transpose(1, 2)
               for i in range(3))
    out = attend(q, k, v, **kw)
    out, w = out if kw.get("need_weights") else (out, None)
    out = out.transpose(1, 2).reshape(B, T, E)
    return (out, w) if kw.get("need_weights") else out


def _values_and_grads(fn, qkv, heads, mask, is_causal, g):
    x = mg.tensor(qkv, requires_grad=True)
    m = None if mask is None else mg.tensor(mask, requires_grad=mask.dtype.kind == "f")
    out = fn(x, heads, mask=m, is_causal=is_causal)
    out.backward(g)
    return [out.numpy(), x.grad] + ([m.grad] if m is not None and m.requires_grad else [])


@given(packed_case(), st.data())
def test_packed_matches_separate_heads_values_and_gradients(case, data):
    qkv, heads, mask, is_causal = case
    g = data.draw(arrays(qkv.shape[:2] + (qkv.shape[2] // 3,)))
    packed = _values_and_grads(packed_self_attention, qkv, heads, mask, is_causal, g)
    written = _values_and_grads(split_heads_attention, qkv, heads, mask, is_causal, g)
    assert len(packed) == len(written)
    for a, b in zip(packed, written):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@given(packed_case())
def test_packed_gradcheck(case):
    qkv, heads, mask, is_causal = case
    m = None if mask is None else mg.tensor(mask, requires_grad=mask.dtype.kind == "f")
    inputs = [qkv] + ([m] if m is not None and m.requires_grad else [])

    def fn(x, *bias):
        return packed_self_attention(x, heads, mask=bias[0] if bias else m, is_causal=is_causal, scale=0.7)

    assert mg.gradcheck(fn, inputs)


def test_packed_dropout_and_weights_match_separate_heads_after_the_same_seed():
    rng = np.random.default_rng(3)
    qkv = mg.tensor(rng.standard_normal((2, 6, 12)), requires_grad=True)
    mg.manual_seed(5)
    out, w = packed_self_attention(qkv, 2, is_causal=True, dropout_p=0.4, need_weights=True)
    mg.manual_seed(5)
    ref, ref_w = split_heads_attention(qkv, 2, scaled_dot_product_attention, is_causal=True, dropout_p=0.4,
                                       need_weights=True)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.numpy(), ref_w.numpy(), rtol=1e-12)
    assert w.shape == (2, 2, 6, 6) and np.allclose(w.numpy().sum(-1), 1)


def test_packed_long_sequences_take_the_tiled_kernel_and_save_nothing_t_by_t(monkeypatch):
    monkeypatch.setattr(dispatch, "TILED_MIN_SCORES", 0)
    rng = np.random.default_rng(4)
    T = dispatch.TILED_MIN_LENGTH + 2  # two query blocks, the second with 3 rows
    qkv, g = rng.standard_normal((1, T, 6)), rng.standard_normal((1, T, 2))
    x = mg.tensor(qkv, requires_grad=True)
    out = packed_self_attention(x, 1, is_causal=True)
    node = out.grad_fn
    assert type(node) is PackedAttention and node.drawing.kernel is TiledAttention
    assert not any(isinstance(a, np.ndarray) and a.shape[-2:] == (T, T) for a in node.saved)
    out.backward(g)
    ref_x = mg.tensor(qkv, requires_grad=True)
    ref = split_heads_attention(ref_x, 1, is_causal=True)
    ref.backward(g)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad, ref_x.grad, rtol=1e-9, atol=1e-12)


def test_packed_tiled_with_a_learned_bias_matches_separate_heads(monkeypatch):
    monkeypatch.setattr(dispatch, "TILED_MIN_SCORES", 0)
    rng = np.random.default_rng(5)
    T = dispatch.TILED_MIN_LENGTH + 2
    qkv, bias = rng.standard_normal((1, T, 12)), rng.standard_normal((T, T))
    g = rng.standard_normal((1, T, 4))
    results = []
    for fn in (packed_self_attention, split_heads_attention):
        x, b = mg.tensor(qkv, requires_grad=True), mg.tensor(bias, requires_grad=True)
        out = fn(x, 2, mask=b, is_causal=True)
        out.backward(g)
        results.append((out.numpy(), x.grad, b.grad))
        if fn is packed_self_attention:
            assert out.grad_fn.drawing.kernel is TiledAttention
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_packed_frees_its_arrays_after_backward():
    x = mg.randn(1, 4, 6, requires_grad=True)
    out = packed_self_attention(x, 1, is_causal=True)
    node = out.grad_fn
    out.sum().backward()
    assert node.saved is None  # the kernel's arrays were the node's own, and are freed with it


@pytest.mark.parametrize("qkv, heads, error, match", [
    pytest.param(np.ones((1, 2, 6)), 1, TypeError, "qkv must be a Tensor", id="numpy"),
    pytest.param(mg.ones(2, 6), 1, ValueError, r"\(B, T, 3 \* E\).*\(2, 6\)", id="2-d"),
    pytest.param(mg.ones(1, 2, 8), 1, ValueError, "divisible", id="not-3E"),
    pytest.param(mg.ones(1, 2, 6), 4, ValueError, "num_heads 4", id="heads"),
])
def test_packed_errors_name_the_function_and_shapes(qkv, heads, error, match):
    with pytest.raises(error, match=match):
        packed_self_attention(qkv, heads)


def test_packed_mask_that_does_not_broadcast_is_named():
    with pytest.raises(ValueError, match=r"packed_self_attention: mask of shape \(3, 3\)"):
        packed_self_attention(mg.ones(1, 2, 6), 1, mask=np.ones((3, 3), bool))


# ----------------------------------------------------------------------------- the layers that use it


@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "float"])
def test_multihead_self_attention_packed_equals_separate_projections(mask_kind):
    mg.manual_seed(8)
    mha = nn.MultiheadAttention(8, 2)
    x = mg.randn(2, 5, 8, dtype=np.float64)
    mha.to(np.float64)
    mask = {"none": None, "causal": None, "padding": nn.padding_mask(np.array([5, 3])),
            "float": mg.randn(5, 5, dtype=np.float64)}[mask_kind]
    is_causal = mask_kind == "causal"
    results = []
    for same_tensor in (True, False):
        mha.zero_grad()
        key = x if same_tensor else mg.tensor(x.numpy())  # another tensor: the unpacked path
        out = mha(x, key, key, mask=mask, is_causal=is_causal, need_weights=False)[0]
        out.backward(np.random.default_rng(9).standard_normal(out.shape))
        assert (type(out.grad_fn.inputs[0].grad_fn).__name__ == "PackedAttention") == same_tensor
        _, w = mha(x, key, key, mask=mask, is_causal=is_causal, need_weights=True, average_attn_weights=False)
        results.append([out.numpy(), w.numpy()] + [p.grad for p in mha.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_packed_graph_opens_into_split_attention_and_merge():
    from minigrad.viz import draw_graph

    out = packed_self_attention(mg.randn(1, 3, 12, requires_grad=True), 2, is_causal=True).sum()
    assert 'label="PackedAttention"' in draw_graph(out).source
    opened = draw_graph(out, expand_fused=True).source
    for step in ("Take q, split into 2 heads", "Take v, split into 2 heads", "MatMul q @ k^T",
                 "MaskedFill -inf where not allowed", "Softmax over keys", "Merge heads",
                 "PackedAttention (fused kernel, expanded)"):
        assert step in opened
    assert "weights\\n(1, 2, 3, 3) float32" in opened
