"""Exercise 2 · matmul_backward: da = g b^T, db = a^T g, summed over broadcast batch axes."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.autograd import unbroadcast
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks
from .transcript import Fail, run_student

SWAPPED = "db where da belongs, and da for b"
SHAPES = [((2, 3), (3, 4)), ((1, 1), (1, 1)), ((2, 2, 3), (3, 2)), ((3, 2), (2, 1, 2, 4)),
          ((2, 1, 2, 3), (4, 3, 2)), ((1, 3, 2), (2, 2, 3))]


def _products(a: np.ndarray, b: np.ndarray, g: np.ndarray, da: str, db: str) -> dict[str, np.ndarray]:
    """{"a": unbroadcast(da), "b": unbroadcast(db)} for the products named (those whose shapes fit)."""
    make = {"g @ a^T": lambda: g @ a.swapaxes(-1, -2), "b^T @ g": lambda: b.swapaxes(-1, -2) @ g,
            "g @ b": lambda: g @ b, "a @ g": lambda: a @ g}
    out = {}
    for name, x, product in (("a", a, da), ("b", b, db)):
        try:
            out[name] = unbroadcast(make[product](), x.shape)
        except (ValueError, KeyError):
            pass
    return out


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """Each gradient built from its own input instead of the other one, the two returned in the
    wrong order, and the products taken without their transposes (square shapes only)."""
    a, b = case.inputs["a"], case.inputs["b"]
    out = []
    own = _products(a, b, g, "g @ a^T", "b^T @ g")
    if len(own) == 2:
        out.append(Mistake("swapped_grads", own))
    out.append(Mistake("swapped_grads", {"a": ref["b"], "b": ref["a"]}, note=SWAPPED))
    plain = _products(a, b, g, "g @ b", "a @ g")
    if len(plain) == 2:
        out.append(Mistake("matmul_no_transpose", plain, note="g @ b and a @ g"))
    out += [Mistake("matmul_no_transpose", {n: x}, note=f"{'g @ b' if n == 'a' else 'a @ g'}")
            for n, x in plain.items()]
    return out


def checks(sub: Any) -> list[Check]:
    def student(a, b):
        return sub.MatMul.apply(a, b)

    rng = np.random.default_rng(2)
    # Square matrices (a product without its transpose still runs) and batch axes that each
    # input shares with the other (da and db cannot be mistaken for each other by their shapes).
    worked = Case({"a": rng.normal(0, 1, (2, 1, 2, 2)), "b": rng.normal(0, 1, (3, 2, 2))},
                  label="a (2, 1, 2, 2), b (3, 2, 2): each shared along a batch axis of the other")
    cases = [Case({"a": rng.normal(0, 1, sa), "b": rng.normal(0, 1, sb)}) for sa, sb in SHAPES]

    def forward() -> str:
        for case in cases:
            a, b = case.inputs["a"], case.inputs["b"]
            got = run_student("forward", lambda a=a, b=b: student(Tensor(a.copy()), Tensor(b.copy()))._data)
            want = a @ b
            if got.shape != want.shape or not np.allclose(got, want):
                raise Fail(f"on {case.describe()} the forward differs from a @ b (it is given)",
                           detail=forward_detail(case.describe(), case.inputs, got, want))
        return f"{len(cases)} shape pairs"

    return [("forward matches a @ b", forward),
            *gradient_checks(student, references.matmul, worked, cases, sub.MatMul, mistakes,
                             must_reduce=True)]


TASK = Task("matmul_backward", "batched matmul backward, broadcast batch axes summed", ("MatMul",), checks,
            library=("MatMul",))
