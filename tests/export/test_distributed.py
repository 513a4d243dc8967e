"""`minigrad train gpt --engine torch --nproc N`: data-parallel training on torch.distributed
(gloo here) gives the losses of one process with the same global batch, writes a checkpoint
that minigrad's own commands read, and resumes exactly with either engine."""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import csv  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.export.distributed as distributed  # noqa: E402
import minigrad.models.train as loop  # noqa: E402
from minigrad.cli import main  # noqa: E402
from minigrad.models.recipes import recipe_class  # noqa: E402
from minigrad.models.recipes.lm import GPTRecipe  # noqa: E402
from minigrad.models.runs import read_checkpoint  # noqa: E402
from minigrad.models.train import TrainingInterrupted  # noqa: E402


def train(*argv):
    """`minigrad train ...` as from a fresh shell: the model's initial weights are drawn from
    minigrad's generator before the run seeds it, so reset it as a new process would have it."""
    mg.manual_seed(0)
    return main(["train", "gpt", *argv])


def train_losses(run):
    with open(os.path.join(run, "log.csv"), newline="") as f:
        return np.array([float(row["train_loss"]) for row in csv.DictReader(f)])


@pytest.mark.slow
def test_two_processes_train_like_one_and_the_checkpoint_is_minigrads(tmp_path, capsys):
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    common = ["--steps", "20", "--seed", "3", "--quiet", "--engine", "torch"]
    assert train(*common, "--out", one) == 0
    assert train(*common, "--out", two, "--nproc", "2") == 0  # 2 x 8 rows of the batch of 16
    a, b = train_losses(one), train_losses(two)
    assert len(a) == len(b) == 20 and a[-1] < a[0] - 0.5  # it learned
    np.testing.assert_allclose(b, a, atol=2e-5)  # log.csv keeps 5 decimals
    (meta1, w1, opt1), (meta2, w2, opt2) = read_checkpoint(one), read_checkpoint(two)
    assert meta2["step"] == 20 and meta2["model"] == "gpt"
    assert meta2["history"][-1]["val_loss"] == pytest.approx(meta1["history"][-1]["val_loss"], abs=1e-5)
    assert w1.keys() == w2.keys() and opt1.keys() == opt2.keys()
    for k in w1:
        np.testing.assert_allclose(w2[k], w1[k], atol=1e-5, err_msg=k)
    assert int(opt2["state.0.step"]) == 20  # torch's AdamW state, in minigrad's format
    capsys.readouterr()

    # minigrad's own commands read the checkpoint unchanged.
    assert main(["sample", two, "--prompt", "Return the", "--max-new-tokens", "30"]) == 0
    assert capsys.readouterr().out.startswith("Return the")
    assert main(["eval", two]) == 0
    assert f"val_loss {meta2['history'][-1]['val_loss']:.4f}" in capsys.readouterr().out
    picture = str(tmp_path / "attention.png")
    assert main(["attention", two, "--text", "Return the", "--out", picture]) == 0
    assert os.path.getsize(picture) > 0


class _StopAt:
    """Stands in for the Ctrl-C catcher: 'pressed' before step `at`."""

    def __init__(self, at):
        self.reads, self.at = 0, at

    @property
    def flag(self):
        self.reads += 1
        return self.reads > self.at

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


@pytest.mark.slow
def test_interrupted_torch_run_resumes_exactly_with_either_engine(tmp_path, monkeypatch, capsys):
    whole, cut = str(tmp_path / "whole"), str(tmp_path / "cut")
    common = ["--steps", "20", "--seed", "5", "--quiet"]
    assert train("--preset", "tiny", "--engine", "torch", "--out", whole, *common) == 0
    mg.manual_seed(0)
    recipe = GPTRecipe("tiny")
    cfg = GPTRecipe.train_config("tiny", steps=20, seed=5)
    monkeypatch.setattr(loop, "StopOnCtrlC", lambda: _StopAt(10))  # the one loop's Ctrl-C catcher
    with pytest.raises(TrainingInterrupted) as stop:
        distributed.train_distributed(recipe, cfg, cut, progress=False)
    assert stop.value.step == 10 and read_checkpoint(cut)[0]["step"] == 10
    monkeypatch.undo()
    again = str(tmp_path / "again")
    shutil.copytree(cut, again)
    # The rest of the run on 2 processes, and with the default engine from the same checkpoint.
    assert train("--resume", cut, "--engine", "torch", "--nproc", "2", "--quiet") == 0
    assert train("--resume", again, "--quiet") == 0
    capsys.readouterr()
    expected = train_losses(whole)
    np.testing.assert_allclose(train_losses(cut), expected, atol=2e-5)
    np.testing.assert_allclose(train_losses(again), expected, atol=2e-5)


def test_nproc_needs_the_torch_engine_and_an_even_split(tmp_path, capsys):
    assert main(["train", "gpt", "--nproc", "2", "--out", str(tmp_path / "a")]) == 2
    assert "--nproc 2 needs --engine torch" in capsys.readouterr().err
    assert main(["train", "gpt", "--preset", "tiny", "--engine", "torch", "--nproc", "3",
                 "--out", str(tmp_path / "b")]) == 2
    assert "the batch of 8 does not split evenly over 3 processes" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b")


def test_engine_torch_without_torch_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails, as without the extra
    for name in [m for m in sys.modules if m.startswith("minigrad.export")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["train", "gpt", "--engine", "torch", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip()
    assert 'pip install "minigrad[torch]"' in err and len(err.splitlines()) == 1


def test_batches_padded_to_their_longest_sequence_get_an_export_per_shape(tmp_path, capsys):
    """The RNN's batches have as many columns as their longest date; each new shape is exported
    again, sharing the weights, and the run follows the default engine's."""
    recipe = recipe_class("rnn")("tiny")
    rng = np.random.default_rng(0)
    assert len({recipe.batch("train", rng, 16)[0].shape for _ in range(8)}) > 1
    runs = {}
    for engine in ("minigrad", "torch"):
        runs[engine] = str(tmp_path / engine)
        mg.manual_seed(0)
        assert main(["train", "rnn", "--preset", "tiny", "--steps", "8", "--engine", engine,
                     "--out", runs[engine], "--quiet"]) == 0
    capsys.readouterr()
    np.testing.assert_allclose(train_losses(runs["torch"]), train_losses(runs["minigrad"]), atol=2e-5)
