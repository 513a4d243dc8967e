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
    warmup = min(cfg.warmup, cfg.steps // 5)  # short runs (tests, demos) still get a cosine phase
    sched = optim.WarmupCosine(opt, warmup_steps=warmup, total_steps=cfg.steps, min_lr=cfg.min_lr)
    return opt, sched


def train(recipe: Any, cfg: TrainConfig, out_dir: str, resume: str | None = None,
          progress: bool = True, log: Any = tqdm.write) -> dict:
    """Train `recipe.model` for cfg.steps steps; checkpoints and log.csv go to out_dir.

    Returns the last evaluation metrics. Ctrl-C finishes the current step, saves a checkpoint
    and raises `TrainingInterrupted` (a KeyboardInterrupt), so `resume` (a checkpoint or a run
    folder) can continue from it; resuming gives the same losses as an uninterrupted run.
    """
    if cfg.steps < 1:
        raise ValueError(f"train: steps must be positive, got {cfg.steps}")
    # Everything that can fail is checked before out_dir (and its log) is touched.
    loaded = read_checkpoint(resume) if resume else None
    if loaded is not None and loaded[0]["step"] >= cfg.steps:
        raise ValueError(f"train: the checkpoint is at step {loaded[0]['step']}, so {cfg.steps} steps leave "
                         "nothing to train; ask for more steps")
    os.makedirs(out_dir, exist_ok=True)
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
                save_checkpoint(ckpt_path, recipe, opt, sched, step, cfg, data_rng, history,
                                seconds=time.perf_counter() - t0)
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
                save_checkpoint(ckpt_path, recipe, opt, sched, done, cfg, data_rng, history,
                                seconds=time.perf_counter() - t0)
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
