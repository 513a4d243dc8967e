"""gradcheck itself: it passes correct ops, rejects wrong backwards (one that ignores the
upstream gradient, one wrong in a single element) naming the input and element, and lets
integer and boolean inputs pass through."""

import numpy as np
import pytest
from hypothesis import given

import minigrad as mg
from minigrad import Function, GradcheckError
from minigrad.testing import arrays, broadcastable_shapes


class MulIgnoresG(Function):
    """z = a * b, with a backward that forgets g: da = b, db = a (broken on purpose)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return np.ones_like(g) * b, np.ones_like(g) * a


class MulWrongAtOneElement(Function):
    """z = a * b, with db off by one at element (1, 0) (broken on purpose)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        db = g * a
        db[1, 0] += 1.0
        return g * b, db


def test_rejects_a_backward_that_ignores_the_upstream_gradient():
    a, b = np.arange(1.0, 7.0).reshape(2, 3), np.linspace(-1, 1, 6).reshape(2, 3)
    report = r"gradcheck failed for input 0 \(shape \(2, 3\)\) at element \(0, 0\)"
    with pytest.raises(GradcheckError, match=report):
        mg.gradcheck(MulIgnoresG.apply, [a, b])
    assert mg.gradcheck(lambda x, y: x * y, [a, b])


def test_seeding_with_ones_would_miss_the_same_bug():
    # Why gradcheck draws a random upstream gradient: with g = 1 the broken rule is right.
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    b = mg.tensor([3.0, 4.0], requires_grad=True)
    MulIgnoresG.apply(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad, b.data)


def test_report_names_input_element_and_both_values():
    a, b = np.ones((2, 2)), np.full((2, 2), 2.0)
    with pytest.raises(GradcheckError) as info:
        mg.gradcheck(MulWrongAtOneElement.apply, [a, b])
    report = str(info.value)
    assert "input 1 (shape (2, 2)) at element (1, 0)" in report
    assert "analytic" in report and "numeric" in report and "error 1" in report
    assert mg.gradcheck(MulWrongAtOneElement.apply, [a, b], raise_exception=False) is False


@given(shapes=broadcastable_shapes())
def test_passes_correct_ops_on_broadcast_inputs(shapes):
    a, b = (np.random.default_rng(1).uniform(0.5, 2.0, s) for s in shapes)
    assert mg.gradcheck(lambda x, y: (x * y).tanh() / y + x.exp(), [a, b]) is True


def test_integer_and_boolean_inputs_pass_through_unchanged():
    seen = {}

    def pick(x, index, mask):
        seen["index"], seen["mask"] = index, mask
        return x[index].masked_fill(mask, 0.0)

    index = mg.tensor(np.array([0, 2, 2]))
    mask = mg.tensor([False, True, False])
    assert mg.gradcheck(pick, [np.array([1.0, 2.0, 3.0]), index, mask])
    assert seen["index"] is index and seen["mask"] is mask


@given(x=arrays((2,)))
def test_float32_inputs_are_checked_in_float64(x):
    dtypes = []

    def f(t):
        dtypes.append(t.dtype)
        return t * t

    assert mg.gradcheck(f, [x.astype(np.float32)])
    assert set(dtypes) == {np.dtype(np.float64)}


def test_checks_every_output_of_a_tuple():
    class SecondOutputWrong(Function):
        """z = 3x (its backward is right); the test pairs it with a correct op in a tuple."""

        @staticmethod
        def forward(ctx, x):
            return 3 * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = np.array([1.0, 2.0])
    assert mg.gradcheck(lambda t: (t * 2, t.exp()), [x])
    with pytest.raises(GradcheckError, match="input 0"):
        mg.gradcheck(lambda t: (t * 2, SecondOutputWrong.apply(t)), [x])


def test_an_output_that_does_not_depend_on_the_inputs_is_an_error():
    with pytest.raises(GradcheckError, match="does not depend on any checked input"):
        mg.gradcheck(lambda t: mg.tensor([1.0]), [np.array([1.0])])
