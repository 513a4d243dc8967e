"""The grader's shared core, pinned: diagnose.close's tolerance, the tolerance of gradients.compare
and of the matching of predicted mistakes, diagnose.fitted_factor's thresholds (arrays and files
just inside and just outside each), and run_checks stopping at a stub's NotImplementedError
with the later checks not run."""

import numpy as np
import pytest
from wrongfile import failed, student_file

from minigrad import Function
from minigrad.exercises import grade
from minigrad.exercises.diagnose import Mistake, close, fitted_factor, match
from minigrad.exercises.grader import run_checks
from minigrad.exercises.gradients import Case, compare
from minigrad.exercises.transcript import Fail, Transcript, run_student, transcript

RTOL = 1e-5  # diagnose.close's default: the grader's one tolerance for gradients
REFERENCE = np.array([[0.5, -2.0, 1.25], [3.0, -0.75, 0.1]])  # its scale (largest |entry|) is 3


@pytest.mark.parametrize("factor, same", [(0.1, True), (10, False)])
def test_close_holds_to_its_relative_tolerance(factor, same):
    nudged = REFERENCE.copy()
    nudged[0, 0] += factor * RTOL * 3.0
    assert close(nudged, REFERENCE) is same and close(REFERENCE, nudged) is same


def test_close_compares_shapes_and_non_finite_entries_exactly():
    assert not close(REFERENCE, REFERENCE.T)
    inf = REFERENCE.copy()
    inf[1, 1] = np.inf
    assert close(inf, inf.copy()) and not close(inf, REFERENCE) and not close(-inf, inf)


def op(delta: float) -> type:
    """y = 3 x with a backward off by the relative amount delta (delta = 0: the reference)."""

    class Triple(Function):
        @staticmethod
        def forward(ctx, x):
            return 3 * x

        @staticmethod
        def backward(ctx, g):
            return (3 * g * (1 + delta),)

    return Triple


@pytest.mark.parametrize("factor, passes", [(0.1, True), (10, False)])
def test_compare_holds_to_the_tolerance(factor, passes):
    student, case = op(factor * RTOL), Case({"x": REFERENCE})
    try:
        compare(student.apply, op(0.0).apply, case, student)
    except Fail as f:
        assert not passes and "differs from the reference" in f.message and f.diagnosis == []
    else:
        assert passes


@pytest.mark.parametrize("scale, passes", [("(1 + 1e-6)", True), ("(1 + 1e-4)", False)])
def test_a_gradient_just_inside_the_tolerance_passes_and_just_outside_fails(tmp_path, scale, passes):
    body = f"return {scale} * a * (g - (g * a).sum(axis=-1, keepdims=True))"
    report = grade("softmax_backward", student_file(tmp_path, "softmax_backward", body))
    assert report.passed is passes, report.text()
    if not passes:  # a factor of 1.0001 is too close to 1 to be named a factor
        assert "gradients on the worked case match the reference" in failed(report) and report.diagnosis == []


@pytest.mark.parametrize("factor, named", [(0.1, True), (10, False)])
def test_a_prediction_matches_within_the_tolerance_only(factor, named):
    predicted = {"x": -REFERENCE}
    student = {"x": -REFERENCE * (1 + factor * RTOL)}
    found = match(student, {"x": REFERENCE}, [Mistake("sign_error", predicted)])
    assert (found is not None) is named


@pytest.mark.parametrize("c, found", [
    (1 + 2e-3, True), (1 + 5e-4, False),  # the threshold |c - 1| < 1e-3: no factor to name
    (1 - 2e-3, True), (1 - 5e-4, False),
    (2e-6, True), (5e-7, False),  # |c| < 1e-6: the gradient is zero, not scaled
    (-3.0, True), (0.5, True),
])
def test_fitted_factor_thresholds(c, found):
    got = fitted_factor(c * REFERENCE, REFERENCE)
    assert (got is not None) is found
    if found:
        assert got == pytest.approx(c, rel=1e-12)


@pytest.mark.parametrize("noise, found", [(0.1, True), (10, False)])
def test_fitted_factor_needs_the_whole_array_scaled(noise, found):
    scaled = 2.0 * REFERENCE
    scaled[1, 2] += noise * RTOL * 6.0  # 6: the scaled array's largest entry
    assert (fitted_factor(scaled, REFERENCE) is not None) is found


@pytest.mark.parametrize("c, code", [("1.002", ["factor_error"]), ("1.0005", [])])
def test_a_factor_file_is_named_only_past_the_threshold(tmp_path, c, code):
    body = f"return {c} * a * (g - (g * a).sum(axis=-1, keepdims=True))"
    report = grade("softmax_backward", student_file(tmp_path, "softmax_backward", body))
    assert not report.passed and report.diagnosis == code, report.text()


def test_not_implemented_stops_the_run():
    ran = []

    def later():
        ran.append("later")

    def unwritten():
        raise NotImplementedError

    def stub():
        run_student("the student's code", unwritten)

    report = run_checks("t", "f.py", [("first", lambda: None), ("stub", stub), ("later", later)])
    assert [c.name for c in report.checks] == ["first", "stub"] and ran == []
    assert report.not_implemented and not report.passed
    assert report.checks[-1].message == "not implemented yet"
    assert "not implemented yet:" in report.text() and "later" not in report.text()


def test_a_half_written_file_stops_at_the_part_still_to_write(tmp_path):
    forward = """m = x.max(axis=-1, keepdims=True)
logp = x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
ctx.save_for_backward(logp, t)
return -logp[np.arange(len(t)), t].mean()"""
    path = student_file(tmp_path, "cross_entropy", [forward, "raise NotImplementedError"])
    report = grade("cross_entropy", path)
    assert [c.passed for c in report.checks] == [True, True, False]  # defines, forward, the first gradient
    lines = open(path).read().splitlines()
    line = next(i for i, s in enumerate(lines, 1) if "raise NotImplementedError" in s)
    assert report.not_implemented == (f"cross_entropy.py, line {line} (raise NotImplementedError) "
                                      "raises NotImplementedError")
    assert not report.passed and report.diagnosis == []


def test_other_exceptions_do_not_stop_the_run():
    def broken():
        raise KeyError("x")

    report = run_checks("t", "f.py", [("broken", broken), ("after", lambda: "note")])
    assert failed(report) == ["broken"] and report.checks[1].passed and not report.not_implemented
    assert report.checks[0].message.startswith("raised KeyError: 'x'") and report.checks[0].diagnosis == []


def test_run_checks_names_a_T_on_a_batched_array_from_the_exception():
    ds, q = np.ones((2, 3, 4)), np.ones((2, 3, 2))

    def transposed():
        return run_student("T", lambda: ds.T @ q)

    def plain():
        return run_student("plain", lambda: ds @ q.swapaxes(-1, -2) @ np.ones((5, 5)))

    with transcript(Transcript("live", __file__)):  # this file plays the student's
        report = run_checks("t", __file__, [("T", transposed), ("plain", plain)])
    assert report.checks[0].diagnosis == ["dot_t_on_batched"] and "matmul" in report.checks[0].message
    assert report.checks[1].diagnosis == [] and "matmul" in report.checks[1].message
