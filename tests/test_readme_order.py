"""The README leads with what a student and an instructor do (the commands, a first look, the
exercises, the drawings, the models) and keeps the speed figures and the code layout for last."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOR_STUDENTS = ["Two commands", "Installing", "A first look", "A transformer block", "Exercises",
                "Seeing inside", "Models"]
FOR_LATER = ["Performance", "Layout"]


def test_student_sections_come_before_the_figures():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        headings = re.findall(r"(?m)^## (.+)$", f.read())
    assert set(FOR_STUDENTS + FOR_LATER) <= set(headings), headings
    last_student = max(headings.index(h) for h in FOR_STUDENTS)
    first_later = min(headings.index(h) for h in FOR_LATER)
    assert last_student < first_later, f"README sections out of order: {headings}"
    assert [h for h in headings if h in FOR_STUDENTS] == FOR_STUDENTS, headings
