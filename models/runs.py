"""The run folder of a training run: its checkpoint (atomic, everything an exact resume needs),
its log.csv, the lock that keeps a second process out, and the Ctrl-C catcher the loop stops by.

The training loop (models/train.py) and every engine share these, so a run folder reads the same
whichever engine wrote it."""

from __future__ import annotations

import csv
import json
import os
import signal
import threading
from dataclasses import asdict
from typing import Any, Callable

import numpy as np

import minigrad as mg
import minigrad.optim as optim
from minigrad.random import get_rng_state
from minigrad.serialization import pid_running

CHECKPOINT_FORMAT = "minigrad-checkpoint-1"

# ----------------------------------------------------------------------------- checkpoints


def save_checkpoint(path: str, recipe: Any, opt: optim.Optimizer, sched: Any, step: int,
                    cfg: Any, data_rng: np.random.Generator, history: list,
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
    if overwrite or not os.path.isdir(out_dir) or resumes_in_place(resumed_from, out_dir):
        return  # nothing there, asked to replace it, or the resumed run going on in its folder
    what = existing_run(out_dir)
    if what is not None:
        raise RunExistsError(out_dir, what)


def resumes_in_place(resumed_from: str | None, out_dir: str) -> bool:
    """Whether the run resumed from `resumed_from` goes on in its own folder, out_dir."""
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


# ----------------------------------------------------------------------------- log.csv


def start_log(path: str, keep_until: int) -> None:
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


def append_log_row(path: str, step: int, loss: float, val_loss: float | None, lr: float,
                   seconds: float) -> None:
    """Append one step's row to log.csv (val_loss empty on a step that did not evaluate)."""
    row = [step, f"{loss:.5f}", "" if val_loss is None else f"{val_loss:.5f}", f"{lr:.3e}", f"{seconds:.2f}"]
    with open(path, "a", newline="") as f:
        csv.writer(f).writerow(row)


# ----------------------------------------------------------------------------- Ctrl-C


class StopOnCtrlC:
    """While active, Ctrl-C sets `flag` instead of raising, so the loop can stop cleanly."""

    def __init__(self) -> None:
        self.flag = False
        self._prev: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.flag = True

    def __enter__(self) -> StopOnCtrlC:
        if threading.current_thread() is threading.main_thread():
            self._prev = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._prev is not None:
            signal.signal(signal.SIGINT, self._prev)
