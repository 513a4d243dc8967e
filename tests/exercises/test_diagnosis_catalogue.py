"""The diagnoses catalogue is complete and true: every code a check can give is listed with a
title, its tasks and a hint; every listed code has a wrong file that gets it (the WRONG tables of
test_exercise_diagnoses.py and the test_diagnoses_*.py files beside it), for a task the entry
names; `minigrad exercise list --codes` prints it all."""

import importlib
import re
from pathlib import Path

from minigrad.cli import main
from minigrad.exercises import TASKS
from minigrad.exercises.diagnoses import CATALOGUE, GRADIENT_TASKS, HINTS, most_precise

HERE = Path(__file__).parent
SOURCE = Path(importlib.import_module("minigrad.exercises").__file__).parent


def wrong_files() -> list[tuple[str, str, object]]:
    out = list(importlib.import_module("test_exercise_diagnoses").WRONG)
    for path in sorted(HERE.glob("test_diagnoses_*.py")):
        out += importlib.import_module(path.stem).WRONG
    return out


def test_every_code_has_a_wrong_file_for_a_task_it_names():
    tested: dict[str, set[str]] = {}
    for task, code, _ in wrong_files():
        assert code in CATALOGUE, f"{code} is tested but not in the catalogue"
        assert task in CATALOGUE[code].tasks, f"{code} is given by {task}, which its entry does not list"
        tested.setdefault(code, set()).add(task)
    assert set(tested) == set(CATALOGUE), set(CATALOGUE) - set(tested)


def test_every_code_the_grader_can_give_is_catalogued():
    named = set()
    for path in SOURCE.glob("task_*.py"):
        text = path.read_text()
        named |= set(re.findall(r'diagnosis=\["(\w+)"\]', text))
        named |= set(re.findall(r'Mistake\("(\w+)"', text))
        named |= set(re.findall(r'codes? = \["(\w+)"\]', text))
    named |= set(re.findall(r'Mistake\("(\w+)"', (SOURCE / "diagnose.py").read_text()))
    assert named and named <= set(CATALOGUE), named - set(CATALOGUE)


def test_entries_are_whole():
    for code, d in CATALOGUE.items():
        assert d.code == code and re.fullmatch(r"[a-z0-9_]+", code)
        assert d.title and not d.title.endswith(".") and len(d.title) <= 80, code
        assert d.tasks and set(d.tasks) <= set(TASKS), (code, d.tasks)
        assert len(d.hint) > 80 and d.hint.endswith((".", ")")), code
        assert set(d.covers) <= set(CATALOGUE) - {code}, code
    assert set(GRADIENT_TASKS) <= set(TASKS)
    assert HINTS == {c: d.hint for c, d in CATALOGUE.items()}


def test_a_more_precise_code_hides_the_general_one_it_covers():
    assert most_precise(["not_unbroadcast", "dw_not_summed_over_batch", "not_unbroadcast"]) == [
        "dw_not_summed_over_batch"]
    assert most_precise(["sign_error", "not_unbroadcast"]) == ["sign_error", "not_unbroadcast"]


def test_list_codes_prints_the_catalogue(capsys):
    assert main(["exercise", "list", "--codes"]) == 0
    out = capsys.readouterr().out
    for code, d in CATALOGUE.items():
        assert f"{code}: {d.title}" in out
        assert " ".join(d.hint.split()[:6]) in " ".join(out.split())


def test_docs_diagnoses_md_is_what_the_script_writes():
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("docs_diagnoses", root / "docs" / "diagnoses.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = script.generate()
    assert (root / "docs" / "diagnoses.md").read_text() == text, "run python docs/diagnoses.py"
    for code in CATALOGUE:
        assert f"**`{code}`**" in text
