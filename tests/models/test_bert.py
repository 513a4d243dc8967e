"""BERT: shapes, the 15% / 80-10-10 masking, padding, learning, the recipe, checkpoints and the CLI."""

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from paramcheck import assert_parameter_grads

import minigrad as mg
import minigrad.nn as nn
from minigrad.cli import main
from minigrad.models.bert import BERT, IGNORE, BERTConfig, mask_tokens, truncate_pair
from minigrad.models.data import WordTokenizer
from minigrad.models.recipes.mlm import BERTRecipe
from minigrad.models.runs import read_checkpoint, save_checkpoint
from minigrad.models.train import TrainConfig, make_optimizer

TINY = BERTConfig(vocab_size=20, block_size=12, embed_dim=16, num_heads=2, num_layers=2, dropout=0.0)
N_SPECIAL = len(WordTokenizer.SPECIAL_TOKENS)  # ids 0..4: [PAD] [UNK] [CLS] [SEP] [MASK]


class Vocab:
    """What mask_tokens needs from a tokenizer, for a vocabulary of any size."""

    SPECIAL_TOKENS = WordTokenizer.SPECIAL_TOKENS
    mask_id = WordTokenizer.mask_id

    def __init__(self, vocab_size):
        self.vocab_size = vocab_size


def make(config=TINY, seed=0):
    mg.manual_seed(seed)
    return BERT(config)


def batch(B=3, T=10, V=20, seed=0, lengths=(10, 7, 4)):
    """[CLS] words... [SEP] with segment 1 on the second half, then [PAD]s to T."""
    rng = np.random.default_rng(seed)
    idx = np.zeros((B, T), dtype=np.int64)
    seg = np.zeros((B, T), dtype=np.int64)
    for i, n in enumerate(lengths):
        idx[i, :n] = rng.integers(N_SPECIAL, V, n)
        idx[i, 0], idx[i, n - 1] = WordTokenizer.cls_id, WordTokenizer.sep_id
        seg[i, n // 2:n] = 1
    return idx, seg


# ----------------------------------------------------------------------------- model


def test_shapes_and_tied_decoder():
    model = make()
    idx, seg = batch()
    mlm, nsp = model(idx, seg)
    assert mlm.shape == (3, 10, 20) and nsp.shape == (3, 2)
    assert model.mlm_head.decoder.weight is model.embed.tok_emb.weight
    names = [n for n, _ in model.named_parameters()]
    assert "embed.tok_emb.weight" in names and "mlm_head.decoder.weight" not in names
    assert "mlm_head.decoder.bias" in names  # the decoder keeps a bias of its own
    positions = np.zeros((3, 10), dtype=bool)
    positions[0, 2], positions[1, 1], positions[1, 3] = True, True, True
    picked, _ = model(idx, seg, positions=positions)
    assert picked.shape == (3, 20)
    np.testing.assert_allclose(picked.numpy(), mlm.numpy()[positions], rtol=1e-5, atol=1e-6)


def test_segments_change_the_outputs():
    model = make()
    idx, seg = batch()
    a, _ = model(idx, seg)
    b, _ = model(idx, np.zeros_like(seg))
    assert not np.allclose(a.numpy()[0], b.numpy()[0])


def test_too_long_sequence_is_a_clear_error():
    with pytest.raises(ValueError, match="longer than block_size 12"):
        make()(np.full((1, 13), 7))


def test_pad_tokens_do_not_change_real_positions():
    model = make()
    idx, seg = batch()
    lengths = np.array([10, 7, 4])
    real = np.arange(10) < lengths[:, None]  # (B, T)
    mask = nn.padding_mask(lengths, max_len=10)
    mlm, nsp = model(idx, seg, pad_mask=mask)
    # Any ids and segments at the padded positions: the real positions must not notice.
    junk, junk_seg = idx.copy(), seg.copy()
    junk[~real] = np.random.default_rng(1).integers(0, 20, (~real).sum())
    junk_seg[~real] = 1
    mlm2, nsp2 = model(junk, junk_seg, pad_mask=mask)
    np.testing.assert_allclose(mlm2.numpy()[real], mlm.numpy()[real], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nsp2.numpy(), nsp.numpy(), rtol=1e-5, atol=1e-5)
    # The default mask comes from pad_id: more padding columns change nothing either.
    wide = np.concatenate([idx, np.zeros((3, 2), dtype=np.int64)], axis=1)
    wide_seg = np.concatenate([seg, np.zeros((3, 2), dtype=np.int64)], axis=1)
    mlm3, nsp3 = model(wide, wide_seg)
    np.testing.assert_allclose(mlm3.numpy()[:, :10][real], mlm.numpy()[real], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nsp3.numpy(), nsp.numpy(), rtol=1e-5, atol=1e-5)
    # Without the mask the padding would matter: the test can see a difference.
    unmasked, _ = model(idx, seg, pad_mask=np.ones((3, 1, 1, 10), dtype=bool))
    assert not np.allclose(unmasked.numpy()[2, :4], mlm.numpy()[2, :4], atol=1e-4)


def test_loss_reads_selected_positions_only():
    model = make()
    idx, seg = batch()
    labels = np.full_like(idx, IGNORE)
    labels[0, 3], labels[1, 2] = 9, 13
    is_next = np.array([1, 0, 1])
    mlm, nsp = model(idx, seg)
    logp = mlm.numpy() - np.log(np.exp(mlm.numpy()).sum(-1, keepdims=True))
    nsp_logp = nsp.numpy() - np.log(np.exp(nsp.numpy()).sum(-1, keepdims=True))
    expected = -(logp[0, 3, 9] + logp[1, 2, 13]) / 2 - nsp_logp[[0, 1, 2], is_next].mean()
    assert model.loss(idx, seg, labels, is_next).item() == pytest.approx(expected, rel=1e-4)


def test_gradients_match_finite_differences():
    config = BERTConfig(vocab_size=12, block_size=6, embed_dim=8, num_heads=2, num_layers=1, dropout=0.0,
                        activation="none")
    model = make(config).double()
    idx, seg = batch(B=2, T=6, V=12, lengths=(6, 4))
    labels = np.full_like(idx, IGNORE)
    labels[0, 1], labels[0, 4], labels[1, 2] = 7, 11, 5
    is_next = np.array([0, 1])

    def loss():
        return model.loss(idx, seg, labels, is_next)

    assert_parameter_grads(model, loss, atol=1e-6)  # two random entries of every parameter


def test_overfits_one_batch():
    model = make()
    idx, seg = batch(seed=2)
    labels = np.where(idx >= N_SPECIAL, idx, IGNORE)  # predict every word...
    inputs = np.where(labels != IGNORE, WordTokenizer.mask_id, idx)  # ...from [MASK]s and position
    is_next = np.array([1, 0, 1])
    opt = mg.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    losses = []
    for _ in range(80):
        loss = model.loss(inputs, seg, labels, is_next)
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert losses[0] > 3.0 and losses[-1] < 0.1 * losses[0]


# ----------------------------------------------------------------------------- masking


def test_masking_proportions():
    rng = np.random.default_rng(0)
    V = 1000
    ids = rng.integers(N_SPECIAL, V, (400, 500))
    ids[:, 0], ids[:, -1] = WordTokenizer.cls_id, WordTokenizer.sep_id
    ids[:, 400:] = WordTokenizer.pad_id
    ids[::7, 200] = WordTokenizer.unk_id
    inputs, labels = mask_tokens(ids, Vocab(V), np.random.default_rng(1))
    special = ids < N_SPECIAL
    selected = labels != IGNORE
    n = selected.sum()
    assert abs(n / (~special).sum() - 0.15) < 0.005  # ~30,000 of ~200,000 ordinary tokens
    assert not selected[special].any()  # [CLS], [SEP], [PAD], [UNK] are never selected
    masked = selected & (inputs == WordTokenizer.mask_id)
    randomized = selected & (inputs != WordTokenizer.mask_id) & (inputs != ids)
    kept = selected & (inputs == ids)
    assert abs(masked.sum() / n - 0.8) < 0.01
    assert abs(randomized.sum() / n - 0.1 * (1 - 1 / (V - N_SPECIAL))) < 0.008
    assert abs(kept.sum() / n - 0.1) < 0.008


@given(B=st.integers(1, 6), T=st.integers(1, 40), V=st.integers(N_SPECIAL + 1, 30),
       seed=st.integers(0, 2**16), p=st.floats(0.0, 1.0))
def test_masking_invariants(B, T, V, seed, p):
    ids = np.random.default_rng(seed).integers(0, V, (B, T))
    inputs, labels = mask_tokens(ids, Vocab(V), np.random.default_rng(seed + 1), mask_prob=p)
    selected = labels != IGNORE
    assert inputs.shape == labels.shape == ids.shape
    np.testing.assert_array_equal(labels[selected], ids[selected])  # the original words
    np.testing.assert_array_equal(inputs[~selected], ids[~selected])  # untouched elsewhere
    assert (ids[selected] >= N_SPECIAL).all()
    changed = inputs[selected]
    assert ((changed == WordTokenizer.mask_id) | (changed >= N_SPECIAL)).all()  # no other special
    if p == 1.0:
        np.testing.assert_array_equal(selected, ids >= N_SPECIAL)


def test_masking_with_a_real_tokenizer():
    tok = WordTokenizer.from_text("return the value of the key . the key is a string .", max_vocab=12)
    ids = np.array([[tok.cls_id, *tok.encode("return the value of the key .") * 30, tok.sep_id]])
    inputs, labels = mask_tokens(ids, tok, np.random.default_rng(0))
    assert 0 < (labels != IGNORE).sum() < ids.size
    assert labels[0, 0] == IGNORE and labels[0, -1] == IGNORE
    assert inputs.max() < tok.vocab_size


@given(a=st.integers(0, 30), b=st.integers(0, 30), n=st.integers(0, 40))
def test_truncate_pair_keeps_prefixes_and_fits(a, b, n):
    x, y = truncate_pair(list(range(a)), list(range(100, 100 + b)), n)
    assert len(x) + len(y) == min(a + b, n)
    assert x == list(range(len(x))) and y == list(range(100, 100 + len(y)))
    if a + b > n:  # the longer one was cut first: the two end up at most one apart, or one is whole
        assert abs(len(x) - len(y)) <= 1 or len(x) == a or len(y) == b


# ----------------------------------------------------------------------------- recipe


@pytest.fixture(scope="module")
def recipe():
    mg.manual_seed(0)
    return BERTRecipe("tiny")


def test_pair_layout(recipe):
    tok = recipe.tokenizer
    long_b = "Open " + "a " * 50 + "file."
    pairs = [("Return the value.", "The key is a string.", 1), ("Close it.", long_b, 0)]
    idx, seg = recipe.encode_pairs(pairs)
    a, b = tok.encode("Return the value."), tok.encode("The key is a string.")
    first = [tok.cls_id, *a, tok.sep_id, *b, tok.sep_id]
    np.testing.assert_array_equal(idx[0, :len(first)], first)
    assert (idx[0, len(first):] == tok.pad_id).all()
    np.testing.assert_array_equal(seg[0, :len(first)], [0] * (len(a) + 2) + [1] * (len(b) + 1))
    assert (seg[0, len(first):] == 0).all()
    assert idx.shape[1] == recipe.config.block_size  # the long pair is cut to fit
    assert idx[1, -1] == tok.sep_id and (idx[1] == tok.sep_id).sum() == 2


def test_batches_and_evaluation(recipe):
    inputs, seg, labels, is_next = recipe.batch("train", np.random.default_rng(0), 8)
    assert inputs.shape == seg.shape == labels.shape and inputs.shape[0] == 8
    assert inputs.shape[1] <= recipe.config.block_size
    assert set(np.unique(is_next.numpy())) <= {0, 1}
    assert (labels.numpy() != IGNORE).any()
    m1, m2 = recipe.evaluate(2), recipe.evaluate(2)
    assert m1 == m2  # the same held-out batches every time
    assert recipe.model.training  # evaluation puts the mode back
    assert set(m1) == {"val_loss", "mlm_acc", "mlm_baseline", "nsp_acc"}
    assert m1["val_loss"] > 0 and all(0 <= m1[k] <= 1 for k in ("mlm_acc", "mlm_baseline", "nsp_acc"))
    assert m1["mlm_baseline"] > 0  # the most frequent word is among the masked ones


def test_fill_mask_and_demo(recipe):
    guesses = recipe.fill_mask("Return the [MASK] of the [MASK].", top_k=4)
    assert len(guesses) == 2 and all(len(g) == 4 for g in guesses)
    probs = [p for g in guesses for _, p in g]
    assert all(0 <= p <= 1 for p in probs) and guesses[0][0][1] >= guesses[0][1][1]
    assert not any(w.startswith("[") and w.endswith("]") for g in guesses for w, _ in g)
    assert "[MASK]" in recipe.demo()


def test_checkpoint_round_trip(recipe, tmp_path):
    cfg = recipe.train_config("tiny")
    opt, sched = make_optimizer(recipe.model, cfg)
    path = str(tmp_path / "checkpoint.npz")
    save_checkpoint(path, recipe, opt, sched, 0, cfg, np.random.default_rng(0), [])
    meta, state, _ = read_checkpoint(path)
    again = BERTRecipe.from_meta(meta["recipe"])
    again.model.load_state_dict(state)
    assert again.tokenizer.tokens == recipe.tokenizer.tokens and again.config == recipe.config
    idx, seg = recipe.encode_pairs(recipe.val_pairs[:4])
    recipe.model.eval()
    again.model.eval()
    for x, y in zip(recipe.model(idx, seg), again.model(idx, seg)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    recipe.model.train()
    assert again.evaluate(1) == recipe.evaluate(1)


def test_cli_train_and_eval(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "bert", "--preset", "tiny", "--steps", "5", "--out", out, "--quiet"]) == 0
    assert os.path.isfile(os.path.join(out, "checkpoint.npz"))
    assert main(["eval", os.path.join(out, "checkpoint.npz"), "--batches", "1"]) == 0
    printed = capsys.readouterr().out
    assert "mlm_acc" in printed and "nsp_acc" in printed and "[MASK]" in printed


def test_train_config_presets():
    assert BERTRecipe.default_preset == "quick"
    assert set(BERTRecipe.train_presets) == set(BERTRecipe.presets) == {"tiny", "quick"}
    assert isinstance(BERTRecipe.train_config("quick"), TrainConfig)
