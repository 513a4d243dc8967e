"""A file's verdict comes from replaying the checks on what its run recorded; a notebook's
objects are graded live, their code running inside the checks (here with the file known, as
`grade` knows it, so an error names the same line). Both must give the same report
for the same code: every task's correct file and stub, and every wrong file of the diagnosis
tables, graded both ways, check by check (name, pass, message, diagnosis)."""

import importlib.util
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_diagnoses_layers import WRONG as WRONG_LAYERS
from test_diagnoses_softmax import WRONG as WRONG_SOFTMAX
from test_exercise_diagnoses import WRONG
from wrongfile import student_file

from minigrad.exercises import TASKS, grade
from minigrad.exercises.grader import _run, record
from minigrad.exercises.transcript import Transcript, transcript

CORRECT = Path(__file__).parent / "correct"


def live(task: str, path: str):
    """The report of the file's objects given as a notebook gives them (its code runs live)."""
    spec = importlib.util.spec_from_file_location(f"live_{task}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses and pickling look a module up by name)
    try:
        spec.loader.exec_module(module)
    except NotImplementedError:
        return None
    finally:
        sys.modules.pop(spec.name, None)
    objects = SimpleNamespace(**{n: getattr(module, n) for n in TASKS[task].defines})
    with transcript(Transcript("live", path)):  # (the file known: an error names its line)
        return _run(TASKS[task], path, objects, None, False)


def checks_of(report) -> list[tuple]:
    """Each check's outcome, the times it states left out (two runs take their own time)."""
    return [(c.name, c.passed, re.sub(r"[\d.]+ s\b", "_ s", c.message), c.diagnosis) for c in report.checks]


def assert_same(task: str, path: str) -> None:
    replayed, by_hand = grade(task, path), live(task, path)
    if by_hand is None:  # the stub stops at import: no objects to give
        assert replayed.not_implemented
        return
    assert checks_of(replayed) == checks_of(by_hand), replayed.text() + "\n---\n" + by_hand.text()
    assert replayed.not_implemented == by_hand.not_implemented
    assert replayed.diagnosis == by_hand.diagnosis


@pytest.mark.parametrize("task", list(TASKS))
def test_correct_files_and_stubs(tmp_path, task):
    assert_same(task, str(CORRECT / f"{task}.py"))
    stub = tmp_path / f"{task}.py"
    stub.write_text(TASKS[task].stub())
    assert_same(task, str(stub))


ROWS = WRONG + WRONG_SOFTMAX + WRONG_LAYERS


@pytest.mark.parametrize("row", range(len(ROWS)), ids=[f"{r[0]}-{r[1]}-{i}" for i, r in enumerate(ROWS)])
def test_wrong_files(tmp_path, row):
    task, _, body = ROWS[row][:3]
    assert_same(task, student_file(tmp_path, task, body))


def test_the_record_is_only_data(tmp_path):
    """What the student's process records for the correct files: values that are arrays,
    numbers, strings, None and containers of them (transcript.encode refuses anything else)."""
    for task in TASKS:
        recorded = record(task, str(CORRECT / f"{task}.py"))
        assert recorded.entries and all(e["kind"] == "value" for e in recorded.entries), task
        assert all(a.dtype.kind in "biufc" for a in recorded.arrays)
