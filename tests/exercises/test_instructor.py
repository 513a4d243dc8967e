"""The instructor's side: `exercise grade` on a folder of students (table, CSV, points, a crash
never stops the run), partial credit with a task's weights, Gradescope's results.json field by
field, and the autograder zip whose run_autograder grades a Gradescope-like folder."""

import csv
import dataclasses
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from minigrad.cli import main
from minigrad.exercises import TASKS
from minigrad.exercises.instructor import check_names, grade_file

CORRECT = Path(__file__).parent / "correct"
TWO = ["softmax_backward", "cross_entropy"]
WRONG_SOFTMAX = TASKS["softmax_backward"].stub().replace("raise NotImplementedError", "return g * a")
CRASH = 'raise RuntimeError("boom")\n'


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["exercise", *argv])
    return code, capsys.readouterr().out


@pytest.fixture
def submissions(tmp_path):
    """alice: the correct files of two tasks; bob: a wrong softmax and a crashing cross-entropy."""
    root = tmp_path / "submissions"
    (root / "alice").mkdir(parents=True)
    (root / "bob").mkdir()
    for task in TWO:
        shutil.copy(CORRECT / f"{task}.py", root / "alice")
    (root / "bob" / "softmax_backward.py").write_text(WRONG_SOFTMAX)
    (root / "bob" / "cross_entropy.py").write_text(CRASH)
    return root


def test_grade_a_folder_prints_the_table_and_writes_the_csv(capsys, submissions):
    n_soft, n_ce = (len(check_names(TASKS[t])) for t in TWO)
    code, out = run(capsys, "grade", str(submissions))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["student", *TWO, "score"]
    total = n_soft + n_ce
    assert lines[1].split() == ["alice", "pass", f"{n_soft}/{n_soft}", "pass", f"{n_ce}/{n_ce}",
                                f"{total}/{total}"]
    # bob's softmax passes the two forward checks and fails every gradient check
    assert lines[2].split() == ["bob", "fail", "(missing_rowsum_term)", f"2/{n_soft}",
                                "fail", "(import_error)", f"0/{n_ce}", f"2/{total}"]
    assert "bob/cross_entropy.py: RuntimeError: boom (cross_entropy.py, line 1" in out
    assert f"wrote {submissions / 'grades.csv'}" in out
    with open(submissions / "grades.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["student", "task", "passed", "score", "max_score", "codes"],
                    ["alice", "softmax_backward", "True", str(n_soft), str(n_soft), ""],
                    ["alice", "cross_entropy", "True", str(n_ce), str(n_ce), ""],
                    ["bob", "softmax_backward", "False", "2", str(n_soft), "missing_rowsum_term"],
                    ["bob", "cross_entropy", "False", "0", str(n_ce), "import_error"]]


def test_one_students_files_directly_in_the_folder_and_only_some_tasks(capsys, submissions, tmp_path):
    alice = submissions / "alice"
    code, out = run(capsys, "grade", str(alice), "--tasks", "cross_entropy", "attention_forward",
                    "--csv", str(tmp_path / "g.csv"))
    header = out.splitlines()[0].split()
    assert code == 0 and header == ["student", "cross_entropy", "attention_forward", "score"]
    with open(tmp_path / "g.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["student"], r["task"], r["passed"]) for r in rows] == [
        ("alice", "cross_entropy", "True"), ("alice", "attention_forward", "False")]
    assert rows[1]["score"] == "0" and rows[1]["codes"] == "missing_file"
    assert not (alice / "grades.csv").exists()
    assert main(["exercise", "grade", str(alice), "--tasks", "nope"]) == 2
    assert "unknown exercise 'nope'" in capsys.readouterr().err


def test_partial_credit_sums_the_weights_of_the_checks_passed(monkeypatch, submissions):
    task = TASKS["softmax_backward"]
    names = check_names(task)
    weights = {names[0]: 3, names[1]: 0.5, names[2]: 4}  # the others are worth 1
    monkeypatch.setitem(TASKS, task.name, dataclasses.replace(task, weights=weights))
    scored = grade_file(task.name, str(submissions / "bob" / "softmax_backward.py"))
    assert [t["passed"] for t in scored.tests][:3] == [True, True, False]
    assert scored.score == 3.5 and scored.max_score == 3 + 0.5 + 4 + (len(names) - 3)
    assert [t["max_score"] for t in scored.tests][:4] == [3.0, 0.5, 4.0, 1.0]
    full = grade_file(task.name, str(CORRECT / "softmax_backward.py"))
    assert full.passed and full.score == full.max_score == scored.max_score


def test_checks_not_run_count_zero(tmp_path):
    stub = tmp_path / "softmax_backward.py"
    stub.write_text(TASKS["softmax_backward"].stub())  # the forward is given; the backward is not
    scored = grade_file("softmax_backward", str(stub))
    # The two forward checks pass on the stub's given forward: points only for the student's work.
    assert scored.score == 0 and scored.codes == ["not_implemented"]
    assert [t["name"] for t in scored.tests] == check_names(TASKS["softmax_backward"])
    assert [t["passed"] for t in scored.tests[:3]] == [True, True, False]
    todo = ("softmax_backward.py, line 38 (raise NotImplementedError) raises NotImplementedError: "
            "write that part")
    assert [t["output"] for t in scored.tests[:3]] == [
        f"passed, but scores 0 until the task is finished: {todo}"] * 2 + [f"not implemented yet: {todo}"]
    assert all(t["output"].startswith("not run") and t["score"] == 0 for t in scored.tests[3:])
    exits = tmp_path / "cross_entropy.py"
    exits.write_text("print('hello')\nimport sys\nsys.exit(3)\n")  # neither prints nor stops the run
    scored = grade_file("cross_entropy", str(exits))
    assert scored.score == 0 and scored.codes == ["stopped"] and "raised SystemExit(3)" in scored.error
    assert all(t["output"].startswith("not run: the code raised SystemExit(3)") for t in scored.tests)
    assert scored.report.output == "hello\n"


def _validate_gradescope(result: dict, expect: dict) -> None:
    """Gradescope's results.json: score, markdown outputs (the top-level one, and each test's:
    `test_output_format` and `output_format` on each), and one test per check."""
    assert set(result) - {"output"} == {"score", "output_format", "test_output_format", "tests"}
    assert result["output_format"] == result["test_output_format"] == "md"
    names = [f"{task}: {n}" for task in expect for n in check_names(TASKS[task])]
    assert [t["name"] for t in result["tests"]] == names
    for t in result["tests"]:
        assert set(t) == {"name", "score", "max_score", "output", "output_format", "status", "visibility"}
        assert t["visibility"] == "visible" and t["max_score"] == 1.0 and isinstance(t["output"], str)
        assert t["output_format"] == "md"
        assert t["status"] in ("passed", "failed") and t["score"] == (1.0 if t["status"] == "passed" else 0.0)
    for task, passed in expect.items():
        mine = [t for t in result["tests"] if t["name"].startswith(f"{task}: ")]
        assert sum(t["status"] == "passed" for t in mine) == passed
    assert result["score"] == sum(t["score"] for t in result["tests"]) == sum(expect.values())


def test_check_format_gradescope(capsys, submissions):
    bob = submissions / "bob"
    code, out = run(capsys, "check", "softmax_backward", "--file", str(bob / "softmax_backward.py"),
                    "--format", "gradescope")
    result = json.loads(out)
    assert code == 1
    _validate_gradescope(result, {"softmax_backward": 2})
    worked = result["tests"][2]
    assert "diagnosis: `missing_rowsum_term`" in worked["output"] and "```" in worked["output"]
    code, out = run(capsys, "check", "softmax_backward", "--file", str(bob / "softmax_backward.py"),
                    "--format", "json")  # unchanged
    assert set(json.loads(out)) == {"task", "passed", "checks", "diagnosis", "stopped", "output"}


def test_grade_format_gradescope_writes_one_results_json_per_student(capsys, submissions):
    code, out = run(capsys, "grade", str(submissions), "--format", "gradescope")
    assert code == 0 and not (submissions / "grades.csv").exists()
    n_soft, n_ce = (len(check_names(TASKS[t])) for t in TWO)
    _validate_gradescope(json.loads((submissions / "alice" / "results.json").read_text()),
                         {"softmax_backward": n_soft, "cross_entropy": n_ce})
    bob = json.loads((submissions / "bob" / "results.json").read_text())
    _validate_gradescope(bob, {"softmax_backward": 2, "cross_entropy": 0})
    assert bob["tests"][-1]["output"].startswith("not run: RuntimeError: boom")
    code, out = run(capsys, "grade", str(submissions), "--format", "json")
    grades = json.loads(out)
    assert grades["bob"]["softmax_backward"]["score"] == 2
    assert grades["bob"]["softmax_backward"]["passed"] is False
    assert grades["alice"]["cross_entropy"]["max_score"] == n_ce


def test_the_autograder_zip_grades_a_gradescope_folder(capsys, submissions, tmp_path):
    out = tmp_path / "autograder.zip"
    code, printed = run(capsys, "autograder", *TWO, "--out", str(out))
    assert code == 0 and f"wrote {out}" in printed
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        (wheel,) = [n for n in names if n.endswith(".whl")]
        assert sorted(names) == sorted([wheel, "setup.sh", "run_autograder"])
        assert wheel.startswith("minigrad-")
        for script in ("setup.sh", "run_autograder"):
            assert (zf.getinfo(script).external_attr >> 16) & stat.S_IXUSR
        setup = zf.read("setup.sh").decode()
        assert f'pip install --disable-pip-version-check --no-cache-dir "./{wheel}"' in setup
        zf.extractall(tmp_path / "source")
    with zipfile.ZipFile(tmp_path / "source" / wheel) as whl:
        assert "minigrad/exercises/instructor.py" in whl.namelist()
    # Gradescope's layout, under AUTOGRADER_ROOT; setup.sh's install is skipped: this Python has minigrad.
    root = tmp_path / "autograder"
    shutil.copytree(submissions / "bob", root / "submission")
    (root / "results").mkdir()
    script = tmp_path / "source" / "run_autograder"
    os.chmod(script, 0o755)  # extractall keeps no modes
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    _validate_gradescope(json.loads((root / "results" / "results.json").read_text()),
                         {"softmax_backward": 2, "cross_entropy": 0})


def test_autograder_always_carries_the_wheel_and_the_help(capsys, tmp_path):
    # --no-wheel is gone: setup.sh installed `minigrad==VERSION` from PyPI, another project's name.
    with pytest.raises(SystemExit) as e:
        main(["exercise", "autograder", "reductions", "--out", str(tmp_path / "a.zip"), "--no-wheel"])
    assert e.value.code == 2 and "unrecognized arguments: --no-wheel" in capsys.readouterr().err
    for action in ("grade", "autograder"):
        with pytest.raises(SystemExit) as e:
            main(["exercise", action, "--help"])
        assert e.value.code == 0 and "instructors" not in capsys.readouterr().err
    assert main(["exercise", "autograder", "nope"]) == 2
    assert "unknown exercise 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("task", list(TASKS))
def test_every_tasks_checks_can_be_listed_without_a_submission(task):
    # max_score needs the checks' names before (or without) a file that imports: checks must be lazy.
    names = check_names(TASKS[task])
    assert names and len(set(names)) == len(names) and all(isinstance(n, str) for n in names)


@pytest.mark.parametrize("files", [{}, {"softmax.py": WRONG_SOFTMAX}], ids=["empty", "misnamed"])
def test_a_submission_without_the_tasks_file_gets_results_naming_it(capsys, tmp_path, files):
    # What run_autograder runs on Gradescope's /autograder/submission.
    submission = tmp_path / "submission"
    submission.mkdir()
    for name, text in files.items():
        (submission / name).write_text(text)
    results = tmp_path / "results.json"
    code, out = run(capsys, "grade", str(submission), "--tasks", *TWO, "--format", "gradescope",
                    "--results", str(results))
    assert code == 0
    result = json.loads(results.read_text())
    _validate_gradescope(result, {"softmax_backward": 0, "cross_entropy": 0})
    found = " (found softmax.py, named after no task)" if files else ""
    expected = "no file softmax_backward.py: the file for softmax_backward must be named softmax_backward.py"
    assert f"**softmax_backward** scores 0: {expected}{found}" in result["output"]
    assert result["tests"][0]["output"] == f"not run: {expected}{found}"


def test_folder_grading_names_a_students_misnamed_file(capsys, submissions):
    (submissions / "carol").mkdir()
    (submissions / "carol" / "softmax.py").write_text(WRONG_SOFTMAX)
    code, out = run(capsys, "grade", str(submissions))
    assert code == 0 and out.splitlines()[3].split()[:4] == ["carol", "fail", "(missing_file)", "0/6"]
    assert ("carol/softmax_backward.py: no file softmax_backward.py: the file for softmax_backward must "
            "be named softmax_backward.py (found softmax.py, named after no task)") in out


def test_an_untouched_stub_earns_nothing(tmp_path):
    # Before: 7 of the 99 points across the tasks, from the code each stub gives (a forward).
    total = 0.0
    for task in TASKS.values():
        stub = tmp_path / f"{task.name}.py"
        stub.write_text(task.stub())
        scored = grade_file(task.name, str(stub))
        assert scored.codes == ["not_implemented"], task.name
        assert any(t["output"].endswith("raises NotImplementedError: write that part") for t in scored.tests)
        total += scored.score
    assert total == 0
