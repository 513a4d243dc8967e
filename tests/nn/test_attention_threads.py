"""The attention kernels split over threads (heads for the tiled kernel, batch rows for the
one-block kernel) give the 1-thread outputs and gradients to the bit, for any thread count,
with masks, bias, broadcasting and extreme scores; the fast paths still match the reference."""

import functools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.nn.attention.functional import (
    attention_reference,
    packed_self_attention,
    scaled_dot_product_attention,
    tiled_attention,
)
from minigrad.testing import attention_grads, split_threads

threads = functools.partial(split_threads, products=False)  # whatever the size; products whole


def _same_for_all_threads(fn, q, k, v, mask, g, counts=(1, 2, 3), **options):
    """attention_grads(fn, ...) at each thread count: all bit-identical to the first; returns it."""
    results = []
    for n in counts:
        with threads(n):
            results.append(attention_grads(fn, q, k, v, mask, g, **options))
    (out, grads), rest = results[0], results[1:]
    for other_out, other_grads in rest:
        assert other_out.dtype == out.dtype and other_out.shape == out.shape
        np.testing.assert_array_equal(other_out, out)
        assert len(other_grads) == len(grads)
        for a, b in zip(other_grads, grads):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    return out, grads


@st.composite
def cases(draw, max_t=20):
    """(q, k, v, mask, is_causal, g) with (B, H) in 1..3, T in 1..max_t, d in 1..5, float64."""
    sides = ((1, 3), (1, 3), (1, max_t), (1, max_t), (1, 5))
    b, h, tq, tk, d = (draw(st.integers(lo, hi)) for lo, hi in sides)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    q, k, v = rng.normal(size=(b, h, tq, d)), rng.normal(size=(b, h, tk, d)), rng.normal(size=(b, h, tk, d))
    kind = draw(st.sampled_from(["none", "causal", "shared", "bias", "per_batch"]))
    mask = None
    if kind == "shared":
        mask = rng.random((tq, tk)) < 0.7
    elif kind == "bias":
        mask = rng.normal(size=(1, 1, tq, tk))  # broadcast over the heads, with a gradient
    elif kind == "per_batch":
        mask = rng.random((b, 1, tq, tk)) < 0.7  # per-batch lead dims: not split over heads
    g = rng.normal(size=(b, h, tq, d))
    return q, k, v, mask, kind == "causal" and tq <= tk, g


@given(cases(), st.integers(2, 5), st.integers(2, 5))
def test_tiled_attention_is_bit_identical_over_thread_counts(case, bq, bk):
    q, k, v, mask, is_causal, g = case
    out, grads = _same_for_all_threads(tiled_attention, q, k, v, mask, g, is_causal=is_causal,
                                       block_size=(bq, bk))
    ref, ref_grads = attention_grads(attention_reference, q, k, v, mask, g, is_causal=is_causal)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    for a, b in zip(grads, ref_grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@given(cases(max_t=8))
def test_one_block_attention_is_bit_identical_over_thread_counts(case):
    q, k, v, mask, is_causal, g = case
    _same_for_all_threads(scaled_dot_product_attention, q, k, v, mask, g, is_causal=is_causal)


def _huge_head(dtype, shape=(2, 3, 9, 4)):
    """q, k, v, g where head (0, 1)'s scores rise 5000 above its first key; the rest ordinary."""
    rng = np.random.default_rng(5)
    q, k, v, g = (rng.normal(size=shape).astype(dtype) for _ in range(4))
    q[0, 1] = 50.0
    k[0, 1, 1:] = 25.0  # S = 50 * 25 * 4 / 2 = 2500 for these keys (scale 1/2) ...
    k[0, 1, 0] = -25.0  # ... and -2500 for the first: exp of the gap overflows
    return q, k, v, g


def test_tiled_per_head_fallback_agrees_over_threads_and_with_reference():
    # (float32 gradients at scores ~2500 carry rounding of ~1e-4 relative, in the reference too)
    for dtype, tol in ((np.float32, 1e-3), (np.float64, 1e-9)):
        q, k, v, g = _huge_head(dtype)
        out, grads = _same_for_all_threads(tiled_attention, q, k, v, None, g, block_size=(2, 3))
        assert out.dtype == dtype and np.isfinite(out).all()
        ref, ref_grads = attention_grads(attention_reference, q, k, v, None, g)
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
        for a, b in zip(grads, ref_grads):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_one_block_fallback_agrees_over_threads_and_with_reference():
    for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        q, k, v, g = _huge_head(dtype)
        out, grads = _same_for_all_threads(scaled_dot_product_attention, q, k, v, None, g)
        assert np.isfinite(out).all()
        ref, _ = attention_grads(attention_reference, q, k, v, None, g)
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_one_block_shapes_kv_cache_2d_and_broadcast_keys():
    rng = np.random.default_rng(1)
    # one query against a cache of 7 keys, 4-D per-batch mask
    q, k, v = rng.normal(size=(3, 2, 1, 4)), rng.normal(size=(3, 2, 7, 4)), rng.normal(size=(3, 2, 7, 4))
    mask = rng.random((3, 1, 1, 7)) < 0.8
    mask[..., 0] = True
    _same_for_all_threads(scaled_dot_product_attention, q, k, v, mask, rng.normal(size=(3, 2, 1, 4)))
    # 2-D inputs, no batch axis
    q, k, v = rng.normal(size=(5, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    g = rng.normal(size=(5, 3))
    _same_for_all_threads(scaled_dot_product_attention, q, k, v, None, g, is_causal=True)
    # k and v with lead (1, H), broadcast over the batch
    q, k, v = rng.normal(size=(3, 2, 5, 4)), rng.normal(size=(1, 2, 5, 4)), rng.normal(size=(1, 2, 5, 4))
    g = rng.normal(size=(3, 2, 5, 4))
    out, grads = _same_for_all_threads(scaled_dot_product_attention, q, k, v, None, g)
    assert grads[1].shape == (1, 2, 5, 4)


def test_packed_attention_forward_and_backward_bit_identical_on_two_threads():
    rng = np.random.default_rng(2)
    x, g = rng.normal(size=(3, 6, 3 * 8)).astype(np.float32), rng.normal(size=(3, 6, 8)).astype(np.float32)
    results = []
    for n in (1, 2):
        with threads(n):
            qkv = mg.tensor(x, requires_grad=True)
            out = packed_self_attention(qkv, 2, is_causal=True)
            out.backward(g)
            results.append((out.numpy(), qkv.grad))
    for a, b in zip(*results):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
