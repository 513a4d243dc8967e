"""What the two recipes of the bundled 8x8 digits (vit, cnn; `DigitsRecipe`) share: a tiny run
lowers the loss and prints the demo, a checkpoint restores the model exactly, and the command
says in one line that scikit-learn (which holds the digits) is missing."""

import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad import cli
from minigrad.models.recipes import recipe_class
from minigrad.models.runs import read_checkpoint
from minigrad.models.train import TrainConfig, train

# model -> extra recipe arguments for the round trip, and a state-dict key that must be saved
ROUND_TRIP = {"vit": ({}, "cls_token"), "cnn": ({"train_size": 200}, "block2.norm.running_var")}


@pytest.mark.parametrize("name", ["vit", "cnn"])
def test_a_tiny_training_run_lowers_the_loss(tmp_path, name):
    mg.manual_seed(0)
    cls = recipe_class(name)
    rec = cls("tiny")
    before = rec.evaluate()
    assert before["val_loss"] == pytest.approx(np.log(10), rel=1e-4)
    cfg = cls.train_config("tiny", steps=60, eval_every=60)
    after = train(rec, cfg, str(tmp_path), progress=False, log=lambda s: None)
    assert after["val_loss"] < before["val_loss"] - 0.3
    assert after["accuracy"] > 0.3
    demo = rec.demo()
    assert demo.count("true") == 6 and len(demo.splitlines()) == 9


@pytest.mark.parametrize("name", ["vit", "cnn"])
def test_checkpoint_round_trip(tmp_path, name):
    extra, key = ROUND_TRIP[name]
    rec = recipe_class(name)("tiny", label_smoothing=0.1, **extra)
    train(rec, TrainConfig(steps=3, batch_size=4, eval_every=3), str(tmp_path), progress=False,
          log=lambda s: None)
    meta, state, _ = read_checkpoint(str(tmp_path / "checkpoint.npz"))
    assert meta["model"] == name and meta["step"] == 3
    assert key in state  # e.g. the CNN's running statistics are saved
    again = recipe_class(name).from_meta(meta["recipe"])
    again.model.load_state_dict(state)
    assert again.config == rec.config and again.label_smoothing == 0.1
    assert len(again.x_train) == len(rec.x_train)
    x = mg.tensor(rec.x_test[:4])
    rec.model.eval()
    np.testing.assert_array_equal(again.model.eval()(x).numpy(), rec.model(x).numpy())
    assert again.evaluate() == rec.evaluate()


@pytest.mark.parametrize("name", ["vit", "cnn"])
def test_cli_without_scikit_learn_is_a_one_line_error(tmp_path, monkeypatch, capsys, name):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # `import sklearn...` now raises ImportError
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    code = cli.main(["train", name, "--preset", "tiny", "--steps", "5", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and "scikit-learn" in err and err.startswith("minigrad: error:")
    assert not (tmp_path / "checkpoint.npz").exists()
