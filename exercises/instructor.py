"""The instructor's side: grade a folder of submissions with points, and Gradescope's format.

    minigrad exercise grade SUBMISSIONS/                 # table student x task, SUBMISSIONS/grades.csv
    minigrad exercise grade SUBMISSIONS/ --tasks softmax_backward cross_entropy
    minigrad exercise check softmax_backward --format gradescope > results.json
    minigrad exercise autograder softmax_backward cross_entropy --out autograder.zip

Points: each check of a task is worth its weight (`Task.weights`, default 1); a task's score is
the sum of the weights of the checks passed, so partial credit is possible. Every check runs
even after a failure, except that the run stops at a NotImplementedError, and a file that does
not import (or lacks a name) runs none: checks that did not run count 0.

SUBMISSIONS holds either `<task>.py` files directly (one student, named after the folder) or
one subfolder per student holding theirs.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from .catalogue import TASKS, Task, get_task
from .diagnoses import HINTS
from .grader import CheckResult, Report, grade

# The checks grade() puts before a task's own: a prerequisite, worth no points.
_GATES = ("imports", "defines ")


class _Anything:
    """Stands for the student's objects while listing a task's checks (checks are lazy)."""

    def __getattr__(self, name: str) -> _Anything:
        return _Anything()

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return _Anything()


def check_names(task: Task) -> list[str]:
    """The names of a task's checks, in order, without a submission."""
    return [name for name, _ in task.checks(SimpleNamespace(**{n: _Anything() for n in task.defines}))]


def max_score(task: Task) -> float:
    return float(sum(task.weights.get(n, 1) for n in check_names(task)))


@dataclass
class Scored:
    """One task of one student: the report and each check's points (checks not run score 0)."""

    task: str
    report: Report
    tests: list[dict] = field(default_factory=list)  # name, score, max_score, passed, output

    @property
    def score(self) -> float:
        return float(sum(t["score"] for t in self.tests))

    @property
    def max_score(self) -> float:
        return float(sum(t["max_score"] for t in self.tests))

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def error(self) -> str:
        """Why no check ran: the file does not import, lacks a name, or is missing."""
        first = self.report.checks[0] if self.report.checks else None
        if first is not None and not first.passed and first.name.startswith(_GATES):
            return first.message
        return ""

    @property
    def codes(self) -> list[str]:
        if self.report.not_implemented:
            return ["not_implemented"]
        if self.error:
            first = self.report.checks[0]
            return ["missing_names" if first.name.startswith("defines ") else
                    "missing_file" if first.message.startswith("no file ") else "import_error"]
        return self.report.diagnosis


def score(report: Report) -> Scored:
    """Points for a report: every check of its task, with the weight it is worth."""
    task = get_task(report.task)
    ran = {c.name: c for c in report.checks}
    gate = next((c for c in report.checks if c.name.startswith(_GATES) and not c.passed), None)
    scored = Scored(task.name, report)
    for name in check_names(task):
        weight = float(task.weights.get(name, 1))
        c = ran.get(name)
        if c is None:
            why = (f"not run: {gate.message}" if gate else
                   "not run: an earlier check reached NotImplementedError" if report.not_implemented
                   else "not run")
            c = CheckResult(name, False, why)
        scored.tests.append({"name": name, "score": weight if c.passed else 0.0, "max_score": weight,
                             "passed": c.passed, "output": c.message, "diagnosis": list(c.diagnosis),
                             "detail": c.detail})
    return scored


def _missing(task: str, path: str) -> Report:
    return Report(task, path, [CheckResult("imports", False, f"no file {os.path.basename(path)}")])


def grade_file(task: str, path: str) -> Scored:
    """Grade one file; never raises for the student's code (a crash grades as failed)."""
    if not os.path.isfile(path):
        return score(_missing(task, path))
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):  # the student's prints
            report = grade(task, path)
    except (Exception, SystemExit) as e:  # e.g. sys.exit() in the student's file
        report = Report(task, path, [CheckResult("imports", False, f"{type(e).__name__}: {e}")])
    return score(report)


# ----------------------------------------------------------------------------- a folder


def students(folder: str) -> dict[str, str]:
    """student -> their folder: the folder itself when it holds task files, else its subfolders."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"no folder {folder}")
    if any(os.path.isfile(os.path.join(folder, f"{t}.py")) for t in TASKS):
        return {os.path.basename(os.path.abspath(folder)): folder}
    subs = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))
                  and not d.startswith((".", "__")))
    if not subs:
        raise ValueError(f"{folder} holds neither <task>.py files nor one subfolder per student")
    return {d: os.path.join(folder, d) for d in subs}


def tasks_in(who: dict[str, str]) -> list[str]:
    """The tasks some student has a file for, in the course order."""
    return [t for t in TASKS if any(os.path.isfile(os.path.join(d, f"{t}.py")) for d in who.values())]


def grade_folder(folder: str, tasks: list[str] | None = None) -> dict[str, dict[str, Scored]]:
    """student -> task -> Scored; a student without a task's file scores 0 on it."""
    who = students(folder)
    tasks = [get_task(t).name for t in tasks] if tasks else tasks_in(who)
    if not tasks:
        raise ValueError(f"no <task>.py file in {folder} or its subfolders; "
                         f"the tasks are: {', '.join(TASKS)}")
    return {s: {t: grade_file(t, os.path.join(d, f"{t}.py")) for t in tasks} for s, d in who.items()}


def _cell(s: Scored) -> str:
    mark = "pass" if s.passed else "fail" + (f" ({', '.join(s.codes)})" if s.codes else "")
    return f"{mark} {s.score:g}/{s.max_score:g}"


def table(grades: dict[str, dict[str, Scored]]) -> str:
    """A text table: one row per student, one column per task, and the total."""
    tasks = list(next(iter(grades.values())))
    rows = [["student", *tasks, "score"]]
    for student, by_task in grades.items():
        total = sum(s.score for s in by_task.values())
        most = sum(s.max_score for s in by_task.values())
        rows.append([student, *(_cell(by_task[t]) for t in tasks), f"{total:g}/{most:g}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    errors = [f"{student}/{t}.py: {s.error}" for student, by_task in grades.items()
              for t, s in by_task.items() if s.error]
    return "\n".join(lines + ([""] + errors if errors else []))


CSV_COLUMNS = ["student", "task", "passed", "score", "max_score", "codes"]


def write_csv(grades: dict[str, dict[str, Scored]], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for student, by_task in grades.items():
            for t, s in by_task.items():
                w.writerow([student, t, s.passed, f"{s.score:g}", f"{s.max_score:g}", " ".join(s.codes)])


# ----------------------------------------------------------------------------- Gradescope


def _markdown(test: dict) -> str:
    text = test["output"] or ("passed" if test["passed"] else "failed")
    for code in test["diagnosis"]:
        text += f"\n\ndiagnosis: `{code}`: {HINTS.get(code, '')}".rstrip(": ")
    if test["detail"]:
        text += "\n\n```\n" + test["detail"].rstrip() + "\n```"
    return text


def gradescope(scored: list[Scored]) -> dict:
    """Gradescope's results.json for one submission: a test per check of every task."""
    tests = [{"name": f"{s.task}: {t['name']}", "score": t["score"], "max_score": t["max_score"],
              "output": _markdown(t), "status": "passed" if t["passed"] else "failed",
              "visibility": "visible"} for s in scored for t in s.tests]
    return {"score": float(sum(t["score"] for t in tests)), "output_format": "md", "tests": tests}


def to_json(grades: dict[str, dict[str, Scored]]) -> dict:
    """--format json: each student's report JSON per task (as `check --json`), with the points."""
    return {student: {t: dict(s.report.to_json(), score=s.score, max_score=s.max_score)
                      for t, s in by_task.items()} for student, by_task in grades.items()}


RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grades {root}/submission/*.py into
# {root}/results/results.json. AUTOGRADER_ROOT moves {root}; AUTOGRADER_PYTHON picks the Python.
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{AUTOGRADER_PYTHON:-python3}}"
mkdir -p "$ROOT/results"
"$PYTHON" -m minigrad.cli exercise grade "$ROOT/submission" --tasks {tasks} \\
    --format gradescope --results "$ROOT/results/results.json"
"""

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image: installs minigrad.
set -e
cd "$(dirname "$0")"
{install}
"""

NOT_SOURCES = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                     ".pytest_cache", ".hypothesis", "*.zip")


def source_tree() -> str | None:
    """The checkout minigrad runs from (an editable install), or None for an installed wheel."""
    import minigrad

    root = os.path.dirname(os.path.dirname(os.path.abspath(minigrad.__file__)))
    return root if os.path.isfile(os.path.join(root, "setup.cfg")) else None


def build_wheel(out_dir: str) -> str:
    """Build minigrad's wheel from the source tree (a copy: the checkout stays clean), offline."""
    root = source_tree()
    if root is None:
        raise ValueError("minigrad is not installed from a source tree, so no wheel can be built: "
                         "add --no-wheel (setup.sh then installs minigrad with pip)")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        shutil.copytree(root, src, ignore=NOT_SOURCES)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--quiet", "--disable-pip-version-check", "-w", out_dir, src],
                       check=True, capture_output=True)
    (wheel,) = [f for f in os.listdir(out_dir) if f.startswith("minigrad-") and f.endswith(".whl")]
    return os.path.join(out_dir, wheel)


def autograder_zip(tasks: list[str], out: str, wheel: bool = True) -> list[str]:
    """Write Gradescope's autograder zip; returns the names in it."""
    import minigrad

    names = [get_task(t).name for t in tasks]
    if not names:
        raise ValueError("autograder: name at least one task")
    files: dict[str, tuple[bytes, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if wheel:
            path = build_wheel(tmp)
            with open(path, "rb") as f:
                files[os.path.basename(path)] = (f.read(), 0o644)
            install = f"pip3 install ./{os.path.basename(path)}"
        else:
            install = f"pip3 install minigrad=={minigrad.__version__}"
    files["setup.sh"] = (SETUP.format(install=install).encode(), 0o755)
    run = RUN_AUTOGRADER.format(root="/autograder", tasks=" ".join(names))
    files["run_autograder"] = (run.encode(), 0o755)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16  # a regular file, executable for the scripts
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return list(files)
