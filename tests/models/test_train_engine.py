"""The one training loop and its seam: an `Engine` computes the steps, `models.train` does the
rest (resume, log.csv, evaluation, checkpoints, the lock, Ctrl-C) for every engine alike."""

import csv
import os

import numpy as np
import pytest

import minigrad as mg
from minigrad.models.gpt import GPT, GPTConfig
from minigrad.models.runs import read_checkpoint
from minigrad.models.train import Engine, TrainConfig, TrainingInterrupted, train

TINY = GPTConfig(vocab_size=11, block_size=8, embed_dim=16, num_heads=2, num_layers=1)
CFG = TrainConfig(steps=12, batch_size=4, lr=1e-2, warmup=2, eval_every=5, eval_batches=2, seed=3)
quiet = dict(progress=False, log=lambda s: None)


class Periodic:
    """A recipe over a periodic token sequence, so no corpus is read."""

    name = "gpt"

    def __init__(self, seed=0):
        mg.manual_seed(seed)
        self.model = GPT(TINY)
        self.ids = np.tile(np.arange(11), 30)

    def meta(self):
        return {}

    def batch(self, split, rng, batch_size):
        starts = rng.integers(0, len(self.ids) - 9, batch_size)
        x = np.stack([self.ids[s:s + 8] for s in starts])  # (B, T)
        return mg.tensor(x), mg.tensor(x + 1 - 11 * (x == 10))  # the next token of the cycle

    def loss(self, batch):
        return self.model.loss(*batch)

    def evaluate(self, num_batches):
        rng = np.random.default_rng(0)
        with mg.no_grad():
            return {"val_loss": float(np.mean([self.loss(self.batch("val", rng, 4)).item()
                                               for _ in range(num_batches)]))}


class Recording(Engine):
    """The default engine, writing down which of its methods the loop calls."""

    def __init__(self, stop_at=None):
        self.calls, self.stop_at = [], stop_at

    def setup(self, recipe, opt, cfg, start):
        self.calls.append(("setup", start))
        super().setup(recipe, opt, cfg, start)

    def stopping(self, pressed):
        self.calls.append("stopping")
        return self.calls.count("step") == self.stop_at

    def step(self, batch):
        self.calls.append("step")
        return super().step(batch)

    def sync(self):
        self.calls.append("sync")


def rows(folder):
    with open(os.path.join(folder, "log.csv"), newline="") as f:
        return [(r["step"], r["train_loss"], r["val_loss"]) for r in csv.DictReader(f)]


def test_an_engine_gets_the_steps_and_the_loop_keeps_the_rest(tmp_path):
    plain, seam = str(tmp_path / "plain"), str(tmp_path / "seam")
    expected = train(Periodic(), CFG, plain, **quiet)
    engine = Recording()
    assert train(Periodic(), CFG, seam, engine=engine, **quiet) == expected
    assert rows(seam) == rows(plain) and len(rows(seam)) == 12
    assert [r[2] != "" for r in rows(seam)] == [s in (5, 10, 12) for s in range(1, 13)]
    # setup once, the way back tried once (sync) before the first step, then before each step
    # the question whether to stop; the weights come back before each evaluation and each save.
    assert engine.calls[:3] == [("setup", 0), "sync", "stopping"]
    assert engine.calls[1:].count("stopping") == engine.calls[1:].count("step") == 12
    assert engine.calls.count("sync") == 1 + 2 * 3
    (m1, w1, o1), (m2, w2, o2) = read_checkpoint(plain), read_checkpoint(seam)
    assert m2["step"] == 12 and m2["history"] == m1["history"]
    for k in w1:
        np.testing.assert_array_equal(w2[k], w1[k], err_msg=k)
    for k in o1:
        np.testing.assert_array_equal(o2[k], o1[k], err_msg=k)


def test_an_engine_that_stops_saves_there_and_resumes_exactly(tmp_path):
    whole, cut = str(tmp_path / "whole"), str(tmp_path / "cut")
    train(Periodic(), CFG, whole, **quiet)
    engine = Recording(stop_at=7)  # e.g. Ctrl-C pressed in one of N processes
    with pytest.raises(TrainingInterrupted) as stop:
        train(Periodic(), CFG, cut, engine=engine, **quiet)
    assert stop.value.step == 7 and read_checkpoint(cut)[0]["step"] == 7
    assert engine.calls.count("step") == 7 and engine.calls[-1] == "sync"  # synced, then saved
    again = Recording()
    train(Periodic(seed=9), CFG, cut, resume=cut, engine=again, **quiet)
    assert again.calls[0] == ("setup", 7) and again.calls.count("step") == 5
    assert rows(cut) == rows(whole)


class Follower(Engine):
    """A process other than the leader of a data-parallel run: it steps, and writes nothing."""

    leader = False


def test_only_the_leader_logs_evaluates_and_saves(tmp_path):
    recipe = Periodic()
    recipe.evaluate = None  # a follower that evaluated would fail here
    assert train(recipe, CFG, str(tmp_path / "run"), engine=Follower(), **quiet) == {}
    assert not os.path.exists(tmp_path / "run")  # the lock's folder goes again, empty


class Picky(Engine):
    def check(self, recipe, cfg):
        raise ValueError(f"Picky: cannot train {recipe.name}")


def test_an_engine_refuses_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="Picky: cannot train gpt"):
        train(Periodic(), CFG, str(tmp_path / "run"), engine=Picky(), **quiet)
    assert not os.path.exists(tmp_path / "run")


class OneWay(Recording):
    """An engine whose state cannot come back into the minigrad model (as the torch engine's
    once could not: the model's batch-norm buffers were missing from it)."""

    def sync(self):
        super().sync()
        raise ValueError("load_state_dict into GPT: missing: blocks.0.norm.running_mean")


def test_a_state_that_cannot_come_back_fails_before_the_first_step(tmp_path):
    """Every save brings the engine's state back first; the loop tries that before any step, so
    a run that could never save stops at step 0 instead of after its steps are spent."""
    engine = OneWay()
    with pytest.raises(ValueError, match="missing: blocks.0.norm.running_mean"):
        train(Periodic(), CFG, str(tmp_path / "run"), engine=engine, **quiet)
    assert engine.calls == [("setup", 0), "sync"]  # not one step was trained
    assert not os.path.exists(tmp_path / "run" / "log.csv")


def test_the_auto_engine_wraps_its_plain_step():
    plain, auto = Engine(), Engine(threads="auto")
    assert plain.tuner is None and plain.step.__func__ is Engine.step
    assert auto.tuner is not None and auto.step.__wrapped__.__func__ is Engine.step
