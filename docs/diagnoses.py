"""Write docs/diagnoses.md: every mistake the exercise grader names, by task.

    python docs/diagnoses.py            # rewrite docs/diagnoses.md
    python docs/diagnoses.py --check    # exit 1 if it is stale

The text comes from the catalogue (minigrad.exercises.diagnoses), which `minigrad exercise list
--codes` prints too: one section per task in the course's order, each code with its title and
hint. A code that several tasks give appears under each of them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "diagnoses.md"


def generate() -> str:
    from minigrad.exercises import TASKS
    from minigrad.exercises.diagnoses import CATALOGUE, GRADIENT_TASKS

    def entry(code: str) -> str:
        d = CATALOGUE[code]
        return f"- **`{code}`**: {d.title}. {d.hint}"

    shared = sorted(c for c, d in CATALOGUE.items() if set(GRADIENT_TASKS) <= set(d.tasks))
    lines = ["# The grader's diagnoses", "",
             "Written by `python docs/diagnoses.py` from the catalogue in "
             "`minigrad/exercises/diagnoses*.py`; `minigrad exercise list --codes` prints the same. When a "
             "check fails, the grader compares your numbers with what each known mistake would "
             "give and names every one that fits, with its hint: the symptom and the line of the "
             "math to look at.", "",
             "## Every task with a gradient check", "",
             "(" + ", ".join(f"`{t}`" for t in GRADIENT_TASKS) + ")", ""]
    lines += [entry(c) for c in shared] + [""]
    for task in TASKS.values():
        codes = sorted(c for c, d in CATALOGUE.items() if task.name in d.tasks and c not in shared)
        lines += [f"## {task.number}. `{task.name}`", "", task.title[:1].upper() + task.title[1:] + ".", ""]
        lines += [entry(c) for c in codes] + [""]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 if docs/diagnoses.md is stale")
    text = generate()
    if p.parse_args().check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.name} is stale: run python docs/diagnoses.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
