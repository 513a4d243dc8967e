"""`minigrad exercise list|start|check`: the exercises from the command line.

    minigrad exercise list                        # the tasks in order, each with its status here
    minigrad exercise list --codes                # every diagnosis the grader names, with its hint
    minigrad exercise start softmax_backward      # writes ./exercises/softmax_backward.py (a stub)
    minigrad exercise check softmax_backward      # grades it: exit 0 when every check passes
    minigrad exercise check attention_backward --train   # then trains the tiny GPT with it

and for the instructor (exercises/instructor.py, exercises/autograder.py):

    minigrad exercise grade SUBMISSIONS/          # table student x task with points, grades.csv
    minigrad exercise autograder softmax_backward --out autograder.zip   # for Gradescope
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from typing import Any

from .catalogue import TASKS, get_task
from .grader import dumps
from .isolation import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, Limits, grade_in_child

DEFAULT_DIR = "exercises"
STATUS_FILE = ".status.json"  # in the exercises folder: the last check of each file, by content



def parse_memory(text: str) -> int:
    """`--memory`: MiB, as a number (2048) or with a unit (512M, 2G)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([MmGg]?)[iI]?[Bb]?\s*", text)
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"--memory {text!r}: give MiB (2048) or a size with a unit (512M, 2G)")
    return int(float(m.group(1)) * (1024 if m.group(2).lower() == "g" else 1))


def parse_timeout(text: str) -> float:
    """`--timeout`: seconds, more than 0."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ValueError(f"--timeout {text!r}: give the seconds a file may run, e.g. 60")
    return seconds


def _path(args: argparse.Namespace, name: str) -> str:
    return os.path.join(args.dir, f"{name}.py")


def _is_package_folder(folder: str) -> bool:
    return all(os.path.isfile(os.path.join(folder, f)) for f in ("catalogue.py", "grader.py"))


def _refuse_the_package_folder(folder: str) -> None:
    """In a clone of the repository ./exercises is this package's source: keep students' files
    (and the status file) out of it."""
    if _is_package_folder(folder):
        raise ValueError(f"{folder}/ holds minigrad's own exercise code (this is the repository); "
                         "keep your files elsewhere: add --dir my_exercises (or run from another folder)")


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def _read_status(folder: str) -> dict:
    try:
        with open(os.path.join(folder, STATUS_FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _status(args: argparse.Namespace, name: str, seen: dict) -> str:
    path = _path(args, name)
    if not os.path.isfile(path):
        return "not started"
    last = seen.get(name)
    if last is None or last.get("sha1") != _digest(path):
        return "started, not checked" if last is None else "changed since the last check"
    if last["passed"]:
        return "passed"
    return "not implemented yet" if last.get("not_implemented") else "failed the last check"


def cmd_list(args: argparse.Namespace) -> int:
    if args.codes:
        from .diagnoses import catalogue_text

        print(catalogue_text())
        return 0
    seen = _read_status(args.dir)
    for task in TASKS.values():
        print(f"{task.number:2d}. {task.name:<22} {_status(args, task.name, seen):<30} {task.title}")
    if _is_package_folder(args.dir):  # in the repository: ./exercises is the grader's code
        print(f"\n{args.dir}/ here is minigrad's own code; start one in a folder of yours with "
              "`minigrad exercise start NAME --dir my_exercises`")
    else:
        print(f"\nfiles in {args.dir}/; start one with `minigrad exercise start NAME`")
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    task = get_task(args.task)
    _refuse_the_package_folder(args.dir)
    path = _path(args, task.name)
    if os.path.exists(path):
        print(f"{path} exists already; not overwriting it (delete or rename it to start again)")
        return 1
    os.makedirs(args.dir, exist_ok=True)
    with open(path, "x") as f:  # "x": never overwrite, even if the file appeared meanwhile
        f.write(task.stub())
    folder = f" --dir {args.dir}" if args.dir != DEFAULT_DIR else ""
    print(f"wrote {path}: fill in the parts that raise NotImplementedError, then run\n"
          f"    minigrad exercise check {task.name}{folder}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    task = get_task(args.task)
    if args.file is None:
        _refuse_the_package_folder(args.dir)
    path = args.file or _path(args, task.name)
    # In a child process of its own: exit 0 only for a complete report of it, every check passed.
    report = grade_in_child(task.name, path, train=args.train, limits=_limits(args))
    fmt = "json" if args.json else args.format
    if fmt == "gradescope":
        from .instructor import results_json, score_report

        print(json.dumps(results_json([score_report(report)]), indent=2))
    else:
        print(dumps(report) if fmt == "json" else report.text())
    if args.file is None:  # remember the result for `list` (best effort: a read-only folder is fine)
        seen = _read_status(args.dir)
        seen[task.name] = {"sha1": _digest(path), "passed": report.passed,
                           "not_implemented": bool(report.not_implemented)}
        try:
            with open(os.path.join(args.dir, STATUS_FILE), "w") as f:
                json.dump(seen, f, indent=1)
        except OSError:
            pass
    return 0 if report.passed else 1


def cmd_grade(args: argparse.Namespace) -> int:
    """Each student's results are written as soon as they are graded (grades.csv rewritten, or
    their results.json), so a student who hangs or crashes, or Ctrl-C, loses no one else's."""
    from . import instructor

    who = instructor.students(args.submissions)
    if args.format == "gradescope" and args.results and len(who) > 1:
        raise ValueError(f"--results names one results.json, and {args.submissions} holds {len(who)} "
                         "students: drop --results to write each one's SUBMISSIONS/<student>/results.json")
    csv_path = args.csv or os.path.join(args.submissions, "grades.csv")
    written: list[str] = []

    def done(student: str, grades: dict) -> None:
        if args.format == "gradescope":  # one results.json per student
            path = args.results if len(who) == 1 and args.results else os.path.join(
                args.submissions, *([student] if len(who) > 1 else []), "results.json")
            with open(path, "w") as f:
                json.dump(instructor.results_json(list(grades[student].values())), f, indent=2)
            written.append(path)
        elif args.format == "table":
            instructor.write_csv(grades, csv_path)
            written[:] = [csv_path]

    try:
        grades = instructor.grade_folder(args.submissions, args.tasks, _limits(args), done=done)
    except KeyboardInterrupt:
        graded = len(written) if args.format == "gradescope" else None
        where = (f"the results of the {graded} students graded are in {', '.join(written)}"
                 if args.format == "gradescope" and written else
                 f"the grades so far are in {csv_path}" if written else
                 "nothing was written (--format json prints only at the end)" if args.format == "json"
                 else "no student was graded yet: nothing written")
        print(f"\ninterrupted: {where}", file=sys.stderr)
        return 130
    if args.format == "json":
        print(json.dumps(instructor.to_json(grades), indent=2))
        return 0
    print(instructor.table(grades))
    if args.format == "gradescope":
        for path in written:
            print(f"wrote {path}")
        return 0
    print(f"\nwrote {csv_path}")
    return 0


def cmd_autograder(args: argparse.Namespace) -> int:
    from .autograder import autograder_zip

    names = autograder_zip(args.tasks, args.out)
    print(f"wrote {args.out} ({', '.join(names)}): upload it as the assignment's autograder")
    return 0


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(timeout=args.timeout, memory_mb=args.memory)


def _argument(parse: Any) -> Any:
    """An argparse type from a parser that raises ValueError with the message to show."""
    def checked(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    checked.__name__ = parse.__name__
    return checked


def add_limits(q: argparse.ArgumentParser) -> None:
    """--timeout and --memory: the limits of the child process each file is graded in."""
    q.add_argument("--timeout", type=_argument(parse_timeout), default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"stop a file's grading after this long: 0 points (default {DEFAULT_TIMEOUT:g})")
    q.add_argument("--memory", type=_argument(parse_memory), default=DEFAULT_MEMORY_MB, metavar="SIZE",
                   help=f"the memory grading a student's files may allocate, in MiB (2048) or with a unit "
                        f"(512M, 2G): over it, 0 points (default {DEFAULT_MEMORY_MB // 1024}G)")


def add_commands(subparsers: Any) -> None:
    """Add the `exercise` command to the `minigrad` command's subparsers (minigrad/cli.py)."""
    p = subparsers.add_parser("exercise", help="exercises: write the kernels yourself and have them graded")
    tasks = p.add_subparsers(dest="action", required=True)
    names = ", ".join(TASKS)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--dir", default=DEFAULT_DIR, help=f"your files' folder (default ./{DEFAULT_DIR})")

    q = tasks.add_parser("list", help="the tasks in order, with their status")
    common(q)
    q.add_argument("--codes", action="store_true",
                   help="print the diagnoses catalogue instead: every code the grader names, with its hint")
    q.set_defaults(run=cmd_list)
    q = tasks.add_parser("start", help="write a task's stub (never overwrites)")
    q.add_argument("task", help=f"one of: {names}")
    common(q)
    q.set_defaults(run=cmd_start)
    q = tasks.add_parser("check", help="grade your file for a task")
    q.add_argument("task", help=f"one of: {names}")
    common(q)
    q.add_argument("--file", help="grade this file instead of DIR/TASK.py")
    q.add_argument("--json", action="store_true", help="print the result as JSON (= --format json)")
    q.add_argument("--format", choices=["text", "json", "gradescope"], default="text",
                   help="text (default), json, or gradescope (its results.json)")
    q.add_argument("--train", action="store_true",
                   help="then train the tiny GPT with your op and compare the loss curves")
    add_limits(q)
    q.set_defaults(run=cmd_check)
    q = tasks.add_parser("grade", help="instructors: grade a folder of submissions (table, CSV, points)")
    q.add_argument("submissions", help="<task>.py files of one student, or one subfolder per student")
    q.add_argument("--tasks", nargs="+", help="grade only these tasks (default: every task with a file)")
    q.add_argument("--csv", help="where the CSV goes (default SUBMISSIONS/grades.csv)")
    q.add_argument("--format", choices=["table", "json", "gradescope"], default="table",
                   help="table and CSV (default), json, or gradescope (results.json per student)")
    q.add_argument("--results", help="--format gradescope, one student: results.json's path")
    add_limits(q)
    q.set_defaults(run=cmd_grade)
    q = tasks.add_parser("autograder", help="instructors: build Gradescope's autograder zip for tasks")
    q.add_argument("tasks", nargs="+", help=f"of: {names}")
    q.add_argument("--out", default="autograder.zip",
                   help="the zip (default autograder.zip): minigrad's wheel, setup.sh, run_autograder")
    q.set_defaults(run=cmd_autograder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minigrad")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"minigrad: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
