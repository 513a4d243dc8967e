"""GPT: shapes, causality, the KV cache, learning, checkpoints, exact resume and the CLI."""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
from minigrad.models.gpt import GPT, GPTConfig
from minigrad.models.runs import read_checkpoint
from minigrad.models.train import TrainConfig, train

TINY = GPTConfig(vocab_size=11, block_size=8, embed_dim=8, num_heads=2, num_layers=2)


def make(config=TINY, seed=0):
    mg.manual_seed(seed)
    return GPT(config)


def tokens(B, T, V=11, seed=0):
    return mg.tensor(np.random.default_rng(seed).integers(0, V, (B, T)))


def test_shapes_and_tied_head():
    model = make()
    assert model(tokens(3, 5)).shape == (3, 5, 11)
    assert model.head.weight is model.tok_emb.weight
    names = [n for n, _ in model.named_parameters()]
    assert "head.weight" not in names and "tok_emb.weight" in names  # the tied weight counted once


def test_too_long_sequence_is_a_clear_error():
    with pytest.raises(ValueError, match="longer than block_size 8"):
        make()(tokens(1, 9))


def test_later_tokens_do_not_change_earlier_logits():
    model = make()
    a = tokens(2, 8, seed=1)
    b = mg.tensor(a.numpy().copy())
    b.numpy()[:, 5:] = (b.numpy()[:, 5:] + 3) % 11
    la, lb = model(a).numpy(), model(b).numpy()
    np.testing.assert_allclose(la[:, :5], lb[:, :5], rtol=1e-5, atol=1e-6)
    assert not np.allclose(la[:, 5:], lb[:, 5:])


@pytest.mark.parametrize("temperature,top_k", [(1.0, None), (0.7, 3), (0.0, None)])
def test_kv_cache_gives_the_same_tokens_within_the_window(temperature, top_k):
    model = make()
    prompt = tokens(2, 3, seed=2)
    mg.manual_seed(5)
    cached = model.generate(prompt, 5, temperature=temperature, top_k=top_k, use_cache=True)
    mg.manual_seed(5)
    plain = model.generate(prompt, 5, temperature=temperature, top_k=top_k, use_cache=False)
    assert cached.shape == (2, 8)  # block_size 8: the whole sequence fits
    np.testing.assert_array_equal(cached, plain)


@pytest.mark.parametrize("prompt_len", [3, 8, 11])
def test_kv_cache_past_the_window_restarts_from_the_last_half(prompt_len):
    """Past block_size the cache restarts from the last half window; each token is the one
    a full forward pass over that window picks (so the cache holds exactly those keys)."""
    model = make()
    prompt = tokens(2, prompt_len, seed=2)
    cached = model.generate(prompt, 20, temperature=0.0, use_cache=True)
    block, keep = model.config.block_size, model.config.block_size - model.config.block_size // 2
    out, start = prompt.numpy().copy(), max(0, prompt_len - block)
    with mg.no_grad():
        for _ in range(20):
            if out.shape[1] - start > block:
                start = out.shape[1] - keep
            logits = model(mg.tensor(out[:, start:])).numpy()[:, -1]
            out = np.concatenate([out, logits.argmax(-1)[:, None]], axis=1)
    np.testing.assert_array_equal(cached, out)


def test_kv_cache_buffers_grow_in_place_without_recopying_each_step():
    model = make()
    caches = [nn.KVCache() for _ in model.blocks]
    with mg.no_grad():
        model(tokens(1, 3, seed=1), caches)
        buffer = caches[0].k
        for t in range(3, 8):
            model(tokens(1, 1, seed=t), caches, start=t)
    assert caches[0].length == 8 and caches[0].k is buffer  # written in place, not re-made
    assert buffer.shape[2] == nn.KVCache.MIN_ROWS  # no capacity: the first buffer's rows


def test_generation_caches_are_preallocated_for_the_window_and_written_in_place():
    model = make()
    caches = model.new_caches()
    with mg.no_grad():
        model(tokens(2, 3, seed=1), caches)
        buffers = [(c.k, c.v) for c in caches]
        for t in range(3, 8):
            model(tokens(2, 1, seed=t), caches, start=t)
    assert all(c.length == 8 and c.k.shape == (2, 2, 8, 4) for c in caches)  # (B, H, block_size, D)
    assert all(c.k is k and c.v is v for c, (k, v) in zip(caches, buffers))  # allocated once
    with pytest.raises(ValueError, match="pass its capacity 8"):
        caches[0].append(caches[0].k[:, :, :1], caches[0].v[:, :, :1])


LONG = GPTConfig(vocab_size=11, block_size=40, embed_dim=16, num_heads=2, num_layers=2)


def _chunks(total):
    """Chunk lengths (each >= 1) summing to `total`: a prompt fed in pieces at offsets."""
    return st.lists(st.integers(1, total), min_size=1, max_size=6).map(
        lambda sizes: [s for s in np.diff(np.unique(np.r_[0, np.cumsum(sizes) % total, total])) if s])


@settings(max_examples=25, deadline=None)
@given(st.integers(17, 40).flatmap(lambda total: st.tuples(st.just(total), _chunks(total))))
def test_kv_cache_fed_in_chunks_gives_the_logits_of_one_pass(case):
    """Chunks at offsets (the mask lets chunk queries see the cache and their own past) and a
    cache growing past its first buffer of 16 (then 32) rows: the logits of one full pass."""
    total, chunks = case
    assert sum(chunks) == total
    model = make(LONG)
    idx = tokens(2, total, seed=total)
    with mg.no_grad():
        full = model(idx).numpy()  # (2, total, V)
        caches, parts, start = [nn.KVCache() for _ in model.blocks], [], 0
        for size in chunks:
            parts.append(model(mg.tensor(idx.numpy()[:, start:start + size]), caches, start=start).numpy())
            start += size
    assert caches[0].length == total and caches[0].k.shape[2] >= total
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunks", [[5, 7, 1, 9], [1] * 10 + [12], [21, 1]])
def test_kv_cache_chunked_prompt_then_generation_matches_no_cache(chunks):
    """A prompt of 22 tokens fed in chunks, then 18 greedy steps one token at a time against
    the cache (which outgrows its first buffer): the tokens generate() picks without it."""
    model = make(LONG)
    prompt = tokens(2, sum(chunks), seed=3)
    plain = model.generate(prompt, 40 - prompt.shape[1], temperature=0.0, use_cache=False)
    out, caches, start, first = prompt.numpy().copy(), [nn.KVCache() for _ in model.blocks], 0, 0
    with mg.no_grad():
        for size in chunks:
            logits = model(mg.tensor(out[:, start:start + size]), caches, start=start).numpy()
            start += size
            first = first or caches[0].k.shape[2]  # the buffer the first chunk made
        while out.shape[1] < 40:
            out = np.concatenate([out, logits[:, -1].argmax(-1)[:, None]], axis=1)
            if out.shape[1] < 40:
                logits = model(mg.tensor(out[:, -1:]), caches, start=out.shape[1] - 1).numpy()
    assert caches[0].length == 39 and caches[0].k.shape[2] > first  # the buffer was regrown
    np.testing.assert_array_equal(out, plain)
    np.testing.assert_array_equal(model.generate(prompt, 40 - prompt.shape[1], temperature=0.0), plain)


def test_caches_must_be_kv_caches():
    """A list of dicts (or of the wrong length) is refused, naming what was given."""
    model, idx = make(), tokens(2, 6, seed=4)
    for caches in ([{} for _ in model.blocks], model.new_caches()[:1]):
        with pytest.raises(TypeError, match="caches must be .* nn.KVCache"):
            model(idx, caches)


def test_kv_cache_refuses_another_batch_size():
    model = make()
    caches = model.new_caches()
    with mg.no_grad():
        model(tokens(2, 3), caches)
        with pytest.raises(ValueError, match="KV cache holds 2 rows of the batch, got 3"):
            model(tokens(3, 1), caches, start=3)


def test_kv_cache_refuses_to_record_a_graph():
    model = make()
    with pytest.raises(RuntimeError, match="no_grad"):
        model(tokens(1, 3, seed=1), model.new_caches())


# The tokens and state-dict keys of a seeded TINY GPT, as recorded from the model before its
# blocks used nn.MultiheadAttention (weights scaled by 30, so the tokens vary; greedy past the
# window, where the cache restarts from the last half; sampled with temperature and top-k).
RECORDED_GREEDY = [[9, 2, 1, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8],
                   [3, 4, 8, 8, 3, 7, 7, 7, 10, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8]]
RECORDED_NO_CACHE = [[9, 2, 1, 7, 7, 7, 7, 7, 7, 7, 7, 8, 10, 8, 8, 10, 8, 8, 10, 7, 8, 8, 8],
                     [3, 4, 8, 8, 3, 7, 7, 7, 10, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8]]
RECORDED_SAMPLED = [[9, 2, 1, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8],
                    [3, 4, 8, 8, 3, 7, 7, 7, 10, 8, 8, 8, 8, 8, 8]]
RECORDED_KEYS = ["tok_emb.weight", "pos_emb.weight"] + [
    f"blocks.{i}.{name}" for i in range(2) for name in (
        "norm1.weight", "norm1.bias", "attn.q_proj.weight", "attn.q_proj.bias", "attn.k_proj.weight",
        "attn.k_proj.bias", "attn.v_proj.weight", "attn.v_proj.bias", "attn.out_proj.weight",
        "attn.out_proj.bias", "norm2.weight", "norm2.bias", "mlp.linear1.weight", "mlp.linear1.bias",
        "mlp.linear2.weight", "mlp.linear2.bias")] + ["norm_f.weight", "norm_f.bias"]


def scaled_tiny():
    model = make()
    for p in model.parameters():
        p.data *= 30
    return model


def test_generation_gives_the_recorded_tokens():
    """The same initial weights (the same random draws) and the same tokens, cached or not."""
    model, prompt = scaled_tiny(), np.random.default_rng(2).integers(0, 11, (2, 3))
    np.testing.assert_array_equal(model.generate(prompt, 20, temperature=0.0), RECORDED_GREEDY)
    np.testing.assert_array_equal(model.generate(prompt, 20, temperature=0.0, use_cache=False),
                                  RECORDED_NO_CACHE)
    mg.manual_seed(5)
    np.testing.assert_array_equal(model.generate(prompt, 12, temperature=0.8, top_k=5), RECORDED_SAMPLED)


def test_checkpoint_keys_are_unchanged_and_an_old_state_dict_loads():
    old = scaled_tiny().state_dict()
    assert list(old) == RECORDED_KEYS + ["head.weight"]  # the tied head, under its name too (as torch)
    old.pop("head.weight")  # a state dict that holds the tied weight once (0.5's) loads as well
    assert old["blocks.0.attn.q_proj.weight"].shape == (8, 8)
    assert old["blocks.0.mlp.linear1.weight"].shape == (32, 8)
    model = make(seed=7)  # other weights, then the recorded ones loaded by name
    model.load_state_dict({k: np.asarray(getattr(v, "data", v)) for k, v in old.items()})
    prompt = np.random.default_rng(2).integers(0, 11, (2, 3))
    np.testing.assert_array_equal(model.generate(prompt, 20, temperature=0.0), RECORDED_GREEDY)


def test_blocks_attend_through_multihead_attention():
    model = make()
    assert all(type(block.attn) is nn.MultiheadAttention for block in model.blocks)
    with pytest.raises(ValueError, match="GPT: embed_dim 10 is not divisible by num_heads 3"):
        GPT(GPTConfig(vocab_size=5, block_size=4, embed_dim=10, num_heads=3, num_layers=1))


def test_top_k_one_is_greedy():
    model = make()
    prompt = tokens(1, 2)
    greedy = model.generate(prompt, 5, temperature=0)
    np.testing.assert_array_equal(model.generate(prompt, 5, top_k=1), greedy)


def test_whole_model_gradcheck_float64():
    config = GPTConfig(vocab_size=5, block_size=4, embed_dim=4, num_heads=2, num_layers=1, activation="none")
    model = make(config).double()
    idx, tgt = tokens(2, 3, V=5, seed=3), tokens(2, 3, V=5, seed=4)
    named = list(model.named_parameters())

    def loss(*params):
        # gradcheck hands in float64 copies of the parameters: put them into the model.
        for (name, _), p in zip(named, params):
            owner = model
            *path, attr = name.split(".")
            for part in path:
                owner = owner[int(part)] if part.isdigit() else getattr(owner, part)
            setattr(owner, attr, p)
        model.head.weight = model.tok_emb.weight  # keep the tie
        return model.loss(idx, tgt)

    assert mg.gradcheck(loss, [p for _, p in named])


def test_overfits_one_batch():
    model = make()
    x, y = tokens(4, 8, seed=6), tokens(4, 8, seed=7)
    opt = mg.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    first = None
    for _ in range(150):
        loss = model.loss(x, y)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first > 2.0 and loss.item() < 0.3 * first


class TinyText:
    """A recipe over a small periodic text, so training tests need no corpus."""

    name = "gpt"

    def __init__(self, seed=0):
        mg.manual_seed(seed)
        self.model = GPT(TINY)
        self.ids = np.tile(np.arange(11), 40)

    def meta(self):
        return {}

    def batch(self, split, rng, batch_size):
        starts = rng.integers(0, len(self.ids) - 9, batch_size)
        x = np.stack([self.ids[s:s + 8] for s in starts])
        y = np.stack([self.ids[s + 1:s + 9] for s in starts])
        return mg.tensor(x), mg.tensor(y)

    def loss(self, batch):
        return self.model.loss(*batch)

    def evaluate(self, num_batches):
        rng = np.random.default_rng(0)
        with mg.no_grad():
            losses = [self.loss(self.batch("val", rng, 4)).item() for _ in range(num_batches)]
        return {"val_loss": float(np.mean(losses))}


def losses_of(out_dir):
    with open(os.path.join(out_dir, "log.csv")) as f:
        return [line.split(",")[1] for line in f.read().splitlines()[1:]]


CFG = TrainConfig(steps=40, batch_size=4, lr=1e-2, warmup=4, eval_every=20, eval_batches=2, seed=3)
quiet = dict(progress=False, log=lambda s: None)


def test_training_lowers_the_loss(tmp_path):
    train(TinyText(), CFG, str(tmp_path), **quiet)
    losses = [float(v) for v in losses_of(tmp_path)]
    assert len(losses) == 40
    assert np.mean(losses[-5:]) < 0.75 * np.mean(losses[:5])


def test_resume_continues_exactly(tmp_path, monkeypatch):
    full = train(TinyText(), CFG, str(tmp_path / "full"), **quiet)

    # A run that dies right after its step-20 checkpoint...
    import minigrad.models.train as loop

    real_save = loop.save_checkpoint

    class Crash(Exception):
        pass

    def save_then_crash(*args, **kwargs):
        real_save(*args, **kwargs)
        raise Crash

    monkeypatch.setattr(loop, "save_checkpoint", save_then_crash)
    with pytest.raises(Crash):
        train(TinyText(), CFG, str(tmp_path / "part"), **quiet)
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    meta, _, _ = read_checkpoint(str(tmp_path / "part" / "checkpoint.npz"))
    assert meta["step"] == 20

    # ...and is resumed (into a model initialised differently: the checkpoint must win).
    resumed = train(TinyText(seed=99), CFG, str(tmp_path / "part"),
                    resume=str(tmp_path / "part" / "checkpoint.npz"), **quiet)
    assert losses_of(tmp_path / "part") == losses_of(tmp_path / "full")
    assert resumed == full
