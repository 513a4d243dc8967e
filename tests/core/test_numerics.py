"""Gradients at numerical edges, as PyTorch defines them: std of a constant slice is 0 (not
NaN), logsumexp lets NaN and +inf through (only an all -inf row gives 0), and a tensor
`value` of masked_fill gets the gradients of the places it filled."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.testing import arrays, shape_and_broadcastable

NAN, INF = np.nan, np.inf


def grad_of(fn, values, g=None, dtype=np.float32):
    x = mg.tensor(np.asarray(values, dtype), requires_grad=True)
    out = fn(x)
    out.backward(np.ones(out.shape, dtype) if g is None else np.asarray(g, dtype))
    return out.numpy(), x.grad


# ----------------------------------------------------------------------------- std


def test_std_of_a_constant_slice_has_a_finite_gradient():
    # PyTorch 2.13: x / (x.std() + 1e-5) on [2, 2, 2] gives the gradient [1e5, 1e5, 1e5].
    out, dx = grad_of(lambda x: (x / (x.std() + 1e-5)).sum(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(out, 6e5, rtol=1e-6)
    np.testing.assert_allclose(dx, [1e5, 1e5, 1e5], rtol=1e-6)


def test_std_gradient_is_zero_only_on_the_constant_rows():
    # torch.tensor([[2., 2.], [1., 3.]]).std(dim=1, correction=0).backward([1., 2.]) -> [[0, 0], [-1, 1]]
    out, dx = grad_of(lambda x: x.std(dim=1, correction=0), [[2.0, 2.0], [1.0, 3.0]], g=[1.0, 2.0])
    np.testing.assert_array_equal(out, [0.0, 1.0])
    np.testing.assert_array_equal(dx, [[0.0, 0.0], [-1.0, 1.0]])


@pytest.mark.parametrize("keepdim", [False, True])
def test_std_gradient_away_from_zero_is_var_sqrt(keepdim):
    a = np.array([[0.5, -1.0, 2.0], [3.0, 3.0, 3.0], [1.0, 0.0, 4.0]])
    assert mg.gradcheck(lambda t: t[[0, 2]].std(dim=1, keepdim=keepdim), [a])
    _, by_std = grad_of(lambda x: x[[0, 2]].std(dim=-1, keepdim=keepdim), a, dtype=np.float64)
    _, by_var = grad_of(lambda x: x[[0, 2]].var(dim=-1, keepdim=keepdim).sqrt(), a, dtype=np.float64)
    np.testing.assert_allclose(by_std, by_var, rtol=1e-12)


def test_var_sqrt_keeps_sqrts_infinite_slope_at_zero():
    # Two ops, as in PyTorch (where x.var().sqrt() of [2, 2, 2] also gives NaN): only std is special.
    with np.errstate(all="ignore"):
        _, dx = grad_of(lambda x: x.var().sqrt(), [2.0, 2.0, 2.0])
    assert np.isnan(dx).all()


def test_std_of_one_element_is_nan_forward_and_backward():
    with np.errstate(all="ignore"):
        out, dx = grad_of(lambda x: x.std(), [4.0])  # n - correction = 0, as in PyTorch
    assert np.isnan(out) and np.isnan(dx).all()


def centered(x):
    return x - x.mean(-1, keepdim=True)


@pytest.mark.parametrize("norm", [
    pytest.param(lambda x: centered(x) / (x.var(-1, keepdim=True, correction=0) + 1e-5).sqrt(),
                 id="var-eps-sqrt"),
    pytest.param(lambda x: centered(x) / (x.std(-1, keepdim=True, correction=0) + 1e-5), id="std-plus-eps"),
])
def test_layer_norm_built_from_primitives_trains_on_constant_rows(norm):
    rows = np.array([[2.0, 2.0, 2.0, 2.0], [0.5, -1.0, 3.0, 0.0]], np.float32)
    g = np.array([[1.0, -2.0, 0.5, 3.0], [0.25, 1.0, -1.0, 2.0]], np.float32)
    out, dx = grad_of(norm, rows, g=g)
    assert np.isfinite(out).all() and np.isfinite(dx).all()
    # The constant row's output is 0 whatever the row's value; its gradient is finite.
    np.testing.assert_array_equal(out[0], 0.0)
    _, ref = grad_of(lambda x: F.layer_norm(x, 4, eps=1e-5), rows, g=g)
    np.testing.assert_allclose(dx[1], ref[1], rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- logsumexp


@pytest.mark.parametrize("x, value, grad", [
    pytest.param([NAN, 1.0, 2.0], NAN, [NAN, NAN, NAN], id="nan"),  # PyTorch: all NaN
    pytest.param([INF, 1.0, 2.0], INF, [NAN, 0.0, 0.0], id="plus-inf"),  # PyTorch: [nan, 0, 0]
    pytest.param([INF, -INF, 2.0], INF, [NAN, 0.0, 0.0], id="plus-and-minus-inf"),
    pytest.param([-INF, 0.0, -INF], 0.0, [0.0, 1.0, 0.0], id="some-minus-inf"),
    pytest.param([-INF, -INF, -INF], -INF, [0.0, 0.0, 0.0], id="all-minus-inf"),  # documented: 0
])
def test_logsumexp_lets_nan_through(x, value, grad):
    with np.errstate(all="ignore"):
        out, dx = grad_of(lambda t: t.logsumexp(dim=0), x)
    np.testing.assert_array_equal(out, np.float32(value))
    np.testing.assert_array_equal(dx, np.asarray(grad, np.float32))


def test_detect_anomaly_sees_a_nan_that_reaches_logsumexp():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (x.log() * mg.tensor([NAN, 1.0])).logsumexp(dim=0)
    with np.errstate(all="ignore"), pytest.raises(mg.AnomalyError, match="LogSumExp"):
        with mg.detect_anomaly():
            y.backward()


# ----------------------------------------------------------------------------- masked_fill


def test_masked_fill_value_gets_the_sum_of_the_filled_gradients():
    # PyTorch: x.masked_fill([T, F, T], v).backward([1., 2., 3.]) -> v.grad = 4, x.grad = [0, 2, 0]
    x = mg.tensor([2.0, 2.0, 2.0], requires_grad=True)
    v = mg.tensor(5.0, requires_grad=True)
    y = x.masked_fill(mg.tensor([True, False, True]), v)
    np.testing.assert_array_equal(y.numpy(), [5.0, 2.0, 5.0])
    y.backward(mg.tensor([1.0, 2.0, 3.0]))
    assert v.grad == 4.0 and v.grad.shape == ()
    np.testing.assert_array_equal(x.grad, [0.0, 2.0, 0.0])


def test_masked_fill_keeps_the_input_dtype_and_gives_value_its_own():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)  # float32
    v = mg.tensor(np.float64(-1.0), requires_grad=True)
    y = x.masked_fill(mg.tensor([[True], [False]]), v)  # the mask (2, 1) broadcasts over columns
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), [[-1.0, -1.0], [3.0, 4.0]])
    y.backward(np.array([[1.0, 2.0], [4.0, 8.0]], np.float32))
    assert v.grad == 3.0 and v.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, [[0.0, 0.0], [4.0, 8.0]])


def test_masked_fill_value_must_be_0d():
    with pytest.raises(ValueError, match=r"masked_fill: a tensor value must be 0-d, not of shape \(2,\)"):
        mg.ones(2).masked_fill(mg.tensor([True, False]), mg.tensor([1.0, 2.0]))


@given(data=st.data())
def test_masked_fill_with_a_tensor_value_gradcheck(data):
    shape, mask_shape = data.draw(shape_and_broadcastable(), label="shapes")
    x = data.draw(arrays(shape), label="x")
    v = data.draw(arrays(()), label="value")
    mask = data.draw(hnp.arrays(np.bool_, mask_shape), label="mask")
    assert mg.gradcheck(lambda t, w: (t * t).masked_fill(mg.tensor(mask), w * 3.0), [x, v])
