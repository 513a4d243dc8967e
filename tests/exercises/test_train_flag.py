"""`check TASK --train` on a task without a training run says so (it used to be silently ignored)."""

from pathlib import Path

from minigrad.exercises import grade

CORRECT = Path(__file__).resolve().parent / "correct"


def test_train_on_a_task_without_a_training_run_says_so():
    report = grade("reductions", str(CORRECT / "reductions.py"), train=True)
    assert report.passed
    assert report.extra.startswith("--train: reductions has no training run")
    assert "softmax_backward" in report.extra and "reductions" not in report.extra.split("one: ")[1]
    assert "--train: reductions has no training run" in report.text()


def test_without_train_nothing_is_said():
    assert grade("reductions", str(CORRECT / "reductions.py")).extra == ""
