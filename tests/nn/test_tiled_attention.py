"""The tiled attention kernel against the composed reference: values, every gradient, masks, the
causal diagonal (also with Tq < Tk), edges, what it saves, and when scaled_dot_product_attention uses it."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.nn.attention import dispatch
from minigrad.nn.attention.functional import (
    attention_reference,
    scaled_dot_product_attention,
    tiled_attention,
)
from minigrad.nn.attention.one_block import Attention
from minigrad.nn.attention.tiled import TiledAttention
from minigrad.testing import arrays, attention_cases, attention_grads

blocks = st.tuples(st.integers(1, 4), st.integers(1, 4))  # tiny tiles: T is rarely a multiple


def attention_case(max_side=7):
    """An attention case of minigrad.testing (q, k, v, mask, is_causal) and a block size."""
    return st.tuples(attention_cases(max_len=max_side), blocks).map(lambda c: (*c[0], c[1]))


def _compare(case, g, dtype, rtol, atol):
    q, k, v, mask, is_causal, block = case
    q, k, v, g = (a.astype(dtype) for a in (q, k, v, g))
    mask = mask if mask is None or mask.dtype == bool else mask.astype(dtype)
    tiled, tiled_grads = attention_grads(tiled_attention, q, k, v, mask, g, is_causal=is_causal,
                                         block_size=block)
    ref, ref_grads = attention_grads(attention_reference, q, k, v, mask, g, is_causal=is_causal)
    assert tiled.dtype == dtype and tiled.shape == ref.shape
    np.testing.assert_allclose(tiled, ref, rtol=rtol, atol=atol)
    assert len(tiled_grads) == len(ref_grads)
    for a, b in zip(tiled_grads, ref_grads):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _upstream(data, case):
    q, k, v, mask = case[:4]
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                               () if mask is None else mask.shape[:-2])
    return data.draw(arrays(lead + (q.shape[-2], v.shape[-1])))


@given(attention_case(), st.data())
def test_tiled_matches_reference_float64(case, data):
    _compare(case, _upstream(data, case), np.float64, rtol=1e-10, atol=1e-12)


@given(attention_case(), st.data())
def test_tiled_matches_reference_float32(case, data):
    _compare(case, _upstream(data, case), np.float32, rtol=1e-5, atol=1e-5)


@given(st.integers(1, 6), st.integers(0, 6), st.integers(1, 4), st.integers(1, 4), st.data())
def test_causal_diagonal_with_fewer_queries_than_keys(tq, extra, bq, bk, data):
    """The KV cache case: query i sits at position Tk - Tq + i and sees keys up to there."""
    tk = tq + extra
    q, k, v = (data.draw(arrays((2, t, 3), -2, 2)) for t in (tq, tk, tk))
    g = data.draw(arrays((2, tq, 3)))
    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    TiledAttention.apply(*ts, causal_offset=tk - tq, scale=0.5, block_q=bq, block_k=bk).backward(g)
    allowed = mg.tensor(np.tri(tq, tk, tk - tq, dtype=bool))
    ref, ref_grads = attention_grads(attention_reference, q, k, v, allowed.numpy(), g, scale=0.5)
    for t, want in zip(ts, ref_grads):
        np.testing.assert_allclose(t.grad, want, rtol=1e-10, atol=1e-12)
    out = TiledAttention.apply(*(mg.tensor(a) for a in (q, k, v)), causal_offset=tk - tq, scale=0.5,
                               block_q=bq, block_k=bk)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    # the same mask given as a bool array takes the general mask path and agrees
    again = tiled_attention(*(mg.tensor(a) for a in (q, k, v)), mask=allowed, scale=0.5, block_size=(bq, bk))
    np.testing.assert_allclose(again.numpy(), ref, rtol=1e-10, atol=1e-12)


@given(attention_case(max_side=3))
def test_tiled_gradcheck(case):
    q, k, v, mask, is_causal, block = case
    m = None if mask is None else mg.tensor(mask, requires_grad=mask.dtype.kind == "f")
    inputs = [q, k, v] + ([m] if m is not None and m.requires_grad else [])

    def fn(q, k, v, *bias):
        return tiled_attention(q, k, v, mask=bias[0] if bias else m, is_causal=is_causal, scale=0.7,
                               block_size=block)

    assert mg.gradcheck(fn, inputs)


@given(attention_case(max_side=6), st.lists(st.booleans(), min_size=4, max_size=4), st.data())
def test_gradients_of_some_inputs_only(case, wanted, data):
    """Backward computes only what is asked for (dV alone skips dS): each input that requires
    grad gets the reference's gradient, the others none."""
    q, k, v, mask, is_causal, block = case
    g = _upstream(data, case)
    float_mask = mask is not None and mask.dtype.kind == "f"
    ts = [mg.tensor(a, requires_grad=w) for a, w in zip((q, k, v), wanted)]
    m = None if mask is None else mg.tensor(mask, requires_grad=float_mask and wanted[3])
    assume(any(t.requires_grad for t in ts + [m] if t is not None))
    tiled_attention(*ts, mask=m, is_causal=is_causal, block_size=block).backward(g)
    _, ref_grads = attention_grads(attention_reference, q, k, v, mask, g, is_causal=is_causal)
    for t, want in zip(ts + [m], ref_grads + [None]):
        if t is None or not t.requires_grad:
            assert t is None or t.grad is None
        else:
            np.testing.assert_allclose(t.grad, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("block", [(1, 1), (2, 3), (64, 64)], ids=["1x1", "2x3", "one-tile"])
def test_fully_masked_rows_give_zeros_and_zero_gradient(block):
    rng = np.random.default_rng(0)
    mask = np.ones((5, 4), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    mask[3:, 3] = False  # with the causal diagonal, no query sees key 3
    q, k, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 2))
    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = tiled_attention(*ts, mask=mask, is_causal=True, block_size=block)  # row 0 keeps key 0 only
    out.backward(rng.standard_normal(out.shape))
    assert np.all(out.numpy()[:, 1] == 0) and np.all(ts[0].grad[:, 1] == 0)
    assert all(np.isfinite(t.grad).all() for t in ts)
    assert np.all(ts[1].grad[:, 3] == 0) and np.all(ts[2].grad[:, 3] == 0)  # key 3: seen by none
    np.testing.assert_allclose(out.numpy()[:, 0], v[:, 0], rtol=1e-12)  # a single allowed key: its value


@pytest.mark.parametrize("step", [0.5, 3.0, 40.0], ids=["slow", "fast", "overflowing"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scores_rising_from_tile_to_tile(step, dtype):
    """Later keys score ever higher: the running max moves at every tile (and a tile computed
    against the old max would overflow when the step is large)."""
    rng = np.random.default_rng(2)
    q = mg.tensor(np.ones((2, 7, 3), dtype), requires_grad=True)
    k = mg.tensor(step * np.arange(11, dtype=dtype)[:, None] * np.ones((2, 1, 3), dtype), requires_grad=True)
    v = mg.tensor(rng.standard_normal((2, 11, 2)).astype(dtype), requires_grad=True)
    g = rng.standard_normal((2, 7, 2)).astype(dtype)
    # Scores reach 30 * step: float32 recomputes A from them to about 1e-7 * 30 * step.
    tol = 1e-10 if dtype == np.float64 else 1e-5 * max(1.0, step)
    results = []
    for fn, kw in ((tiled_attention, {"block_size": (2, 3)}), (attention_reference, {})):
        for t in (q, k, v):
            t.grad = None
        out = fn(q, k, v, mask=np.tri(7, 11, 4, dtype=bool), scale=1.0, **kw)
        out.backward(g)
        results.append([out.numpy()] + [t.grad.numpy().copy() for t in (q, k, v)])
    for a, b in zip(*results):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_float_mask_forbidding_the_first_key():
    """-inf in a float mask at key 0: that row has no finite first score to start from."""
    rng = np.random.default_rng(3)
    bias = rng.standard_normal((5, 7))
    bias[2, 0] = bias[3, :] = -np.inf  # row 3: nothing allowed at all
    q, k, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 7, 3)), rng.standard_normal((2, 7, 2))
    g = rng.standard_normal((2, 5, 2))
    tiled, tiled_grads = attention_grads(tiled_attention, q, k, v, bias, g, block_size=(2, 3))
    ref, ref_grads = attention_grads(attention_reference, q, k, v, bias, g)
    np.testing.assert_allclose(tiled, ref, rtol=1e-10, atol=1e-12)
    assert np.all(tiled[:, 3] == 0)
    for a, b in zip(tiled_grads, ref_grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_huge_logits_stay_finite():
    rng = np.random.default_rng(1)
    q, k, v = (mg.tensor(rng.standard_normal((1, 9, 4)).astype(np.float32) * 30) for _ in range(3))
    out = tiled_attention(q, k, v, is_causal=True, scale=100.0, block_size=(2, 3))  # scores ~ 1e5
    ref = attention_reference(q, k, v, is_causal=True, scale=100.0)
    assert np.isfinite(out.numpy()).all()
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-4)


def test_saved_arrays_hold_nothing_of_size_tq_by_tk():
    tq = tk = 48  # with d = 4, every (Tq, d) or (Tk, d) array is far smaller than Tq x Tk
    ts = [mg.randn(2, 3, t, 4, requires_grad=True) for t in (tq, tk, tk)]
    out = tiled_attention(*ts, is_causal=True, block_size=(8, 16))
    node = out._node
    assert isinstance(node, TiledAttention)
    arrays_kept = [a for a in node.saved if isinstance(a, np.ndarray)]
    arrays_kept += [a for a in vars(node.tiles).values() if isinstance(a, np.ndarray)]
    assert arrays_kept and all(a.size < tq * tk for a in arrays_kept), [a.shape for a in arrays_kept]
    # the untiled kernel, by contrast, keeps A
    node = scaled_dot_product_attention(*ts, is_causal=True, dropout_p=0.1)._node
    assert any(isinstance(a, np.ndarray) and a.shape[-2:] == (tq, tk) for a in node.saved)


@pytest.mark.parametrize(
    "options, kernel",
    [
        pytest.param({}, TiledAttention, id="long: tiled"),
        pytest.param({"dropout_p": 0.2}, Attention, id="dropout: untiled"),
        pytest.param({"need_weights": True}, Attention, id="need_weights: untiled"),
    ],
)
def test_scaled_dot_product_attention_picks_the_kernel(monkeypatch, options, kernel):
    monkeypatch.setattr(dispatch, "TILED_MIN_SCORES", 2 * 36)  # (B, H) = (1, 2), T = 6
    monkeypatch.setattr(dispatch, "TILED_MIN_LENGTH", 5)
    ts = [mg.randn(1, 2, 6, 3, requires_grad=True) for _ in range(3)]
    out = scaled_dot_product_attention(*ts, is_causal=True, **options)
    out = out[0] if isinstance(out, tuple) else out
    assert type(out._node) is kernel
    short = scaled_dot_product_attention(*(t[..., :5, :] for t in ts), is_causal=True)
    assert type(short._node) is Attention  # 5 x 5 scores: below the threshold
    monkeypatch.setattr(dispatch, "TILED_MIN_LENGTH", 7)
    assert type(scaled_dot_product_attention(*ts, is_causal=True)._node) is Attention  # T = 6: too short


def test_record_attention_uses_the_untiled_kernel(monkeypatch):
    import minigrad.nn as nn

    monkeypatch.setattr(dispatch, "TILED_MIN_SCORES", 1)
    ts = [mg.randn(1, 6, 3) for _ in range(3)]
    with nn.record_attention() as maps:
        scaled_dot_product_attention(*ts, is_causal=True)
    assert len(maps) == 1


def test_bad_block_size_is_a_clear_error():
    ts = [mg.randn(4, 3) for _ in range(3)]
    with pytest.raises(ValueError, match=r"tiled attention: block sizes must be positive, got \(0, 2\)"):
        tiled_attention(*ts, block_size=(0, 2))


def test_functional_exports_the_tiled_kernel():
    import minigrad.nn.functional as F

    ts = [mg.randn(2, 5, 3, dtype=np.float64, requires_grad=True) for _ in range(3)]
    out = F.tiled_attention(*ts, is_causal=True, block_size=(2, 2))
    assert type(out._node) is TiledAttention
    np.testing.assert_allclose(out.numpy(), F.scaled_dot_product_attention(*ts, is_causal=True).numpy(),
                               rtol=1e-12, atol=1e-12)
