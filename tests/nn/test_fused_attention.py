"""Scaled dot-product attention: the fused op against its composed twin, gradients, masks, edges."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.nn.attention.functional import (
    attention_reference,
    scaled_dot_product_attention,
    tiled_attention,
)
from minigrad.testing import arrays, attention_cases, attention_grads

sdpa = scaled_dot_product_attention


@given(attention_cases(), st.data())
def test_fused_matches_reference_values_and_gradients(case, data):
    q, k, v, mask, is_causal = case
    out_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], (mask if mask is not None
                                    else np.empty(())).shape[:-2]) + (q.shape[-2], v.shape[-1])
    g = data.draw(arrays(out_shape))
    fused, fused_grads = attention_grads(sdpa, q, k, v, mask, g, is_causal=is_causal)
    ref, ref_grads = attention_grads(attention_reference, q, k, v, mask, g, is_causal=is_causal)
    np.testing.assert_allclose(fused, ref, rtol=1e-10, atol=1e-12)
    assert len(fused_grads) == len(ref_grads)
    for a, b in zip(fused_grads, ref_grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@given(attention_cases(max_len=2, max_dim=2))
def test_fused_gradcheck(case):
    q, k, v, mask, is_causal = case
    m = None if mask is None else mg.tensor(mask, requires_grad=mask.dtype.kind == "f")
    inputs = [q, k, v] + ([m] if m is not None and m.requires_grad else [])

    def fn(q, k, v, *bias):
        return sdpa(q, k, v, mask=bias[0] if bias else m, is_causal=is_causal, scale=0.7)

    assert mg.gradcheck(fn, inputs)


def test_fused_gradcheck_with_dropout_and_fixed_seed():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(s) for s in [(2, 3, 4), (2, 4, 4), (2, 4, 3)])

    def fn(q, k, v):
        mg.manual_seed(7)  # the same dropout mask at every evaluation
        return sdpa(q, k, v, dropout_p=0.3)

    assert mg.gradcheck(fn, [q, k, v])


def test_dropout_matches_reference_after_same_seed():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal(s) for s in [(2, 5, 4), (2, 6, 4), (2, 6, 3)])
    g = rng.standard_normal((2, 5, 3))
    mg.manual_seed(3)
    fused, fused_grads = attention_grads(sdpa, q, k, v, None, g, is_causal=True, dropout_p=0.5)
    mg.manual_seed(3)
    ref, ref_grads = attention_grads(attention_reference, q, k, v, None, g, is_causal=True, dropout_p=0.5)
    np.testing.assert_allclose(fused, ref, rtol=1e-10, atol=1e-12)
    for a, b in zip(fused_grads, ref_grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    mg.manual_seed(4)
    other = sdpa(*(mg.tensor(a) for a in (q, k, v)), is_causal=True, dropout_p=0.5)
    assert not np.allclose(other.numpy(), fused)  # a different seed drops other weights


@pytest.mark.parametrize(
    "p, expected",
    [pytest.param(0.0, "all", id="p=0-keeps-all"), pytest.param(1.0, "none", id="p=1-drops-all")],
)
def test_dropout_extremes(p, expected):
    mg.manual_seed(20)
    q, k, v = mg.randn(2, 3, 4), mg.randn(2, 5, 4), mg.randn(2, 5, 2)
    out = sdpa(q, k, v, dropout_p=p)
    if expected == "all":
        np.testing.assert_allclose(out.numpy(), sdpa(q, k, v).numpy())
    else:
        assert np.all(out.numpy() == 0)


def test_dropout_keeps_expected_fraction_and_rescales():
    mg.manual_seed(0)
    q, k = mg.zeros(1, 200, 4), mg.zeros(1, 200, 4)  # uniform weights 1/200
    v = mg.ones(1, 200, 1)
    out = sdpa(q, k, v, dropout_p=0.25)  # each output = (kept count / 200) / 0.75
    kept = out.numpy() * 0.75 * 200
    np.testing.assert_allclose(kept, np.round(kept), atol=1e-3)
    assert abs(out.numpy().mean() - 1.0) < 0.02


def test_lecture_worked_example():
    q = mg.tensor([[1.0, 1.0]], dtype=mg.float64)
    k = mg.tensor([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]], dtype=mg.float64)
    v = mg.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=mg.float64)
    for fn in (sdpa, attention_reference):
        out, weights = fn(q, k, v, need_weights=True)
        np.testing.assert_array_equal(np.round(weights.numpy(), 2), [[0.67, 0.16, 0.16]])
        np.testing.assert_array_equal(np.round(out.numpy(), 3), [[0.836, 0.327]])


def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one():
    mg.manual_seed(21)
    rng = np.random.default_rng(5)
    q, k, v = mg.randn(2, 3, 4, 4), mg.randn(2, 3, 6, 4), mg.randn(2, 3, 6, 5)
    mask = rng.random((2, 1, 4, 6)) < 0.6
    mask[..., 0] = True  # every row keeps a key
    out, w = sdpa(q, k, v, mask=mg.tensor(mask), need_weights=True)
    assert w.shape == (2, 3, 4, 6) and out.shape == (2, 3, 4, 5)
    assert np.all(w.numpy()[~np.broadcast_to(mask, w.shape)] == 0)
    np.testing.assert_allclose(w.numpy().sum(-1), 1, rtol=1e-6)
    assert not w.requires_grad  # the fused path returns detached weights


def test_fully_masked_rows_give_zeros_and_zero_gradient():
    mg.manual_seed(22)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    ts = [mg.randn(2, *s, dtype=np.float64, requires_grad=True) for s in [(3, 2), (4, 2), (4, 3)]]
    for fn in (sdpa, attention_reference):
        for t in ts:
            t.grad = None
        out, w = fn(*ts, mask=mask, need_weights=True)
        out.backward(np.ones(out.shape))
        assert np.all(np.isfinite(out.numpy())) and np.all(out.numpy()[:, 1] == 0)
        assert np.all(w.numpy()[:, 1] == 0)
        assert np.all(ts[0].grad[:, 1] == 0)  # that query gets no gradient
        assert all(np.all(np.isfinite(t.grad)) for t in ts)


@pytest.mark.parametrize(
    "dtype", [pytest.param(np.float32, id="float32"), pytest.param(np.float64, id="float64")]
)
def test_huge_logits_are_stable(dtype):
    q = mg.tensor(np.array([[100.0, 0.0], [0.0, -100.0]], dtype=dtype), requires_grad=True)
    k = mg.tensor(np.array([[100.0, 0.0], [99.0, 0.0], [0.0, 100.0]], dtype=dtype), requires_grad=True)
    v = mg.tensor(np.arange(6, dtype=dtype).reshape(3, 2), requires_grad=True)
    out, w = sdpa(q, k, v, scale=1.0, need_weights=True)  # scores up to 1e4
    assert out.dtype == dtype
    np.testing.assert_allclose(w.numpy(), [[1, 0, 0], [0.5, 0.5, 0]], atol=1e-6)
    out.backward(np.ones(out.shape, dtype=dtype))
    assert all(np.all(np.isfinite(t.grad)) for t in (q, k, v))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [1.0, 400.0], ids=["plain", "overflowing"])
def test_one_query_against_many_keys(dtype, spread):
    """A generated token against a KV cache (Tq = 1, multiplied from views of K and V): values
    and gradients as the reference's; scores far above the first key's overflow exp and the
    kernel starts again from the row max."""
    rng = np.random.default_rng(8)
    q = rng.standard_normal((2, 3, 1, 4)).astype(dtype)
    k = (rng.standard_normal((2, 3, 37, 4)) * np.linspace(0, spread, 37)[:, None]).astype(dtype)
    v, g = rng.standard_normal((2, 3, 37, 5)).astype(dtype), rng.standard_normal((2, 3, 1, 5)).astype(dtype)
    mask = np.ones((1, 37), dtype=bool)
    mask[:, 20:25] = False
    # Scores reach about 10 * spread; both kernels recompute exp from them to that precision.
    tol = (1e-5 if dtype == np.float32 else 1e-10) * max(1.0, spread)
    for m in (None, mask):
        fused, fused_grads = attention_grads(sdpa, q, k, v, m, g, is_causal=False)
        ref, ref_grads = attention_grads(attention_reference, q, k, v, m, g, is_causal=False)
        assert fused.dtype == dtype and np.isfinite(fused).all()
        np.testing.assert_allclose(fused, ref, rtol=tol, atol=tol)
        for a, b in zip(fused_grads, ref_grads):
            assert np.isfinite(a).all()
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_causal_property_later_tokens_do_not_change_earlier_outputs():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((2, 5, 3)) for _ in range(3))
    base = sdpa(mg.tensor(q), mg.tensor(k), mg.tensor(v), is_causal=True).numpy()
    for t in range(5):
        k2, v2 = k.copy(), v.copy()
        k2[:, t + 1:] += 10 * rng.standard_normal(k2[:, t + 1:].shape)
        v2[:, t + 1:] += 10 * rng.standard_normal(v2[:, t + 1:].shape)
        out = sdpa(mg.tensor(q), mg.tensor(k2), mg.tensor(v2), is_causal=True).numpy()
        np.testing.assert_allclose(out[:, : t + 1], base[:, : t + 1], rtol=1e-12)


@pytest.mark.parametrize("tq, tk", [pytest.param(3, 3, id="square"), pytest.param(2, 4, id="wide"),
                                    pytest.param(4, 2, id="tall")])
def test_is_causal_is_top_left_tril(tq, tk):
    mg.manual_seed(23)
    q, k, v = mg.randn(tq, 3), mg.randn(tk, 3), mg.randn(tk, 2)
    _, w = sdpa(q, k, v, is_causal=True, need_weights=True)
    np.testing.assert_array_equal(w.numpy() > 0, np.tril(np.ones((tq, tk), dtype=bool)))
    explicit = sdpa(q, k, v, mask=np.tril(np.ones((tq, tk), dtype=bool)))
    np.testing.assert_allclose(sdpa(q, k, v, is_causal=True).numpy(), explicit.numpy())


def test_float_mask_is_added_and_neg_inf_masks():
    mg.manual_seed(24)
    q, k, v = mg.randn(2, 3), mg.randn(4, 3), mg.randn(4, 2)
    bias = np.array([0.0, -np.inf, 1.5, 0.0], dtype=np.float32)
    _, w = sdpa(q, k, v, mask=bias, need_weights=True)
    scores = q.numpy() @ k.numpy().T / np.sqrt(3) + bias
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(w.numpy(), expected / expected.sum(-1, keepdims=True), rtol=1e-5)
    assert np.all(w.numpy()[:, 1] == 0)


@pytest.mark.parametrize(
    "shapes, mask, match",
    [
        pytest.param([(2, 3), (4, 5), (4, 2)], None, "feature size", id="q-k-features"),
        pytest.param([(2, 3), (4, 3), (5, 2)], None, "number of keys", id="k-v-keys"),
        pytest.param([(2, 2, 3), (3, 4, 3), (4, 2)], None, "leading", id="batch-axes"),
        pytest.param([(3,), (4, 3), (4, 2)], None, "q needs shape", id="1-d"),
        pytest.param([(2, 3), (4, 3), (4, 2)], np.ones((3, 4), bool), r"\(3, 4\).*\(2, 4\)", id="mask-shape"),
    ],
)
def test_clear_errors(shapes, mask, match):
    q, k, v = (mg.randn(*s) for s in shapes)
    with pytest.raises(ValueError, match=match):
        sdpa(q, k, v, mask=mask)


def test_integer_mask_is_a_type_error():
    with pytest.raises(TypeError, match="bool"):
        sdpa(mg.randn(2, 3), mg.randn(4, 3), mg.randn(4, 2), mask=np.ones((2, 4), dtype=np.int64))


# ----------------------------------------------------------------------------- extremes


def _overflow_case(dtype):
    """A score ~85 (float32; ~705 in float64) above the row's first: exp stays finite but
    E V = exp(gap) * 1000 does not."""
    gap = 85.0 if dtype == np.float32 else 705.0
    q = np.array([[[gap]]], dtype)
    k, v = np.array([[[0.0], [1.0]]], dtype), np.array([[[0.0], [1000.0]]], dtype)
    return q, k, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("how", ["plain", "causal-2-queries", "bool-mask", "float-mask"])
def test_a_score_far_above_the_first_gives_the_softmax_not_inf(dtype, how):
    q, k, v = _overflow_case(dtype)
    kw = dict(scale=1.0)
    if how == "causal-2-queries":  # query 1 sees both keys, query 0 only key 0
        q = np.concatenate([q, q], axis=1)
        kw["is_causal"] = True
    elif how == "bool-mask":
        kw["mask"] = np.array([[True, True]])
    elif how == "float-mask":
        kw["mask"] = np.zeros((1, 2), dtype)
    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = sdpa(*ts, **kw)
    out.backward(np.ones(out.shape, dtype))
    ref_ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    ref = attention_reference(*ref_ts, **kw)
    ref.backward(np.ones(ref.shape, dtype))
    np.testing.assert_allclose(out.numpy()[..., -1, :], [[1000.0]], rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    for t, r in zip(ts, ref_ts):
        assert np.isfinite(t.grad).all()
        np.testing.assert_allclose(t.grad, r.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_multihead_attention_at_a_large_score_gap_is_finite(dtype):
    """nn.MultiheadAttention (the packed kernel) where one head's scores differ by ~85 / ~705."""
    import minigrad.nn as nn

    mg.manual_seed(0)
    mha = nn.MultiheadAttention(2, 1)
    for p in mha.parameters():
        p.data = p.numpy().astype(dtype)
    x = np.zeros((1, 3, 2), dtype)
    x[0, :, 0] = [0.0, 1.0, 1000.0]  # values grow with the scores
    gap = 85.0 if dtype == np.float32 else 705.0
    for p in mha.parameters():
        p.numpy()[...] = 0
    mha.q_proj.weight.numpy()[0, 1] = gap * np.sqrt(2)  # q = gap sqrt(2) from feature 1; scale 1/sqrt(2)
    mha.k_proj.weight.numpy()[0, 0] = 1 / 1000  # k_j = x_j0 / 1000: scores 0, gap / 1000, gap
    mha.v_proj.weight.numpy()[0, 0] = 1.0  # v_j = x_j0: 0, 1, 1000
    mha.out_proj.weight.numpy()[...] = np.eye(2, dtype=dtype)
    x[0, :, 1] = 1.0
    xt = mg.tensor(x, requires_grad=True)
    out = mha(xt, xt, xt)
    out = out[0] if isinstance(out, tuple) else out
    out.backward(np.ones(out.shape, dtype))
    np.testing.assert_allclose(out.numpy()[0, :, 0], 1000.0, rtol=1e-6)  # every query: all on key 2
    assert np.isfinite(xt.grad).all()
    assert all(np.isfinite(p.grad).all() for p in mha.parameters())


ALL_PATHS = pytest.mark.parametrize("fn", [sdpa, attention_reference, tiled_attention],
                                    ids=["sdpa", "reference", "tiled"])


@ALL_PATHS
@pytest.mark.parametrize("causal", [False, True])
def test_attention_over_zero_keys_gives_zeros_and_zero_gradients(fn, causal):
    q = mg.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), requires_grad=True)
    k, v = (mg.tensor(np.zeros((2, 0, f)), requires_grad=True) for f in (4, 5))
    out = fn(q, k, v, is_causal=causal)
    assert out.shape == (2, 3, 5) and np.all(out.numpy() == 0)
    out.backward(np.ones(out.shape))
    assert q.grad.shape == (2, 3, 4) and np.all(q.grad == 0)
    assert k.grad.shape == (2, 0, 4) and v.grad.shape == (2, 0, 5)


@ALL_PATHS
def test_attention_with_zero_features_is_the_mean_of_the_values(fn):
    """d = 0: every score is an empty sum, 0, so the softmax is uniform (as in PyTorch)."""
    v0 = np.random.default_rng(1).standard_normal((2, 4, 5))
    q, k = (mg.tensor(np.zeros((2, t, 0)), requires_grad=True) for t in (3, 4))
    v = mg.tensor(v0, requires_grad=True)
    out = fn(q, k, v)
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(v0.mean(1, keepdims=True), (2, 3, 5)), rtol=1e-12)
    out.backward(np.ones(out.shape))
    assert q.grad.shape == (2, 3, 0) and k.grad.shape == (2, 4, 0)
    np.testing.assert_allclose(v.grad, np.full((2, 4, 5), 3 / 4))


def test_zero_features_match_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")
    v0 = np.random.default_rng(2).standard_normal((1, 4, 3))
    want = torch.nn.functional.scaled_dot_product_attention(
        torch.zeros(1, 2, 0, dtype=torch.float64), torch.zeros(1, 4, 0, dtype=torch.float64),
        torch.tensor(v0)).numpy()
    got = sdpa(mg.tensor(np.zeros((1, 2, 0))), mg.tensor(np.zeros((1, 4, 0))), mg.tensor(v0)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ----------------------------------------------------------------------------- mask mistakes


@pytest.mark.parametrize("fn", [sdpa, attention_reference], ids=["sdpa", "reference"])
def test_a_float_mask_of_only_0_and_1_warns(fn):
    q, k, v = mg.randn(2, 3), mg.randn(4, 3), mg.randn(4, 2)
    ones_and_zeros = np.tri(2, 4, dtype=np.float32)  # meant as "True = may attend"
    with pytest.warns(UserWarning, match=r"only 0s and 1s.*masks nothing.*bool mask \(True = may attend"):
        fn(q, k, v, mask=ones_and_zeros)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a real float mask, with -inf and biases, is quiet
        fn(q, k, v, mask=np.where(ones_and_zeros > 0, 0.0, -np.inf).astype(np.float32))
        fn(q, k, v, mask=np.zeros((2, 4), np.float32))
        fn(q, k, v, mask=np.full((2, 4), 0.5, np.float32))


def test_a_float_mask_of_0_and_1_warns_in_every_entry_point():
    import minigrad.nn as nn
    import minigrad.nn.functional as F

    mask = np.tri(3, 3, dtype=np.float32)
    with pytest.warns(UserWarning, match="packed_self_attention: the float mask holds only 0s and 1s"):
        F.packed_self_attention(mg.randn(1, 3, 6), 1, mask=mask)
    with pytest.warns(UserWarning, match="tiled_attention: the float mask"):
        F.tiled_attention(mg.randn(3, 2), mg.randn(3, 2), mg.randn(3, 2), mask=mask)
    with pytest.warns(UserWarning, match="masked_softmax: the float mask"):
        nn.masked_softmax(mg.randn(3, 3), mask)


def test_integer_mask_error_names_both_fixes():
    import minigrad.nn as nn

    advice = r"bool mask \(True = may attend.*-inf where attending is forbidden"
    with pytest.raises(TypeError, match=r"scaled_dot_product_attention: .*int64; use a " + advice):
        sdpa(mg.randn(2, 3), mg.randn(4, 3), mg.randn(4, 2), mask=np.ones((2, 4), dtype=np.int64))
    with pytest.raises(TypeError, match=r"masked_softmax: .*int64; use a " + advice):
        nn.masked_softmax(mg.randn(2, 4), np.ones((2, 4), dtype=np.int64))
