"""Tests for the encoder-decoder transformer (minigrad.models.seq2seq) and its recipe."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.optim as optim
from minigrad.cli import main
from minigrad.models.data import SEQ_VOCAB, encode_pairs, make_examples
from minigrad.models.recipes import recipe_class
from minigrad.models.recipes.translate import Seq2SeqRecipe
from minigrad.models.runs import read_checkpoint
from minigrad.models.seq2seq import Seq2Seq, Seq2SeqConfig
from minigrad.models.train import TrainConfig, train

PAD, BOS, EOS = SEQ_VOCAB.pad_id, SEQ_VOCAB.bos_id, SEQ_VOCAB.eos_id


def tiny_model(seed: int = 0, **overrides) -> Seq2Seq:
    mg.manual_seed(seed)
    options = dict(vocab_size=SEQ_VOCAB.vocab_size, block_size=16, embed_dim=16, num_heads=2, num_layers=1)
    options.update(overrides)
    return Seq2Seq(Seq2SeqConfig(**options)).eval()


def reverse_batch(n: int, seed: int = 0, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """(src (n, S), tgt (n, T + 1)) of the reversal task; tgt is BOS, target, EOS, PAD..."""
    return encode_pairs(make_examples("reverse", n, split, seed=seed))


def fit(model: Seq2Seq, src: np.ndarray, tgt: np.ndarray, steps: int, lr: float = 1e-2) -> list[float]:
    """Adam on one fixed batch; the losses step by step."""
    model.train()
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = model.loss(mg.tensor(src), mg.tensor(tgt[:, :-1]), mg.tensor(tgt[:, 1:]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


@pytest.fixture(scope="module")
def trained() -> tuple[Seq2Seq, np.ndarray]:
    """A model half-way trained on reversal (so its beams differ), and unseen sources."""
    model = tiny_model(1, embed_dim=32)
    src, tgt = reverse_batch(32, seed=1)
    fit(model, src, tgt, steps=60, lr=5e-3)
    return model, reverse_batch(12, seed=2, split="test")[0]


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("options", [
    pytest.param({}, id="pre-norm-sinusoidal"),
    pytest.param({"norm_first": False}, id="post-norm"),
    pytest.param({"learned_positions": True, "num_layers": 2}, id="learned-positions"),
])
def test_shapes(options):
    model = tiny_model(**options)
    src, tgt = reverse_batch(3)
    logits = model(mg.tensor(src), mg.tensor(tgt[:, :-1]))
    assert logits.shape == (3, tgt.shape[1] - 1, SEQ_VOCAB.vocab_size)
    memory, src_mask = model.encode(mg.tensor(src))
    assert memory.shape == (3, src.shape[1], 16)
    assert src_mask.shape == (3, 1, 1, src.shape[1])
    loss = model.loss(mg.tensor(src), mg.tensor(tgt[:, :-1]), mg.tensor(tgt[:, 1:]))
    assert loss.shape == () and np.isclose(loss.item(), np.log(SEQ_VOCAB.vocab_size), rtol=0.5)
    out = model.greedy_decode(src, max_len=5)
    assert out.shape == (3, 5) and out.dtype == np.int64
    beam = model.beam_search(src, beam_size=3, max_len=5)
    assert beam.shape[0] == 3 and 1 <= beam.shape[1] <= 5 and beam.dtype == np.int64


def test_the_loss_ignores_padding_targets():
    model = tiny_model()
    src, tgt = reverse_batch(4)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    logits = model(mg.tensor(src), mg.tensor(tgt_in)).numpy().astype(np.float64)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    real = tgt_out != PAD
    expected = -np.take_along_axis(logp, tgt_out[..., None], -1)[..., 0][real].mean()
    assert np.isclose(model.loss(mg.tensor(src), mg.tensor(tgt_in), mg.tensor(tgt_out)).item(), expected,
                      rtol=1e-4)


@given(t=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_decoder_is_causal(t, seed):
    """Changing target tokens from position t on leaves the logits before t unchanged."""
    model = tiny_model()
    src, tgt = reverse_batch(2)
    tgt_in = tgt[:, :-1].copy()
    changed = tgt_in.copy()
    rng = np.random.default_rng(seed)
    changed[:, t:] = rng.integers(3, SEQ_VOCAB.vocab_size, size=changed[:, t:].shape)
    a = model(mg.tensor(src), mg.tensor(tgt_in)).numpy()
    b = model(mg.tensor(src), mg.tensor(changed)).numpy()
    np.testing.assert_allclose(a[:, :t], b[:, :t], rtol=1e-5, atol=1e-5)
    if t < tgt_in.shape[1]:
        assert not np.allclose(a[:, t:], b[:, t:])  # and the later ones do change


@given(extra=st.integers(1, 4))
def test_source_padding_changes_nothing(extra):
    """More PAD after the source gives the same logits, and a short source padded inside a
    batch gives the same logits as alone."""
    model = tiny_model(norm_first=False)  # post-norm: the padded rows also pass through LayerNorm
    src, tgt = reverse_batch(4)
    tgt_in = mg.tensor(tgt[:, :-1])
    longer = np.concatenate([src, np.full((4, extra), PAD)], axis=1)
    np.testing.assert_allclose(model(mg.tensor(longer), tgt_in), model(mg.tensor(src), tgt_in),
                               rtol=1e-5, atol=1e-5)
    i = int(np.argmin((src != PAD).sum(1)))  # the shortest source, padded in the batch
    n = int((src[i] != PAD).sum())
    assert n < src.shape[1]
    alone = model(mg.tensor(src[i:i + 1, :n]), mg.tensor(tgt[i:i + 1, :-1])).numpy()
    np.testing.assert_allclose(model(mg.tensor(src), tgt_in).numpy()[i:i + 1], alone, rtol=1e-5, atol=1e-5)


def test_the_source_matters():
    model = tiny_model()
    src, tgt = reverse_batch(2)
    other = src.copy()
    other[:, 0] = 3 + (other[:, 0] - 2) % (SEQ_VOCAB.vocab_size - 3)
    tgt_in = mg.tensor(tgt[:, :-1])
    assert not np.allclose(model(mg.tensor(src), tgt_in).numpy(), model(mg.tensor(other), tgt_in).numpy())


def test_bad_input_gives_clear_errors():
    model = tiny_model()
    with pytest.raises(ValueError, match="block_size"):
        model(mg.tensor(np.ones((1, 17), dtype=np.int64)), mg.tensor(np.ones((1, 2), dtype=np.int64)))
    with pytest.raises(ValueError, match="beam_size"):
        model.beam_search(np.ones((1, 3), dtype=np.int64), beam_size=0)


# --------------------------------------------------------------------------- decoding


def test_greedy_decode_stops_at_eos_and_pads_after_it(trained):
    model, src = trained
    out = model.greedy_decode(src)
    assert out.shape[1] <= model.config.block_size - 1
    for row in out:
        ends = np.flatnonzero(row == EOS)
        if len(ends):
            assert (row[ends[0] + 1:] == PAD).all()
            assert PAD not in row[:ends[0]] and BOS not in row


def test_greedy_decode_is_batched(trained):
    """Decoding a batch gives the same rows as decoding each source alone."""
    model, src = trained
    batch = model.greedy_decode(src[:4], max_len=10)
    for i in range(4):
        alone = model.greedy_decode(src[i:i + 1], max_len=10)[0]
        n = len(alone)
        assert (batch[i, :n] == alone).all() and (batch[i, n:] == PAD).all()


def test_beam_of_one_is_greedy(trained):
    model, src = trained
    np.testing.assert_array_equal(model.beam_search(src, beam_size=1), model.greedy_decode(src))


@pytest.mark.parametrize("beam_size", [2, 4])
def test_beam_search_finds_sequences_at_least_as_likely_as_greedy(trained, beam_size):
    model, src = trained
    greedy, beam = model.greedy_decode(src), model.beam_search(src, beam_size=beam_size)
    assert (model.score(src, beam) >= model.score(src, greedy) - 1e-4).all()
    assert (model.score(src, beam) > model.score(src, greedy) + 1e-3).any()  # and it is not greedy


def test_beam_search_over_the_whole_vocabulary_is_exact():
    """With K = V beams and two steps, beam search sees every sequence: it must pick the most
    likely of all V * V."""
    model = tiny_model(3)
    src, _ = reverse_batch(2)
    V = SEQ_VOCAB.vocab_size
    beam = model.beam_search(src, beam_size=V, max_len=2)
    every = np.stack(np.meshgrid(np.arange(V), np.arange(V), indexing="ij"), -1).reshape(-1, 2)  # (V*V, 2)
    for i in range(2):
        scores = model.score(np.repeat(src[i:i + 1], len(every), axis=0), every)
        assert np.isclose(model.score(src[i:i + 1], beam[i:i + 1])[0], scores.max(), atol=1e-5)


def test_length_penalty_favours_longer_outputs(trained):
    model, src = trained
    plain = model.beam_search(src, beam_size=4)
    long = model.beam_search(src, beam_size=4, length_penalty=2.0)
    length = lambda out: (out != PAD).sum(1)  # noqa: E731
    assert (length(long) >= length(plain)).all()


def scripted_model(scripts: list[list[int]]) -> Seq2Seq:
    """A Seq2Seq whose decoder emits, for source b (the source is the single id b), the tokens
    scripts[b] and then PAD, each by a margin of 10 nats: what greedy and beam search return
    is known exactly, including a PAD the model chooses before its EOS."""
    model = tiny_model(0)
    V = SEQ_VOCAB.vocab_size

    def encode(src):
        return mg.tensor(src.numpy()[:, :, None].astype(np.float32)), None  # (R, 1, 1): the example

    def decode(tgt_in, memory, src_mask):
        R, T = tgt_in.shape
        logits = np.zeros((R, T, V), np.float32)
        for r, b in enumerate(memory.numpy()[:, 0, 0].astype(int)):
            for t in range(T):
                logits[r, t, scripts[b][t] if t < len(scripts[b]) else PAD] = 10.0
        return mg.tensor(logits)

    model.encode, model.decode = encode, decode
    return model


TOKENS = st.sampled_from([PAD] + [i for i in range(SEQ_VOCAB.vocab_size) if i not in (PAD, BOS, EOS)])


@given(st.lists(st.tuples(st.lists(TOKENS, min_size=1, max_size=6), st.booleans()), min_size=1, max_size=3))
def test_beam_search_keeps_the_tokens_after_a_pad_as_greedy_does(rows):
    """A PAD the model emits before its EOS is one of its tokens: beam search trims each batch
    to the longest row's true length (up to its EOS), as greedy decoding does, and drops
    nothing after that PAD."""
    scripts = [tokens + [EOS] if ends else tokens for tokens, ends in rows]
    model = scripted_model(scripts)
    src = np.arange(len(scripts))[:, None]  # (B, 1)
    greedy = model.greedy_decode(src, max_len=8)
    for b, script in enumerate(scripts):
        n = min(len(script), 8)
        assert list(greedy[b, :n]) == script[:n] and (greedy[b, n:] == PAD).all()
    for beam_size in (1, 3):
        for penalty in (0.0, 1.0):
            beam = model.beam_search(src, beam_size=beam_size, max_len=8, length_penalty=penalty)
            np.testing.assert_array_equal(beam, greedy)


def test_beam_search_keeps_a_token_after_a_pad():
    model = scripted_model([[5, PAD, 7, EOS]])
    np.testing.assert_array_equal(model.beam_search(np.array([[0]]), beam_size=2), [[5, PAD, 7, EOS]])


# --------------------------------------------------------------------------- training


def test_overfits_a_small_batch():
    model = tiny_model(0, embed_dim=32)
    src, tgt = reverse_batch(8)
    losses = fit(model, src, tgt, steps=80)
    assert losses[-1] < 0.05 < losses[0]
    out = model.greedy_decode(src)
    assert [SEQ_VOCAB.decode(row) for row in out] == [SEQ_VOCAB.decode(row[1:]) for row in tgt]


def test_a_tiny_training_run_lowers_the_held_out_loss(tmp_path):
    recipe = Seq2SeqRecipe("tiny")
    before = recipe.evaluate(2)
    cfg = recipe.train_config("tiny", steps=40, eval_every=40)
    after = train(recipe, cfg, str(tmp_path), progress=False, log=lambda s: None)
    assert after["val_loss"] < before["val_loss"] - 0.3
    assert 0.0 <= after["exact_match"] <= 1.0


def test_recipe_batches_and_checkpoint_round_trip(tmp_path):
    recipe = recipe_class("seq2seq")("tiny")
    assert recipe.task == "reverse" and len(recipe.test_pairs) == 1000
    src, tgt_in, tgt_out = recipe.batch("train", np.random.default_rng(0), 5)
    assert src.shape[0] == tgt_in.shape[0] == 5 and tgt_in.shape == tgt_out.shape
    assert (tgt_in.numpy()[:, 0] == BOS).all() and (tgt_in.numpy()[:, 1:] == tgt_out.numpy()[:, :-1]).all()
    assert not {SEQ_VOCAB.decode(r) for r in src.numpy()} & {s for s, _ in recipe.test_pairs}
    train(recipe, TrainConfig(steps=3, batch_size=4, eval_every=3, eval_batches=1), str(tmp_path),
          progress=False, log=lambda s: None)
    meta, state, _ = read_checkpoint(str(tmp_path / "checkpoint.npz"))
    again = Seq2SeqRecipe.from_meta(meta["recipe"])
    again.model.load_state_dict(state)
    assert again.task == recipe.task and again.config == recipe.config
    np.testing.assert_allclose(again.model(src, tgt_in).numpy(), recipe.model(src, tgt_in).numpy(), rtol=1e-6)
    assert again.evaluate(1) == pytest.approx(recipe.evaluate(1))
    assert "reverse" in again.demo(2)


def test_presets_name_the_tasks():
    assert Seq2SeqRecipe.default_preset == "reverse"
    for preset in ("reverse", "dates", "copy", "sort", "addition"):
        assert Seq2SeqRecipe.presets[preset]["task"] == preset
    with pytest.raises(ValueError, match="text file"):
        Seq2SeqRecipe("tiny", data="corpus.txt")


def test_cli_trains_and_evaluates(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "seq2seq", "--preset", "tiny", "--steps", "5", "--out", out, "--quiet"]) == 0
    assert main(["eval", f"{out}/checkpoint.npz", "--batches", "1"]) == 0
    assert "exact_match" in capsys.readouterr().out
