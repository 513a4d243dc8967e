"""Tests for image captioning with attention (minigrad.models.caption), its recipe and its commands."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.cli import main
from minigrad.models.caption import CaptionConfig, Captioner
from minigrad.models.data.captions import CAPTION_VOCAB, CaptionData, box_cells, encode_captions
from minigrad.models.recipes import RECIPES, recipe_class
from minigrad.models.recipes.caption import CaptionRecipe
from minigrad.models.runs import read_checkpoint
from minigrad.models.train import TrainConfig, train

PNG = b"\x89PNG\r\n\x1a\n"
V = CAPTION_VOCAB.vocab_size


def tiny_model(seed: int = 0, **overrides) -> Captioner:
    mg.manual_seed(seed)
    options = dict(vocab_size=V, channels=(4, 4), feature_dim=8, embed_dim=8, hidden_size=16, attention_dim=8)
    options.update(overrides)
    return Captioner(CaptionConfig(**options)).eval()


@pytest.fixture(scope="module")
def pictures():
    """12 training pictures: images (12, 1, 24, 24), ids (12, T + 1), the CaptionSet."""
    s = CaptionData(24, 24).make(12, "train", seed=0)
    return s.images, encode_captions(s.captions), s


@pytest.fixture(scope="module")
def recipe():
    mg.manual_seed(0)
    return CaptionRecipe("tiny")


# ----------------------------------------------------------------------------- the model


def test_shapes(pictures):
    images, ids, _ = pictures
    model = tiny_model()
    assert model.config.grid == (6, 6)
    annotations, (h, c), keys = model.encode(images)
    assert annotations.shape == (12, 36, 8) and h.shape == c.shape == (12, 16) and keys.shape == (12, 36, 8)
    logits, weights = model(mg.tensor(images), mg.tensor(ids[:, :-1]))
    assert logits.shape == (12, ids.shape[1] - 1, V) and weights.shape == (12, ids.shape[1] - 1, 36)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, rtol=1e-5)  # a distribution over the cells
    loss = model.loss(mg.tensor(images), mg.tensor(ids[:, :-1]), mg.tensor(ids[:, 1:]))
    assert loss.shape == () and np.isclose(loss.item(), np.log(V), rtol=0.3)
    out = model.generate(images, max_len=5)
    assert out.shape[0] == 12 and 1 <= out.shape[1] <= 5 and out.dtype == np.int64
    assert model.attention(images, out).shape == (12, out.shape[1], 36)
    with pytest.raises(ValueError, match=r"expected images of shape \(B, 1, 24, 24\), got \(2, 24, 24\)"):
        model.encode(np.zeros((2, 24, 24), dtype=np.float32))
    with pytest.raises(ValueError, match="must divide by 4"):
        CaptionConfig(image_height=26)


def test_annotations_are_the_last_feature_map_cell_by_cell(pictures):
    images = pictures[0][:2]
    model = tiny_model()
    fmap = model.encoder.cnn(mg.tensor(images)).numpy()  # (2, F, 6, 6)
    annotations = model.encoder(mg.tensor(images)).numpy()  # (2, 36, F)
    pos = model.encoder.pos.weight.numpy()  # (36, F)
    cell = fmap[:, :, 2, 3]  # (2, F): row 2, column 3 is annotation 2 * 6 + 3, layer-normed
    normed = (cell - cell.mean(-1, keepdims=True)) / np.sqrt(cell.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(annotations[:, 2 * 6 + 3], normed + pos[2 * 6 + 3], rtol=1e-4, atol=1e-5)


def test_attention_matches_what_greedy_decoding_used(pictures):
    images = pictures[0]
    model = tiny_model(seed=1)
    ids, weights = model.greedy_decode(images, max_len=5, return_attention=True)
    np.testing.assert_allclose(model.attention(images, ids), weights, rtol=1e-5, atol=1e-7)
    with nn.record_attention(model) as maps:
        model.attention(images, ids)
    assert maps.names() == ["decoder.attention"] and maps.weights("decoder.attention").shape == weights.shape


def test_a_few_steps_lower_the_loss(pictures):
    images, ids, _ = pictures
    model = tiny_model().train()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(25):
        loss = model.loss(mg.tensor(images), mg.tensor(ids[:, :-1]), mg.tensor(ids[:, 1:]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.8
    assert all(p.grad is not None for p in model.parameters())  # the CNN learns too


def test_beam_width_one_is_greedy_and_wider_beams_score_at_least_as_well(pictures):
    images, ids, _ = pictures
    model = tiny_model(seed=2)
    greedy = model.greedy_decode(images, max_len=6)
    np.testing.assert_array_equal(model.beam_search(images, beam_size=1, max_len=6), greedy)
    np.testing.assert_array_equal(model.generate(images, max_len=6, beam_size=1), greedy)

    def logp(out):  # the summed log-probability of each caption, through its EOS
        tgt_in = np.concatenate([np.full((len(out), 1), CAPTION_VOCAB.bos_id), out[:, :-1]], axis=1)
        logits, _ = model(mg.tensor(images), mg.tensor(tgt_in))
        lp = np.take_along_axis(logits.log_softmax(-1).numpy(), out[..., None], -1)[..., 0]
        ended = np.cumsum(out == CAPTION_VOCAB.eos_id, axis=1) - (out == CAPTION_VOCAB.eos_id)
        return (lp * (ended == 0)).sum(1)

    beam = model.beam_search(images, beam_size=4, max_len=6)
    assert beam.shape[0] == 12 and (logp(beam) >= logp(greedy) - 1e-4).all()
    with pytest.raises(ValueError, match="beam_size must be at least 1"):
        model.beam_search(images, beam_size=0)


def test_save_and_load(tmp_path, pictures):
    images, ids, _ = pictures
    model = tiny_model(seed=3)
    mg.save(model.state_dict(), tmp_path / "caption.npz")
    again = tiny_model(seed=4)
    again.load_state_dict(mg.load(tmp_path / "caption.npz"))
    args = (mg.tensor(images), mg.tensor(ids[:, :-1]), mg.tensor(ids[:, 1:]))
    assert again.loss(*args).item() == model.loss(*args).item()
    np.testing.assert_array_equal(again.generate(images), model.generate(images))


# ----------------------------------------------------------------------------- the recipe


def test_recipe_data_and_metrics(recipe):
    assert RECIPES["caption"] == "caption:CaptionRecipe" and recipe_class("caption") is CaptionRecipe
    test = recipe.test
    assert len(test) == 1000 and test.seen[::2].all() and not test.seen[1::2].any()
    images, tgt_in, tgt_out = recipe.batch("train", np.random.default_rng(0), 4)
    assert images.shape == (4, 1, 24, 24) and (tgt_in.numpy()[:, 1:] == tgt_out.numpy()[:, :-1]).all()
    metrics = recipe.evaluate(1)
    assert set(metrics) == {"val_loss", "exact_match", "exact_match_seen", "exact_match_unseen",
                            "word_accuracy", "bleu2", "attention_share"}
    assert all(0.0 <= metrics[k] <= 1.0 for k in metrics if k not in ("val_loss", "attention_share"))
    share = metrics["attention_share"]  # nan when the untrained model writes no digit word
    assert np.isnan(share) or 0.0 <= share <= 1.0


def test_recipe_metrics_of_a_model_that_reads_the_answer(recipe, monkeypatch):
    """A stand-in decoder that writes the true caption and looks at each digit's box: every
    measure is perfect."""
    test = recipe.test.take(slice(0, 50))
    truth = encode_captions(test.captions)[:, 1:]  # (50, T): words, EOS, PAD

    cells = box_cells(test.boxes, (24, 24), recipe.config.grid)  # (50, 2, N)
    digit = CAPTION_VOCAB.is_digit(truth)  # (50, T)
    rank = np.cumsum(digit, axis=1) - 1  # which digit a digit word names
    looks = np.full(truth.shape + (recipe.config.grid_size,), 1 / recipe.config.grid_size)  # (50, T, N)
    for b, t in zip(*np.nonzero(digit)):
        looks[b, t] = cells[b, rank[b, t]] / cells[b, rank[b, t]].sum()

    def oracle(images, max_len, return_attention=False):
        return (truth, looks) if return_attention else truth

    monkeypatch.setattr(recipe.model, "greedy_decode", oracle)
    metrics = recipe.evaluate(1)
    assert {k: metrics[k] for k in ("exact_match", "exact_match_seen", "exact_match_unseen", "word_accuracy",
                                    "bleu2")} == dict.fromkeys(("exact_match", "exact_match_seen",
                                                                "exact_match_unseen", "word_accuracy",
                                                                "bleu2"), 1.0)
    assert metrics["attention_share"] == pytest.approx(1.0)


def test_recipe_checkpoint_round_trip(tmp_path):
    mg.manual_seed(0)
    recipe = CaptionRecipe("tiny")
    batch = recipe.batch("train", np.random.default_rng(0), 4)
    train(recipe, TrainConfig(steps=3, batch_size=4, eval_every=3, eval_batches=1), str(tmp_path),
          progress=False, log=lambda s: None)
    meta, state, _ = read_checkpoint(str(tmp_path / "checkpoint.npz"))
    assert meta["model"] == "caption"
    again = CaptionRecipe.from_meta(meta["recipe"])
    again.model.load_state_dict(state)
    assert again.config == recipe.config and again.config.channels == (8, 8)
    assert again.loss(batch).item() == pytest.approx(recipe.loss(batch).item(), rel=1e-6)
    assert "test picture 0" in again.demo(2)


# ----------------------------------------------------------------------------- the commands


def test_commands_train_eval_sample_and_draw(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "caption", "--preset", "tiny", "--steps", "4", "--out", out, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "held out" in printed and "test picture 0" in printed
    assert main(["eval", f"{out}/checkpoint.npz", "--batches", "1"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("caption at step 4:") and "exact_match_unseen" in printed and "bleu2" in printed
    assert main(["sample", f"{out}/checkpoint.npz", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("test picture") == 4 and "beam 4:" in printed and "@" in printed
    picture = tmp_path / "figs" / "attention.png"
    assert main(["attention", f"{out}/checkpoint.npz", "--index", "5", "--out", str(picture)]) == 0
    printed = capsys.readouterr().out
    assert picture.read_bytes().startswith(PNG)
    assert "caption:" in printed and "decoder.attention" in printed.splitlines()[-1]


@pytest.mark.parametrize("argv,message", [
    pytest.param(["--index", "1000"], "--index 1000 is not a test picture: choose 0 to 999", id="bad-index"),
    pytest.param(["--text", "two"], "caption looks at a picture, not at text", id="text"),
])
def test_attention_errors_are_one_line(tmp_path, capsys, argv, message):
    out = str(tmp_path / "run")
    assert main(["train", "caption", "--preset", "tiny", "--steps", "1", "--out", out, "--quiet"]) == 0
    capsys.readouterr()
    code = main(["attention", f"{out}/checkpoint.npz", "--out", str(tmp_path / "a.png"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "a.png").exists()


def test_caption_takes_no_data_file():
    with pytest.raises(ValueError, match="takes no --data file"):
        CaptionRecipe("tiny", data="text.txt")
