"""The verdict is decided in the grading process, never in the student's: a file whose backward
is wrong (`return g`) and that, in its own process, patches numpy's comparisons, the grader's
result classes or its diagnosis helpers, or imports the references, earns exactly what the same
wrong backward earns without the tricks, through `check`, `grade` and Gradescope's
run_autograder; the transcript the student's process writes is data (numbers and bytes, read
without pickle or eval), and a forged one earns only what its numbers are worth."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from minigrad.cli import main
from minigrad.exercises import TASKS, grade
from minigrad.exercises.autograder import run_autograder_script
from minigrad.exercises.grader import read_submission, record, replay
from minigrad.exercises.transcript import MAGIC, Fail, Transcript, run_student, transcript

TASK = "softmax_backward"
WRONG = "return g"

# The tricks run at import, in the student's process. The grader's package is reached through
# importlib (an `import minigrad.exercises...` line is refused from the file's text alone).
GRADER = 'importlib.import_module("minigrad.exercises." + "{}")'
TRICKS = {
    "numpy_comparisons": "import numpy\nnumpy.allclose = lambda *a, **k: True\n"
                         "numpy.array_equal = lambda *a, **k: True\n"
                         "numpy.isclose = lambda a, b, **k: a == a\n",
    "result_classes": "import importlib\n"
                      f"grader = {GRADER.format('grader')}\n"
                      "grader.Report.passed = property(lambda self: True)\n"
                      "_init = grader.CheckResult.__init__\n"
                      "def _passed(self, name, passed, *a, **k):\n"
                      "    _init(self, name, True)\n"
                      "grader.CheckResult.__init__ = _passed\n",
    "comparison_helpers": "import importlib, sys\n"
                          "for name, m in list(sys.modules.items()):\n"
                          "    if name.startswith('minigrad.exercises') and hasattr(m, 'close'):\n"
                          "        m.close = lambda *a, **k: True\n"
                          f"gradients = {GRADER.format('gradients')}\n"
                          "gradients.compare = lambda *a, **k: None\n"
                          "gradients._changed_by_backward = lambda *a: None\n",
    "references_imported": "import importlib\n"
                           "try:\n"
                           f"    ref = {GRADER.format('references')}\n"
                           "except ImportError:\n"
                           "    ref = None\n",
}


def student(tricks: str, body: str = WRONG) -> str:
    return tricks + TASKS[TASK].stub().replace("raise NotImplementedError", body)


def scores(capsys, folder) -> dict:
    assert main(["exercise", "grade", str(folder), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def honest_wrong(tmp_path_factory):
    """The report and the checks a plain `return g` passes, graded in-process."""
    path = tmp_path_factory.mktemp("plain") / f"{TASK}.py"
    path.write_text(student(""))
    report = grade(TASK, str(path))
    assert not report.passed
    return report


@pytest.mark.parametrize("kind", list(TRICKS))
def test_tricks_in_the_students_process_earn_nothing(capsys, tmp_path, honest_wrong, kind):
    passed = [c.name for c in honest_wrong.checks if c.passed]
    (tmp_path / "trick").mkdir()
    (tmp_path / "plain").mkdir()
    (tmp_path / "trick" / f"{TASK}.py").write_text(student(TRICKS[kind]))
    (tmp_path / "plain" / f"{TASK}.py").write_text(student(""))
    code = main(["exercise", "check", TASK, "--file", str(tmp_path / "trick" / f"{TASK}.py"), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["passed"] is False
    assert [c["name"] for c in result["checks"] if c["passed"]] == passed
    grades = scores(capsys, tmp_path)
    trick, plain = grades["trick"][TASK], grades["plain"][TASK]
    assert trick["score"] == plain["score"] < plain["max_score"]
    assert not trick["passed"]


def test_the_references_cannot_be_imported_in_the_students_process(capsys, tmp_path):
    """In the child, importing minigrad.exercises.references fails: a file that needs them gets
    0 for the import; from the file's text alone, an import line gets 0 with its line."""
    path = tmp_path / f"{TASK}.py"
    path.write_text("import importlib\n" f"ref = {GRADER.format('references')}\n" + student("", "return g"))
    code = main(["exercise", "check", TASK, "--file", str(path), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["checks"][0]["name"] == "imports"
    assert "Error: import of minigrad.exercises.references halted" in result["checks"][0]["message"]
    path.write_text("from minigrad.exercises.references import softmax  # noqa: F401\n" + student(""))
    code = main(["exercise", "check", TASK, "--file", str(path)])
    out = capsys.readouterr().out
    assert code == 1 and "line 1 imports from minigrad.exercises.references, the grader's own package" in out


@pytest.mark.parametrize("kind", list(TRICKS))
def test_run_autograder_decides_outside_the_students_process(tmp_path, kind):
    """Gradescope's run_autograder, its paths moved to a temporary folder: the tricks score what
    the wrong backward alone scores (not the full marks they aim for)."""
    scored = {}
    for who, tricks in (("trick", TRICKS[kind]), ("plain", "")):
        root = tmp_path / who
        (root / "submission").mkdir(parents=True)
        (root / "submission" / f"{TASK}.py").write_text(student(tricks))
        script = root / "run_autograder"
        script.write_text(run_autograder_script([TASK]))
        env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
        done = subprocess.run(["bash", str(script)], cwd=root, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        scored[who] = json.loads((root / "results" / "results.json").read_text())
    assert scored["trick"]["score"] == scored["plain"]["score"]
    assert [t["score"] for t in scored["trick"]["tests"]] == [t["score"] for t in scored["plain"]["tests"]]


# ----------------------------------------------------------------------------- the transcript


def test_a_forged_transcript_is_judged_against_the_reference(tmp_path, honest_wrong):
    """The student's process controls its transcript: rewriting every value it recorded (a
    forged "right" gradient of zeros, numbers for arrays, text) passes nothing the wrong
    backward does not; failures it records count."""
    path = tmp_path / f"{TASK}.py"
    path.write_text(student(""))
    recorded = record(TASK, str(path))
    passed = {c.name for c in honest_wrong.checks if c.passed}
    for forge in (lambda a: np.zeros_like(a), lambda a: np.ones((2, 2)), lambda a: np.full(a.shape, np.nan)):
        forged = Transcript("record", str(path), recorded.entries, [forge(a) for a in recorded.arrays])
        report = replay(TASK, str(path), forged)
        assert not report.passed and {c.name for c in report.checks if c.passed} <= passed
    garbage = [{"at": e["at"], "label": e["label"], "kind": "value", "value": "text"}
               for e in recorded.entries]
    report = replay(TASK, str(path), Transcript("record", str(path), garbage, []))
    assert not report.passed


def test_a_transcript_file_round_trips_and_is_only_data(tmp_path):
    """save / load keep every value exactly (arrays, scalars, tuples, dicts, nan); a file that
    is not a transcript, names an object dtype, or points past its end is refused."""
    t = Transcript("record", "x.py")
    values = [np.arange(6.0).reshape(2, 3), np.float32(1.5), (1, "two", None), {"a": [np.nan, True]},
              np.zeros((0, 3), np.int64), np.array([True, False])]
    with transcript(t):
        got = [run_student("step", lambda v=v: v) for v in values]
    saved = tmp_path / "t.transcript"
    t.save(str(saved))
    back = Transcript.load(str(saved), "x.py")
    with transcript(back):
        again = [run_student("step", lambda: pytest.fail("replay runs no code")) for _ in values]
    for a, b, v in zip(got, again, values):
        assert type(a) is type(b) is type(v)
    assert np.array_equal(again[0], values[0]) and again[1] == np.float32(1.5)
    assert again[2] == (1, "two", None) and np.isnan(again[3]["a"][0]) and again[3]["a"][1] is True
    assert again[4].shape == (0, 3) and again[5].dtype == bool
    data = saved.read_bytes()
    size = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    head = json.loads(data[len(MAGIC) + 8:len(MAGIC) + 8 + size])

    def with_head(change) -> bytes:
        new = json.loads(json.dumps(head))
        change(new)
        text = json.dumps(new).encode()
        return MAGIC + len(text).to_bytes(8, "little") + text + data[len(MAGIC) + 8 + size:]

    damaged = {"text": b"not a transcript",
               "object dtype": with_head(lambda h: h["arrays"][0].__setitem__(0, "|O8")),
               "past the end": with_head(lambda h: h["arrays"][0].__setitem__(2, 10**9)),
               "negative shape": with_head(lambda h: h["arrays"][0].__setitem__(1, [-1]))}
    for what, content in damaged.items():
        (tmp_path / what).write_bytes(content)
        with pytest.raises(ValueError, match="not a transcript"):
            Transcript.load(str(tmp_path / what), "x.py")
    with transcript(Transcript("live")), pytest.raises(Fail):
        run_student("step", lambda: object())  # not plain data: the step fails, naming the type


def test_a_step_the_students_process_did_not_record_fails(tmp_path):
    """A transcript that ends early (or ran the checks differently) fails the steps it lacks."""
    path = tmp_path / f"{TASK}.py"
    path.write_text(student("", "return a * (g - (g * a).sum(axis=-1, keepdims=True))"))
    recorded = record(TASK, str(path))
    assert replay(TASK, str(path), recorded).passed
    cut = Transcript("record", str(path), recorded.entries[: len(recorded.entries) // 2], recorded.arrays)
    report = replay(TASK, str(path), cut)
    assert not report.passed
    assert any("gave no result for this step" in c.message for c in report.checks)


def test_the_files_text_is_read_before_it_runs(tmp_path):
    """read_submission decides from the text alone: what it refuses never runs (a file that
    would write a marker at import leaves none)."""
    marker = tmp_path / "ran"
    path = tmp_path / f"{TASK}.py"
    path.write_text(f"open({str(marker)!r}, 'w').write('x')\n"
                    "from minigrad.ops.reduce import Softmax  # noqa: F401\n")
    report = read_submission(TASKS[TASK], str(path))
    assert report is not None and not report.passed and "imports minigrad's own Softmax" in report.text()
    assert main(["exercise", "check", TASK, "--file", str(path)]) == 1
    assert not marker.exists()
