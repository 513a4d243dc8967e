"""Tests for the RNN encoder-decoder with and without additive attention
(minigrad.models.rnn_seq2seq) and its recipe."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.optim as optim
from minigrad.cli import main
from minigrad.models.data import SEQ_VOCAB, encode_pairs, make_examples
from minigrad.models.recipes import recipe_class
from minigrad.models.recipes.translate_rnn import RNNRecipe
from minigrad.models.rnn_seq2seq import RNNConfig, RNNSeq2Seq
from minigrad.models.runs import read_checkpoint
from minigrad.models.train import TrainConfig, train

PAD, BOS, EOS = SEQ_VOCAB.pad_id, SEQ_VOCAB.bos_id, SEQ_VOCAB.eos_id
BOTH = pytest.mark.parametrize("attention", [True, False], ids=["attention", "bottleneck"])


def tiny_model(attention: bool = True, seed: int = 0, **overrides) -> RNNSeq2Seq:
    mg.manual_seed(seed)
    options = dict(vocab_size=SEQ_VOCAB.vocab_size, embed_dim=8, hidden_size=16, attention=attention,
                   attention_dim=8)
    options.update(overrides)
    return RNNSeq2Seq(RNNConfig(**options)).eval()


def batch(n: int, task: str = "dates", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(src (n, S), tgt (n, T + 1)); tgt is BOS, target, EOS, PAD..."""
    return encode_pairs(make_examples(task, n, "train", seed=seed))


def fit(model: RNNSeq2Seq, src: np.ndarray, tgt: np.ndarray, steps: int, lr: float = 2e-2) -> list[float]:
    model.train()
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = model.loss(mg.tensor(src), mg.tensor(tgt[:, :-1]), mg.tensor(tgt[:, 1:]))
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


# --------------------------------------------------------------------------- the model


@BOTH
def test_shapes(attention):
    model = tiny_model(attention)
    src, tgt = batch(3)
    logits = model(mg.tensor(src), mg.tensor(tgt[:, :-1]))
    assert logits.shape == (3, tgt.shape[1] - 1, SEQ_VOCAB.vocab_size)
    annotations, final, src_mask = model.encode(mg.tensor(src))
    assert annotations.shape == (3, src.shape[1], 16) and final.shape == (3, 16)
    assert src_mask.shape == (3, 1, 1, src.shape[1])
    loss = model.loss(mg.tensor(src), mg.tensor(tgt[:, :-1]), mg.tensor(tgt[:, 1:]))
    assert loss.shape == () and np.isclose(loss.item(), np.log(SEQ_VOCAB.vocab_size), rtol=0.3)
    out = model.greedy_decode(src, max_len=6)
    assert out.shape == (3, 6) and out.dtype == np.int64


def test_only_the_attention_model_has_attention_parameters():
    names = {n for n, _ in tiny_model(True).named_parameters()}
    bottleneck = {n for n, _ in tiny_model(False).named_parameters()}
    assert bottleneck < names
    assert names - bottleneck == {"decoder.attention.w_q.weight", "decoder.attention.w_k.weight",
                                  "decoder.attention.v.weight"}


@BOTH
@given(t=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_decoder_is_causal(attention, t, seed):
    """Changing target tokens from position t on leaves the logits before t unchanged."""
    model = tiny_model(attention)
    src, tgt = batch(2)
    tgt_in = tgt[:, :-1]
    changed = tgt_in.copy()
    changed[:, t:] = np.random.default_rng(seed).integers(3, SEQ_VOCAB.vocab_size, size=changed[:, t:].shape)
    a = model(mg.tensor(src), mg.tensor(tgt_in)).numpy()
    b = model(mg.tensor(src), mg.tensor(changed)).numpy()
    np.testing.assert_allclose(a[:, :t], b[:, :t], rtol=1e-5, atol=1e-6)
    if t < tgt_in.shape[1]:
        assert not np.allclose(a[:, t:], b[:, t:])


@BOTH
@given(extra=st.integers(1, 4))
def test_source_padding_changes_nothing(attention, extra):
    """More PAD after the source gives the same logits; a short source padded in a batch gives
    the same logits as alone (the encoder carries its state over PAD steps)."""
    model = tiny_model(attention)
    src, tgt = batch(4)
    tgt_in = mg.tensor(tgt[:, :-1])
    longer = np.concatenate([src, np.full((4, extra), PAD)], axis=1)
    expected = model(mg.tensor(src), tgt_in).numpy()
    np.testing.assert_allclose(model(mg.tensor(longer), tgt_in).numpy(), expected, rtol=1e-5, atol=1e-6)
    i = int(np.argmin((src != PAD).sum(1)))
    n = int((src[i] != PAD).sum())
    assert n < src.shape[1]
    alone = model(mg.tensor(src[i:i + 1, :n]), mg.tensor(tgt[i:i + 1, :-1])).numpy()
    np.testing.assert_allclose(expected[i:i + 1], alone, rtol=1e-5, atol=1e-6)


def test_attention_weights_are_a_distribution_over_real_source_tokens():
    model = tiny_model(True)
    src, _ = batch(5)
    out, weights = model.greedy_decode(src, max_len=4, return_attention=True)
    assert weights.shape == (5, out.shape[1], src.shape[1])
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert (weights[np.broadcast_to((src == PAD)[:, None, :], weights.shape)] == 0).all()
    with pytest.raises(ValueError, match="attention=True"):
        tiny_model(False).greedy_decode(src, return_attention=True)


@BOTH
def test_the_source_matters(attention):
    model = tiny_model(attention)
    src, tgt = batch(2)
    other = src.copy()
    other[:, 0] = 3 + (other[:, 0] - 2) % (SEQ_VOCAB.vocab_size - 3)
    tgt_in = mg.tensor(tgt[:, :-1])
    assert not np.allclose(model(mg.tensor(src), tgt_in).numpy(), model(mg.tensor(other), tgt_in).numpy())


@BOTH
def test_greedy_decode_is_batched_and_stops_at_eos(attention):
    model = tiny_model(attention, seed=1)
    src, tgt = batch(6, task="copy")
    fit(model, src, tgt, steps=30)  # enough to emit EOS now and then
    out = model.greedy_decode(src, max_len=14)
    for i, row in enumerate(out):
        ends = np.flatnonzero(row == EOS)
        if len(ends):
            assert (row[ends[0] + 1:] == PAD).all() and PAD not in row[:ends[0]]
        alone = model.greedy_decode(src[i:i + 1], max_len=14)[0]
        assert (row[:len(alone)] == alone).all() and (row[len(alone):] == PAD).all()


# --------------------------------------------------------------------------- training


@BOTH
def test_overfits_a_small_batch(attention):
    model = tiny_model(attention, embed_dim=16, hidden_size=32, attention_dim=16)
    src, tgt = batch(4, task="copy")
    losses = fit(model, src, tgt, steps=60, lr=3e-2)
    assert losses[-1] < 0.05 < losses[0]
    out = model.greedy_decode(src, max_len=14)
    assert [SEQ_VOCAB.decode(row) for row in out] == [SEQ_VOCAB.decode(row[1:]) for row in tgt]


def test_a_tiny_training_run_lowers_the_held_out_loss(tmp_path):
    recipe = RNNRecipe("tiny")
    before = recipe.evaluate(1)
    cfg = recipe.train_config("tiny", steps=30, eval_every=30, eval_batches=1)
    after = train(recipe, cfg, str(tmp_path), progress=False, log=lambda s: None)
    assert after["val_loss"] < before["val_loss"] - 0.5
    assert 0.0 <= after["exact_match"] <= 1.0


def test_recipe_checkpoint_round_trip(tmp_path):
    recipe = recipe_class("rnn")("tiny")
    assert recipe.task == "dates" and recipe.config.attention
    src, tgt_in, tgt_out = batch_tensors = recipe.batch("train", np.random.default_rng(0), 4)
    assert (tgt_in.numpy()[:, 1:] == tgt_out.numpy()[:, :-1]).all()
    train(recipe, TrainConfig(steps=3, batch_size=4, eval_every=3, eval_batches=1), str(tmp_path),
          progress=False, log=lambda s: None)
    meta, state, _ = read_checkpoint(str(tmp_path / "checkpoint.npz"))
    assert meta["model"] == "rnn"
    again = RNNRecipe.from_meta(meta["recipe"])
    again.model.load_state_dict(state)
    assert again.config == recipe.config
    np.testing.assert_allclose(again.loss(batch_tensors).item(), recipe.loss(batch_tensors).item(), rtol=1e-6)
    assert again.evaluate(1) == pytest.approx(recipe.evaluate(1))
    assert "->" in again.demo(2)


def test_presets_compare_attention_with_the_bottleneck():
    assert RNNRecipe.default_preset == "dates"
    with_attention, without = RNNRecipe.presets["dates"], RNNRecipe.presets["dates-noattn"]
    assert with_attention["attention"] and not without["attention"]
    differ = {k for k in with_attention.keys() | without.keys() if with_attention.get(k) != without.get(k)}
    assert differ <= {"attention", "attention_dim"}
    assert RNNRecipe.train_presets["dates"] == RNNRecipe.train_presets["dates-noattn"]


def test_cli_trains_and_evaluates(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "rnn", "--preset", "tiny", "--steps", "5", "--out", out, "--quiet"]) == 0
    assert main(["eval", f"{out}/checkpoint.npz", "--batches", "1"]) == 0
    assert "exact_match" in capsys.readouterr().out


@BOTH
def test_runs_in_float64_with_finite_difference_gradients(attention):
    """The initial state takes the model's dtype, so a .double() model stays float64 end to end
    and the gradient of an encoder weight passes a finite-difference check."""
    model = tiny_model(attention, embed_dim=3, hidden_size=4, attention_dim=3).double()
    src, tgt = batch(2, seed=5)
    src, tgt_in, tgt_out = (mg.tensor(a) for a in (src[:, :4], tgt[:, :3], tgt[:, 1:4]))
    assert model(src, tgt_in).dtype == np.float64
    name, p = next((n, q) for n, q in model.named_parameters() if n.startswith("encoder."))
    model.zero_grad()
    model.loss(src, tgt_in, tgt_out).backward()
    eps, original = 1e-6, p.numpy().copy()
    for i in range(min(p.numpy().size, 6)):
        losses = []
        for sign in (1, -1):
            p.data = original.copy()
            p.numpy().flat[i] += sign * eps
            losses.append(model.loss(src, tgt_in, tgt_out).item())
        numeric = (losses[0] - losses[1]) / (2 * eps)
        assert abs(numeric - p.grad.numpy().flat[i]) < 1e-6 + 1e-5 * abs(p.grad.numpy().flat[i]), (name, i)
    p.data = original
