"""nn.record_attention: what it records (GPT's causal maps, MultiheadAttention's weights, the
single-head layers), how records are named, and that nothing is recorded outside the block."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.models.gpt import GPT, GPTConfig
from minigrad.nn.attention import maps as maps_module


def tiny_gpt(num_layers=3, num_heads=2):
    mg.manual_seed(0)
    config = GPTConfig(vocab_size=11, block_size=8, embed_dim=8, num_heads=num_heads, num_layers=num_layers)
    return GPT(config)


def ids(B=2, T=6, seed=0):
    return mg.tensor(np.random.default_rng(seed).integers(0, 11, (B, T)))


# ----------------------------------------------------------------------------- GPT


def test_gpt_gives_one_causal_map_per_layer():
    model, x = tiny_gpt(num_layers=3), ids(B=2, T=6)
    with nn.record_attention(model) as maps:
        logits = model(x)
    assert len(maps) == 3
    assert [r.name for r in maps] == ["blocks.0.attn", "blocks.1.attn", "blocks.2.attn"]
    for i, r in enumerate(maps):
        assert r.weights.shape == (2, 2, 6, 6)  # (B, H, T, T)
        assert r.module is model.blocks[i].attn and r.call == 0
        assert np.all(np.triu(r.weights, k=1) == 0)  # token t never looks past t
        np.testing.assert_allclose(r.weights.sum(-1), 1.0, atol=1e-5)
        assert r.weights[..., 1:, 0].min() > 0  # below the diagonal every token is seen
    # Recording changes nothing about the result.
    np.testing.assert_array_equal(logits.numpy(), model(x).numpy())


def test_records_are_the_softmax_of_the_layer_inputs():
    model, x = tiny_gpt(num_layers=1), ids(B=1, T=5)
    with nn.record_attention(model) as maps:
        model(x)
    attn = model.blocks[0].attn
    h = model.blocks[0].norm1(model.tok_emb(x) + model.pos_emb(mg.arange(5)))
    H = attn.num_heads
    q, k = (p(h).numpy().reshape(1, 5, H, -1).transpose(0, 2, 1, 3)  # (1, H, T, D)
            for p in (attn.q_proj, attn.k_proj))
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1]) + np.triu(np.full((5, 5), -np.inf), 1)
    expected = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(maps[0].weights, expected / expected.sum(-1, keepdims=True), atol=1e-5)


def test_names_without_a_model_are_paths_inside_the_outermost_module():
    model, other, x = tiny_gpt(num_layers=2), tiny_gpt(num_layers=1), ids()
    with nn.record_attention() as maps:
        model(x)
        model.blocks[1](mg.randn(1, 4, 8))  # a module keeps the name it was first seen under
        other.blocks[0](mg.randn(1, 4, 8))  # never seen inside a model: its path in the block
        F.scaled_dot_product_attention(mg.randn(1, 3, 4), mg.randn(1, 3, 4), mg.randn(1, 3, 4))
    assert [r.name for r in maps] == [
        "blocks.0.attn", "blocks.1.attn", "blocks.1.attn", "attn", "scaled_dot_product_attention"]
    assert maps[4].module is None and maps[4].weights.shape == (1, 3, 3)


def test_root_module_is_named_by_its_class_and_repeated_calls_are_counted():
    mha = nn.MultiheadAttention(4, 2)
    x = mg.randn(1, 3, 4)
    with nn.record_attention() as maps:
        mha(x, x, x)
        mha(x, x, x)
    assert [(r.name, r.call) for r in maps] == [("MultiheadAttention", 0), ("MultiheadAttention", 1)]
    assert "MultiheadAttention[1]: (1, 2, 3, 3)" in repr(maps)


def test_kv_cache_steps_are_separate_records():
    model = tiny_gpt(num_layers=1)
    model.eval()
    with nn.record_attention(model) as maps:
        model.generate(np.zeros((1, 2), dtype=np.int64), max_new_tokens=3, temperature=0)
    assert [r.weights.shape[-2:] for r in maps] == [(2, 2), (1, 3), (1, 4)]
    with pytest.raises(ValueError, match="differ in more than the query axis"):
        maps.weights("blocks.0.attn")


# ----------------------------------------------------------------------------- nn layers


@given(B=st.integers(1, 3), Tq=st.integers(1, 4), Tk=st.integers(1, 4), heads=st.sampled_from([1, 2]),
       fused=st.booleans(), lengths=st.lists(st.integers(0, 4), min_size=3, max_size=3))
def test_mha_records_match_need_weights(B, Tq, Tk, heads, fused, lengths):
    mg.manual_seed(0)
    mha = nn.MultiheadAttention(4, heads, fused=fused)
    rng = np.random.default_rng(0)
    q, kv = mg.tensor(rng.standard_normal((B, Tq, 4))), mg.tensor(rng.standard_normal((B, Tk, 4)))
    mask = nn.padding_mask(np.minimum(lengths[:B], Tk), max_len=Tk)
    with nn.record_attention(mha) as maps:
        _, weights = mha(q, kv, kv, mask=mask, need_weights=True, average_attn_weights=False)
        mha(q, kv, kv, mask=mask)  # need_weights=False: still recorded
    assert len(maps) == 2 and maps[0].name == "MultiheadAttention"
    np.testing.assert_array_equal(maps[0].weights, weights.numpy())
    # need_weights=True runs the composed attention (differentiable weights), the call without it
    # the fused kernel: the same weights to rounding
    np.testing.assert_allclose(maps[1].weights, weights.numpy(), rtol=1e-12, atol=1e-15)
    assert maps[0].weights.shape == (B, heads, Tq, Tk)
    assert np.all(maps[0].weights[~np.broadcast_to(mask.numpy(), maps[0].weights.shape)] == 0)


def test_records_are_copies_and_dropout_is_not_in_them():
    mg.manual_seed(1)
    mha = nn.MultiheadAttention(4, 2, dropout=0.5)  # training mode: dropout on the weights
    x = mg.randn(2, 5, 4)
    with nn.record_attention() as maps:
        _, weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
    weights.numpy()[:] = 7.0
    np.testing.assert_allclose(maps[0].weights.sum(-1), 1.0, atol=1e-5)  # before dropout


@pytest.mark.parametrize("make", [
    pytest.param(lambda: nn.AdditiveAttention(3, 2, 5), id="additive"),
    pytest.param(lambda: nn.BilinearAttention(3, 2), id="bilinear"),
])
def test_single_head_layers_record_b_tq_tk(make):
    mg.manual_seed(2)
    layer = make()
    rng = np.random.default_rng(2)
    q, k, v = (mg.tensor(rng.standard_normal(s)) for s in ((2, 1, 3), (2, 4, 2), (2, 4, 6)))
    mask = nn.padding_mask([4, 2])  # (B, 1, 1, Tk)
    with nn.record_attention() as maps:
        steps = [layer(q, k, v, mask=mask)[1] for _ in range(3)]  # a decoder: one query per step
    assert [r.call for r in maps] == [0, 1, 2]
    np.testing.assert_array_equal(maps[0].weights, steps[0].numpy())
    joined = maps.weights(type(layer).__name__)
    assert joined.shape == (2, 3, 4)  # (B, steps, Tk)
    np.testing.assert_array_equal(joined, np.concatenate([s.numpy() for s in steps], axis=1))
    assert np.all(joined[1, :, 2:] == 0)


def test_named_through_the_model_given():
    class Decoder(nn.Module):
        def __init__(self):
            self.attention = nn.AdditiveAttention(3, 3, 4)

        def forward(self, x):
            return self.attention(x, x, x)[0]

    model = nn.Sequential(nn.Linear(3, 3), Decoder())
    with nn.record_attention(model) as maps:
        model(mg.randn(1, 2, 3))
        model[1](mg.randn(1, 2, 3))  # called directly: still named by the model's paths
    assert maps.names() == ["1.attention"] and len(maps) == 2


# ----------------------------------------------------------------------------- the block


def test_nothing_is_recorded_outside_the_block():
    model, x = tiny_gpt(num_layers=2), ids()
    model(x)
    with nn.record_attention(model) as maps:
        pass
    assert len(maps) == 0
    with nn.record_attention(model) as maps:
        model(x)
    model(x)
    model(x)
    assert len(maps) == 2
    assert maps_module._recorders == []


def test_recorder_is_removed_after_an_exception_and_recorders_nest():
    model, x = tiny_gpt(num_layers=1), ids()
    with pytest.raises(KeyError):
        with nn.record_attention(model):
            {}["missing"]
    assert maps_module._recorders == []
    with nn.record_attention(model) as outer:
        model(x)
        with nn.record_attention(model) as inner:
            model(x)
        model(x)
    assert len(outer) == 3 and len(inner) == 1
    with pytest.raises(RuntimeError, match="already recording"):
        with outer:
            with outer:
                pass
    assert maps_module._recorders == []


def test_a_recorder_sees_only_its_own_thread():
    """A recorder open in thread A collects none of the attention a model computes in thread B
    (while A's recorder is open), and B's own recorder collects only B's."""
    import threading

    model_a, model_b, x = tiny_gpt(num_layers=1), tiny_gpt(num_layers=2), ids()
    opened, b_done = threading.Event(), threading.Event()
    seen_in_b = {}

    def run_b():
        try:
            opened.wait()
            seen_in_b["open at start"] = len(maps_module._recorders)  # a new thread: none
            model_b(x)  # while A's recorder is open
            with nn.record_attention(model_b) as maps_b:
                model_b(x)
            seen_in_b["maps"] = maps_b
        finally:
            b_done.set()

    thread = threading.Thread(target=run_b)
    thread.start()
    with nn.record_attention(model_a) as maps_a:
        opened.set()
        assert b_done.wait(60)
        model_a(x)
    thread.join()
    assert seen_in_b["open at start"] == 0
    assert [r.name for r in maps_a] == ["blocks.0.attn"]  # its own model's one layer, once
    assert maps_a[0].module is model_a.blocks[0].attn
    assert [r.name for r in seen_in_b["maps"]] == ["blocks.0.attn", "blocks.1.attn"]
    assert all(r.module in (model_b.blocks[0].attn, model_b.blocks[1].attn) for r in seen_in_b["maps"])
    assert maps_module._recorders == []


def test_weights_of_an_unknown_name_lists_what_was_recorded():
    model, x = tiny_gpt(num_layers=1), ids()
    with nn.record_attention(model) as maps:
        model(x)
    with pytest.raises(KeyError, match="blocks.0.attn"):
        maps.weights("blocks.9.attn")
    np.testing.assert_array_equal(maps.weights("blocks.0.attn"), maps[0].weights)
