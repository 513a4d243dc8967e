"""Tests for minigrad.models.cnn and its recipe: shapes, receptive fields, BatchNorm's two modes,
gradients, training, checkpoints and the command line."""


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from paramcheck import assert_parameter_grads

import minigrad as mg
from minigrad import cli
from minigrad.models.cnn import CNN, PRESETS, CNNConfig
from minigrad.models.recipes import RECIPES, recipe_class
from minigrad.models.recipes.vision_cnn import CNNRecipe
from minigrad.models.train import TrainConfig, train
from minigrad.models.vit import PRESETS as VIT_PRESETS
from minigrad.models.vit import ViT, ViTConfig

TINY = CNNConfig(**PRESETS["tiny"])


@pytest.fixture(scope="module")
def recipe():
    return CNNRecipe("tiny")


def make(config=TINY, seed=0):
    mg.manual_seed(seed)
    return CNN(config)


def images(B, c=1, side=8, seed=0):
    return mg.tensor(np.random.default_rng(seed).random((B, c, side, side)).astype(np.float32))


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("config", [
    pytest.param(TINY, id="tiny"),
    pytest.param(CNNConfig(image_size=6, in_channels=3, num_classes=4, channels=(5, 6, 7)), id="rgb-6x6"),
])
def test_shapes(config):
    model = make(config)
    c, s = config.in_channels, config.image_size
    C1, C2, C3 = config.channels
    x = images(5, c, s)
    assert model.block1(x).shape == (5, C1, s, s)
    assert model.block2(model.block1(x)).shape == (5, C2, s, s)
    assert model.pool(model.block2(model.block1(x))).shape == (5, C2, s // 2, s // 2)
    assert model.features(x).shape == (5, C3)
    assert model(x).shape == (5, config.num_classes)
    predicted = model.predict(x)
    assert predicted.shape == (5,) and predicted.dtype == np.int64
    # a zero head starts from uniform predictions
    assert model.loss(x, mg.tensor(np.arange(5) % config.num_classes)).item() == pytest.approx(
        np.log(config.num_classes), rel=1e-5)


def test_parameters_are_the_layers_and_comparable_to_the_quick_vit():
    model = make(CNNConfig(**PRESETS["quick"]))
    names = dict(model.named_parameters())
    assert names["block1.conv.weight"].shape == (32, 1, 3, 3) and "block1.conv.bias" not in names
    assert names["block3.conv.weight"].shape == (128, 64, 3, 3) and names["block3.conv.bias"].shape == (128,)
    assert names["block2.norm.weight"].shape == (64,) and names["head.weight"].shape == (10, 128)
    expected = (32 * 9 + 2 * 32) + (64 * 32 * 9 + 2 * 64) + (128 * 64 * 9 + 128) + (10 * 128 + 10)
    assert model.num_parameters() == expected == 94_058
    vit = ViT(ViTConfig(**VIT_PRESETS["quick"])).num_parameters()
    assert 0.8 < expected / vit < 1.2  # the quick ViT's 102,218
    assert {"block1.norm.running_mean", "block2.norm.running_var"} <= set(model.state_dict())


def test_bad_configs_and_inputs_give_clear_errors():
    with pytest.raises(ValueError, match="image_size must be even"):
        CNNConfig(image_size=7)
    with pytest.raises(ValueError, match=r"channels must be three positive counts .* \(4, 8\)"):
        CNNConfig(channels=(4, 8))
    with pytest.raises(ValueError, match="channels must be three positive counts"):
        CNNConfig(channels=(4, 0, 8))
    assert CNNConfig(channels=[4, 8, 8]) == TINY  # a list, as read back from JSON
    model = make()
    for shape in [(2, 8, 8), (2, 3, 8, 8), (2, 1, 6, 8)]:
        with pytest.raises(ValueError, match=r"CNN: expected images of shape \(B, 1, 8, 8\)"):
            model(mg.randn(*shape))


@given(i=st.integers(0, 7), j=st.integers(0, 7))
def test_each_block_sees_a_neighbourhood_of_pixels(i, j):
    # Eval mode, so BatchNorm uses fixed statistics and an image does not see the others.
    model = make(seed=1).eval()
    x = np.random.default_rng(2).random((1, 1, 8, 8)).astype(np.float32)
    changed = x.copy()
    changed[0, 0, i, j] += 1.0
    for depth, reach in [(1, 1), (2, 2)]:  # 3x3, then 5x5
        a, b = mg.tensor(x), mg.tensor(changed)
        for block in [model.block1, model.block2][:depth]:
            a, b = block(a), block(b)
        moved = np.abs(a.numpy() - b.numpy()).max(axis=(0, 1)) > 0  # (8, 8): output pixels that changed
        rows, cols = np.nonzero(moved)
        assert moved.any()
        assert (np.abs(rows - i) <= reach).all() and (np.abs(cols - j) <= reach).all(), (depth, i, j)


def test_batch_norm_mixes_the_batch_in_training_only():
    model = make(seed=3)
    x = images(4, seed=3)
    alone = model.features(x[:1]).numpy()  # BatchNorm normalises with the statistics of this one image
    together = model.features(x).numpy()[:1]
    assert np.abs(alone - together).max() > 1e-3
    model.eval()
    np.testing.assert_allclose(model.features(x[:1]), model.features(x).numpy()[:1], rtol=1e-5, atol=1e-6)


def test_training_mode_updates_the_running_statistics():
    model = make(seed=4)
    before = model.block1.norm.running_mean.numpy().copy()
    model(images(8, seed=4))
    assert np.abs(model.block1.norm.running_mean.numpy() - before).max() > 0
    model.eval()
    frozen = model.block1.norm.running_mean.numpy().copy()
    model(images(8, seed=5))
    np.testing.assert_array_equal(model.block1.norm.running_mean.numpy(), frozen)


def test_gradients_match_finite_differences():
    config = CNNConfig(image_size=4, num_classes=3, channels=(2, 3, 2))
    model = make(config, seed=5).double()
    x = np.random.default_rng(5).normal(size=(2, 1, 4, 4))
    labels = mg.tensor([0, 2])
    # the images, through conv, BatchNorm (batch statistics), ReLU, max-pool and the mean
    assert mg.gradcheck(lambda images: model.features(images), [mg.tensor(x, requires_grad=True)])

    def loss():
        return model.loss(mg.tensor(x), labels)

    assert_parameter_grads(model, loss, atol=1e-7)  # two random entries of every parameter


def torch_twin(config):
    """The same network written with torch.nn, its modules named as the CNN's (so state dicts match)."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    tnn = torch.nn
    C1, C2, C3 = config.channels

    def block(cin, cout, norm=True):
        parts = {"conv": tnn.Conv2d(cin, cout, 3, padding=1, bias=not norm)}
        return tnn.ModuleDict({**parts, "norm": tnn.BatchNorm2d(cout)} if norm else parts)

    class Twin(tnn.Module):
        def __init__(self):
            super().__init__()
            self.block1, self.block2 = block(config.in_channels, C1), block(C1, C2)
            self.block3, self.head = block(C2, C3, norm=False), tnn.Linear(C3, config.num_classes)

        def forward(self, x):
            x = torch.relu(self.block1["norm"](self.block1["conv"](x)))
            x = torch.relu(self.block2["norm"](self.block2["conv"](x)))
            x = torch.relu(self.block3["conv"](tnn.functional.max_pool2d(x, 2)))
            return self.head(x.mean(dim=(2, 3)))

    return torch, Twin()


def test_matches_the_same_network_in_torch():
    config = CNNConfig(num_classes=5, channels=(3, 4, 6))
    model = make(config, seed=6).double()
    torch, twin = torch_twin(config)
    rng = np.random.default_rng(6)
    for p in model.parameters():  # a nonzero head, so every layer gets a gradient
        p.numpy()[...] = rng.normal(scale=0.5, size=p.shape)
    twin = twin.double()  # before loading: load_state_dict copies into the parameters' dtype
    missing, unexpected = twin.load_state_dict(
        {k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()}, strict=False)
    assert not unexpected and all(k.endswith("num_batches_tracked") for k in missing)
    x, y = rng.normal(size=(4, 1, 8, 8)), np.array([0, 3, 4, 1])
    # training mode: BatchNorm normalises with the batch's statistics and updates its running ones
    loss = model.loss(mg.tensor(x), mg.tensor(y))
    loss.backward()
    tx = torch.tensor(x)
    tloss = torch.nn.functional.cross_entropy(twin(tx), torch.tensor(y))
    tloss.backward()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-10)
    tparams = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad, tparams[name].grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)
    tstate = twin.state_dict()
    for name in ("block1.norm.running_mean", "block2.norm.running_var"):
        np.testing.assert_allclose(np.asarray(model.state_dict()[name]), tstate[name].numpy(), rtol=1e-10)
    # eval mode: the running statistics
    model.eval()
    twin.eval()
    with torch.no_grad():
        np.testing.assert_allclose(model(mg.tensor(x)).numpy(), twin(tx).numpy(), rtol=1e-8, atol=1e-10)


def test_overfits_a_small_batch(recipe):
    model = make(CNNConfig(channels=(8, 16, 16)))
    x, y = mg.tensor(recipe.x_train[:16]), mg.tensor(recipe.y_train[:16])
    opt = mg.optim.Adam(list(model.parameters()), lr=1e-2)
    for _ in range(60):
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1
    assert (model.predict(x) == recipe.y_train[:16]).mean() >= 0.9  # BatchNorm's running statistics


# --------------------------------------------------------------------------- recipe and training


def test_registered_with_presets_like_the_vits():
    assert RECIPES["cnn"] == "vision_cnn:CNNRecipe" and recipe_class("cnn") is CNNRecipe
    assert CNNRecipe.default_preset == "quick"
    assert set(CNNRecipe.train_presets) == set(CNNRecipe.presets) == {"tiny", "quick"}
    assert isinstance(CNNRecipe.train_config("quick"), TrainConfig)
    with pytest.raises(ValueError, match="unknown preset 'huge' for cnn"):
        CNNRecipe("huge")
    with pytest.raises(ValueError, match="cnn trains on the bundled 8x8 digits; it takes no --data"):
        CNNRecipe("tiny", data="x.txt")
    with pytest.raises(ValueError, match="the digits are 1 x 8 x 8 images"):
        CNNRecipe(config=CNNConfig(in_channels=3))


def test_batches_and_a_smaller_training_set(recipe):
    x, y = recipe.batch("train", np.random.default_rng(3), 7)
    x2, _ = recipe.batch("train", np.random.default_rng(3), 7)
    assert x.shape == (7, 1, 8, 8) and y.shape == (7,) and y.numpy().dtype == np.int64
    np.testing.assert_array_equal(x.numpy(), x2.numpy())
    assert len(recipe.x_test) == 360 and len(recipe.x_train) == 1437
    small = CNNRecipe("tiny", train_size=100)
    assert len(small.x_train) == len(small.y_train) == 100 and len(small.x_test) == 360
    np.testing.assert_array_equal(small.x_train, recipe.x_train[:100])  # the first 100
    xs, _ = small.batch("train", np.random.default_rng(0), 500)
    assert len({arr.tobytes() for arr in xs.numpy()}) <= 100
    for bad in (0, 1438):
        with pytest.raises(ValueError, match=f"cnn: train_size must be 1 to 1437, got {bad}"):
            CNNRecipe("tiny", train_size=bad)


# --------------------------------------------------------------------------- command line


def test_cli_train_eval_and_sample(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", "cnn", "--preset", "tiny", "--steps", "5", "--out", out, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("cnn (tiny): 1,022 parameters, 5 steps, batch 32")
    assert printed.count("true") == 6  # the demo
    assert cli.main(["eval", f"{out}/checkpoint.npz"]) == 0
    printed = capsys.readouterr().out
    assert "cnn at step 5: val_loss" in printed and "accuracy" in printed
    assert cli.main(["sample", f"{out}/checkpoint.npz"]) == 2
    err = capsys.readouterr().err
    assert "cnn models do not generate text; try `minigrad eval`" in err and err.count("\n") == 1


@pytest.mark.requires_dot
def test_cli_graph_shows_the_blocks(tmp_path, capsys):
    out = tmp_path / "cnn.svg"
    assert cli.main(["graph", "cnn", "--out", str(out)]) == 0
    assert "cnn (tiny)" in capsys.readouterr().out
    svg = out.read_text()
    for box in ["block1 (ConvBlock)", "block2 (ConvBlock)", "pool (MaxPool2d)", "block3 (ConvBlock)",
                "head (Linear)", "CrossEntropy"]:
        assert box in svg, box
    deep = tmp_path / "cnn.dot"
    assert cli.main(["graph", "cnn", "--depth", "2", "--out", str(deep)]) == 0
    assert '"block1.conv (Conv2d)' in deep.read_text() and '"block2.norm (BatchNorm2d)' in deep.read_text()


def test_cli_attention_says_the_cnn_has_none(tmp_path, capsys):
    rec = CNNRecipe("tiny")
    cfg = TrainConfig(steps=1, batch_size=2, eval_every=1)
    train(rec, cfg, str(tmp_path), progress=False, log=lambda s: None)
    code = cli.main(["attention", str(tmp_path / "checkpoint.npz"), "--out", str(tmp_path / "a.png")])
    err = capsys.readouterr().err
    assert code == 2 and "a cnn model has no attention to draw" in err and err.count("\n") == 1
    assert not (tmp_path / "a.png").exists()
