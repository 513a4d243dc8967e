"""Tests for minigrad.models.vit and its recipe: patches, class token, training, checkpoints, CLI."""


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import cli
from minigrad.models.recipes.vision import ViTRecipe
from minigrad.models.vit import PRESETS, ViT, ViTConfig, patchify

TINY = ViTConfig(**PRESETS["tiny"])


@pytest.fixture(scope="module")
def recipe():
    return ViTRecipe("tiny")


# --------------------------------------------------------------------------- the model


@given(B=st.integers(1, 3), c=st.integers(1, 3), grid=st.integers(1, 3), p=st.integers(1, 3))
def test_patchify_matches_an_explicit_loop(B, c, grid, p):
    side = grid * p
    x = np.random.default_rng(B * 100 + c * 10 + p).normal(size=(B, c, side, side)).astype(np.float32)
    out = patchify(mg.tensor(x), p).numpy()
    assert out.shape == (B, grid * grid, c * p * p)
    for b in range(B):
        for i in range(grid):
            for j in range(grid):
                n = i * grid + j  # patches row by row
                expected = [x[b, ch, i * p + r, j * p + s]
                            for ch in range(c) for r in range(p) for s in range(p)]
                np.testing.assert_array_equal(out[b, n], expected)


def test_patchify_gradient_is_the_inverse_rearrangement():
    x = mg.randn(2, 1, 4, 4, requires_grad=True)
    g = np.random.default_rng(0).normal(size=(2, 4, 4)).astype(np.float32)
    patchify(x, 2).backward(mg.tensor(g))
    # the gradient lands on the pixel each patch entry was read from
    np.testing.assert_array_equal(x.grad.numpy()[1, 0, 2:4, 0:2].ravel(), g[1, 2])
    np.testing.assert_array_equal(x.grad.numpy()[0, 0, 0:2, 2:4].ravel(), g[0, 1])


@pytest.mark.parametrize("config", [
    pytest.param(TINY, id="tiny"),
    pytest.param(ViTConfig(image_size=6, patch_size=3, in_channels=3, num_classes=4, embed_dim=12,
                           num_heads=3, num_layers=2), id="rgb-3x3-patches"),
])
def test_shapes(config):
    mg.manual_seed(0)
    model = ViT(config)
    x = mg.randn(5, config.in_channels, config.image_size, config.image_size)
    assert model.patch_embed(x).shape == (5, config.num_patches, config.embed_dim)
    assert model.features(x).shape == (5, config.embed_dim)
    assert model(x).shape == (5, config.num_classes)
    assert model.predict(x).shape == (5,)
    # a zero head starts from uniform predictions
    assert model.loss(x, mg.tensor(np.arange(5) % config.num_classes)).item() == pytest.approx(
        np.log(config.num_classes), rel=1e-5)


def test_bad_configs_and_inputs_give_clear_errors():
    with pytest.raises(ValueError, match="image_size 8 is not divisible by patch_size 3"):
        ViTConfig(patch_size=3)
    with pytest.raises(ValueError, match="embed_dim 10 is not divisible by num_heads 4"):
        ViTConfig(embed_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="divisible by the patch size 3"):
        patchify(mg.randn(1, 1, 8, 8), 3)
    model = ViT(TINY)
    for shape in [(2, 8, 8), (2, 3, 8, 8), (2, 1, 6, 8)]:
        with pytest.raises(ValueError, match=r"expected images of shape \(B, 1, 8, 8\)"):
            model(mg.randn(*shape))


def test_class_token_output_changes_when_any_patch_changes():
    mg.manual_seed(1)
    model = ViT(TINY).eval()
    x = np.random.default_rng(1).random((1, 1, 8, 8)).astype(np.float32)
    base = model.features(mg.tensor(x)).numpy()
    p = TINY.patch_size
    for i in range(0, 8, p):
        for j in range(0, 8, p):
            changed = x.copy()
            changed[0, 0, i:i + p, j:j + p] += 1.0
            assert np.abs(model.features(mg.tensor(changed)).numpy() - base).max() > 1e-4, (i, j)


def test_overfits_a_small_batch(recipe):
    mg.manual_seed(0)
    model = ViT(TINY)
    x, y = mg.tensor(recipe.x_train[:16]), mg.tensor(recipe.y_train[:16])
    opt = mg.optim.Adam(list(model.parameters()), lr=1e-2)
    for _ in range(80):
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.03
    assert (model.predict(x) == recipe.y_train[:16]).all()


# --------------------------------------------------------------------------- recipe and training


def test_batches_come_from_the_rng(recipe):
    x, y = recipe.batch("train", np.random.default_rng(3), 7)
    x2, y2 = recipe.batch("train", np.random.default_rng(3), 7)
    assert x.shape == (7, 1, 8, 8) and y.shape == (7,) and y.numpy().dtype == np.int64
    np.testing.assert_array_equal(x.numpy(), x2.numpy())
    assert 0.0 <= x.numpy().min() and x.numpy().max() <= 1.0
    assert len(recipe.x_test) == 360 and len(recipe.x_train) == 1437


# --------------------------------------------------------------------------- command line


def test_cli_train_and_eval(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", "vit", "--preset", "tiny", "--steps", "5", "--out", out, "--quiet"]) == 0
    assert cli.main(["eval", f"{out}/checkpoint.npz"]) == 0
    printed = capsys.readouterr().out
    assert "vit at step 5: val_loss" in printed and "accuracy" in printed


def test_cli_rejects_a_data_file(tmp_path, capsys):
    assert cli.main(["train", "vit", "--data", "x.txt", "--out", str(tmp_path)]) != 0
    assert "takes no --data" in capsys.readouterr().err
