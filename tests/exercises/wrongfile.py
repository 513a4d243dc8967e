"""Wrong (and right) student files for the grader's tests: a task's stub with its
`raise NotImplementedError` lines replaced by bodies, and what a report failed."""

from pathlib import Path

import pytest

from minigrad.exercises import TASKS
from minigrad.exercises.diagnoses import HINTS


def student_file(tmp_path: Path, task: str, body: str | list[str]) -> str:
    """The task's stub with its i-th `raise NotImplementedError` replaced by body[i] (a single
    string fills the last one: the stubs of one function keep the forward given)."""
    lines = TASKS[task].stub().splitlines()
    sites = [i for i, x in enumerate(lines) if x.strip() == "raise NotImplementedError"]
    bodies = body if isinstance(body, list) else [body]
    for i, text in zip(sites[len(sites) - len(bodies):], bodies):
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = "\n".join(indent + x if x else x for x in text.strip("\n").splitlines())
    path = tmp_path / f"{task}.py"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def failed(report) -> list[str]:
    """The names of the checks a report failed, in order."""
    return [c.name for c in report.checks if not c.passed]


def wrong_cases(rows: list[tuple]) -> list:
    """A WRONG table's rows (task, code, body) as pytest parameters, each with a readable id."""
    return [pytest.param(*row, id=f"{row[0]}-{row[1]}-{i}") for i, row in enumerate(rows)]


def assert_names_exactly(report, code: str) -> None:
    """The report fails (not merely unfinished), names `code` and no other, and prints its hint."""
    assert not report.passed and not report.not_implemented
    assert report.diagnosis == [code], report.text()
    text = report.text()
    assert f"diagnosis: {code}" in text and HINTS[code].split()[0] in text


def edited_file(tmp_path: Path, task: str, body: object, edits: list[tuple[str, str]]) -> str:
    """The student file of `body`, with `edits` (old, new) applied to the code the stub gives."""
    path = Path(student_file(tmp_path, task, body))
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)
    return str(path)


def assert_fails_exactly(report, fails: tuple, codes: list[str] | None) -> None:
    """The report failed exactly the checks named (by prefix, in order), and no others; with
    `codes`, its diagnosis is exactly those codes."""
    assert not report.not_implemented
    got = failed(report)
    assert len(got) == len(fails) and all(n.startswith(f) for n, f in zip(got, fails)), report.text()
    assert report.passed == (not fails)
    if codes is not None:
        assert report.diagnosis == codes, report.text()
