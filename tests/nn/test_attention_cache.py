"""nn.MultiheadAttention's KV cache: chunks fed one after another against the cache give what
attention over the whole prefix gives (with is_causal, the causal offset is the cached length),
with either kernel; the cache is preallocated with a capacity and written in place."""

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.attention import dispatch


def _chunks(total):
    """Chunk lengths (each >= 1) summing to `total`."""
    return st.lists(st.integers(1, total), min_size=1, max_size=5).map(
        lambda sizes: [s for s in np.diff(np.unique(np.r_[0, np.cumsum(sizes) % total, total])) if s])


@contextlib.contextmanager
def _tiled_always(on):
    """Send every call to the tiled kernel (when `on`), however short."""
    saved = dispatch.TILED_MIN_SCORES, dispatch.TILED_MIN_LENGTH
    if on:
        dispatch.TILED_MIN_SCORES, dispatch.TILED_MIN_LENGTH = 0, 1
    try:
        yield
    finally:
        dispatch.TILED_MIN_SCORES, dispatch.TILED_MIN_LENGTH = saved


@settings(deadline=None)
@given(st.integers(1, 12).flatmap(lambda total: st.tuples(st.just(total), _chunks(total))),
       st.sampled_from([None, 12]), st.booleans(), st.booleans())
def test_cached_chunks_attend_as_the_whole_prefix(case, capacity, causal, tiled):
    """Chunk i's queries against the cache = the same queries against the whole prefix, through
    the unpacked path (query != key): the causal part as one causal pass over the sequence."""
    total, chunks = case
    mg.manual_seed(total)
    attn = nn.MultiheadAttention(8, 2)
    x = mg.randn(2, total, 8)
    with mg.no_grad(), _tiled_always(tiled):
        full = attn(x, x, x, is_causal=True, need_weights=False)[0].numpy()
        cache, start = nn.KVCache(capacity), 0
        for size in chunks:
            h = mg.tensor(x.numpy()[:, start:start + size])
            out = attn(h, h, h, is_causal=causal, cache=cache, need_weights=False)[0].numpy()
            if causal:
                expected = full[:, start:start + size]
            else:
                prefix = mg.tensor(x.numpy()[:, :start + size])
                expected = attn(h, prefix, prefix, need_weights=False)[0].numpy()
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
            start += size
    assert cache.length == total and cache.k.shape == (2, 2, capacity or max(16, total), 4)


def test_a_mask_with_the_cache_covers_the_cached_keys_too():
    mg.manual_seed(0)
    attn = nn.MultiheadAttention(4, 1)
    x = mg.randn(1, 5, 4)
    allowed = np.ones((2, 5), dtype=bool)
    allowed[:, 1] = False  # the new queries may not see cached key 1
    with mg.no_grad():
        cache = nn.KVCache()
        head = mg.tensor(x.numpy()[:, :3])
        attn(head, head, head, cache=cache, need_weights=False)[0]
        tail = mg.tensor(x.numpy()[:, 3:])
        out = attn(tail, tail, tail, mask=allowed, cache=cache, need_weights=False)[0].numpy()
        expected = attn(tail, x, x, mask=allowed, need_weights=False)[0].numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_the_cache_is_preallocated_and_refuses_to_overflow():
    attn = nn.MultiheadAttention(4, 2)
    cache = nn.KVCache(6)
    with mg.no_grad():
        x = mg.randn(1, 4, 4)
        attn(x, x, x, is_causal=True, cache=cache, need_weights=False)[0]
        k = cache.k
        y = mg.randn(1, 2, 4)
        attn(y, y, y, is_causal=True, cache=cache, need_weights=False)[0]
        assert cache.k is k and k.shape == (1, 2, 6, 2) and cache.length == 6
        with pytest.raises(ValueError, match="KVCache: 6 cached positions and 1 new ones pass its capacity"):
            z = mg.randn(1, 1, 4)
            attn(z, z, z, is_causal=True, cache=cache, need_weights=False)[0]
    with pytest.raises(ValueError, match="capacity must be a positive"):
        nn.KVCache(0)


def test_the_cache_is_for_self_attention_without_a_graph():
    attn = nn.MultiheadAttention(4, 2)
    x, other = mg.randn(1, 3, 4), mg.randn(1, 3, 4)
    with pytest.raises(ValueError, match="KV cache is for fused self-attention"):
        with mg.no_grad():
            attn(x, other, other, cache=nn.KVCache(), need_weights=False)[0]
    with pytest.raises(RuntimeError, match="packed_self_attention: the KV cache is for generation.*no_grad"):
        attn(x, x, x, cache=nn.KVCache(), need_weights=False)[0]


def test_mha_init_linear_draws_what_four_linear_layers_draw():
    mg.manual_seed(3)
    linears = [nn.Linear(6, 6) for _ in range(4)]
    mg.manual_seed(3)
    attn = nn.MultiheadAttention(6, 2, init="linear")
    for lin, proj in zip(linears, (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj)):
        np.testing.assert_array_equal(lin.weight.numpy(), proj.weight.numpy())
        np.testing.assert_array_equal(lin.bias.numpy(), proj.bias.numpy())
    with pytest.raises(ValueError, match="init must be 'xavier' or 'linear', got 'normal'"):
        nn.MultiheadAttention(6, 2, init="normal")
