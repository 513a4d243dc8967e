"""The `minigrad` command: one-line errors, training from the command line, Ctrl-C."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad import cli
from minigrad.models.runs import read_checkpoint, save_checkpoint
from minigrad.models.train import TrainConfig, TrainingInterrupted, train


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv,message", [
    pytest.param(["train", "gpt4"], "unknown model 'gpt4'", id="unknown-model"),
    pytest.param(["train", "gpt", "--preset", "huge"], "unknown preset 'huge' for gpt", id="bad-preset"),
    pytest.param(["train", "gpt", "--data", "/nonexistent/file.txt"], "file.txt", id="missing-data"),
    pytest.param(["sample", "nowhere.npz"], "no checkpoint at nowhere.npz", id="missing-checkpoint"),
    pytest.param(["eval", "nowhere.npz"], "no checkpoint at nowhere.npz", id="eval-missing"),
])
def test_errors_are_one_line_and_nonzero(argv, message, capsys):
    code, out, err = run(argv, capsys)
    assert code != 0
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_unreadable_and_foreign_checkpoints(tmp_path, capsys):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    code, _, err = run(["eval", str(junk)], capsys)
    assert code == 2 and "junk.npz" in err and err.count("\n") == 1
    mg.save({"weights": np.zeros(3)}, tmp_path / "other.npz")
    code, _, err = run(["eval", str(tmp_path / "other.npz")], capsys)
    assert code == 2 and "not a minigrad checkpoint" in err


def test_train_sample_eval_and_resume_another_model(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog.\n" * 60)
    out = tmp_path / "run"
    code, stdout, _ = run(["train", "gpt", "--preset", "tiny", "--steps", "6", "--data", str(text),
                           "--out", str(out), "--quiet"], capsys)
    assert code == 0 and "val_loss" in stdout
    ckpt = str(out / "checkpoint.npz")
    meta, _, _ = read_checkpoint(ckpt)
    assert meta["step"] == 6 and meta["model"] == "gpt"
    code, stdout, _ = run(["sample", ckpt, "--prompt", "the ", "--max-new-tokens", "20"], capsys)
    assert code == 0 and stdout.startswith("the ") and len(stdout.rstrip("\n")) >= 24
    code, stdout, _ = run(["eval", ckpt], capsys)
    assert code == 0 and "gpt at step 6: val_loss" in stdout
    code, _, err = run(["train", "vit", "--resume", ckpt], capsys)
    assert code == 2 and "is a gpt checkpoint, not vit" in err


def test_prompt_with_unknown_characters_is_an_error(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("abc abc abc\n" * 200)
    out = tmp_path / "run"
    assert run(["train", "gpt", "--preset", "tiny", "--steps", "2", "--data", str(text),
                "--out", str(out), "--quiet"], capsys)[0] == 0
    code, _, err = run(["sample", str(out / "checkpoint.npz"), "--prompt", "xyz"], capsys)
    assert code == 2 and "x" in err and err.count("\n") == 1


class Interrupting:
    """A recipe that presses Ctrl-C (sends itself SIGINT) while step `at` runs."""

    name = "gpt"

    def __init__(self, at):
        from minigrad.models.gpt import GPT, GPTConfig
        mg.manual_seed(0)
        self.model = GPT(GPTConfig(vocab_size=5, block_size=4, embed_dim=4, num_heads=1, num_layers=1))
        self.at, self.calls = at, 0

    def meta(self):
        return {}

    def batch(self, split, rng, batch_size):
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        x = rng.integers(0, 5, (batch_size, 4))
        return mg.tensor(x), mg.tensor((x + 1) % 5)

    def loss(self, batch):
        return self.model.loss(*batch)

    def evaluate(self, n):
        return {"val_loss": 0.0}


def test_ctrl_c_finishes_the_step_saves_and_raises(tmp_path):
    cfg = TrainConfig(steps=50, batch_size=2, eval_every=100, seed=0)
    with pytest.raises(TrainingInterrupted, match="interrupted at step 7"):
        train(Interrupting(at=7), cfg, str(tmp_path), progress=False)
    meta, _, _ = read_checkpoint(str(tmp_path / "checkpoint.npz"))
    assert meta["step"] == 7  # step 7 completed, then the loop stopped cleanly
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_python_dash_m_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "minigrad", "train", "nothing"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "unknown model 'nothing'" in done.stderr


def test_save_checkpoint_is_atomic(tmp_path, monkeypatch):
    rec = Interrupting(at=-1)
    cfg = TrainConfig(steps=3)
    from minigrad.models.train import make_optimizer
    opt, sched = make_optimizer(rec.model, cfg)
    path = str(tmp_path / "c.npz")
    save_checkpoint(path, rec, opt, sched, 1, cfg, np.random.default_rng(0), [])
    before = open(path, "rb").read()

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", broken)  # mg.save writes each array with it
    with pytest.raises(OSError):
        save_checkpoint(path, rec, opt, sched, 2, cfg, np.random.default_rng(0), [])
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["c.npz"]
