"""The run folder of a training run: its checkpoint (atomic, everything an exact resume needs),
its log.csv, the lock that keeps a second process out, and the Ctrl-C catcher the loop stops by.

The training loop (models/train.py) and every engine share these, so a run folder reads the same
whichever engine wrote it."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import threading
import typing
from dataclasses import MISSING, asdict, fields
from typing import Any, Callable

import numpy as np

import minigrad as mg
import minigrad.optim as optim
from minigrad.random import generator, get_rng_state
from minigrad.serialization import CheckpointError, format_size, memory_budget, pid_running

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
        "seconds": seconds, "version": mg.__version__,
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


def read_checkpoint(path: str, resume: bool = False) -> tuple[dict, dict, dict]:
    """(meta, model state, flat optimizer state) of a checkpoint file or of a run folder's
    checkpoint.npz, with one-line errors.

    The file is checked before anything in it is used: `mg.load` checks the arrays' headers
    and sizes, then `check_meta` the metadata (with `resume`, also what resuming needs)."""
    path = checkpoint_path(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {path}")
    arrays = mg.load(path)
    if "meta" not in arrays:
        raise CheckpointError(f"{path} is not a minigrad checkpoint (no meta entry)")
    raw = arrays["meta"]
    if raw.dtype.kind != "U" or raw.shape != ():
        raise CheckpointError(f"{path}: meta is a {raw.dtype} array of shape {raw.shape}; expected one "
                              "JSON text (a 0-d string array)")
    try:
        meta = json.loads(str(raw))
    except ValueError as e:
        raise CheckpointError(f"{path}: meta is not valid JSON ({e})") from None
    check_meta(meta, path, resume=resume)
    model = {k[6:]: v for k, v in arrays.items() if k.startswith("model/")}
    opt = {k[6:]: v for k, v in arrays.items() if k.startswith("optim/")}
    return meta, model, opt


# ----------------------------------------------------------------------------- the schema

# The fields `save_checkpoint` writes. Every field present is checked; those in READ_FIELDS
# must be there for any use of the file (sample, eval, attention), those in RESUME_FIELDS too
# for --resume. "seconds" and "version" are absent from files of older versions.
READ_FIELDS = ("format", "model", "recipe", "train", "step")
RESUME_FIELDS = READ_FIELDS + ("rng", "data_rng", "sched", "history")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _rng_state(kind: type) -> Callable[[Any], bool]:
    """Whether numpy accepts v as the state of a `kind` bit generator (tried on a fresh one)."""
    def accepts(v: Any) -> bool:
        try:
            kind().state = v
        except (TypeError, ValueError, KeyError):
            return False
        return True
    return accepts


def _sched_state(v: Any) -> bool:
    numbers = ("base_lrs", "last_lr")
    return (isinstance(v, dict) and _is_int(v.get("last_epoch")) and v["last_epoch"] >= -1
            and all(isinstance(v.get(k), list) and all(map(_is_number, v[k])) for k in numbers))


_META_SCHEMA: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "model": ("a model name (a string)", lambda v: isinstance(v, str)),
    "recipe": ("an object describing the model (its config, tokenizer...)", lambda v: isinstance(v, dict)),
    "train": ("an object of training settings", lambda v: isinstance(v, dict)),
    "step": ("an integer >= 0", lambda v: _is_int(v) and v >= 0),
    "rng": ("the state of numpy's PCG64 generator", _rng_state(type(generator().bit_generator))),
    "data_rng": ("the state of numpy's PCG64 generator", _rng_state(np.random.PCG64)),
    "sched": ("a schedule's state {last_epoch, base_lrs, last_lr}", _sched_state),
    "history": ("a list of evaluations (objects of numbers)", lambda v: isinstance(v, list) and all(
        isinstance(h, dict) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                    for x in h.values()) for h in v)),  # a diverged loss is nan
    "seconds": ("a number of seconds >= 0", lambda v: _is_number(v) and v >= 0),
    "version": ("a version string", lambda v: isinstance(v, str)),
}


def _shown(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return (text if len(text) <= 60 else text[:57] + "...") + f" ({type(v).__name__})"


def check_meta(meta: Any, path: str, resume: bool = False) -> None:
    """Refuse (CheckpointError) a checkpoint's meta that is not what `save_checkpoint` writes:
    not an object, another format, a field missing (READ_FIELDS; with `resume`,
    RESUME_FIELDS) or of the wrong type, or training settings TrainConfig does not take."""
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: meta is {_shown(meta)}; expected an object of named fields "
                              "(not a minigrad checkpoint, or a damaged one)")
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: unknown checkpoint format {meta.get('format')!r}; expected "
                              f"{CHECKPOINT_FORMAT!r}")
    needed = RESUME_FIELDS if resume else READ_FIELDS
    missing = [k for k in needed if k not in meta]
    if missing:
        who = "every checkpoint has" if missing[0] in READ_FIELDS else "resuming needs"
        raise CheckpointError(f"{path}: meta has no {missing[0]!r} field, which {who}; expected "
                              f"{_META_SCHEMA[missing[0]][0]}")
    for key, (expected, ok) in _META_SCHEMA.items():
        if key in meta and not ok(meta[key]):
            raise CheckpointError(f"{path}: meta field {key!r} is {_shown(meta[key])}; expected {expected}")
    from .train import TrainConfig  # here: train.py imports this module

    # A setting this version does not know matters only to a run that goes on training.
    train = meta["train"] if resume else {k: v for k, v in meta["train"].items()
                                          if k in {f.name for f in fields(TrainConfig)}}
    check_fields(TrainConfig, train, f"{path}: train", _written_by(meta),
                 minimum=lambda name: _TRAIN_MINIMUM.get(name, 0))


def _written_by(meta: dict) -> str:
    version = meta.get("version")
    if isinstance(version, str):
        return f"minigrad {version}"
    return "another minigrad (the file does not say which)"


# The least value of each integer training setting; every float setting is >= 0.
_TRAIN_MINIMUM = {"steps": 1, "batch_size": 1, "eval_every": 1, "eval_batches": 1, "warmup": 0,
                  "schedule_steps": 1, "seed": 0}


def _config_minimum(name: str) -> int:
    """A model config's rule: its integers are sizes (>= 1), but for token ids (*_id, >= 0)."""
    return 0 if name.endswith("_id") else 1


def check_fields(cls: type, values: Any, where: str, written_by: str,
                 minimum: Callable[[str], int] = _config_minimum) -> None:
    """Refuse (CheckpointError, naming `where`) `values` that `cls(**values)` (a dataclass)
    would not take or would take wrongly: a key it does not have (as a newer version writes),
    a value not of the field's type (int, float, bool, str, a tuple of ints, or None where
    allowed), an integer below `minimum(name)`, a float below 0 (dropout: outside [0, 1)) or
    an id outside the vocabulary. Missing keys take the field's default."""
    if not isinstance(values, dict):
        raise CheckpointError(f"{where} is {_shown(values)}; expected an object of {cls.__name__} fields")
    known = {f.name: f for f in fields(cls)}
    unknown = [k for k in values if k not in known]
    if unknown:
        raise CheckpointError(
            f"{where}: unknown {cls.__name__} field{'s' * (len(unknown) > 1)} "
            f"{', '.join(map(repr, unknown))}: "
            f"the file was written by {written_by}, this is minigrad {mg.__version__}; use the version "
            "that wrote it, or remove the field")
    hints = typing.get_type_hints(cls)
    for name, value in values.items():
        expected = _field_problem(hints[name], value, minimum(name), name)
        if expected:
            raise CheckpointError(f"{where}: {name} is {_shown(value)}; expected {expected}")
    vocab = values.get("vocab_size", known["vocab_size"].default if "vocab_size" in known else MISSING)
    for name, value in values.items():
        if name.endswith("_id") and _is_int(vocab) and value >= vocab:
            raise CheckpointError(f"{where}: {name} is {value}; expected a token id below vocab_size {vocab}")


def _field_problem(hint: Any, value: Any, least: int, name: str) -> str:
    """What `value` should have been for a field of type `hint` ("" when it is fine)."""
    args = typing.get_args(hint)
    if type(None) in args:  # int | None
        if value is None:
            return ""
        hint = next(a for a in args if a is not type(None))
    if hint is bool:
        return "" if isinstance(value, bool) else "true or false"
    if hint is str:
        return "" if isinstance(value, str) else "a string"
    if hint is int:
        return "" if _is_int(value) and value >= least else f"an integer >= {least}"
    if hint is float:
        if name == "dropout" or name.startswith("beta"):
            return "" if _is_number(value) and 0 <= value < 1 else "a number in [0, 1)"
        return "" if _is_number(value) and value >= 0 else "a number >= 0"
    if typing.get_origin(hint) is tuple:
        ok = isinstance(value, (list, tuple)) and value and all(_is_int(v) and v >= 1 for v in value)
        return "" if ok else "a list of integers >= 1"
    return ""


def check_recipe_config(meta: dict, path: str, resume: bool = False) -> None:
    """Refuse (CheckpointError) a checkpoint whose model config the model cannot be built
    from, before anything is built: a field the config does not have or of the wrong type
    or range (`check_fields`), relations the config itself checks (its __post_init__, e.g.
    heads dividing the width), and sizes whose parameters would not fit in memory: the
    config's `num_parameters()`, at 4 bytes each (16 to train: weights, gradients and
    AdamW's two moments), against `memory_budget()`."""
    from .recipes import RECIPES, recipe_class  # here: the recipes import train.py, which imports this

    if meta["model"] not in RECIPES:
        raise CheckpointError(f"{path}: meta field 'model' is {meta['model']!r}; expected one of: "
                              f"{', '.join(RECIPES)}")
    cls = recipe_class(meta["model"]).config_class
    where = f"{path}: recipe.config"
    if "config" not in meta["recipe"]:
        raise CheckpointError(f"{where} is missing; expected an object of {cls.__name__} fields")
    check_fields(cls, meta["recipe"]["config"], where, _written_by(meta))
    try:
        config = cls(**meta["recipe"]["config"])
    except ValueError as e:
        raise CheckpointError(f"{where}: {e}") from None
    count = config.num_parameters()
    need = count * (16 if resume else 4)
    if need > memory_budget():
        raise CheckpointError(
            f"{where}: a {meta['model']} of these sizes has {count:,} parameters, {format_size(need)} to "
            f"{'train' if resume else 'hold'}, more than the {format_size(memory_budget())} this process may "
            "allocate; expected sizes whose parameters fit in memory")


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
                self.say(f"minigrad: note: taking over the lock {self.path} of process {pid}, which is no "
                         "longer running" if pid is not None else
                         f"minigrad: note: taking over the lock {self.path}, which holds no process id "
                         "(its writer died while writing it, or it is garbled)")
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
        """The PID in the lock file; None when it holds none a process can have (empty, half
        written, garbled: a number outside 1 to 2**31 - 1, the range of a C int)."""
        try:
            with open(self.path) as f:
                pid = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):  # empty or half-written: its writer died
            return None
        return pid if 0 < pid < 2**31 else None

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
