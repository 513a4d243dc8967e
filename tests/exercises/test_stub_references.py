"""Every mention of an exercise by number names it too, and the number is the catalogue's: a
task moved in the course order (as backprop_engine became exercise 3) cannot leave a stub, a
task, a tutorial, the grader's solutions or the docs pointing at the wrong one. A reference
counted from where the text stands ("the previous exercise") hides a number the same way, so
it is refused. CHANGELOG.md is left out: it records the numbers of its time."""

import re
from pathlib import Path

from minigrad.exercises.catalogue import ORDER

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted({*(ROOT / "minigrad" / "exercises").rglob("*.py"),
                 *(ROOT / "tests" / "exercises").rglob("*.py"),
                 *(ROOT / "tutorials").glob("*.py"), ROOT / "tutorials" / "README.md", ROOT / "README.md",
                 ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*.py")}
               - {Path(__file__).resolve()})  # (this file's own examples are not references)
HEADER = re.compile(r"Exercise (\d+)(?: ·|,) (\w+)")  # a file's first line: "Exercise 3 · backprop_engine:"
RANGE = r"\d+(?:\s*(?:-|–| to )\s*\d+)?"
MENTION = re.compile(rf"\b[Ee]xercises? (?:#|no\. ?)?({RANGE}(?:(?:, |,? and ){RANGE})*)(\s*\(([^()]*)\))?")
RELATIVE = re.compile(r"\b(?:previous|next|last|preceding|following|earlier|later) (?:exercise|task)\b"
                      r"|\b(?:exercise|task) (?:before|after) (?:this|that)\b", re.IGNORECASE)


def _numbers(text: str) -> list[int]:
    """'9 to 11' and '9-11' -> [9, 10, 11]; '9 and 10' -> [9, 10]."""
    out: list[int] = []
    for part in re.split(r",? and |, ", text):
        low, high = (re.split(r"\s*(?:-|–| to )\s*", part) + [""])[:2]
        out.extend(range(int(low), int(high or low) + 1))
    return out


def test_the_patterns_read_every_form_of_reference():
    assert _numbers("9 to 11") == _numbers("9-11") == _numbers("9 – 11") == [9, 10, 11]
    assert _numbers("9, 10 and 11") == _numbers("9, 10, and 11") == [9, 10, 11]
    m = MENTION.search("see exercises 9-10 (`attention_forward`, `attention_backward`)")
    assert _numbers(m.group(1)) == [9, 10] and "attention_backward" in m.group(3)
    assert MENTION.search("as in exercise #4").group(1) == "4"
    assert HEADER.findall("Exercise 15, conv2d_backward: its reference") == [("15", "conv2d_backward")]
    assert RELATIVE.search("your answer to the previous exercise")
    assert not RELATIVE.search("the exercises, in the course order")


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
        for m in RELATIVE.finditer(text):
            wrong.append(f"{where}: '{m.group(0)}' counts from where the text stands; write the "
                         "exercise's number and name, e.g. 'exercise 5 (`softmax_backward`)'")
    assert not wrong, "\n".join(wrong)
