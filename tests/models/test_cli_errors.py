"""The `minigrad` command on input a student gets wrong: bad counts, resuming from a run folder or
a finished run, Ctrl-C, a module path that does not exist. Each says what to do, on one line."""

import csv
import os
import signal
import time

import pytest

from minigrad import cli
from minigrad.models import commands
from minigrad.models.recipes.lm import GPTRecipe
from minigrad.models.runs import read_checkpoint
from minigrad.models.train import TrainConfig, TrainingInterrupted, train


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def log_rows(folder):
    with open(folder / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("the quick brown fox jumps over the lazy dog.\n" * 60)
    return str(path)


def train_argv(text, out, steps, *extra):
    return ["train", "gpt", "--preset", "tiny", "--steps", str(steps), "--data", text, "--out", str(out),
            "--quiet", *extra]


@pytest.fixture
def clock(monkeypatch):
    """time.perf_counter advancing one second per call, so the log's times are exact."""
    ticks = iter(range(10**6))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))


# ----------------------------------------------------------------------------- counts


@pytest.mark.parametrize("argv,option", [
    pytest.param(["train", "gpt", "--steps", "-5"], "--steps", id="steps-negative"),
    pytest.param(["train", "gpt", "--steps", "0"], "--steps", id="steps-zero"),
    pytest.param(["sample", "run", "--max-new-tokens", "-5"], "--max-new-tokens", id="max-new-tokens"),
    pytest.param(["sample", "run", "--top-k", "0"], "--top-k", id="top-k"),
    pytest.param(["eval", "run", "--batches", "0"], "--batches", id="batches"),
    pytest.param(["graph", "gpt", "--batch-size", "0"], "--batch-size", id="batch-size"),
])
def test_counts_must_be_positive_and_nothing_is_created(argv, option, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 2 and f"{option} must be positive" in err
    assert err.count("\n") == 1 and out == ""
    assert list(tmp_path.iterdir()) == []  # not even the default runs/gpt folder


def test_train_refuses_nonpositive_steps_before_making_the_folder(tmp_path):
    with pytest.raises(ValueError, match="train: steps must be positive, got 0"):
        train(GPTRecipe("tiny"), TrainConfig(steps=0), str(tmp_path / "run"), progress=False)
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------- resume


def test_resume_from_a_run_folder_continues_there_and_its_clock(text, tmp_path, monkeypatch, capsys, clock):
    monkeypatch.chdir(tmp_path)
    assert run(train_argv(text, "run", 3), capsys)[0] == 0
    first = log_rows(tmp_path / "run")
    saved = read_checkpoint(str(tmp_path / "run"))[0]  # a folder reads as its checkpoint.npz
    assert saved["step"] == 3 and saved["seconds"] >= float(first[-1]["seconds"])

    code, out, err = run(["train", "gpt", "--resume", "run", "--steps", "5", "--quiet"], capsys)
    assert code == 0, err
    assert f"from step 3 of {os.path.join('run', 'checkpoint.npz')}" in out and "writing to run" in out
    assert not (tmp_path / "runs").exists()  # the run went on in its own folder
    rows = log_rows(tmp_path / "run")
    assert [r["step"] for r in rows] == ["1", "2", "3", "4", "5"]
    seconds = [float(r["seconds"]) for r in rows]
    assert seconds == sorted(seconds) and seconds[3] > saved["seconds"]  # not restarting at 0
    assert read_checkpoint(str(tmp_path / "run" / "checkpoint.npz"))[0]["step"] == 5
    # sample and eval take the folder too
    assert run(["sample", "run", "--prompt", "the ", "--max-new-tokens", "5"], capsys)[0] == 0
    code, out, _ = run(["eval", "run"], capsys)
    assert code == 0 and "gpt at step 5" in out


@pytest.mark.parametrize("more,named", [
    pytest.param(["--preset", "small"], "--preset", id="preset"),
    pytest.param(["--seed", "3"], "--seed", id="seed"),
    pytest.param(["--data", "other.txt", "--seed", "3"], "--data and --seed", id="data-and-seed"),
])
def test_resume_refuses_options_the_checkpoint_fixes(more, named, tmp_path, capsys):
    # Before anything is read: the run folder need not even exist.
    code, out, err = run(["train", "gpt", "--resume", str(tmp_path / "run"), "--steps", "9", *more], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"minigrad: error: {named} cannot change a resumed run" in err and "leave them out" in err


def test_version(capsys):
    import minigrad

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"minigrad {minigrad.__version__}\n"


def test_a_closed_pipe_ends_the_command_quietly():
    # `minigrad exercise list | head -1`: the reader quits early; no error, no traceback.
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE
    code = "import sys; from minigrad import cli; sys.exit(cli.main(['exercise', 'list']))"
    try:
        done = subprocess.run([sys.executable, "-c", code], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and done.stderr == ""


def test_a_folder_without_a_checkpoint_says_so(tmp_path, capsys):
    code, _, err = run(["train", "gpt", "--resume", str(tmp_path)], capsys)
    assert code == 2 and f"no checkpoint.npz in the folder {tmp_path}" in err


@pytest.mark.parametrize("more", [pytest.param([], id="finished-run"),
                                  pytest.param(["--steps", "2"], id="fewer-steps")])
def test_resume_with_nothing_left_to_train_is_an_error(more, text, tmp_path, capsys):
    out = tmp_path / "run"
    assert run(train_argv(text, out, 4), capsys)[0] == 0
    before = (out / "log.csv").read_text()
    code, stdout, err = run(["train", "gpt", "--resume", str(out), "--quiet", *more], capsys)
    assert code == 2 and "is at step 4 already" in err and "give --steps above 4" in err
    assert stdout == "" and err.count("\n") == 1
    assert (out / "log.csv").read_text() == before  # not cut down to its header
    assert read_checkpoint(str(out))[0]["step"] == 4


def test_train_refuses_a_resume_with_nothing_left_before_touching_the_log(text, tmp_path, capsys):
    out = tmp_path / "run"
    assert run(train_argv(text, out, 4), capsys)[0] == 0
    before = (out / "log.csv").read_text()
    recipe = GPTRecipe("tiny", data=text)
    with pytest.raises(ValueError, match="at step 4, so 3 steps leave nothing to train"):
        train(recipe, TrainConfig(steps=3), str(out), resume=str(out), progress=False)
    assert (out / "log.csv").read_text() == before


# ----------------------------------------------------------------------------- Ctrl-C


class CtrlCRecipe(GPTRecipe):
    """Presses Ctrl-C (sends the process SIGINT) while training step `at` runs."""

    at = 3

    def batch(self, split, rng, batch_size):
        if split == "train":
            self.calls = getattr(self, "calls", 0) + 1
            if self.calls == self.at:
                os.kill(os.getpid(), signal.SIGINT)
        return super().batch(split, rng, batch_size)


def test_ctrl_c_saves_says_how_to_continue_and_exits_130(text, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(commands, "recipe_class", lambda name: CtrlCRecipe)
    out = tmp_path / "run"
    code, stdout, err = run(train_argv(text, out, 8), capsys)
    assert code == 130
    assert f"interrupted at step 3; checkpoint saved to {out / 'checkpoint.npz'}" in err
    assert f"continue with: minigrad train gpt --resume {out}" in err
    assert "done in" not in stdout and "sample" not in stdout
    assert read_checkpoint(str(out))[0]["step"] == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    monkeypatch.setattr(commands, "recipe_class", lambda name: GPTRecipe)
    code, stdout, _ = run(["train", "gpt", "--resume", str(out), "--quiet"], capsys)
    assert code == 0 and "done in" in stdout
    assert [r["step"] for r in log_rows(out)] == [str(s) for s in range(1, 9)]


def test_train_raises_keyboard_interrupt_after_saving(text, tmp_path):
    recipe = CtrlCRecipe("tiny", data=text)
    with pytest.raises(KeyboardInterrupt) as stop:  # a Python caller sees Ctrl-C as usual
        train(recipe, TrainConfig(steps=8, batch_size=2, eval_every=100), str(tmp_path), progress=False)
    assert isinstance(stop.value, TrainingInterrupted) and stop.value.step == 3
    assert read_checkpoint(stop.value.checkpoint)[0]["step"] == 3


def test_ctrl_c_before_training_exits_130_without_a_traceback(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(GPTRecipe, "__init__", interrupted)  # e.g. while the corpus loads
    code, _, err = run(["train", "gpt"], capsys)
    assert code == 130 and err == "minigrad: interrupted\n"


# ----------------------------------------------------------------------------- graph --module


@pytest.mark.parametrize("path,listed", [
    pytest.param("blocks.7", "the modules at the top are: tok_emb, pos_emb, drop, blocks.0, norm_f, head",
                 id="top-level"),
    pytest.param("blocks.0.attn.qq", "the modules in 'blocks.0.attn' are: blocks.0.attn.q_proj, "
                 "blocks.0.attn.k_proj, blocks.0.attn.v_proj, blocks.0.attn.out_proj", id="inside-a-module"),
    pytest.param("head.w", "'head' (Linear) holds no modules", id="below-a-leaf"),
])
def test_graph_module_lists_the_paths_that_exist(path, listed, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["graph", "gpt", "--module", path], capsys)
    assert code == 2 and f"gpt (tiny) has no module {path!r}" in err and listed in err
    assert "model=" not in err and err.count("\n") == 1  # no Python-API advice on the command line
    assert list(tmp_path.iterdir()) == []
