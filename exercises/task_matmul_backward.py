"""Exercise 2 · matmul_backward: da = g b^T, db = a^T g, summed over broadcast batch axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.autograd import unbroadcast
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check, Fail
from .gradients import Case, gradient_checks

SHAPES = [((2, 3), (3, 4)), ((1, 1), (1, 1)), ((2, 2, 3), (3, 2)), ((3, 2), (2, 1, 2, 4)),
          ((2, 1, 2, 3), (4, 3, 2)), ((1, 3, 2), (2, 2, 3))]


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """Each gradient built from its own input instead of the other one (square shapes only)."""
    a, b = case.inputs["a"], case.inputs["b"]
    try:
        da, db = g @ a.swapaxes(-1, -2), b.swapaxes(-1, -2) @ g
        return [Mistake("swapped_grads", {"a": unbroadcast(da, a.shape), "b": unbroadcast(db, b.shape)})]
    except ValueError:
        return []


def checks(sub: Any) -> list[Check]:
    def student(a, b):
        return sub.MatMul.apply(a, b)

    rng = np.random.default_rng(2)
    worked = Case({"a": rng.normal(0, 1, (2, 3, 3)), "b": rng.normal(0, 1, (3, 3))},
                  label="a (2, 3, 3), b (3, 3): b shared by the batch")
    cases = [Case({"a": rng.normal(0, 1, sa), "b": rng.normal(0, 1, sb)}) for sa, sb in SHAPES]

    def forward() -> str:
        for case in cases:
            a, b = (Tensor(x) for x in case.inputs.values())
            if not np.allclose(student(a, b).data, a.data @ b.data):
                raise Fail(f"on {case.describe()} the forward differs from a @ b (it is given)")
        return f"{len(cases)} shape pairs"

    return [("forward matches a @ b", forward),
            *gradient_checks(student, references.matmul, worked, cases, sub.MatMul, mistakes,
                             must_reduce=True)]


TASK = Task("matmul_backward", "batched matmul backward, broadcast batch axes summed", ("MatMul",), checks)
