"""The double_backward mistakes: for each code, wrong student files the grader must fail with
exactly that code (the WRONG table the catalogue test reads, and WRONG_EDITED, whose files also
change the code the stub gives: what forward keeps on ctx), and the grader's second derivatives
and gradgradcheck report against minigrad's own."""

import numpy as np
import pytest
from wrongfile import assert_names_exactly, edited_file, failed, student_file, wrong_cases

import minigrad as mg
from minigrad.exercises import grade
from minigrad.exercises.task_double_backward import second_differences, second_order
from minigrad.gradcheck import first_mismatch
from minigrad.tensor import Tensor

RIGHT = "return g * y * (1 - y)"
SAVED = "(y,) = ctx.saved  # an array (first order), or the output tensor (create_graph=True)"
KEPT = "ctx.save_for_backward(y)"
# either.values(y) is the array of y (a Tensor's, or y itself): right on arrays, a constant in the graph
VALUES = "from minigrad.ops import either\n"

WRONG = [
    # task, expected code, the body that replaces the backward's `raise NotImplementedError`
    ("double_backward", "array_in_graph", "y = np.asarray(y)\n" + RIGHT),
    ("double_backward", "array_in_graph", "return g * np.exp(np.log(y)) * (1 - y)"),
    ("double_backward", "array_in_graph",  # an array returned: g's graph is cut too
     VALUES + "return either.values(g) * either.values(y) * (1 - either.values(y))"),
    ("double_backward", "detached_intermediate", VALUES + "v = either.values(y)\nreturn g * v * (1 - v)"),
    ("double_backward", "detached_intermediate", "y = getattr(y, '_data', y)\n" + RIGHT),
    ("double_backward", "detached_intermediate",
     "from minigrad import Tensor\ny = y.detach() if isinstance(y, Tensor) else y\n" + RIGHT),
    ("double_backward", "missing_product_term", VALUES + "return g * y * (1 - either.values(y))"),
    ("double_backward", "missing_product_term", VALUES + "return g * either.values(y) * (1 - y)"),
    ("double_backward", "missing_product_term", VALUES + "return g * (y - y * either.values(y))"),
]

WRONG_EDITED = [
    # code, the backward's body, edits (old, new) of the code the stub gives
    ("detached_intermediate", "return g * ctx.y * (1 - ctx.y)", [(KEPT, KEPT + "\n        ctx.y = y")]),
    ("detached_intermediate", "return ctx.y * (1 - ctx.y) * g", [(KEPT, KEPT + "\n        ctx.y = y")]),
    ("detached_intermediate",  # the sigmoid recomputed with numpy from an array kept on ctx
     "e = np.exp(-ctx.x)\nreturn g * e / (1 + e) ** 2", [(KEPT, KEPT + "\n        ctx.x = x")]),
    ("array_in_graph",  # ... from the input, saved: it is a Tensor under create_graph, and numpy refuses it
     "e = np.exp(-x)\nreturn g * e / (1 + e) ** 2",
     [(KEPT, "ctx.save_for_backward(x, y)"), (SAVED, "x, y = ctx.saved")]),
]


@pytest.mark.parametrize("task, code, body", wrong_cases(WRONG))
def test_the_grader_names_exactly_the_mistake(tmp_path, task, code, body):
    report = grade(task, student_file(tmp_path, task, body))
    assert_names_exactly(report, code)
    assert failed(report)[:1] == ["second derivatives on the worked case match the reference"], report.text()


@pytest.mark.parametrize("code, body, edits", [pytest.param(*r, id=f"{r[0]}-{i}")
                                               for i, r in enumerate(WRONG_EDITED)])
def test_what_forward_keeps_on_ctx_is_named_too(tmp_path, code, body, edits):
    path = edited_file(tmp_path, "double_backward", body, edits)
    assert_names_exactly(grade("double_backward", path), code)


def test_numpy_given_a_tensor_names_the_students_line(tmp_path):
    text = grade("double_backward", student_file(tmp_path, "double_backward", WRONG[0][2])).text()
    assert "a numpy function was given a tensor that requires grad" in text
    assert "(y = np.asarray(y))" in text  # the line of the student's file


def test_each_missing_term_is_told_apart(tmp_path):
    notes = []
    for body in (WRONG[6][2], WRONG[7][2]):
        report = grade("double_backward", student_file(tmp_path, "double_backward", body))
        notes.append(report.checks[len(report.checks) - 3].message)
    assert "(the factor (1 - y) is a constant: the term g * y * d(1 - y)/dx is missing)" in notes[0]
    assert "(the factor y is a constant: the term g * (1 - y) * dy/dx is missing)" in notes[1]


def _library(x):
    return x.sigmoid()


def test_the_reference_second_derivatives_are_the_closed_form():
    rng = np.random.default_rng(3)
    x, g, w = rng.normal(0, 2, (3, 4)), rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (3, 4))
    y = 1 / (1 + np.exp(-x))
    got = second_order(_library, x, g, w)
    assert got["in_graph"]
    assert np.allclose(got["dx"], g * y * (1 - y), rtol=1e-12)
    assert np.allclose(got["x"], w * g * y * (1 - y) * (1 - 2 * y), rtol=1e-10, atol=1e-14)
    assert np.allclose(got["g"], w * y * (1 - y), rtol=1e-12)


class _Detached(mg.Function):
    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + np.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved
        y = y.detach() if isinstance(y, Tensor) else y
        return g * y * (1 - y)


def test_the_gradgradcheck_check_reports_what_gradgradcheck_does():
    x = np.random.default_rng(0).normal(0, 1.5, (2, 3))
    assert second_differences(_library, x) and first_mismatch(
        ["x (input 0,", "grad_output0 (input 1,"], second_differences(_library, x)) is None

    def detached(x):
        return _Detached.apply(x)

    ours = first_mismatch(["x (input 0,", "grad_output0 (input 1,"], second_differences(detached, x))
    with pytest.raises(mg.GradcheckError) as theirs:
        mg.gradgradcheck(detached, [x])
    assert ours == str(theirs.value)
    assert ours.startswith("gradcheck failed for x (input 0, shape (2, 3)) at element")
