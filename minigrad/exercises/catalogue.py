"""The tasks, in the order of the course, and where each one's stub lives."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Mapping

from .grader import Check

# The course order: a task's number is its place here (the first line of each task module and
# stub says it: tests/exercises/test_exercise_cli.py checks). Each name has its module
# exercises/task_<name>.py and its stub exercises/stubs/<name>.py. The engine comes third: after
# two local backwards, the student writes what chains them.
ORDER = [
    "mul_broadcast", "matmul_backward", "backprop_engine", "reductions", "softmax_backward",
    "cross_entropy", "layer_norm_backward", "linear_layer", "attention_forward", "attention_backward",
    "multi_head", "positional_encoding", "additive_attention", "encoder_layer", "conv2d_backward",
    "double_backward",
]


@dataclass(frozen=True)
class Task:
    """One exercise.

    name: the file name students get (`<name>.py`); title: one line for `list`.
    defines: the names the stub defines and the grader reads, in the order `check(name, *objs)`
        takes them.
    checks: submission -> the checks, in order (each a (name, function) pair; see grader).
    train: submission -> one check that trains the tiny GPT with the student's op (or None).
    weights: check name -> points for the instructor's grade (`minigrad exercise grade`); a check
        not named here is worth 1.
    library: the names of minigrad's own implementation of what the task asks for (`softmax`,
        `Softmax`): a file that uses one as an attribute or imports it scores 0
        (submission.written_here); `library_inside` the same for one definition only (the
        function sum_to_shape must not call `unbroadcast`, which the rest of the file may).
    """

    name: str
    title: str
    defines: tuple[str, ...]
    checks: Callable[[Any], list[Check]]
    train: Callable[[Any], Check] | None = None
    weights: Mapping[str, float] = field(default_factory=dict, hash=False)
    library: tuple[str, ...] = ()
    library_inside: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    @property
    def number(self) -> int:
        return ORDER.index(self.name) + 1

    def stub(self) -> str:
        """The stub's text, read from the package data (works from a wheel, too)."""
        return resources.files("minigrad.exercises").joinpath("stubs", f"{self.name}.py").read_text()


def _load(name: str) -> Task:
    module = importlib.import_module(f".task_{name}", __package__)
    return module.TASK


TASKS: dict[str, Task] = {name: _load(name) for name in ORDER}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown exercise {name!r}; the exercises are: {', '.join(TASKS)}")
    return TASKS[name]
