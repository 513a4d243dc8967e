"""The exercises end to end: a correct file for every task passes (exit 0), the unmodified stub
fails with "not implemented yet" (exit 1), `start` writes the stub and never overwrites, `list`
shows each task's status, `--json` has the documented schema, and `check()` works in a notebook."""

import importlib
import json
import shutil
import time
from pathlib import Path

import pytest

from minigrad.cli import main
from minigrad.exercises import TASKS, check, grade
from minigrad.exercises.catalogue import ORDER

CORRECT = Path(__file__).parent / "correct"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["exercise", *argv])
    return code, capsys.readouterr().out


def test_the_catalogue_follows_the_course_order():
    assert list(TASKS) == ORDER and len(ORDER) == 16
    assert [t.number for t in TASKS.values()] == list(range(1, 17))
    for task in TASKS.values():
        assert "raise NotImplementedError" in task.stub() and f"check {task.name}" in task.stub()
        module = importlib.import_module(f"minigrad.exercises.task_{task.name}")
        for text in (task.stub(), module.__doc__):  # the number each file states is its place
            assert text.lstrip('"').startswith(f"Exercise {task.number} · {task.name}:"), text[:60]
    assert TASKS["backprop_engine"].number == 3  # early: right after the first two local backwards


@pytest.mark.parametrize("action", ["start", "check"])
def test_the_repositorys_own_exercises_folder_is_refused(capsys, tmp_path, monkeypatch, action):
    # In a clone of the repository, ./exercises is the package's source, not the student's folder.
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "exercises"
    source.mkdir()
    for name in ("catalogue.py", "grader.py"):
        (source / name).write_text("")
    code = main(["exercise", action, "softmax_backward"])
    err = capsys.readouterr().err
    assert code == 2 and "exercises/ holds minigrad's own exercise code" in err and "--dir" in err
    assert sorted(p.name for p in source.iterdir()) == ["catalogue.py", "grader.py"]
    code = main(["exercise", "list"])
    assert code == 0 and "start NAME --dir my_exercises" in capsys.readouterr().out


def test_a_syntax_error_names_the_line_of_the_students_file(capsys, tmp_path):
    run(capsys, "start", "softmax_backward", "--dir", str(tmp_path))
    path = tmp_path / "softmax_backward.py"
    path.write_text(path.read_text().replace("raise NotImplementedError", "return a * (g - 1"))
    code, out = run(capsys, "check", "softmax_backward", "--dir", str(tmp_path))
    line = next(i for i, s in enumerate(path.read_text().splitlines(), 1) if "return a * (g - 1" in s)
    assert code == 1
    assert (f"FAIL  imports: SyntaxError: '(' was never closed (softmax_backward.py, line {line} "
            "(return a * (g - 1))") in out and "frozen" not in out


@pytest.mark.parametrize("task", list(TASKS))
def test_a_correct_file_passes_with_exit_0(capsys, tmp_path, task):
    shutil.copy(CORRECT / f"{task}.py", tmp_path / f"{task}.py")
    t0 = time.perf_counter()
    code, out = run(capsys, "check", task, "--dir", str(tmp_path))
    assert time.perf_counter() - t0 < 20  # the budget for one task (measured: under 1 s)
    assert code == 0, out
    assert "FAIL" not in out and out.rstrip().endswith("checks passed")


@pytest.mark.parametrize("task", list(TASKS))
def test_the_unmodified_stub_is_not_implemented_yet(capsys, tmp_path, task):
    code, out = run(capsys, "start", task, "--dir", str(tmp_path))
    assert code == 0 and (tmp_path / f"{task}.py").read_text() == TASKS[task].stub()
    code, out = run(capsys, "check", task, "--dir", str(tmp_path))
    assert code == 1
    assert "not implemented yet" in out and "raises NotImplementedError" in out


def test_start_never_overwrites(capsys, tmp_path):
    mine = tmp_path / "softmax_backward.py"
    mine.write_text("# my work\n")
    code, out = run(capsys, "start", "softmax_backward", "--dir", str(tmp_path))
    assert code == 1 and "exists already; not overwriting" in out
    assert mine.read_text() == "# my work\n"


def test_list_shows_each_task_with_its_status(capsys, tmp_path):
    run(capsys, "start", "attention_forward", "--dir", str(tmp_path))
    shutil.copy(CORRECT / "softmax_backward.py", tmp_path)
    run(capsys, "check", "softmax_backward", "--dir", str(tmp_path))
    run(capsys, "check", "attention_forward", "--dir", str(tmp_path))
    code, out = run(capsys, "list", "--dir", str(tmp_path))
    status = {line.split()[1]: line for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()}
    assert code == 0 and list(status) == list(TASKS)
    assert " 5. softmax_backward" in status["softmax_backward"] and "passed" in status["softmax_backward"]
    assert "not implemented yet" in status["attention_forward"]
    assert "not started" in status["attention_backward"]
    (tmp_path / "softmax_backward.py").write_text("# changed\n")
    assert "changed since the last check" in run(capsys, "list", "--dir", str(tmp_path))[1]


def test_json_output_schema(capsys, tmp_path):
    run(capsys, "start", "softmax_backward", "--dir", str(tmp_path))
    (tmp_path / "softmax_backward.py").write_text(
        TASKS["softmax_backward"].stub().replace("raise NotImplementedError", "return g * a"))
    code, out = run(capsys, "check", "softmax_backward", "--dir", str(tmp_path), "--json")
    result = json.loads(out)
    assert code == 1 and set(result) == {"task", "passed", "checks", "diagnosis", "stopped", "output"}
    assert result["task"] == "softmax_backward" and result["passed"] is False
    assert result["diagnosis"] == ["missing_rowsum_term"]
    assert all(set(c) == {"name", "passed", "message"} for c in result["checks"])
    assert [c["passed"] for c in result["checks"]][:3] == [True, True, True]


def test_unknown_task_and_missing_file_are_one_line_errors(capsys, tmp_path):
    assert main(["exercise", "check", "nope"]) == 2
    assert "unknown exercise 'nope'" in capsys.readouterr().err
    assert main(["exercise", "check", "softmax_backward", "--dir", str(tmp_path)]) == 2
    assert "minigrad exercise start softmax_backward" in capsys.readouterr().err


def test_a_file_that_does_not_import_or_define_the_names(tmp_path):
    bad = tmp_path / "softmax_backward.py"
    bad.write_text("def f(:\n")
    report = grade("softmax_backward", str(bad))
    assert not report.passed and "SyntaxError" in report.checks[0].message
    bad.write_text("x = 1\n")
    report = grade("softmax_backward", str(bad))
    assert report.checks[0].message == "missing Softmax"


def test_check_in_a_notebook_takes_the_objects(capsys):
    import numpy as np

    from minigrad import Function

    class MySoftmax(Function):
        @staticmethod
        def forward(ctx, s):
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            ctx.a = e / e.sum(axis=-1, keepdims=True)
            return ctx.a

        @staticmethod
        def backward(ctx, g):
            return g * ctx.a  # the row-sum term is missing

    report = check("softmax_backward", MySoftmax)
    assert not report.passed and report.diagnosis == ["missing_rowsum_term"]
    assert "diagnosis: missing_rowsum_term" in capsys.readouterr().out
    # What a notebook shows under the printed report when the cell ends with check(...):
    failed = sum(not c.passed for c in report.checks)
    assert repr(report) == f"<Report softmax_backward: {failed} of {len(report.checks)} checks failed>"


def test_check_without_objects_says_what_to_pass():
    with pytest.raises(TypeError, match=r"check\('softmax_backward', Softmax\)"):
        check("softmax_backward")


TRAINS = [name for name, task in TASKS.items() if task.train is not None]


def test_the_transformer_pieces_can_train():
    assert TRAINS == ["backprop_engine", "softmax_backward", "cross_entropy", "layer_norm_backward",
                      "attention_forward", "attention_backward"]


@pytest.mark.slow
@pytest.mark.parametrize("task", TRAINS)
def test_train_gives_the_same_loss_curve(capsys, tmp_path, task):
    import minigrad.nn.functional as F

    names = ("scaled_dot_product_attention", "packed_self_attention", "layer_norm", "cross_entropy")
    before = {n: getattr(F, n) for n in names}
    shutil.copy(CORRECT / f"{task}.py", tmp_path)
    t0 = time.perf_counter()
    code, out = run(capsys, "check", task, "--dir", str(tmp_path), "--train")
    assert time.perf_counter() - t0 < 90
    assert code == 0, out
    assert "the loss curves agree" in out and "step   reference   yours" in out
    assert before == {n: getattr(F, n) for n in before}  # the library's kernels are back


def test_train_runs_the_students_attention_inside_the_gpt():
    """GPT's training step attends through F.packed_self_attention: `--train` reaches the
    student's op there too, so a wrong one changes the loss curve."""
    import minigrad.nn.functional as F
    from minigrad.exercises.training import attention_from, losses

    shapes = []

    def wrong(q, k, v, allowed):
        shapes.append(q.shape)
        return F.scaled_dot_product_attention(q, k, v, mask=allowed) * 0.5

    reference, mine = losses({}, steps=2), losses(attention_from(wrong), steps=2)
    assert shapes and all(len(s) == 4 for s in shapes)  # (B, H, T, D): heads split for it
    assert mine[1] != reference[1]
    assert F.packed_self_attention.__module__ == "minigrad.nn.attention.functional"  # put back


def test_train_waits_for_the_other_checks(capsys, tmp_path):
    run(capsys, "start", "softmax_backward", "--dir", str(tmp_path))
    code, out = run(capsys, "check", "softmax_backward", "--dir", str(tmp_path), "--train")
    assert code == 1 and "step   reference" not in out


def test_a_zero_initialised_linear_fails_the_init_check(tmp_path):
    stub = TASKS["linear_layer"].stub()
    body = ("        self.weight = Parameter(mg.zeros(out_features, in_features))\n"
            "        self.bias = Parameter(mg.zeros(out_features)) if bias else None")
    site = "        raise NotImplementedError"
    start = stub.index("        # Your code: self.weight")
    stub = stub.replace(stub[start:stub.index(site) + len(site)], body, 1)
    stub = stub.replace("        # Your code: return x W^T + b.\n        raise NotImplementedError",
                        "        return x @ self.weight.transpose(0, 1) + self.bias")
    path = tmp_path / "linear_layer.py"
    path.write_text(stub)
    report = grade("linear_layer", str(path))
    failed = [c for c in report.checks if not c.passed]
    assert failed[0].name.startswith("initialisation: uniform in +-1/sqrt(in_features)")
    assert "every unit would learn the same thing" in failed[0].message
