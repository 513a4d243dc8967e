"""Every mention of an exercise by number names it too, and the number is the catalogue's: a
task moved in the course order (as backprop_engine became exercise 3) cannot leave a stub or
a tutorial pointing at the wrong one."""

import re
from pathlib import Path

from minigrad.exercises.catalogue import ORDER

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*(ROOT / "exercises").rglob("*.py"), *(ROOT / "tutorials").glob("*.py"),
                ROOT / "tutorials" / "README.md", ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
HEADER = re.compile(r"Exercise (\d+) · (\w+)")
MENTION = re.compile(r"\b[Ee]xercises? (\d+(?:(?:, | and | to )\d+)*)(\s*\(([^()]*)\))?")


def _numbers(text: str) -> list[int]:
    """'9 to 11' -> [9, 10, 11]; '9 and 10' -> [9, 10]."""
    out: list[int] = []
    for part in re.split(r", | and ", text):
        low, _, high = part.partition(" to ")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def test_exercise_numbers_name_the_catalogues_tasks():
    wrong = []
    for path in FILES:
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8").replace("#", " "))
        where = path.relative_to(ROOT)
        for number, name in HEADER.findall(text):
            if ORDER[int(number) - 1] != name:
                wrong.append(f"{where}: 'Exercise {number} · {name}', the catalogue's {number} is "
                             f"{ORDER[int(number) - 1]}")
        for m in MENTION.finditer(HEADER.sub("", text)):
            numbers, names = _numbers(m.group(1)), re.findall(r"`(\w+)`", m.group(3) or "")
            expected = [ORDER[n - 1] if 0 < n <= len(ORDER) else f"<no exercise {n}>" for n in numbers]
            if names[:len(expected)] != expected:
                wrong.append(f"{where}: '{m.group(0)}' should name {expected}")
    assert not wrong, "\n".join(wrong)
