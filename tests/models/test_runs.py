"""Runs are never destroyed: a folder holding a run is refused (or replaced with --force, saying
so), a lock keeps two processes apart, a failed save says what is on disk, temporaries of killed
saves are cleaned, checkpoints carry what sample and attention need, the validation share of
--data stays near 10%, and a resumed run keeps its lr schedule unless asked for a new one."""

import csv
import errno
import os
import shutil
import subprocess
import sys

import pytest

import minigrad.models.recipes.lm as lm
import minigrad.serialization as serialization
from minigrad import cli
from minigrad.models.data import load_text
from minigrad.models.recipes.lm import GPTRecipe
from minigrad.models.runs import RunExistsError, read_checkpoint
from minigrad.models.train import TrainConfig, train

SENTENCE = "the quick brown fox jumps over the lazy dog.\n"


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def log_rows(folder):
    with open(os.path.join(folder, "log.csv"), newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(SENTENCE * 60)
    return str(path)


def train_argv(text, out, steps, *extra):
    argv = ["train", "gpt", "--preset", "tiny", "--steps", str(steps), "--data", text, "--quiet", *extra]
    return argv + (["--out", str(out)] if out is not None else [])


def dead_pid():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


# ----------------------------------------------------------------------------- --data split


@pytest.mark.parametrize("content,train_chars,val_chars", [
    pytest.param("a" * 300 + "\n" + "b" * 700, 901, 100, id="only-newline-at-30%"),  # validated on 70%
    pytest.param("A title\n" + "x" * 1992, 1800, 200, id="title-line-on-top"),  # numpy's high <= 0
    pytest.param("x" * 1995 + "\n\nabc", 1800, 200, id="blank-line-near-the-end"),  # 3 characters
])
def test_the_validation_share_of_a_data_file_stays_near_a_tenth(content, train_chars, val_chars, tmp_path,
                                                                 capsys):
    path = tmp_path / "text.txt"
    path.write_text(content)
    code, out, err = run(train_argv(str(path), tmp_path / "run", 1), capsys)
    assert code == 0, err
    assert f"data: {path}, {train_chars:,} characters to train on, {val_chars:,} to validate on" in out


def test_a_text_too_short_for_the_context_names_the_file_and_the_sizes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(lm, "load_text", lambda path: load_text(path, min_chars=2))
    path = tmp_path / "short.txt"
    path.write_text("abcd" * 50)
    code, out, err = run(train_argv(str(path), tmp_path / "run", 1), capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"gpt: {path} has 200 characters, split into 180 to train on and 20 to validate on" in err
    assert "each part needs at least 34 for a context of 32 characters" in err
    assert "give a text of at least 425 characters" in err
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------- a run is kept


def test_training_twice_into_the_default_folder_refuses_then_force_replaces(text, tmp_path, monkeypatch,
                                                                            capsys):
    monkeypatch.chdir(tmp_path)
    assert run(train_argv(text, None, 2), capsys)[0] == 0
    folder = os.path.join("runs", "gpt")
    before = {name: open(os.path.join(folder, name), "rb").read() for name in ("checkpoint.npz", "log.csv")}
    code, out, err = run(train_argv(text, None, 3), capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{folder} already holds a run (checkpoint.npz at step 2, log.csv)" in err
    assert f"--resume {folder}" in err and "--out DIR" in err and "--force" in err
    assert {name: open(os.path.join(folder, name), "rb").read() for name in before} == before
    code, out, err = run(train_argv(text, None, 3, "--force"), capsys)
    assert code == 0
    assert f"minigrad: --force: replacing the run in {folder} (checkpoint.npz at step 2, log.csv)" in err
    assert read_checkpoint(folder)[0]["step"] == 3
    assert [r["step"] for r in log_rows(folder)] == ["1", "2", "3"]


def test_train_refuses_a_folder_holding_another_run_unless_overwrite(text, tmp_path, capsys):
    assert run(train_argv(text, tmp_path / "run", 2), capsys)[0] == 0
    with pytest.raises(RunExistsError, match="already holds a run"):
        train(GPTRecipe("tiny", data=text), TrainConfig(steps=2), str(tmp_path / "run"), progress=False)
    assert read_checkpoint(str(tmp_path / "run"))[0]["step"] == 2
    train(GPTRecipe("tiny", data=text), TrainConfig(steps=1, eval_every=1), str(tmp_path / "run"),
          progress=False, overwrite=True)
    assert read_checkpoint(str(tmp_path / "run"))[0]["step"] == 1
    # Resuming into another run's folder is refused too: it would mix two runs' logs.
    assert run(train_argv(text, tmp_path / "other", 1), capsys)[0] == 0
    code, _, err = run(["train", "gpt", "--resume", str(tmp_path / "run"), "--steps", "2",
                        "--out", str(tmp_path / "other"), "--quiet"], capsys)
    assert code == 2 and "already holds a run (checkpoint.npz at step 1, log.csv)" in err


# ----------------------------------------------------------------------------- the lock


class LockWatcher(GPTRecipe):
    """Records what train.lock holds while the training steps run."""

    def batch(self, split, rng, batch_size):
        if split == "train":
            with open(os.path.join(self.folder, "train.lock")) as f:
                self.seen = f.read().strip()
        return super().batch(split, rng, batch_size)


def test_the_lock_holds_the_pid_while_training_and_is_removed_after(text, tmp_path):
    recipe = LockWatcher("tiny", data=text)
    recipe.folder = str(tmp_path / "run")
    train(recipe, TrainConfig(steps=2, batch_size=2), recipe.folder, progress=False)
    assert recipe.seen == str(os.getpid())
    assert sorted(os.listdir(recipe.folder)) == ["checkpoint.npz", "log.csv"]


def test_a_second_process_is_refused_naming_the_first(text, tmp_path, capsys):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folder = tmp_path / "run"
        folder.mkdir()
        (folder / "train.lock").write_text(f"{other.pid}\n")
        code, _, err = run(train_argv(text, folder, 2), capsys)
        assert code == 2 and err.count("\n") == 1
        assert f"process {other.pid} is training there (lock file {folder / 'train.lock'})" in err
        assert sorted(os.listdir(folder)) == ["train.lock"]  # no log.csv written beside it
        assert (folder / "train.lock").read_text() == f"{other.pid}\n"
    finally:
        other.kill()
        other.wait()


def test_a_stale_lock_is_taken_over_with_a_note(text, tmp_path, capsys):
    folder, pid = tmp_path / "run", dead_pid()
    folder.mkdir()
    (folder / "train.lock").write_text(f"{pid}\n")
    code, out, err = run(train_argv(text, folder, 2), capsys)
    assert code == 0, err
    assert f"taking over the lock {folder / 'train.lock'} of process {pid}, which is no longer running" in (
        out + err)
    assert sorted(os.listdir(folder)) == ["checkpoint.npz", "log.csv"]


# ----------------------------------------------------------------------------- failed and killed saves


def full_disk_after(monkeypatch, good_saves):
    """The checkpoint writer succeeds `good_saves` times, then finds the disk full."""
    real, calls = serialization._write_npz, []

    def write(f, arrays):
        calls.append(1)
        if len(calls) > good_saves:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(f, arrays)

    monkeypatch.setattr(serialization, "_write_npz", write)


def test_a_failed_save_names_the_file_and_the_step_on_disk(text, tmp_path, monkeypatch):
    full_disk_after(monkeypatch, good_saves=1)
    folder = str(tmp_path / "run")
    with pytest.raises(OSError) as e:
        train(GPTRecipe("tiny", data=text), TrainConfig(steps=4, batch_size=2, eval_every=2), folder,
              progress=False)
    ckpt = os.path.join(folder, "checkpoint.npz")
    assert e.value.errno == errno.ENOSPC
    assert (f"train: the checkpoint of step 4 was not saved (save: cannot write {ckpt}: "
            f"{os.strerror(errno.ENOSPC)}); {ckpt} on disk is still the one from step 2") in str(e.value)
    monkeypatch.undo()
    assert read_checkpoint(folder)[0]["step"] == 2
    assert sorted(os.listdir(folder)) == ["checkpoint.npz", "log.csv"]  # no temporary, no lock


def test_a_failed_first_save_says_there_is_no_checkpoint_yet(text, tmp_path, monkeypatch, capsys):
    full_disk_after(monkeypatch, good_saves=0)
    code, _, err = run(train_argv(text, tmp_path / "run", 2), capsys)
    assert code == 2 and err.count("\n") == 1
    assert "the checkpoint of step 2 was not saved" in err and os.strerror(errno.ENOSPC) in err
    assert f"there is no checkpoint in {tmp_path / 'run'} yet" in err


class TemporaryWatcher(GPTRecipe):
    """Records whether the temporary `stale` is still there when the training steps run."""

    def batch(self, split, rng, batch_size):
        if split == "train":
            self.stale_seen = os.path.exists(self.stale)
        return super().batch(split, rng, batch_size)


def test_resume_removes_the_temporary_of_a_killed_save_before_training(text, tmp_path, capsys):
    folder = tmp_path / "run"
    assert run(train_argv(text, folder, 2), capsys)[0] == 0
    stale = folder / f".tmp-{dead_pid()}-0f0f.npz"  # what kill -9 during a save leaves
    stale.write_bytes(b"PK\x03\x04 half a checkpoint")
    recipe = TemporaryWatcher("tiny", data=text)
    recipe.stale = str(stale)
    train(recipe, TrainConfig(steps=3, batch_size=2, eval_every=100), str(folder), resume=str(folder),
          progress=False)
    assert recipe.stale_seen is False  # gone before the first step, not only at the next save
    assert sorted(os.listdir(folder)) == ["checkpoint.npz", "log.csv"]


# ----------------------------------------------------------------------------- the text the run used


def test_sample_and_attention_need_no_text_eval_and_resume_name_it(tmp_path, monkeypatch, capsys):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (home / "text.txt").write_text(SENTENCE * 60)
    monkeypatch.chdir(home)
    assert run(train_argv("text.txt", "run", 2), capsys)[0] == 0  # a relative --data path
    monkeypatch.chdir(elsewhere)
    ckpt = str(home / "run")
    code, out, _ = run(["eval", ckpt], capsys)  # the stored path is absolute
    assert code == 0 and "gpt at step 2" in out
    shutil.move(str(home / "text.txt"), str(tmp_path / "moved.txt"))
    code, out, err = run(["sample", ckpt, "--prompt", "the ", "--max-new-tokens", "10"], capsys)
    assert code == 0, err
    assert out.startswith("the ") and len(out.rstrip("\n")) == 14
    code, out, err = run(["attention", ckpt, "--text", "the fox", "--out", "map.png"], capsys)
    assert code == 0, err
    assert (elsewhere / "map.png").stat().st_size > 0
    gone = str(home / "text.txt")
    for argv, named in ((["eval", ckpt], f"eval needs the text {ckpt}"),
                        (["train", "gpt", "--resume", ckpt, "--steps", "3"],
                         f"--resume needs the text {os.path.join(ckpt, 'checkpoint.npz')}")):
        code, out, err = run(argv, capsys)
        assert code == 2 and err.count("\n") == 1
        assert f"{named} was trained on, {gone}, which is not there any more" in err
    assert read_checkpoint(ckpt)[0]["step"] == 2


# ----------------------------------------------------------------------------- resuming past the end


def test_resume_past_the_end_keeps_the_final_lr_unless_a_new_schedule_is_asked(text, tmp_path, capsys):
    first = tmp_path / "run"
    assert run(train_argv(text, first, 4), capsys)[0] == 0
    shutil.copytree(first, tmp_path / "copy")
    final = log_rows(first)[-1]["lr"]
    assert final == "3.000e-04"  # the schedule's min_lr, reached at its end

    code, out, err = run(["train", "gpt", "--resume", str(first), "--steps", "8", "--quiet"], capsys)
    assert code == 0, err
    assert ("schedule: the run's, ending at step 4; steps 5-8 go on at its final lr 3.0e-04 "
            "(--new-schedule stretches it instead)") in out
    assert [r["lr"] for r in log_rows(first)[4:]] == [final] * 4  # no jump back up
    assert read_checkpoint(str(first))[0]["train"]["schedule_steps"] == 4
    code, out, _ = run(["train", "gpt", "--resume", str(first), "--steps", "9", "--quiet"], capsys)
    assert code == 0 and "steps 9-9 go on at its final lr" in out and log_rows(first)[-1]["lr"] == final

    copy = tmp_path / "copy"
    code, out, err = run(["train", "gpt", "--resume", str(copy), "--steps", "8", "--new-schedule", "--quiet"],
                         capsys)
    assert code == 0, err
    assert "schedule: new, warmup + cosine stretched from 4 to 8 steps" in out
    assert float(log_rows(copy)[4]["lr"]) > 1e-3  # the stretched cosine: the lr rises again

    code, _, err = run(train_argv(text, tmp_path / "new", 2, "--new-schedule"), capsys)
    assert code == 2 and "--new-schedule is for --resume" in err
