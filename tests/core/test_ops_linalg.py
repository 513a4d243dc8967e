"""Matrix products: 1-D, 2-D and batched operands with broadcast batch axes, reflected @, and
the error for operands that do not fit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, broadcastable_shapes

# Values are cheap to compare and the gradient tests draw the same inputs: a third of the
# profile's examples (at least 10) keeps the suite fast.
fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

side = st.integers(1, 3)

# How the operand shapes are built from (batch_a, batch_b, n, k, m); batch shapes broadcast.
LAYOUTS = [
    pytest.param(lambda ba, bb, n, k, m: ((k,), (k,)), id="1d@1d"),
    pytest.param(lambda ba, bb, n, k, m: ((k,), (k, m)), id="1d@2d"),
    pytest.param(lambda ba, bb, n, k, m: ((n, k), (k,)), id="2d@1d"),
    pytest.param(lambda ba, bb, n, k, m: ((n, k), (k, m)), id="2d@2d"),
    pytest.param(lambda ba, bb, n, k, m: ((*ba, n, k), (k, m)), id="batched@2d"),
    pytest.param(lambda ba, bb, n, k, m: ((n, k), (*bb, k, m)), id="2d@batched"),
    pytest.param(lambda ba, bb, n, k, m: ((*ba, n, k), (*bb, k, m)), id="batched@batched-broadcast"),
    pytest.param(lambda ba, bb, n, k, m: ((k,), (*bb, k, m)), id="1d@batched"),
    pytest.param(lambda ba, bb, n, k, m: ((*ba, n, k), (k,)), id="batched@1d"),
]


def draw_operands(data, layout):
    batch_a, batch_b = data.draw(broadcastable_shapes(2, min_dims=1, max_dims=2), label="batch shapes")
    n, k, m = data.draw(side, label="n"), data.draw(side, label="k"), data.draw(side, label="m")
    shape_a, shape_b = layout(batch_a, batch_b, n, k, m)
    return data.draw(arrays(shape_a), label="a"), data.draw(arrays(shape_b), label="b")


@pytest.mark.parametrize("layout", LAYOUTS)
@given(data=st.data())
def test_matmul_gradcheck(layout, data):
    a, b = draw_operands(data, layout)
    assert mg.gradcheck(lambda x, y: x @ y, [a, b])


@pytest.mark.parametrize("layout", LAYOUTS)
@fewer_examples
@given(data=st.data())
def test_matmul_forward_matches_numpy(layout, data):
    a, b = (v.astype(np.float32) for v in draw_operands(data, layout))
    out = mg.tensor(a).matmul(mg.tensor(b))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, a @ b, rtol=1e-5, atol=1e-6)


def test_matmul_gradient_of_one_operand_only():
    a = mg.tensor(np.arange(6.0).reshape(2, 3))
    b = mg.tensor(np.ones((2, 3, 2)), requires_grad=True)
    (a @ b).backward(np.ones((2, 2, 2)))
    np.testing.assert_array_equal(b.grad, np.broadcast_to(a.data.sum(0)[:, None], (2, 3, 2)))
    assert a.grad is None


@pytest.mark.parametrize("shape_a, shape_b", [
    pytest.param((2, 0), (0, 3), id="empty-inner"),
    pytest.param((0, 2), (2, 3), id="empty-rows"),
    pytest.param((2, 0, 2), (2, 3), id="empty-batch-rows"),
])
def test_matmul_with_empty_axes(shape_a, shape_b):
    a, b = mg.ones(*shape_a, requires_grad=True), mg.ones(*shape_b, requires_grad=True)
    out = a @ b
    np.testing.assert_array_equal(out.data, np.ones(shape_a) @ np.ones(shape_b))  # a sum of nothing is 0
    out.backward(np.ones(out.shape))
    assert a.grad.shape == shape_a and b.grad.shape == shape_b
    np.testing.assert_array_equal(b.grad, np.zeros(shape_b))


@pytest.mark.parametrize("expr, shape", [
    pytest.param(lambda x: np.ones((2, 3)) @ x, (2, 4), id="numpy-left"),
    pytest.param(lambda x: x.T @ np.ones((3, 2)), (4, 2), id="numpy-right"),
    pytest.param(lambda x: np.ones(3) @ x, (4,), id="numpy-vector-left"),
])
def test_matmul_with_numpy_operands(expr, shape):
    x = mg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    out = expr(x)
    assert isinstance(out, mg.Tensor) and out.shape == shape
    out.sum().backward()
    assert x.grad.shape == (3, 4)
    np.testing.assert_allclose(x.grad, np.full((3, 4), 2.0 if shape != (4,) else 1.0))


@pytest.mark.parametrize("shape_a, shape_b, match", [
    pytest.param((2, 3), (4, 5), r"matmul: \(2, 3\) @ \(4, 5\): inner dimensions 3 and 4 differ", id="2d"),
    pytest.param((3,), (2,), r"matmul: \(3,\) @ \(2,\): inner dimensions 3 and 2 differ", id="1d"),
    pytest.param((2, 2, 3), (3, 3, 1), r"batch dimensions \(2,\) and \(3,\) do not broadcast", id="batch"),
    pytest.param((), (3,), r"matmul: \(\) @ \(3,\): both operands need at least one dimension", id="0d"),
])
def test_matmul_shape_errors_name_both_shapes(shape_a, shape_b, match):
    with pytest.raises(ValueError, match=match):
        mg.zeros(shape_a) @ mg.zeros(shape_b)
