"""Exercise 1 · mul_broadcast: Mul and Div backward, each gradient summed back to its input."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.autograd import unbroadcast
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check
from .gradients import Case, broadcast_pairs, forward_detail, gradient_checks
from .transcript import Fail, run_student


def _cases(seed: int, away_from_zero: bool) -> list[Case]:
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, ...]) -> np.ndarray:
        x = rng.uniform(0.5, 2.0, shape)
        return x * rng.choice([-1.0, 1.0], shape) if away_from_zero else rng.normal(0, 1, shape)

    return [Case({"a": rng.normal(0, 1, sa), "b": draw(sb)}) for sa, sb in broadcast_pairs(7, seed)]


SWAPPED = "db where da belongs, and da for b"


def div_mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """db returned before da (the shapes differ when one input is broadcast: no generic swap)."""
    return [Mistake("swapped_grads", {"a": ref["b"], "b": ref["a"]}, note=SWAPPED)]


def mul_mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    a, b = case.inputs["a"], case.inputs["b"]
    # each input multiplied by its own value instead of the other's
    return [Mistake("swapped_grads", {"a": unbroadcast(g * a, a.shape), "b": unbroadcast(g * b, b.shape)}),
            *div_mistakes(case, g, ref)]


def from_the_left(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """What sum_to_shape gives when it lines the shapes up from the left: the trailing extra axes
    summed away (where broadcasting adds axes on the left), then the stretched ones."""
    grad = grad.sum(axis=tuple(range(len(shape), grad.ndim)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True)


def checks(sub: Any) -> list[Check]:
    def mul(a, b):
        return sub.Mul.apply(a, b)

    def div(a, b):
        return sub.Div.apply(a, b)

    rng = np.random.default_rng(1)
    # Each input is broadcast along an axis the other has: da and db have shapes that cannot be
    # mistaken for each other, so gradients returned in the wrong order show as such.
    worked = Case({"a": rng.normal(0, 1, (2, 1, 3)), "b": rng.uniform(0.5, 2, (4, 1))},
                  label="a (2, 1, 3), b (4, 1)")

    def forward() -> None:
        a, b = worked.inputs["a"], worked.inputs["b"]
        for name, fn, want in (("Mul", mul, a * b), ("Div", div, a / b)):
            got = run_student("forward", lambda fn=fn: fn(Tensor(a.copy()), Tensor(b.copy()))._data)
            if got.shape != want.shape or not np.allclose(got, want):
                raise Fail(f"{name}: the forward differs from numpy's (it is given: restore it)",
                           detail=forward_detail(f"{name}, {worked.describe()}", worked.inputs, got, want))

    def summed(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
        out = sub.sum_to_shape(g, shape)
        return None if out is None else np.asarray(out)

    def sums() -> str:
        cases = [((4, 2, 3), (2, 1)), ((2, 3), (3,)), ((3, 3), (3,)), ((2, 3), ()), ((3, 1), (1, 1)),
                 ((2, 2), (2, 2))]
        for big, shape in cases:
            g = np.arange(float(np.prod(big))).reshape(big)
            got = run_student("sum_to_shape", lambda g=g, shape=shape: summed(g.copy(), shape))
            if got is None:
                raise Fail(f"sum_to_shape(grad, {shape}) returned None: it must return the summed array")
            want = unbroadcast(g, shape)
            if got.shape == tuple(shape) and np.allclose(got, want):
                continue
            left = from_the_left(g, shape)
            # not summed at all, or summed right with the size-1 axes dropped: not brought back to shape
            lost = (got.shape != want.shape and got.size == want.size
                    and np.allclose(got.reshape(want.shape), want))
            code = (["unbroadcast_trailing_axes"] if got.shape == left.shape and np.allclose(got, left) else
                    ["not_unbroadcast"] if got.shape == big or lost else [])
            raise Fail(f"sum_to_shape of a {big} array to {shape} gives shape {got.shape}"
                       + (" with the wrong values" if got.shape == want.shape else
                          " (the values are right: the size-1 axes are lost)" if lost else ""),
                       detail=forward_detail(f"sum_to_shape(grad, {shape})", {"grad": g}, got, want),
                       diagnosis=code)
        return f"{len(cases)} shape pairs"

    return [("forward (given) unchanged", forward),
            ("sum_to_shape sums over added and stretched axes", sums),
            *gradient_checks(mul, references.mul, worked, _cases(2, False), sub.Mul, mul_mistakes,
                             must_reduce=True, prefix="Mul: "),
            *gradient_checks(div, references.div, worked, _cases(3, True), sub.Div, div_mistakes,
                             must_reduce=True, prefix="Div: ")]


TASK = Task("mul_broadcast", "Mul and Div backward: the adjoint of broadcasting is a sum",
            ("Mul", "Div", "sum_to_shape"), checks, library=("Mul", "Div"),
            library_inside={"sum_to_shape": ("unbroadcast",)})
