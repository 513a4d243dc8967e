"""The grader: load a student's file, run a task's checks in order, and report.

A check is a (name, function) pair; the function returns None (or a short note) when the check
passes and raises `Fail` when it does not, with a message, an optional worked case (analytic,
numeric and difference arrays side by side) and the diagnosis codes. Any other exception
from the student's code fails the check with the exception and the line of the student's
file; a `NotImplementedError` stops the run: the stub is not filled in yet.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import textwrap
import traceback
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

from .diagnose import dot_t_on_batched
from .diagnoses import HINTS, most_precise

Check = tuple[str, Callable[[], Any]]


class Fail(Exception):
    """A failed check: what is wrong, a worked case to look at, and the diagnosis codes."""

    def __init__(self, message: str, detail: str = "", diagnosis: list[str] | None = None):
        super().__init__(message)
        self.message, self.detail, self.diagnosis = message, detail, list(diagnosis or [])


@dataclass
class CheckResult:
    name: str
    passed: bool
    message: str = ""
    detail: str = ""
    diagnosis: list[str] = field(default_factory=list)


@dataclass
class Report:
    """The outcome of `check`: one result per check run, and every diagnosis the failures gave."""

    task: str
    source: str
    checks: list[CheckResult] = field(default_factory=list)
    not_implemented: str = ""  # where the stub still raises NotImplementedError
    extra: str = ""  # e.g. the loss curves of --train
    # Set by isolation.grade_in_child: why the student's process gave no complete report (then
    # nothing passed), and what the student's code printed (cut to isolation.OUTPUT_LIMIT).
    stopped: str = ""
    output: str = ""

    @property
    def passed(self) -> bool:
        return (bool(self.checks) and all(c.passed for c in self.checks) and not self.not_implemented
                and not self.stopped)

    @property
    def diagnosis(self) -> list[str]:
        """The codes of every failed check, in check order, each once (diagnoses.most_precise)."""
        return most_precise([code for c in self.checks if not c.passed for code in c.diagnosis])

    def to_json(self) -> dict:
        return {
            "task": self.task,
            "passed": self.passed,
            "checks": [{"name": c.name, "passed": c.passed, "message": c.message} for c in self.checks],
            "diagnosis": self.diagnosis,
            "stopped": self.stopped,
            "output": self.output,
        }

    def text(self) -> str:
        lines = [f"exercise {self.task}: {self.source}"]
        if self.stopped:
            return "\n".join(lines + [f"  FAIL  {self.stopped}", *self._printed(),
                                      "", "not graded: every check counts as failed"])
        for c in self.checks:
            mark = "pass" if c.passed else "FAIL"
            lines.append(f"  {mark}  {c.name}" + (f": {c.message}" if c.message else ""))
        first = next((c for c in self.checks if not c.passed), None)
        if self.not_implemented:
            lines.append(f"not implemented yet: {self.not_implemented}")
            return "\n".join(lines)
        if first is not None and first.detail:
            lines += ["", first.detail.rstrip()]
        for code in self.diagnosis:
            lines += ["", f"diagnosis: {code}"]
            lines += ["  " + s for s in textwrap.wrap(HINTS[code], 96)]
        if self.extra:
            lines += ["", self.extra.rstrip()]
        lines += self._printed()
        failed = sum(not c.passed for c in self.checks)
        lines += ["", f"{failed} of {len(self.checks)} checks failed" if failed
                  else f"all {len(self.checks)} checks passed"]
        return "\n".join(lines)

    def _printed(self) -> list[str]:
        if not self.output:
            return []
        return ["", "your code printed:", *("  | " + line for line in self.output.rstrip().splitlines())]

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        # One line: a notebook cell ending in check(...) shows this under the printed report.
        failed = sum(not c.passed for c in self.checks)
        state = (f"stopped ({self.stopped})" if self.stopped else
                 "not implemented yet" if self.not_implemented else
                 f"{failed} of {len(self.checks)} checks failed" if failed else
                 f"all {len(self.checks)} checks passed")
        return f"<Report {self.task}: {state}>"


# ----------------------------------------------------------------------------- loading


def load_file(path: str) -> ModuleType:
    """Import a student's file as a fresh module (a new name each time, so edits are seen)."""
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:10]
    spec = importlib.util.spec_from_file_location(f"minigrad_exercise_{digest}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def where_raised(exc: BaseException, source: str | None) -> str:
    """'file.py, line N' of the deepest frame in the student's file (else the deepest frame,
    unless that is inside minigrad: an engine error, such as a gradient of the wrong shape,
    names the op itself, and the library's line would only distract)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    mine = [f for f in frames if source and os.path.abspath(f.filename) == os.path.abspath(source)]
    if not mine and _in_library(frames[-1].filename):
        return ""
    f = (mine or frames)[-1]
    return f"{os.path.basename(f.filename)}, line {f.lineno}" + (f" ({f.line})" if f.line else "")


def _in_library(filename: str) -> bool:
    import minigrad.nn  # (nn sits outside the minigrad folder in a checkout)

    roots = {os.path.dirname(os.path.abspath(m.__file__)) for m in (minigrad, minigrad.nn)}
    return any(os.path.abspath(filename).startswith(r + os.sep) for r in roots)


def student_frames(exc: BaseException, source: str | None) -> list[dict]:
    """The local variables of each frame `exc` passed through in the student's file (without a
    file, a notebook's objects: the frames outside minigrad and its exercises package)."""
    here = os.path.dirname(os.path.abspath(__file__))
    out, tb = [], exc.__traceback__
    while tb is not None:
        name = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if (name == os.path.abspath(source) if source else
                not (_in_library(name) or name.startswith(here + os.sep))):
            out.append(tb.tb_frame.f_locals)
        tb = tb.tb_next
    return out


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: " + " ".join(str(exc).split())


def run_checks(task: str, source: str, checks: list[Check], path: str | None = None) -> Report:
    """Run `checks` in order into a Report; stop at the first NotImplementedError. A matmul error
    that `.T` on a batched array explains is named (diagnose.dot_t_on_batched)."""
    report = Report(task, source)
    for name, fn in checks:
        try:
            note = fn()
            report.checks.append(CheckResult(name, True, note or ""))
        except Fail as f:
            report.checks.append(CheckResult(name, False, f.message, f.detail, f.diagnosis))
        except NotImplementedError as e:
            report.checks.append(CheckResult(name, False, "not implemented yet"))
            report.not_implemented = f"{where_raised(e, path)} raises NotImplementedError"
            break
        except MemoryError:  # not a mistake to diagnose: the process grading it is out of memory
            raise
        except Exception as e:  # the student's code raised: say what and where
            where = where_raised(e, path)
            message = f"raised {_one_line(e)}" + (f" ({where})" if where else "")
            codes = ["dot_t_on_batched"] if dot_t_on_batched(e, student_frames(e, path)) else []
            report.checks.append(CheckResult(name, False, message, diagnosis=codes))
    return report


_WRITTEN = ("forward", "backward")  # the methods a task's class asks the student to write


def _not_written_here(sub: ModuleType, names: tuple[str, ...], path: str) -> list[str]:
    """What of `names` the student's file takes from elsewhere instead of writing it: a function
    or class imported (minigrad's own op, a reference solution), or a class whose forward or
    backward comes from another file (a subclass of the library's op). Base classes' abstract
    methods (Function's, Module's) do not count: a class that leaves them is caught by its checks."""
    here = os.path.realpath(path)

    def origin(obj: Any) -> str | None:
        code = getattr(getattr(obj, "__func__", obj), "__code__", None)
        return None if code is None else os.path.realpath(code.co_filename)

    found = []
    for name in names:
        obj = getattr(sub, name)
        if isinstance(obj, type):
            if obj.__module__ != sub.__name__:
                found.append(f"{name} is {obj.__module__}.{obj.__qualname__}, not a class your file defines")
                continue
            for method in _WRITTEN:
                fn = getattr(obj, method, None)
                qualname = getattr(getattr(fn, "__func__", fn), "__qualname__", "")
                where = origin(fn)
                if where not in (None, here) and qualname.split(".")[0] not in ("Function", "Module"):
                    found.append(f"{name}.{method} comes from {qualname} in {os.path.basename(where)}, "
                                 "not from your file")
        elif callable(obj) and origin(obj) not in (None, here):
            found.append(f"{name} is {getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', name)}, "
                         "not a function your file defines")
    return found


def grade(task_name: str, path: str | None = None, objects: dict[str, Any] | None = None,
          train: bool = False) -> Report:
    """Grade a student's file (`path`) or objects given directly (a notebook) for one task, in
    this process: the student's code runs here, unlimited (a MemoryError propagates). The
    command line and the instructor's functions grade a file in a child process of its own
    instead: isolation.grade_in_child."""
    from .catalogue import TASKS, get_task

    task = get_task(task_name)
    source = path if objects is None else "objects given to check()"
    if objects is not None:
        sub = SimpleNamespace(**objects)
    else:
        if path is None or not os.path.isfile(path):
            raise FileNotFoundError(
                f"no file {path}: run `minigrad exercise start {task.name}` to write the stub"
            )
        try:
            sub = load_file(path)
        except NotImplementedError as e:
            report = Report(task.name, source, [CheckResult("imports", False, "not implemented yet")])
            report.not_implemented = f"{where_raised(e, path)} raises NotImplementedError"
            return report
        except SyntaxError as e:  # raised before the file runs: no frame of it to point at
            line = f" ({e.text.strip()})" if e.text and e.text.strip() else ""
            message = f"{type(e).__name__}: {e.msg} ({os.path.basename(path)}, line {e.lineno}{line})"
            return Report(task.name, source, [CheckResult("imports", False, message)])
        except MemoryError:
            raise
        except Exception as e:
            return Report(task.name, source,
                          [CheckResult("imports", False, f"{_one_line(e)} ({where_raised(e, path)})")])
    missing = [n for n in task.defines if not hasattr(sub, n)]
    defines = f"defines {', '.join(task.defines)}"
    if missing:
        return Report(task.name, source, [CheckResult(defines, False, f"missing {', '.join(missing)}")])
    borrowed = _not_written_here(sub, task.defines, path) if objects is None else []
    if borrowed:
        message = "; ".join(borrowed) + ": the task is to write it, so it scores 0"
        return Report(task.name, source, [CheckResult(defines, False, message)])
    checks = [(defines, lambda: None)] + task.checks(sub)
    report = run_checks(task.name, source, checks, path)
    if train and task.train is not None:
        if report.passed:
            trained = run_checks(task.name, source, [task.train(sub)], path).checks[0]
            # A passing training check returns its summary line, then the loss curves.
            if trained.passed and "\n" in trained.message:
                trained.message, report.extra = trained.message.split("\n", 1)
            report.checks.append(trained)
        else:
            report.extra = "--train: skipped until every check passes"
    elif train:
        with_training = ", ".join(t.name for t in TASKS.values() if t.train is not None)
        report.extra = (f"--train: {task.name} has no training run (it is not a piece of the tiny GPT); "
                        f"the tasks with one: {with_training}")
    return report


def check(task: str, *objects: Any, train: bool = False, quiet: bool = False, **named: Any) -> Report:
    """Grade objects defined in a notebook, e.g. `check("softmax_backward", MySoftmax)`.

    Positional objects stand for the names the task's stub defines, in order (see
    `minigrad exercise list`); keyword arguments give them by name. Prints the report
    (unless quiet) and returns it; `report.passed` says whether every check passed.
    """
    from .catalogue import get_task

    t = get_task(task)
    if len(objects) > len(t.defines):
        raise TypeError(f"check({task!r}, ...): the task defines {len(t.defines)} name(s): "
                        f"{', '.join(t.defines)}; got {len(objects)} objects")
    if not objects and not named:
        names = ", ".join(t.defines)
        raise TypeError(f"check({task!r}) needs the object(s) to grade: check({task!r}, {names}); "
                        f"for the file, run `minigrad exercise check {task}`")
    given = dict(zip(t.defines, objects), **named)
    report = grade(task, objects=given, train=train)
    if not quiet:
        print(report.text())
    return report


def dumps(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2)
