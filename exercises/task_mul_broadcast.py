"""Exercise 1 · mul_broadcast: Mul and Div backward, each gradient summed back to its input."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.autograd import unbroadcast
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check, Fail
from .gradients import Case, broadcast_pairs, gradient_checks


def _cases(seed: int, away_from_zero: bool) -> list[Case]:
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, ...]) -> np.ndarray:
        x = rng.uniform(0.5, 2.0, shape)
        return x * rng.choice([-1.0, 1.0], shape) if away_from_zero else rng.normal(0, 1, shape)

    return [Case({"a": rng.normal(0, 1, sa), "b": draw(sb)}) for sa, sb in broadcast_pairs(7, seed)]


def mul_mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    a, b = case.inputs["a"], case.inputs["b"]
    # each input multiplied by its own value instead of the other's
    return [Mistake("swapped_grads", {"a": unbroadcast(g * a, a.shape), "b": unbroadcast(g * b, b.shape)})]


def checks(sub: Any) -> list[Check]:
    def mul(a, b):
        return sub.Mul.apply(a, b)

    def div(a, b):
        return sub.Div.apply(a, b)

    rng = np.random.default_rng(1)
    worked = Case({"a": rng.normal(0, 1, (2, 3)), "b": rng.uniform(0.5, 2, (3,))}, label="a (2, 3), b (3,)")

    def forward() -> None:
        a, b = Tensor(worked.inputs["a"]), Tensor(worked.inputs["b"])
        for name, fn, want in (("Mul", mul, a.data * b.data), ("Div", div, a.data / b.data)):
            if not np.allclose(fn(a, b).data, want):
                raise Fail(f"{name}: the forward differs from numpy's (it is given: restore it)")

    def sums() -> str:
        cases = [((4, 2, 3), (2, 1)), ((2, 3), (3,)), ((2, 3), ()), ((3, 1), (1, 1)), ((2, 2), (2, 2))]
        for big, shape in cases:
            g = np.arange(float(np.prod(big))).reshape(big)
            got = np.asarray(sub.sum_to_shape(g, shape))
            if got.shape != tuple(shape) or not np.allclose(got, unbroadcast(g, shape)):
                raise Fail(f"sum_to_shape of a {big} array to {shape} gives shape {got.shape}",
                           diagnosis=["not_unbroadcast"] if got.size == int(np.prod(shape)) else [])
        return f"{len(cases)} shape pairs"

    return [("forward (given) unchanged", forward),
            ("sum_to_shape sums over added and stretched axes", sums),
            *gradient_checks(mul, references.mul, worked, _cases(2, False), sub.Mul, mul_mistakes,
                             must_reduce=True, prefix="Mul: "),
            *gradient_checks(div, references.div, worked, _cases(3, True), sub.Div, None,
                             must_reduce=True, prefix="Div: ")]


TASK = Task("mul_broadcast", "Mul and Div backward: the adjoint of broadcasting is a sum",
            ("Mul", "Div", "sum_to_shape"), checks)
