"""Grading a class: a folder of N honest students (each with every task's reference solution,
tests/exercises/correct/), graded with each student's files in a child process of their own
(the default of `minigrad exercise grade`: JOBS students side by side, and one at a time), and
in this process (limits=None), taking turns; with --against, also by another install's
grader in its own process (e.g. an older release, in-process as it was).

    python benchmarks/grading.py              # 50 students, 3 rounds
    python benchmarks/grading.py --students 20 --rounds 5
    python benchmarks/grading.py --against /path/to/other/venv/bin/python
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from minigrad.exercises import instructor

CORRECT = Path(__file__).resolve().parents[1] / "tests" / "exercises" / "correct"


def class_folder(root: Path, students: int) -> Path:
    for i in range(students):
        shutil.copytree(CORRECT, root / f"s{i:03d}")
    return root


def timed(folder: Path, limits, jobs: int = instructor.JOBS) -> tuple[float, int]:
    t = time.perf_counter()
    grades = instructor.grade_folder(str(folder), limits=limits, jobs=jobs)
    full = sum(all(s.passed for s in by_task.values()) for by_task in grades.values())
    return time.perf_counter() - t, full


# Run by --against's interpreter: that install's grade_folder, in its own process, timed there.
AGAINST = """import sys, time
from minigrad.exercises import instructor
t = time.perf_counter()
grades = instructor.grade_folder(sys.argv[1])
full = sum(all(s.passed for s in by_task.values()) for by_task in grades.values())
print(time.perf_counter() - t, full)
"""


def timed_against(python: str, folder: Path) -> tuple[float, int]:
    out = subprocess.run([python, "-c", AGAINST, str(folder)], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    seconds, full = out.stdout.split()[-2:]
    return float(seconds), int(full)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--against", metavar="PYTHON", help="also time this interpreter's minigrad grader")
    args = p.parse_args()
    ways = {f"isolated, {instructor.JOBS} at a time": lambda f: timed(f, instructor.DEFAULT_LIMITS),
            "isolated, 1 at a time": lambda f: timed(f, instructor.DEFAULT_LIMITS, jobs=1),
            "in-process": lambda f: timed(f, None)}
    if args.against:
        ways["--against"] = lambda f: timed_against(args.against, f)
    with tempfile.TemporaryDirectory() as tmp:
        folder = class_folder(Path(tmp), args.students)
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, way in ways.items():
                seconds, full = way(folder)
                assert full == args.students, f"{name}: {full} of {args.students} students got full marks"
                times[name].append(seconds)
    best = {k: min(v) for k, v in times.items()}
    files = args.students * len(list(CORRECT.glob("*.py")))
    first = next(iter(best))
    for name, seconds in best.items():
        print(f"{name:24s} {seconds:6.1f} s  ({1e3 * seconds / files:.1f} ms a file, best of {args.rounds}; "
              f"{seconds / best[first]:.2f}x the time of the first)")


if __name__ == "__main__":
    main()
