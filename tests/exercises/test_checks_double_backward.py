"""Each check of double_backward decides an outcome on its own: a correct file passes every check;
for every check a student file that fails it, with the exact list of checks it fails (so a check
made to always pass, or a changed order, breaks a row); the forward's tolerance pinned by two
files, one just inside and one just outside; and the stub as given fails cleanly, as not
implemented yet."""

from types import SimpleNamespace

import pytest
from test_diagnoses_double_backward import KEPT, RIGHT, VALUES
from wrongfile import assert_fails_exactly, edited_file, failed, student_file

from minigrad.exercises import TASKS, grade

FORWARD = "forward (given) unchanged"
WORKED, GRADCHECK = "gradients on the worked case", "gradcheck (finite differences"
CASES = "gradients match the reference on random shapes"
SECOND_WORKED = "second derivatives on the worked case"
GRADGRADCHECK = "gradgradcheck (finite differences of the first derivative)"
SECOND_CASES = "second derivatives match the reference on random shapes"
FIRST_ORDER = (WORKED, GRADCHECK, CASES)
SECOND_ORDER = (SECOND_WORKED, GRADGRADCHECK, SECOND_CASES)
LINE = "y = 1 / (1 + np.exp(-x))"
DECLARED = ("    differentiable_backward = True  # the backward is called with Tensors under "
            "create_graph=True\n")


def scaled_forward(eps: str) -> list[tuple[str, str]]:
    return [(LINE, f"y = (1 + {eps}) / (1 + np.exp(-x))")]


ROWS = [
    # the backward's body, edits (old, new) of the code the stub gives, the checks it fails, the diagnosis
    ("right", RIGHT, [], (), []),
    ("right-factored", "return y * (1 - y) * g", [], (), []),
    ("right-expanded", "return g * y - g * y * y", [], (), []),
    ("forward-outside", RIGHT, scaled_forward("1e-9"), (FORWARD,), []),  # rtol 1e-10
    ("forward-inside", RIGHT, scaled_forward("1e-11"), (), []),
    ("sign", "return -g * y * (1 - y)", [], FIRST_ORDER + SECOND_ORDER, ["sign_error"]),
    ("ignores-g", "return y * (1 - y)", [], FIRST_ORDER + SECOND_ORDER, ["ignores_upstream_grad"]),
    ("tensor-path-differs",  # right on arrays, g * y on Tensors: a first derivative whose own derivatives
     # are right, so gradgradcheck passes it; the reference does not
     "return g * y * (1 - y) if isinstance(g, np.ndarray) else g * y", [], (SECOND_WORKED, SECOND_CASES), []),
    ("not-declared", RIGHT, [(DECLARED, "")], SECOND_ORDER, []),
    ("numpy-given-tensor", "y = np.asarray(y)\n" + RIGHT, [], SECOND_ORDER, ["array_in_graph"]),
    ("detached", VALUES + "v = either.values(y)\nreturn g * v * (1 - v)", [], SECOND_ORDER,
     ["detached_intermediate"]),
    ("kept-on-ctx", "return g * ctx.y * (1 - ctx.y)", [(KEPT, KEPT + "\n        ctx.y = y")], SECOND_ORDER,
     ["detached_intermediate"]),
    ("missing-term", VALUES + "return g * y * (1 - either.values(y))", [], SECOND_ORDER,
     ["missing_product_term"]),
    ("second-order-factor",  # right first derivative, second derivative twice the right one
     VALUES + "v = either.values(y)\nreturn g * v * (1 - v) + 2 * g * (y * (1 - y) - v * (1 - v))", [],
     SECOND_ORDER, ["factor_error"]),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("body, edits, fails, codes", [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_each_check_decides_on_its_own(tmp_path, body, edits, fails, codes):
    report = grade("double_backward", edited_file(tmp_path, "double_backward", body, edits))
    assert_fails_exactly(report, fails, codes)


def test_every_check_is_failed_by_some_row():
    stub = SimpleNamespace(**{n: None for n in TASKS["double_backward"].defines})
    names = [name for name, _ in TASKS["double_backward"].checks(stub)]
    assert [n for n in names if not any(n.startswith(f) for r in ROWS for f in r[3])] == []
    assert names[1:4] == [n for n in names if n.startswith(FIRST_ORDER)]
    assert names[4:] == [n for n in names if n.startswith(SECOND_ORDER)]


def test_the_correct_file_passes_every_check(tmp_path):
    report = grade("double_backward", student_file(tmp_path, "double_backward", RIGHT))
    assert report.passed and failed(report) == [] and report.diagnosis == [], report.text()
    assert [c.name for c in report.checks][1:] == [n for n, _ in TASKS["double_backward"].checks(
        SimpleNamespace(Sigmoid=None))]


def test_the_stub_as_given_fails_cleanly(tmp_path):
    path = tmp_path / "double_backward.py"
    path.write_text(TASKS["double_backward"].stub())
    report = grade("double_backward", str(path))
    assert not report.passed and report.not_implemented and report.diagnosis == []
    assert "raises NotImplementedError" in report.not_implemented
    assert [c.passed for c in report.checks] == [True, True, False]  # defines, forward, then the backward
    assert report.checks[-1].message == "not implemented yet"


def test_the_words_of_a_wrong_first_derivative_follow_the_first_order_checks(tmp_path):
    wrong_everywhere = grade("double_backward", student_file(tmp_path, "double_backward",
                                                             "return -g * y * (1 - y)"))
    assert "(as on arrays: see the first-order checks)" in wrong_everywhere.checks[-3].message
    only_tensors = grade("double_backward", student_file(
        tmp_path, "double_backward", "return g * y * (1 - y) if isinstance(g, np.ndarray) else g * y"))
    said = only_tensors.checks[-3].message
    assert "(on arrays it is right: the Tensor path computes something else)" in said


def test_the_stub_states_its_number_and_the_math():
    stub = TASKS["double_backward"].stub()
    assert stub.splitlines()[0].startswith('"""Exercise 16 · double_backward:')
    assert TASKS["double_backward"].number == 16
    for needed in ("differentiable_backward = True", "ctx.save_for_backward(y)", "y (1 - y) (1 - 2y)",
                   "minigrad exercise check double_backward"):
        assert needed in stub
