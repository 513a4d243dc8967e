"""The training loop every model and every engine shares: AdamW, warmup + cosine schedule,
gradient clipping, periodic evaluation, a progress bar, a CSV log, atomic checkpoints, exact
resume, a lock on the run folder and a clean stop on Ctrl-C.

The seam is the `Engine`: how one optimizer step is computed. The default trains with
minigrad's autograd and optimizer in this process; another engine (the torch one,
`minigrad.export.distributed.TorchEngine`) subclasses it and overrides only what is its own.
`train` is the entry point; it checks, locks the run folder and hands the run to the engine's
`run`, which calls `train_steps` (the loop) once, or once in each process it starts. The run
folder's files (checkpoint.npz, log.csv, train.lock) are written by models/runs.py.

Public: TrainConfig, TrainingInterrupted, Engine, train, train_steps, make_optimizer,
resume_config, cosine_at, and (from models/runs.py) the checkpoint and run-folder helpers.
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

import minigrad as mg
import minigrad.optim as optim
from minigrad.random import set_rng_state
from minigrad.runtime.threads import ThreadTuner, apply_setting
from minigrad.serialization import clean_temporaries

from .runs import (
    RunLock,
    StopOnCtrlC,
    append_log_row,
    check_run_folder,
    checkpoint_path,
    read_checkpoint,
    resumes_in_place,
    save_checkpoint,
    start_log,
)

# The run folder's parts (checkpoints, locks, logs, the Ctrl-C guard) are models/runs.py's names.
__all__ = ["Engine", "TrainConfig", "TrainingInterrupted", "cosine_at", "make_optimizer", "resume_config",
           "train", "train_steps"]


@dataclass
class TrainConfig:
    steps: int = 2000
    batch_size: int = 16
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 100
    weight_decay: float = 0.1
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_every: int = 500
    eval_batches: int = 20
    seed: int = 1337
    # The step the warmup + cosine schedule ends at (None: `steps`). A run resumed past its
    # end keeps its schedule, so it goes on at min_lr, unless asked for a new one.
    schedule_steps: int | None = None

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training between two steps, after a checkpoint was saved at `step`."""

    def __init__(self, step: int, checkpoint: str):
        super().__init__(f"interrupted at step {step}; checkpoint saved to {checkpoint}")
        self.step, self.checkpoint = step, checkpoint


def resume_config(meta: dict, steps: int | None = None,
                  new_schedule: bool = False) -> tuple[TrainConfig, str]:
    """The TrainConfig of a resumed run and a line saying which schedule it follows ("" when
    the steps are the schedule's own).

    The run keeps its warmup + cosine schedule, so steps past its end go on at min_lr, the
    schedule's final lr; `new_schedule` stretches the schedule over the new step count instead,
    as if the run had been planned that long (the lr rises again)."""
    saved = TrainConfig.from_dict(meta["train"])
    end = saved.schedule_steps or saved.steps
    cfg = TrainConfig.from_dict({**asdict(saved), **({"steps": steps} if steps else {})})
    if new_schedule:
        cfg.schedule_steps = None  # the schedule spans cfg.steps
        note = (f"schedule: new, warmup + cosine stretched from {end} to {cfg.steps} steps "
                f"(lr {cosine_at(cfg, meta['step']):.1e} at step {meta['step']})")
    elif cfg.steps == end:
        note = ""
    else:
        cfg.schedule_steps = end
        note = (f"schedule: the run's, ending at step {end}"
                + (f"; steps {max(end, meta['step']) + 1}-{cfg.steps} go on at its final lr {cfg.min_lr:.1e} "
                   "(--new-schedule stretches it instead)" if cfg.steps > end else
                   f"; this run stops at step {cfg.steps}, before its end (--new-schedule fits it)"))
    return cfg, note


def cosine_at(cfg: TrainConfig, step: int) -> float:
    """The lr of `step` under cfg's schedule (the matrices' group)."""
    total = cfg.schedule_steps or cfg.steps
    return optim.cosine_lr(step, cfg.lr, min(cfg.warmup, total // 5), total, cfg.min_lr)


def make_optimizer(model: Any, cfg: TrainConfig) -> tuple[optim.Optimizer, Any]:
    """AdamW with weight decay on matrices only (not on biases and norm gains), and its schedule."""
    params = list(model.parameters())
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    opt = optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr, betas=(0.9, cfg.beta2),
    )
    total = cfg.schedule_steps or cfg.steps
    warmup = min(cfg.warmup, total // 5)  # short runs (tests, demos) still get a cosine phase
    sched = optim.WarmupCosine(opt, warmup_steps=warmup, total_steps=total, min_lr=cfg.min_lr)
    return opt, sched


# ----------------------------------------------------------------------------- the engine


class Engine:
    """How `train` computes its steps. This default trains with minigrad's autograd and
    optimizer in this process; another engine subclasses it and overrides what is its own.
    The loop calls, in this order:

        check(recipe, cfg)               before anything is written: a ValueError for what the
                                         engine cannot train
        run(recipe, cfg, out_dir, resume, progress, log)
                                         the run, inside the run folder's lock: `train_steps`
                                         here, once (an engine with processes calls it in each)
        setup(recipe, opt, cfg, start)   in each process, once the optimizer, the schedule and
                                         a resumed run's state are in place, before step `start`
        stopping(pressed) -> bool        before each step: stop here? `pressed`: Ctrl-C was
                                         pressed in this process (processes must agree)
        step(batch) -> float             one optimizer step on the global batch (zero the grads,
                                         backward, clip to cfg.grad_clip, update): its mean loss.
                                         The loop then steps the schedule, which sets each
                                         group's lr in `opt` for the next step
        sync()                           bring the trained weights, buffers and optimizer state
                                         back into recipe.model and `opt`, before evaluating or
                                         saving, and once before the first step (so a state that
                                         cannot come back fails before any step is lost)

    `leader` is True in the process that logs, evaluates and saves (process 0 of N), `label`
    follows the progress bar's name (e.g. " (torch x2)"), `verbose` says whether the loop logs
    `describe()`'s line too (`minigrad train` sets it from -v).
    """

    leader = True
    label = ""
    verbose = True
    tuner: ThreadTuner | None = None

    def __init__(self, threads: int | str | None = None):
        """threads: None (leave the setting as it is), a count, "blas:N", or "auto": each step
        runs through a `minigrad.runtime.threads.ThreadTuner`, which times the first steps at each
        setting, keeps the fastest, and times them again every 500 steps (or at once when the
        steps slow down)."""
        if threads == "auto":  # the plain step below, wrapped: each call at the setting it picks
            self.tuner = ThreadTuner()
            self.step = self.tuner.wrap(self.step)
        elif threads is not None:
            apply_setting(threads)

    def describe(self) -> str:
        """A line for the log about how the steps run ("" if nothing to say)."""
        return self.tuner.describe() if self.tuner is not None and self.tuner.timings else ""

    def check(self, recipe: Any, cfg: TrainConfig) -> None:
        """The default engine trains every recipe."""

    def run(self, recipe: Any, cfg: TrainConfig, out_dir: str, resume: str | None, progress: bool,
            log: Callable[[str], Any]) -> dict:
        return train_steps(recipe, cfg, out_dir, self, resume=resume, progress=progress, log=log)

    def setup(self, recipe: Any, opt: optim.Optimizer, cfg: TrainConfig, start: int) -> None:
        self.recipe, self.opt, self.cfg = recipe, opt, cfg

    def stopping(self, pressed: bool) -> bool:
        return pressed  # one process: nobody else to ask

    def step(self, batch: Any) -> float:
        loss = self.recipe.loss(batch)
        self.opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(self.recipe.model.parameters(), self.cfg.grad_clip)
        self.opt.step()
        return loss.item()

    def sync(self) -> None:
        """Nothing to bring back: recipe.model and `opt` are the ones trained."""


# ----------------------------------------------------------------------------- the loop


def train(recipe: Any, cfg: TrainConfig, out_dir: str, resume: str | None = None,
          progress: bool = True, log: Any = tqdm.write, overwrite: bool = False,
          engine: Engine | None = None) -> dict:
    """Train `recipe.model` for cfg.steps steps; checkpoints and log.csv go to out_dir.

    Returns the last evaluation metrics. Ctrl-C finishes the current step, saves a checkpoint
    and raises `TrainingInterrupted` (a KeyboardInterrupt), so `resume` (a checkpoint or a run
    folder) can continue from it; resuming gives the same losses as an uninterrupted run, with
    either engine.

    A run is never destroyed by accident: an out_dir that holds another run is refused unless
    `overwrite` (which removes its checkpoint.npz and log.csv first), and a lock file in
    out_dir keeps a second process from training there at the same time. `engine` computes the
    steps (default: `Engine()`, minigrad in this process).
    """
    engine = Engine() if engine is None else engine
    if cfg.steps < 1:
        raise ValueError(f"train: steps must be positive, got {cfg.steps}")
    # Everything that can fail is checked before out_dir (and its log) is touched.
    done = read_checkpoint(resume, resume=True)[0]["step"] if resume else None
    if done is not None and done >= cfg.steps:
        raise ValueError(f"train: the checkpoint is at step {done}, so {cfg.steps} steps leave "
                         "nothing to train; ask for more steps")
    engine.check(recipe, cfg)
    resumed_from = checkpoint_path(resume) if resume else None
    check_run_folder(out_dir, resumed_from, overwrite)
    with RunLock(out_dir, say=log):
        if overwrite and not resumes_in_place(resumed_from, out_dir):
            for name in ("checkpoint.npz", "log.csv"):
                if os.path.exists(os.path.join(out_dir, name)):
                    os.unlink(os.path.join(out_dir, name))
        for folder in {out_dir, os.path.dirname(resumed_from or out_dir) or "."}:
            clean_temporaries(folder)  # a save killed midway (kill -9) left these
        return engine.run(recipe, cfg, out_dir, resumed_from, progress, log)


def train_steps(recipe: Any, cfg: TrainConfig, out_dir: str, engine: Engine | None = None,
                resume: str | None = None, progress: bool = True, log: Any = tqdm.write,
                interrupted: StopOnCtrlC | None = None) -> dict:
    """The loop of `train` without its checks and lock, for an engine's `run` (in each of its
    processes): seeds, optimizer and schedule, the resumed state, the steps, log.csv,
    evaluation every cfg.eval_every steps and at the end, checkpoints after each evaluation
    and on Ctrl-C. `interrupted`: a Ctrl-C catcher the caller already holds active (a process
    that catches Ctrl-C from its start); else one is active while the steps run."""
    engine = Engine() if engine is None else engine
    ckpt_path, log_path = os.path.join(out_dir, "checkpoint.npz"), os.path.join(out_dir, "log.csv")
    mg.manual_seed(cfg.seed)
    data_rng = np.random.default_rng(cfg.seed + 1)
    opt, sched = make_optimizer(recipe.model, cfg)
    start, history, seconds = 0, [], 0.0
    if resume:
        meta, model_state, opt_state = read_checkpoint(resume, resume=True)
        recipe.model.load_state_dict(model_state)
        opt.load_state_dict(optim.unflatten_state(opt_state))
        sched.load_state_dict(meta["sched"])
        set_rng_state(meta["rng"])
        data_rng.bit_generator.state = meta["data_rng"]
        start, history = meta["step"], meta["history"]
        seconds = meta.get("seconds", 0.0)  # the log's time runs on from the checkpoint's
    recipe.model.train()
    engine.setup(recipe, opt, cfg, start)
    # Every save brings the engine's state back first: try that way once now, so that a state
    # that cannot come back (a name the model does not have) fails before any step is lost.
    engine.sync()
    # The step of the checkpoint in ckpt_path, for the message of a save that fails.
    same_file = bool(resume) and os.path.abspath(checkpoint_path(resume)) == os.path.abspath(ckpt_path)
    on_disk = [start if same_file else None]

    def save(step: int) -> None:
        engine.sync()
        try:
            save_checkpoint(ckpt_path, recipe, opt, sched, step, cfg, data_rng, history,
                            seconds=time.perf_counter() - t0)
        except OSError as e:
            kept = (f"{ckpt_path} on disk is still the one from step {on_disk[0]}" if on_disk[0] is not None
                    else f"there is no checkpoint in {out_dir} yet")
            raise OSError(e.errno, f"train: the checkpoint of step {step} was not saved ({e.strerror or e}); "
                          f"{kept}") from e
        on_disk[0] = step

    if engine.leader:
        start_log(log_path, keep_until=start)
    metrics: dict = history[-1] if history else {}
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps,
               disable=not (progress and engine.leader),
               desc=f"train {recipe.name}{engine.label}", unit="step", dynamic_ncols=True)
    t0 = time.perf_counter() - seconds
    said = [""]
    with StopOnCtrlC() if interrupted is None else nullcontext(interrupted) as catcher:
        for step in bar:
            if engine.stopping(catcher.flag):  # stop between steps, so the checkpoint is consistent
                bar.close()
                if engine.leader:
                    save(step)
                raise TrainingInterrupted(step, ckpt_path)
            value = engine.step(recipe.batch("train", data_rng, cfg.batch_size))
            sched.step()
            if not engine.leader:
                continue
            lr, done, elapsed = sched.get_last_lr()[0], step + 1, time.perf_counter() - t0
            bar.set_postfix(loss=f"{value:.3f}", lr=f"{lr:.1e}")
            evaluated = None
            if done % cfg.eval_every == 0 or done == cfg.steps:
                engine.sync()
                evaluated = {"step": done, **recipe.evaluate(cfg.eval_batches)}
                history.append(evaluated)
                log(f"step {done}: " + ", ".join(f"{k} {v:.4f}" for k, v in evaluated.items() if k != "step"))
                # How the steps run (the thread setting chosen), when it changes; the command says it with -v.
                if engine.verbose and engine.describe() not in ("", said[0]):
                    said[0] = engine.describe()
                    log(said[0])
            val_loss = None if evaluated is None else evaluated.get("val_loss", float("nan"))
            append_log_row(log_path, done, value, val_loss, lr, elapsed)
            if evaluated is not None:  # after the log row, so a resumed run's log continues where this stops
                metrics = evaluated
                save(done)
    bar.close()
    return metrics
