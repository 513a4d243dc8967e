"""Grading a class: a folder of N honest students (each with every task's reference solution,
tests/exercises/correct/), graded with each student's files in a child process of their own
(the default of `minigrad exercise grade`) and in this process (limits=None), taking turns.

    python benchmarks/grading.py              # 50 students, 3 rounds
    python benchmarks/grading.py --students 20 --rounds 5
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from minigrad.exercises import instructor

CORRECT = Path(__file__).resolve().parents[1] / "tests" / "exercises" / "correct"


def class_folder(root: Path, students: int) -> Path:
    for i in range(students):
        shutil.copytree(CORRECT, root / f"s{i:03d}")
    return root


def timed(folder: Path, limits) -> tuple[float, int]:
    t = time.perf_counter()
    grades = instructor.grade_folder(str(folder), limits=limits)
    full = sum(all(s.passed for s in by_task.values()) for by_task in grades.values())
    return time.perf_counter() - t, full


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = class_folder(Path(tmp), args.students)
        times: dict[str, list[float]] = {"isolated": [], "in-process": []}
        for _ in range(args.rounds):
            for name, limits in (("isolated", instructor.DEFAULT_LIMITS), ("in-process", None)):
                seconds, full = timed(folder, limits)
                assert full == args.students, f"{name}: {full} of {args.students} students got full marks"
                times[name].append(seconds)
    best = {k: min(v) for k, v in times.items()}
    files = args.students * len(list(CORRECT.glob("*.py")))
    for name, seconds in best.items():
        print(f"{name:10s} {seconds:6.1f} s  ({1e3 * seconds / files:.1f} ms a file, best of {args.rounds})")
    print(f"isolated / in-process: {best['isolated'] / best['in-process']:.2f}x")


if __name__ == "__main__":
    main()
