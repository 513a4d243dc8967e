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
    np.testing.assert_array_equal(a.grad, b.numpy())


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


@pytest.mark.parametrize("inputs,says", [
    pytest.param([np.array([1, 2, 3])], r"x \(input 0\) holds int64 values \(shape \(3,\)\)", id="int-array"),
    pytest.param([mg.tensor(np.array([[1, 2]]))], r"x \(input 0\) holds int64 values \(shape \(1, 2\)\)",
                 id="int-tensor"),
    pytest.param([mg.tensor([1.0, 2.0])], r"x \(input 0\) is a float32 tensor \(shape \(2,\)\) with "
                 "requires_grad=False", id="no-requires-grad"),
])
def test_no_checkable_input_is_an_error_that_names_each_input(inputs, says):
    # A parameter inside fn makes the output require grad, so without this check gradcheck
    # would compare nothing and return True.
    w = mg.tensor([2.0], requires_grad=True)
    with pytest.raises(GradcheckError, match=says) as err:
        mg.gradcheck(lambda x: x * w, inputs)
    assert err.value.args[0].startswith("gradcheck: no input to check: ")
    assert "requires_grad=True" in err.value.args[0] and "\n" not in err.value.args[0]


# ----------------------------------------------------------------------------- reports for learners


class AttentionDkTransposed(Function):
    """softmax(q k^T / sqrt(d)) v with dk returned transposed (broken on purpose; square case)."""

    @staticmethod
    def forward(ctx, q, k, v):
        s = q @ k.T / np.sqrt(q.shape[-1])
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        ctx.save_for_backward(q, k, v, a)
        return a @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, a = ctx.saved
        da = g @ v.T
        ds = a * (da - (da * a).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
        return ds @ k, (ds.T @ q).T, a.T @ g


def test_report_names_inputs_by_parameter_and_shows_the_arrays():
    def attention(q, k, v):
        return AttentionDkTransposed.apply(q, k, v)

    rng = np.random.default_rng(0)
    with pytest.raises(GradcheckError) as info:
        mg.gradcheck(attention, [rng.normal(size=(3, 3)) for _ in range(3)])
    lines = str(info.value).splitlines()
    assert lines[0].startswith("gradcheck failed for k (input 1, shape (3, 3)) at element (0, 1):")
    assert lines[1].lstrip().startswith("analytic")
    assert lines[2] == "    6 of 9 elements disagree"  # the diagonal of a transpose is right
    assert lines[3].split() == ["analytic", "numeric", "difference"]
    assert lines[-1] == "    pattern: analytic is the transpose of numeric (last two axes swapped)"


def test_inputs_without_parameter_names_are_numbered():
    # Function.apply takes *inputs: no names, so the report keeps "input i".
    with pytest.raises(GradcheckError, match=r"^gradcheck failed for input 0 \(shape"):
        mg.gradcheck(MulIgnoresG.apply, [np.ones((2, 2)), np.ones((2, 2))])


def test_large_inputs_give_the_count_but_no_arrays():
    x = np.linspace(-1, 1, 65)
    with pytest.raises(GradcheckError) as info:
        mg.gradcheck(lambda t: MulIgnoresG.apply(t, t), [x])
    report = str(info.value)
    assert "elements disagree" in report and "difference" not in report


@pytest.mark.parametrize("analytic, numeric, pattern", [
    pytest.param([[1.0, 2.0], [3.0, 4.0]], [[1.0, 3.0], [2.0, 4.0]], "transpose", id="transposed"),
    pytest.param([1.0, -2.0, 3.0], [-1.0, 2.0, -3.0], "sign error", id="sign"),
    pytest.param([2.0, -4.0, 6.0], [1.0, -2.0, 3.0], "2 * numeric", id="factor"),
    pytest.param([[1.5, 2.5], [2.0, 3.0]], [[1.0, 2.0], [3.0, 4.0]], "each row", id="per-row"),
    pytest.param([0.0, 0.0], [1.0, 2.0], "all zero", id="zero"),
    pytest.param([1.0, 5.0, 2.0], [3.0, 1.0, 4.0], "", id="none"),
])
def test_the_pattern_hint(analytic, numeric, pattern):
    from minigrad.gradcheck import describe_pattern

    found = describe_pattern(np.array(analytic), np.array(numeric))
    assert (pattern in found) if pattern else found == ""
