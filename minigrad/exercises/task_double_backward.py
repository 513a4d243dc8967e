"""Exercise 16 · double_backward: the sigmoid's backward, written so that it is differentiable too.

The first-order checks are every backward task's (gradients.gradient_checks: the worked case,
gradcheck, random shapes). The second-order ones run the student's backward under
create_graph=True, where it is given Tensors: with x and the upstream gradient g both leaves,
dx = grad(sum(g * sigmoid(x)), x, create_graph=True), and the second backward of sum(w * dx),
for a random w, gives d/dx = w g y(1-y)(1-2y) and d/dg = w y(1-y). Those are compared with
minigrad's own sigmoid's double backward, and with central differences of the first
derivative (what minigrad.gradgradcheck does, judged here with its report).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import minigrad as mg
from minigrad.gradcheck import GradcheckError, finite_differences, first_mismatch, side_by_side
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake, close, generic_mistakes, match
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks, random_shapes, upstream
from .transcript import Fail, StudentRaised, run_student

Fn = Callable[[Tensor], Tensor]
NUMPY_GIVEN_TENSOR = "a numpy function was given a tensor that requires grad"
FIRST_ORDER_ONLY = "is first order only"
NOT_IN_GRAPH = "does not depend on any checked input"


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _case(seed: int, shape: tuple[int, ...], label: str = "") -> Case:
    return Case({"x": np.random.default_rng(seed).normal(0, 1.5, shape)}, label=label)


def second_order(fn: Fn, x: np.ndarray, g: np.ndarray, w: np.ndarray) -> dict[str, Any]:
    """fn's first derivative under create_graph=True, and the second backward through it.

    dx = d sum(g * fn(x)) / dx, built as a graph (x and g are leaves that require grad); then
    the gradients of sum(w * dx) with respect to x and g (zeros where dx does not reach one).
    `in_graph` says whether dx is a tensor of the graph at all."""
    xt = Tensor(np.array(x, dtype=np.float64), requires_grad=True)
    gt = Tensor(np.array(g, dtype=np.float64), requires_grad=True)
    (dx,) = mg.autograd.grad(fn(xt), [xt], [gt], create_graph=True)
    dx_values = np.array(dx._data, dtype=np.float64)
    if not dx.requires_grad:
        zeros = np.zeros_like(dx_values)
        return {"dx": dx_values, "in_graph": False, "x": zeros, "g": zeros}
    dxx, dxg = mg.autograd.grad((dx * Tensor(np.array(w, dtype=np.float64))).sum(), [xt, gt],
                                allow_unused=True, materialize_grads=True)
    return {"dx": dx_values, "in_graph": True, "x": np.array(dxx._data), "g": np.array(dxg._data)}


def second_differences(fn: Fn, x: np.ndarray) -> list | str:
    """What minigrad.gradgradcheck(fn, [x]) computes: finite_differences of (x, g) -> dx, the
    first derivative built with create_graph=True, for gradgradcheck's random g (the report is
    judged by first_mismatch outside the student's process); its GradcheckError as a string."""
    g = np.random.default_rng(1).standard_normal(np.shape(x))  # gradgradcheck's seed + 1

    def first_order(x: Tensor, grad_output0: Tensor) -> Tensor:
        with mg.enable_grad():
            (dx,) = mg.autograd.grad(fn(x), [x], [grad_output0], create_graph=True, allow_unused=True,
                                     materialize_grads=True)
        return dx

    try:
        found = finite_differences(first_order, [Tensor(np.array(x), requires_grad=True),
                                                 Tensor(g, requires_grad=True)])
    except GradcheckError as e:
        return str(e)
    return [(i, a, n) for i, a, n in found]


def mistakes(y: np.ndarray, g: np.ndarray, w: np.ndarray) -> list[Mistake]:
    """What each known mistake gives for the second backward (d/dx and d/dg of sum(w * dx))."""
    zeros = np.zeros_like(y)
    return [Mistake("array_in_graph", {"x": zeros, "g": zeros}),  # dx not in the graph at all
            Mistake("detached_intermediate", {"x": zeros}),  # y a constant: only g reaches dx
            Mistake("missing_product_term", {"x": w * g * y * (1 - y) * (1 - y)},
                    note="the factor (1 - y) is a constant: the term g * y * d(1 - y)/dx is missing"),
            Mistake("missing_product_term", {"x": -w * g * y * y * (1 - y)},
                    note="the factor y is a constant: the term g * (1 - y) * dy/dx is missing")]


def _student_raised(e: StudentRaised) -> Exception:
    """The student's error under create_graph=True, named when it is numpy given a Tensor."""
    if NUMPY_GIVEN_TENSOR in e.message:
        return Fail(f"under create_graph=True your backward {e.message}", diagnosis=["array_in_graph"])
    if FIRST_ORDER_ONLY in e.message:
        return Fail("under create_graph=True minigrad refuses the backward as first order only: keep "
                    "`differentiable_backward = True` on the class, as the stub gives it")
    return e


def _blocks(got: np.ndarray, ref: np.ndarray, title: str) -> str:
    return side_by_side([(f"{title}: yours", got), ("reference", ref), ("difference", got - ref)],
                        width=80)


def compare_second(sub: Any, case: Case, worked: bool = True, first_passed: bool = True) -> None:
    """Fail unless the student's second backward on `case` equals minigrad's sigmoid's
    (`first_passed`: whether the first-order checks passed, for the words of a wrong dx)."""
    x = case.inputs["x"]
    g, w = upstream(x.shape, seed=7), upstream(x.shape, seed=8)
    ref = second_order(references.sigmoid, x, g, w)
    try:
        got = run_student("second backward", lambda: second_order(lambda t: sub.Sigmoid.apply(t), x, g, w))
    except StudentRaised as e:
        raise _student_raised(e) from None
    y = _sigmoid(x)
    if not got["in_graph"]:
        raise Fail("under create_graph=True the gradient your backward returned is not in the graph: it "
                   "depends neither on x nor on g, so it cannot be differentiated again",
                   diagnosis=["array_in_graph"])
    if not close(got["dx"], ref["dx"]):
        why = ("(on arrays it is right: the Tensor path computes something else)" if first_passed else
               "(as on arrays: see the first-order checks)")
        raise Fail(f"under create_graph=True your backward's first derivative differs from the reference's "
                   f"{why}, so its derivatives cannot match",
                   detail=_blocks(got["dx"], ref["dx"], "dx") if worked and x.size <= 64 else "")
    want = {"x": ref["x"], "g": ref["g"]}
    mine = {"x": got["x"], "g": got["g"]}
    bad = [n for n in want if not close(mine[n], want[n])]
    if not bad:
        return
    known = mistakes(y, g, w) + [m for m in generic_mistakes(want, None, mine)
                                 if m.code in ("sign_error", "factor_error")]
    found = match(mine, want, known)
    n = bad[0]
    what = {"x": "d/dx (the second derivative, times g and w)", "g": "d/dg (the first derivative, times w)"}
    wrong = int((~np.isclose(mine[n], want[n], rtol=1e-5, atol=1e-8)).sum())
    msg = (f"the second backward's {what[n]} differs from the reference at {wrong} of {x.size} elements"
           + (f" ({found.note})" if found is not None and found.note else ""))
    detail = ""
    if worked and x.size <= 64:
        detail = (f"worked case ({case.describe()}, random upstream gradient g, and w the upstream "
                  f"gradient of the second backward, of sum(w * dx)):\n"
                  + _blocks(mine[n], want[n], f"d/d{n} of sum(w * dx)"))
    raise Fail(msg, detail, [found.code] if found else [])


def checks(sub: Any) -> list[Check]:
    def student(x):
        return sub.Sigmoid.apply(x)

    fixed = [np.linspace(-6, 6, 7), np.random.default_rng(16).normal(0, 2, (2, 3, 2))]

    def forward() -> str:
        for x in fixed:
            got = run_student("forward", lambda x=x: student(Tensor(x.copy()))._data)
            want = _sigmoid(x)
            if got.shape != x.shape or not np.allclose(got, want, rtol=1e-10, atol=1e-12):
                raise Fail(f"on an input of shape {x.shape} the output is not 1 / (1 + exp(-x)): the forward "
                           "is given; restore it from the stub",
                           detail=forward_detail(f"x {x.shape}", {"x": x}, got, want))
        return f"{len(fixed)} fixed inputs"

    worked = _case(0, (2, 3), label="x (2, 3)")
    cases = [_case(i + 1, s) for i, s in enumerate(random_shapes(5, seed=16))]

    first_failed: list[str] = []  # the first-order checks that failed (the same in both passes)

    def watched(name: str, fn: Callable[[], Any]) -> Check:
        def run() -> Any:
            try:
                return fn()
            except Exception:
                first_failed.append(name)
                raise
        return name, run

    def worked_second() -> None:
        compare_second(sub, worked, first_passed=not first_failed)

    def by_gradgradcheck() -> str:
        for case in [worked, *cases]:
            x = case.inputs["x"]
            try:
                found = run_student("gradgradcheck", lambda x=x: second_differences(student, x))
            except StudentRaised as e:
                raise _student_raised(e) from None
            if isinstance(found, str):
                code = ["array_in_graph"] if NOT_IN_GRAPH in found else []
                raise Fail(f"on {case.describe()}: gradgradcheck cannot differentiate your first derivative "
                           "(under create_graph=True it is not in the graph of x and g)" if code else
                           f"on {case.describe()}", detail=found, diagnosis=code)
            report = first_mismatch(["x (input 0,", "grad_output0 (input 1,"],
                                    [(int(i), a, n) for i, a, n in found])
            if report is not None:
                raise Fail(f"on {case.describe()}", detail=report)
        return f"{len(cases) + 1} shapes"

    def second_on_cases() -> str:
        for case in cases:
            try:
                compare_second(sub, case, worked=False, first_passed=not first_failed)
            except Fail as f:
                f.message = f"on {case.describe()}: {f.message}"
                raise
        return f"{len(cases)} shapes"

    return [("forward (given) unchanged", forward),
            *[watched(*c) for c in gradient_checks(student, references.sigmoid, worked, cases, sub.Sigmoid)],
            ("second derivatives on the worked case match the reference", worked_second),
            ("gradgradcheck (finite differences of the first derivative)", by_gradgradcheck),
            ("second derivatives match the reference on random shapes", second_on_cases)]


TASK = Task("double_backward", "the sigmoid's backward, differentiable again: dx = g * y * (1 - y)",
            ("Sigmoid",), checks, library=("sigmoid", "SigmoidOp", "Sigmoid"))
