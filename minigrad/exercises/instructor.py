"""The instructor's side: grade a folder of submissions with points, and Gradescope's format.

    minigrad exercise grade SUBMISSIONS/                 # table student x task, SUBMISSIONS/grades.csv
    minigrad exercise grade SUBMISSIONS/ --tasks softmax_backward cross_entropy
    minigrad exercise check softmax_backward --format gradescope > results.json
    minigrad exercise autograder softmax_backward cross_entropy --out autograder.zip

Points: each check of a task is worth its weight (`Task.weights`, default 1); a task's score is
the sum of the weights of the checks passed, so partial credit is possible. Every check runs
even after a failure, and checks that did not run count 0: a file that does not import (or
lacks a name, or is missing) runs none, and a run that reaches a NotImplementedError stops there
and scores 0 for the task (the checks it passed are the stub's given code, not the student's).
The autograder zip for Gradescope is built in exercises/autograder.py.

SUBMISSIONS holds either `<task>.py` files directly (one student, named after the folder) or
one subfolder per student holding theirs.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from .catalogue import TASKS, Task, get_task
from .diagnoses import HINTS
from .forkserver import abort_children, allow_children
from .grader import CheckResult, Report, grade
from .isolation import (
    DEFAULT_LIMITS,
    Limits,
    grade_in_child,
    record_files_in_child,
    verdicts,
)

# Students whose children run at once: measured on 2 cores (benchmarks/grading.py), two side by
# side grade a class in about half the time of one at a time; more would only share the cores.
JOBS = min(2, os.cpu_count() or 1)

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
    # A run stopped by NotImplementedError scores 0: what passed before it (the forward a stub
    # gives) is not the student's work. Each check says which part is left to write.
    todo = f"{report.not_implemented}: write that part" if report.not_implemented else ""
    for name in check_names(task):
        weight = float(task.weights.get(name, 1))
        c = ran.get(name)
        if c is None:
            why = (f"not run: {gate.message}" if gate else
                   f"not run: an earlier check reached NotImplementedError ({todo})" if todo
                   else "not run")
            c = CheckResult(name, False, why)
        output = c.message
        if todo and c.passed:
            output = f"passed, but scores 0 until the task is finished: {todo}"
        elif todo and c.message == "not implemented yet":
            output = f"not implemented yet: {todo}"
        earned = weight if c.passed and not todo else 0.0
        scored.tests.append({"name": name, "score": earned, "max_score": weight,
                             "passed": c.passed, "output": output, "diagnosis": list(c.diagnosis),
                             "detail": c.detail})
    return scored


def _missing(task: str, path: str) -> Report:
    """No file for the task: the message names the file expected, and the folder's .py files
    named after no task (a `softmax.py` meant as `softmax_backward.py`)."""
    expected, folder = os.path.basename(path), os.path.dirname(path) or "."
    others = sorted(f for f in os.listdir(folder) if f.endswith(".py") and f[:-3] not in TASKS
                    ) if os.path.isdir(folder) else []
    message = f"no file {expected}: the file for {task} must be named {expected}"
    if others:
        message += f" (found {', '.join(others)}, named after no task)"
    return Report(task, path, [CheckResult("imports", False, message)])


class _Stopped(Scored):
    """A task whose child process ended without a complete report: 0, and the reason why."""

    @property
    def error(self) -> str:
        return self.report.stopped

    @property
    def codes(self) -> list[str]:
        return ["stopped"]


def score_report(report: Report) -> Scored:
    """score(report); for a report whose process stopped early (Report.stopped: a timeout, a
    crash, an exit, out of memory) every check scores 0 and says why."""
    scored = score(report)
    if not report.stopped:
        return scored
    tests = [dict(t, score=0.0, passed=False, output=f"not run: {report.stopped}") for t in scored.tests]
    return _Stopped(scored.task, report, tests)


def grade_file(task: str, path: str, limits: Limits | None = DEFAULT_LIMITS) -> Scored:
    """Grade one file in a child process of its own, with `limits` (isolation.grade_in_child),
    or in this process for limits=None; never raises for the student's code (a crash, a hang,
    an exit grade as failed)."""
    if not os.path.isfile(path):
        return score(_missing(task, path))
    if limits is not None:
        return score_report(grade_in_child(task, path, limits=limits))
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):  # the student's prints
            report = grade(task, path)
    except (Exception, SystemExit) as e:  # e.g. sys.exit() in the student's file
        report = Report(task, path, [CheckResult("imports", False, f"{type(e).__name__}: {e}")])
    return score(report)


# ----------------------------------------------------------------------------- a folder


def students(folder: str) -> dict[str, str]:
    """student -> their folder: the folder itself when it holds task files or no subfolder (one
    student, who may have no file for a task), else its subfolders."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"no folder {folder}")
    if any(os.path.isfile(os.path.join(folder, f"{t}.py")) for t in TASKS):
        return {os.path.basename(os.path.abspath(folder)): folder}
    subs = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))
                  and not d.startswith((".", "__")))
    if not subs:  # one student with no task's file (empty, or misnamed): each task scores 0
        return {os.path.basename(os.path.abspath(folder)): folder}
    return {d: os.path.join(folder, d) for d in subs}


def tasks_in(who: dict[str, str]) -> list[str]:
    """The tasks some student has a file for, in the course order."""
    return [t for t in TASKS if any(os.path.isfile(os.path.join(d, f"{t}.py")) for d in who.values())]


def grade_folder(folder: str, tasks: list[str] | None = None, limits: Limits | None = DEFAULT_LIMITS,
                 done: Callable[[str, dict[str, dict[str, Scored]]], None] | None = None,
                 jobs: int = JOBS) -> dict[str, dict[str, Scored]]:
    """student -> task -> Scored; a student without a task's file scores 0 on it. Each student's
    files run in a process of their own (one after the other, each within the limits:
    isolation.record_files_in_child), `jobs` students at a time; the verdicts are decided here,
    student by student in the folder's order, and `done(student, grades so far)` runs after
    each, so their results are written before the next student's are decided."""
    who = students(folder)
    tasks = [get_task(t).name for t in tasks] if tasks else tasks_in(who)
    if not tasks:
        raise ValueError(f"no <task>.py file in {folder} or its subfolders; "
                         f"the tasks are: {', '.join(TASKS)}")
    grades: dict[str, dict[str, Scored]] = {}
    paths = {s: {t: os.path.join(d, f"{t}.py") for t in tasks} for s, d in who.items()}

    def decided(s: str, scored: dict[str, Scored]) -> None:
        grades[s] = scored
        if done is not None:
            done(s, grades)

    if limits is None:
        for s in who:
            decided(s, {t: grade_file(t, p, None) for t, p in paths[s].items()})  # (a missing file: 0)
        return grades
    # Each student's files in one child process of their own, one after the other; `jobs`
    # students' children run side by side (worker threads wait on them), while this thread
    # replays the checks of each student in turn, in the folder's order.
    present = {s: [(t, p) for t, p in paths[s].items() if os.path.isfile(p)] for s in who}
    allow_children()
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        try:
            recordings = {s: pool.submit(record_files_in_child, present[s], False, limits) for s in who}
            for s, recording in recordings.items():
                reports = dict(zip((t for t, _ in present[s]), verdicts(recording.result())))
                decided(s, {t: score_report(reports[t]) if t in reports else score(_missing(t, p))
                            for t, p in paths[s].items()})
        except BaseException:  # Ctrl-C: the workers' children are killed, the grades so far kept
            abort_children()
            raise
    return grades


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
    """The grades as CSV, replacing `path` whole (never half written: a .part file, renamed)."""
    with open(path + ".part", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for student, by_task in grades.items():
            for t, s in by_task.items():
                w.writerow([student, t, s.passed, f"{s.score:g}", f"{s.max_score:g}", " ".join(s.codes)])
    os.replace(path + ".part", path)


# ----------------------------------------------------------------------------- Gradescope


def _markdown(test: dict) -> str:
    text = test["output"] or ("passed" if test["passed"] else "failed")
    for code in test["diagnosis"]:
        text += f"\n\ndiagnosis: `{code}`: {HINTS.get(code, '')}".rstrip(": ")
    if test["detail"]:
        text += "\n\n```\n" + test["detail"].rstrip() + "\n```"
    return text


def gradescope(scored: list[Scored]) -> dict:
    """Gradescope's results.json for one submission: a test per check of every task, each output
    in markdown (`output_format` on a test, `test_output_format` for all of them; the top-level
    `output_format` formats only the top-level `output`: why a task scored 0 without a check)."""
    tests = [{"name": f"{s.task}: {t['name']}", "score": t["score"], "max_score": t["max_score"],
              "output": _markdown(t), "output_format": "md",
              "status": "passed" if t["passed"] else "failed", "visibility": "visible"}
             for s in scored for t in s.tests]
    result = {"score": float(sum(t["score"] for t in tests)), "output_format": "md",
              "test_output_format": "md", "tests": tests}
    why = [f"**{s.task}** scores 0: {s.error}" if s.error else
           f"**{s.task}** scores 0: {s.report.not_implemented}: write that part"
           for s in scored if s.error or s.report.not_implemented]
    if why:
        result["output"] = "\n\n".join(why)
    return result


def results_json(scored: list[Scored]) -> dict:
    """gradescope(scored), and what the student's code printed as its top-level output (in its
    own field: a print never changes a test's output or the JSON)."""
    results = gradescope(scored)
    printed = [f"{s.task}:\n{s.report.output.rstrip()}" for s in scored if s.report.output]
    if printed:  # after gradescope()'s own output (why a task scored 0), if any
        shown = "What your code printed (not graded):\n\n~~~\n" + "\n\n".join(printed) + "\n~~~"
        results["output"] = "\n\n".join(filter(None, [results.get("output", ""), shown]))
    return results


def to_json(grades: dict[str, dict[str, Scored]]) -> dict:
    """--format json: each student's report JSON per task (as `check --json`), with the points."""
    return {student: {t: dict(s.report.to_json(), score=s.score, max_score=s.max_score)
                      for t, s in by_task.items()} for student, by_task in grades.items()}
