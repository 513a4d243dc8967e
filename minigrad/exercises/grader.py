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
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

from .diagnoses import HINTS, most_precise
from .submission import not_written_here, written_here
from .transcript import (
    Fail,
    StudentNotImplemented,
    StudentRaised,
    Transcript,
    begin_check,
    describe_raised,
    one_line,
    run_student,
    transcript,
    where_raised,
)

Check = tuple[str, Callable[[], Any]]


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


def run_checks(task: str, source: str, checks: list[Check], first: int = 0) -> Report:
    """Run `checks` in order into a Report (the i-th as check `first + i` of the transcript);
    stop at the first NotImplementedError."""
    report = Report(task, source)
    for i, (name, fn) in enumerate(checks, start=first):
        begin_check(i)
        try:
            note = fn()
            report.checks.append(CheckResult(name, True, note or ""))
        except Fail as f:
            report.checks.append(CheckResult(name, False, f.message, f.detail, f.diagnosis))
        except StudentNotImplemented as e:
            report.checks.append(CheckResult(name, False, "not implemented yet"))
            report.not_implemented = f"{e.where} raises NotImplementedError"
            break
        except StudentRaised as e:  # the student's code raised: say what and where
            report.checks.append(CheckResult(name, False, e.message, diagnosis=e.diagnosis))
        except MemoryError:  # not a mistake to diagnose: the process grading it is out of memory
            raise
        except Exception as e:  # the checks' own code, on what the student's code gave it
            report.checks.append(CheckResult(name, False, describe_raised(e, None).message))
    return report


# ----------------------------------------------------------------------------- grading


class _Sealed:
    """The student's objects where they are not (the grading process, replaying): every use
    outside run_student() is a mistake of the checks' own code, and says so."""

    def __init__(self, what: str):
        self._what = what

    def __getattr__(self, name: str) -> _Sealed:
        return _Sealed(f"{self._what}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self._what} called outside run_student(): the checks must run the student's "
                           "code only there")


def _import(task: Any, path: str, held: dict) -> dict:
    """Runs in the student's process: import the file, and say what of the task it lacks or
    takes from elsewhere. The module is left in `held` (the one side effect run_student() allows:
    the checks that follow reach the student's objects through it, in that process only)."""
    try:
        sub = load_file(path)
    except NotImplementedError as e:
        return {"not_implemented": where_raised(e, path)}
    except SyntaxError as e:  # raised before the file runs: no frame of it to point at
        line = f" ({e.text.strip()})" if e.text and e.text.strip() else ""
        return {"error": f"{type(e).__name__}: {e.msg} ({os.path.basename(path)}, line {e.lineno}{line})"}
    except MemoryError:
        raise
    except Exception as e:
        return {"error": f"{one_line(e)} ({where_raised(e, path)})"}
    held["module"] = sub
    missing = [n for n in task.defines if not hasattr(sub, n)]
    return {"missing": missing, "borrowed": [] if missing else not_written_here(sub, task.defines, path)}


def _well_formed(loaded: Any) -> bool:
    """Whether `_import`'s result has one of its three forms."""
    if not isinstance(loaded, dict):
        return False
    if set(loaded) in ({"not_implemented"}, {"error"}):
        return isinstance(next(iter(loaded.values())), str)
    return (set(loaded) == {"missing", "borrowed"}
            and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in loaded.values()))


def _defines(task: Any) -> str:
    return f"defines {', '.join(task.defines)}"


def _run(task: Any, source: str, sub: Any, path: str | None, train: bool) -> Report:
    """The task's checks on `sub` (the student's objects, or _Sealed when replaying), in the
    transcript's mode; with `path`, the file is imported first (in the student's process)."""
    from .catalogue import TASKS

    if path is not None:
        held: dict = {}
        begin_check(-1)
        loaded = run_student("import", lambda: _import(task, path, held))
        if not _well_formed(loaded):  # (only a transcript rewritten by the student's code)
            return Report(task.name, source, [CheckResult("imports", False, "your code's process wrote a "
                                                                            "damaged result for its import")])
        if "not_implemented" in loaded:
            report = Report(task.name, source, [CheckResult("imports", False, "not implemented yet")])
            report.not_implemented = f"{loaded['not_implemented']} raises NotImplementedError"
            return report
        if "error" in loaded:
            return Report(task.name, source, [CheckResult("imports", False, str(loaded["error"]))])
        if loaded["missing"]:
            return Report(task.name, source,
                          [CheckResult(_defines(task), False, f"missing {', '.join(loaded['missing'])}")])
        if loaded["borrowed"]:
            return _borrowed(task, source, loaded["borrowed"])
        sub = held.get("module", _Sealed(os.path.basename(path)))
    checks = [(_defines(task), lambda: None)] + task.checks(sub)
    report = run_checks(task.name, source, checks)
    if train and task.train is not None:
        if report.passed:
            trained = run_checks(task.name, source, [task.train(sub)], first=len(checks)).checks[0]
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


def _borrowed(task: Any, source: str, found: list[str]) -> Report:
    message = "; ".join(found) + ": the task is to write it, so it scores 0"
    return Report(task.name, source, [CheckResult(_defines(task), False, message)])


def read_submission(task: Any, path: str) -> Report | None:
    """The verdict on a file from its text alone, before any of it runs (None: run it): a
    syntax error, or what written_here finds."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        found = written_here(task, text, path)
    except SyntaxError as e:
        line = f" ({e.text.strip()})" if e.text and e.text.strip() else ""
        message = f"{type(e).__name__}: {e.msg} ({os.path.basename(path)}, line {e.lineno}{line})"
        return Report(task.name, path, [CheckResult("imports", False, message)])
    except ValueError as e:  # source code with a null byte
        message = f"{one_line(e)} ({os.path.basename(path)})"
        return Report(task.name, path, [CheckResult("imports", False, message)])
    return _borrowed(task, path, found) if found else None


def record(task_name: str, path: str, train: bool = False) -> Transcript:
    """Run the checks on the student's file in this process, keeping what the student's code
    gave them (isolation's child does this; the verdict is replay's)."""
    from .catalogue import get_task

    task = get_task(task_name)
    t = Transcript("record", path)
    with transcript(t):
        _run(task, path, None, path, train)
    return t


def replay(task_name: str, path: str, recorded: Transcript, train: bool = False) -> Report:
    """The verdict on a file from a transcript of its run: the checks again, here, taking each
    result of the student's code from the transcript (the student's code does not run)."""
    from .catalogue import get_task

    task = get_task(task_name)
    t = Transcript("replay", path, recorded.entries, recorded.arrays)
    with transcript(t):
        return _run(task, path, None, path, train)


def grade(task_name: str, path: str | None = None, objects: dict[str, Any] | None = None,
          train: bool = False) -> Report:
    """Grade a student's file (`path`) or objects given directly (a notebook) for one task, in
    this process: the student's code runs here, unlimited (a MemoryError propagates). A file is
    read first (read_submission), then recorded and replayed, as in a child process of its own
    (isolation.grade_in_child, what the command line and the instructor's functions use)."""
    from .catalogue import get_task

    task = get_task(task_name)
    if objects is not None:
        with transcript(Transcript("live")):
            return _run(task, "objects given to check()", SimpleNamespace(**objects), None, train)
    if path is None or not os.path.isfile(path):
        raise FileNotFoundError(
            f"no file {path}: run `minigrad exercise start {task.name}` to write the stub"
        )
    verdict = read_submission(task, path)
    if verdict is not None:
        return verdict
    return replay(task.name, path, record(task.name, path, train), train)


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
