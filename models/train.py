"""The training loop every model shares: AdamW, warmup + cosine schedule, gradient clipping,
periodic evaluation, a progress bar, a CSV log, atomic checkpoints and exact resume."""

from __future__ import annotations

import csv
import json
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

import minigrad as mg
import minigrad.optim as optim
from minigrad.random import get_rng_state, set_rng_state
from minigrad.serialization import clean_temporaries, pid_running

CHECKPOINT_FORMAT = "minigrad-checkpoint-1"


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


# ----------------------------------------------------------------------------- checkpoints


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training between two steps, after a checkpoint was saved at `step`."""

    def __init__(self, step: int, checkpoint: str):
        super().__init__(f"interrupted at step {step}; checkpoint saved to {checkpoint}")
        self.step, self.checkpoint = step, checkpoint


def save_checkpoint(path: str, recipe: Any, opt: optim.Optimizer, sched: Any, step: int,
                    cfg: TrainConfig, data_rng: np.random.Generator, history: list,
                    seconds: float = 0.0) -> None:
    """Everything needed to continue exactly: weights, optimizer, schedule, step, both random
    generators, the recipe (model config, tokenizer) and the training time so far. One .npz,
    written atomically."""
    meta = {
        "format": CHECKPOINT_FORMAT, "model": recipe.name, "recipe": recipe.meta(),
        "train": asdict(cfg), "step": step, "rng": get_rng_state(),
        "data_rng": data_rng.bit_generator.state, "sched": sched.state_dict(), "history": history,
        "seconds": seconds,
    }
    arrays = {f"model/{k}": v for k, v in recipe.model.state_dict().items()}
    arrays.update({f"optim/{k}": v for k, v in optim.flatten_state(opt.state_dict()).items()})
    arrays["meta"] = np.array(json.dumps(meta))
    mg.save(arrays, path)


def checkpoint_path(path: str) -> str:
    """The checkpoint file itself, given the file or the run folder holding checkpoint.npz."""
    if os.path.isdir(path):
        inside = os.path.join(path, "checkpoint.npz")
        if not os.path.isfile(inside):
            raise FileNotFoundError(f"no checkpoint.npz in the folder {path}")
        return inside
    return path


def read_checkpoint(path: str) -> tuple[dict, dict, dict]:
    """(meta, model state, flat optimizer state) of a checkpoint file or of a run folder's
    checkpoint.npz, with one-line errors."""
    path = checkpoint_path(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {path}")
    arrays = mg.load(path)
    if "meta" not in arrays:
        raise ValueError(f"{path} is not a minigrad checkpoint (no meta entry)")
    meta = json.loads(str(arrays["meta"]))
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: unknown checkpoint format {meta.get('format')!r}")
    model = {k[6:]: v for k, v in arrays.items() if k.startswith("model/")}
    opt = {k[6:]: v for k, v in arrays.items() if k.startswith("optim/")}
    return meta, model, opt


# ----------------------------------------------------------------------------- run folders


def existing_run(out_dir: str) -> str | None:
    """What run out_dir holds ("checkpoint.npz at step 6, log.csv"), or None when it holds none."""
    parts = []
    ckpt = os.path.join(out_dir, "checkpoint.npz")
    if os.path.isfile(ckpt):
        try:
            parts.append(f"checkpoint.npz at step {read_checkpoint(ckpt)[0]['step']}")
        except (ValueError, OSError):
            parts.append("checkpoint.npz")
    if os.path.isfile(os.path.join(out_dir, "log.csv")):
        parts.append("log.csv")
    return ", ".join(parts) or None


class RunExistsError(FileExistsError):
    """out_dir holds a run that training there would replace."""

    def __init__(self, out_dir: str, what: str):
        super().__init__(f"{out_dir} already holds a run ({what}); continue it with resume, train into "
                         "another folder, or pass overwrite=True to replace it")
        self.out_dir, self.what = out_dir, what


def check_run_folder(out_dir: str, resumed_from: str | None, overwrite: bool) -> None:
    """Refuse (RunExistsError) to train into a folder holding a run, unless it is the run being
    resumed or `overwrite` is given."""
    if overwrite or not os.path.isdir(out_dir) or _its_own_folder(resumed_from, out_dir):
        return  # nothing there, asked to replace it, or the resumed run going on in its folder
    what = existing_run(out_dir)
    if what is not None:
        raise RunExistsError(out_dir, what)


def _its_own_folder(resumed_from: str | None, out_dir: str) -> bool:
    return (resumed_from is not None and os.path.isdir(out_dir)
            and os.path.samefile(os.path.dirname(os.path.abspath(resumed_from)), out_dir))


class RunInUseError(OSError):
    """Another live process is training in the run folder."""


class RunLock:
    """Holds `out_dir/train.lock` (the PID of the training process) while training.

    A second process that wants the folder is refused with the first one's PID; a lock whose
    process is gone (killed, crashed) is taken over, and `say` tells so."""

    NAME = "train.lock"

    def __init__(self, out_dir: str, say: Callable[[str], Any] = print):
        self.path, self.say = os.path.join(out_dir, self.NAME), say

    def __enter__(self) -> RunLock:
        folder = os.path.dirname(self.path) or "."
        self.made = not os.path.isdir(folder)  # removed again if training leaves nothing in it
        os.makedirs(folder, exist_ok=True)
        for _ in range(2):  # a second try after removing a stale lock
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                pid = self._holder()
                if pid is not None and pid_running(pid):
                    raise RunInUseError(
                        f"{os.path.dirname(self.path)} is in use: process {pid} is training there "
                        f"(lock file {self.path}); wait for it to end, or train into another folder"
                    ) from None
                self.say(f"minigrad: note: taking over the lock {self.path} of process "
                         f"{pid if pid is not None else '(unknown)'}, which is no longer running")
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as f:
                f.write(f"{os.getpid()}\n")
            return self
        raise RunInUseError(f"{self.path}: another process took the lock first; train into another folder")

    def _holder(self) -> int | None:
        try:
            with open(self.path) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):  # empty or half-written: its writer died
            return None

    def __exit__(self, *exc: object) -> None:
        if self._holder() == os.getpid():  # never remove a lock another process took over
            os.unlink(self.path)
            folder = os.path.dirname(self.path) or "."
            if self.made and not os.listdir(folder):  # a run that failed before writing anything
                os.rmdir(folder)


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


# ----------------------------------------------------------------------------- the loop


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


def train(recipe: Any, cfg: TrainConfig, out_dir: str, resume: str | None = None,
          progress: bool = True, log: Any = tqdm.write, overwrite: bool = False) -> dict:
    """Train `recipe.model` for cfg.steps steps; checkpoints and log.csv go to out_dir.

    Returns the last evaluation metrics. Ctrl-C finishes the current step, saves a checkpoint
    and raises `TrainingInterrupted` (a KeyboardInterrupt), so `resume` (a checkpoint or a run
    folder) can continue from it; resuming gives the same losses as an uninterrupted run.

    A run is never destroyed by accident: an out_dir that holds another run is refused unless
    `overwrite` (which removes its checkpoint.npz and log.csv first), and a lock file in
    out_dir keeps a second process from training there at the same time.
    """
    if cfg.steps < 1:
        raise ValueError(f"train: steps must be positive, got {cfg.steps}")
    # Everything that can fail is checked before out_dir (and its log) is touched.
    loaded = read_checkpoint(resume) if resume else None
    if loaded is not None and loaded[0]["step"] >= cfg.steps:
        raise ValueError(f"train: the checkpoint is at step {loaded[0]['step']}, so {cfg.steps} steps leave "
                         "nothing to train; ask for more steps")
    resumed_from = checkpoint_path(resume) if resume else None
    check_run_folder(out_dir, resumed_from, overwrite)
    with RunLock(out_dir, say=log):
        if overwrite and not _its_own_folder(resumed_from, out_dir):
            for name in ("checkpoint.npz", "log.csv"):
                if os.path.exists(os.path.join(out_dir, name)):
                    os.unlink(os.path.join(out_dir, name))
        for folder in {out_dir, os.path.dirname(resumed_from or out_dir) or "."}:
            clean_temporaries(folder)  # a save killed midway (kill -9) left these
        return _train(recipe, cfg, out_dir, loaded, resumed_from, progress, log)


def _train(recipe: Any, cfg: TrainConfig, out_dir: str, loaded: tuple | None, resumed_from: str | None,
           progress: bool, log: Any) -> dict:
    """The loop of `train`, inside its lock."""
    ckpt_path = os.path.join(out_dir, "checkpoint.npz")
    mg.manual_seed(cfg.seed)
    data_rng = np.random.default_rng(cfg.seed + 1)
    opt, sched = make_optimizer(recipe.model, cfg)
    start, history, seconds = 0, [], 0.0
    if loaded is not None:
        meta, model_state, opt_state = loaded
        recipe.model.load_state_dict(model_state)
        opt.load_state_dict(optim.unflatten_state(opt_state))
        sched.load_state_dict(meta["sched"])
        set_rng_state(meta["rng"])
        data_rng.bit_generator.state = meta["data_rng"]
        start, history = meta["step"], meta["history"]
        seconds = meta.get("seconds", 0.0)  # the log's time runs on from the checkpoint's
    # The step of the checkpoint in ckpt_path, for the message of a save that fails.
    same_file = resumed_from is not None and os.path.abspath(resumed_from) == os.path.abspath(ckpt_path)
    on_disk = [start if same_file else None]

    def save(step: int) -> None:
        try:
            save_checkpoint(ckpt_path, recipe, opt, sched, step, cfg, data_rng, history,
                            seconds=time.perf_counter() - t0)
        except OSError as e:
            kept = (f"{ckpt_path} on disk is still the one from step {on_disk[0]}" if on_disk[0] is not None
                    else f"there is no checkpoint in {out_dir} yet")
            raise OSError(e.errno, f"train: the checkpoint of step {step} was not saved ({e.strerror or e}); "
                          f"{kept}") from e
        on_disk[0] = step
    log_path = os.path.join(out_dir, "log.csv")
    _start_log(log_path, keep_until=start)
    metrics: dict = history[-1] if history else {}
    recipe.model.train()
    interrupted = _CtrlC()
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, disable=not progress,
               desc=f"train {recipe.name}", unit="step", dynamic_ncols=True)
    t0 = time.perf_counter() - seconds
    with interrupted:
        for step in bar:
            if interrupted.flag:  # stop between steps, so the checkpoint is consistent
                bar.close()
                save(step)
                raise TrainingInterrupted(step, ckpt_path)
            batch = recipe.batch("train", data_rng, cfg.batch_size)
            loss = recipe.loss(batch)
            opt.zero_grad()
            loss.backward()
            optim.clip_grad_norm_(recipe.model.parameters(), cfg.grad_clip)
            opt.step()
            sched.step()
            value, lr, done = loss.item(), sched.get_last_lr()[0], step + 1
            bar.set_postfix(loss=f"{value:.3f}", lr=f"{lr:.1e}")
            evaluated = _log_step(log_path, done, value, lr, time.perf_counter() - t0, cfg, recipe, history,
                                  log)
            if evaluated is not None:  # after the log row, so a resumed run's log continues where this stops
                metrics = evaluated
                save(done)
    bar.close()
    return metrics


def _log_step(path: str, done: int, loss: float, lr: float, seconds: float, cfg: TrainConfig, recipe: Any,
              history: list, say: Callable[[str], Any],
              before_eval: Callable[[], Any] | None = None) -> dict | None:
    """Append step `done`'s row to log.csv, evaluating first when it is an evaluation step
    (every cfg.eval_every steps, and the last): the new metrics (also appended to `history`
    and said), or None when it did not evaluate. `before_eval` runs just before evaluating."""
    row = [done, f"{loss:.5f}", "", f"{lr:.3e}", f"{seconds:.2f}"]
    metrics = None
    if done % cfg.eval_every == 0 or done == cfg.steps:
        if before_eval is not None:
            before_eval()
        metrics = {"step": done, **recipe.evaluate(cfg.eval_batches)}
        history.append(metrics)
        row[2] = f"{metrics.get('val_loss', float('nan')):.5f}"
        say(f"step {done}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if k != "step"))
    with open(path, "a", newline="") as f:
        csv.writer(f).writerow(row)
    return metrics


def _start_log(path: str, keep_until: int) -> None:
    """A fresh log.csv, keeping the rows of steps up to `keep_until` when resuming (rows of
    steps after the checkpoint would be repeated by the resumed run)."""
    rows = []
    if keep_until and os.path.exists(path):
        with open(path, newline="") as f:
            rows = [r for r in list(csv.reader(f))[1:] if r and int(r[0]) <= keep_until]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "train_loss", "val_loss", "lr", "seconds"])
        writer.writerows(rows)


class _CtrlC:
    """While active, Ctrl-C sets `flag` instead of raising, so the loop can stop cleanly."""

    def __init__(self) -> None:
        self.flag = False
        self._prev: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.flag = True

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._prev = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._prev is not None:
            signal.signal(signal.SIGINT, self._prev)
