"""The activations added after the first ones (nn/activation.py): relu6, hardsigmoid, hardswish,
selu, celu, glu, softsign, tanhshrink, threshold, softshrink, hardshrink, rrelu, prelu and
Softmax2d, with their modules. Gradient checks on hypothesis shapes (size-1 and 0-d, prelu's
weight broadcast over dim 1), the values and gradients at the kinks and at huge and infinite
inputs (written out from the math), the in-place forms, and the argument errors. The same
functions against PyTorch: tests/export/test_more_activations_vs_torch.py."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.testing import arrays, shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _rrelu_training(t):
    mg.manual_seed(0)  # the same slopes at every call, so finite differences see one function
    return F.rrelu(t, 0.1, 0.4, training=True)


# (function of one tensor, the kinks to keep finite differences away from)
POINTWISE = [
    pytest.param(F.relu6, (0.0, 6.0), id="relu6"),
    pytest.param(F.hardsigmoid, (-3.0, 3.0), id="hardsigmoid"),
    pytest.param(F.hardswish, (-3.0, 3.0), id="hardswish"),
    pytest.param(F.selu, (0.0,), id="selu"),
    pytest.param(F.celu, (0.0,), id="celu"),
    pytest.param(lambda t: F.celu(t, 0.5), (0.0,), id="celu-alpha"),
    pytest.param(F.softsign, (0.0,), id="softsign"),
    pytest.param(F.tanhshrink, (), id="tanhshrink"),
    pytest.param(lambda t: F.threshold(t, 0.5, -2.0), (0.5,), id="threshold"),
    pytest.param(F.softshrink, (-0.5, 0.5), id="softshrink"),
    pytest.param(lambda t: F.softshrink(t, 2.0), (-2.0, 2.0), id="softshrink-lambd"),
    pytest.param(F.hardshrink, (-0.5, 0.5), id="hardshrink"),
    pytest.param(lambda t: F.hardshrink(t, 1.5), (-1.5, 1.5), id="hardshrink-lambd"),
    pytest.param(F.rrelu, (0.0,), id="rrelu-eval"),
    pytest.param(_rrelu_training, (0.0,), id="rrelu-training"),
]


@pytest.mark.parametrize("fn, kinks", POINTWISE)
@fewer
@given(data=st.data())
def test_pointwise_gradcheck(fn, kinks, data):
    x = data.draw(arrays(shapes(), -8, 8).filter(lambda a: all(np.all(np.abs(a - k) > 1e-3) for k in kinks)))
    assert mg.gradcheck(fn, [mg.tensor(x, requires_grad=True)])


@fewer
@given(data=st.data())
def test_glu_gradcheck_halves_any_dim(data):
    shape = list(data.draw(shapes(min_dims=1)))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape[dim] *= 2  # an even size along dim: 2, 4 or 6
    x = data.draw(arrays(tuple(shape)))
    out = F.glu(mg.tensor(x), dim)
    half = list(shape)
    half[dim] //= 2
    assert out.shape == tuple(half)
    assert mg.gradcheck(lambda t: F.glu(t, dim), [mg.tensor(x, requires_grad=True)])


@st.composite
def prelu_cases(draw):
    """(input shape, weight shape): (N, C, *) with a weight of C entries, one entry ((1,) or ()),
    and inputs of 0 or 1 dimensions with one entry."""
    shape = draw(shapes())
    if len(shape) >= 2 and draw(st.booleans()):
        return shape, (shape[1],)
    return shape, draw(st.sampled_from([(1,), ()]))


@fewer
@given(case=prelu_cases(), data=st.data())
def test_prelu_gradcheck_weight_broadcast_over_dim_1(case, data):
    shape, wshape = case
    x = data.draw(arrays(shape, away_from_zero=1e-3))
    w = data.draw(arrays(wshape, 0.05, 0.9))
    assert mg.gradcheck(F.prelu, [mg.tensor(x, requires_grad=True), mg.tensor(w, requires_grad=True)])


@fewer
@given(data=st.data())
def test_softmax2d_gradcheck_over_the_channels(data):
    shape = data.draw(shapes(min_dims=3, max_dims=4))
    x = data.draw(arrays(shape))
    out = nn.Softmax2d()(mg.tensor(x))
    np.testing.assert_allclose(out.numpy().sum(axis=-3), 1.0, rtol=1e-12)
    assert mg.gradcheck(nn.Softmax2d(), [mg.tensor(x, requires_grad=True)])


def test_prelu_module_gradcheck_and_weight():
    m = nn.PReLU(3, init=0.1)
    assert m.weight.shape == (3,) and m.weight.dtype == np.float32
    assert np.all(m.weight.numpy() == np.float32(0.1))
    assert list(m.state_dict()) == ["weight"] and repr(m) == "PReLU(num_parameters=3)"
    x = np.random.default_rng(0).uniform(0.2, 2.0, (2, 3, 2)) * np.array([1, -1])
    m.weight.data = np.array([0.1, 0.5, 2.0], np.float32)
    assert gradcheck_module(m, mg.tensor(x, requires_grad=True))
    m.reset_parameters()
    assert np.all(m.weight.numpy() == 0.1)


# ----------------------------------------------------------------------------- kinks and extremes

INF, NAN = math.inf, math.nan


def value_and_grad(fn, x, dtype):
    t = mg.tensor(np.array(x, dtype=dtype), requires_grad=True)
    y = fn(t)
    y.backward(mg.ones(*y.shape, dtype=dtype))
    assert y.dtype == dtype and t.grad.dtype == dtype
    return y.numpy(), t.grad


# (function, inputs, the values, the gradients): the kinks themselves take torch's one-sided rule
EDGES = [
    pytest.param(F.relu6, [-INF, -1e30, 0, 3, 6, 1e30, INF], [0, 0, 0, 3, 6, 6, 6], [0, 0, 0, 1, 0, 0, 0],
                 id="relu6"),
    pytest.param(F.hardsigmoid, [-INF, -1e30, -3, 0, 3, 1e30, INF], [0, 0, 0, 0.5, 1, 1, 1],
                 [0, 0, 0, 1 / 6, 0, 0, 0], id="hardsigmoid"),
    pytest.param(F.hardswish, [-INF, -1e30, -3, -1.5, 0, 3, 1e30, INF], [0, 0, 0, -0.375, 0, 3, 1e30, INF],
                 [0, 0, 0, 0, 0.5, 1, 1, 1], id="hardswish"),
    pytest.param(F.selu, [-INF, -1e30, 0, 1e30, INF],
                 [-SELU_SCALE * SELU_ALPHA, -SELU_SCALE * SELU_ALPHA, 0, SELU_SCALE * 1e30, INF],
                 [0, 0, SELU_SCALE * SELU_ALPHA, SELU_SCALE, SELU_SCALE], id="selu"),
    pytest.param(lambda t: F.celu(t, 0.5), [-INF, -1e30, -1e-20, 0, 1e30, INF],  # expm1 keeps -1e-20
                 [-0.5, -0.5, -1e-20, 0, 1e30, INF], [0, 0, 1, 1, 1, 1], id="celu"),
    # softsign's gradient 1/(1+|x|) - |x|/(1+|x|)^2 (torch's too, the same composition) is 1e-60 at 1e30,
    # rounded to 0
    pytest.param(F.softsign, [-1e30, -1, 0, 1, 1e30], [-1, -0.5, 0, 0.5, 1], [0, 0.25, 1, 0.25, 0],
                 id="softsign"),
    pytest.param(F.tanhshrink, [-INF, -1e30, 0, 1e30, INF], [-INF, -1e30, 0, 1e30, INF], [1, 1, 0, 1, 1],
                 id="tanhshrink"),
    pytest.param(lambda t: F.threshold(t, 1.0, -2.0), [-INF, 1, 1.5, 1e30, INF], [-2, -2, 1.5, 1e30, INF],
                 [0, 0, 1, 1, 1], id="threshold"),
    pytest.param(F.softshrink, [-INF, -1e30, -0.5, 0, 0.5, 0.75, 1e30, INF],
                 [-INF, -1e30, 0, 0, 0, 0.25, 1e30, INF], [1, 1, 0, 0, 0, 1, 1, 1], id="softshrink"),
    pytest.param(F.hardshrink, [-INF, -0.75, -0.5, 0, 0.5, 0.75, INF], [-INF, -0.75, 0, 0, 0, 0.75, INF],
                 [1, 1, 0, 0, 0, 1, 1], id="hardshrink"),
    pytest.param(F.rrelu, [-INF, -1e30, 0, 1e30, INF], [-INF, -1e30 * 11 / 48, 0, 1e30, INF],
                 [11 / 48, 11 / 48, 11 / 48, 1, 1], id="rrelu-eval"),
    pytest.param(lambda t: F.prelu(t, mg.tensor(np.array([0.25], t.dtype))), [-INF, -1e30, 0, 1e30, INF],
                 [-INF, -0.25e30, 0, 1e30, INF], [0.25, 0.25, 0.25, 1, 1], id="prelu"),
]


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-15), (np.float32, 1e-6)], ids=["float64", "float32"])
@pytest.mark.parametrize("fn, x, values, grads", EDGES)
def test_kinks_huge_and_infinite_inputs(fn, x, values, grads, dtype, rtol):
    y, g = value_and_grad(fn, x, dtype)
    np.testing.assert_allclose(y, np.array(values, dtype), rtol=rtol, atol=0)
    np.testing.assert_allclose(g, np.array(grads, dtype), rtol=rtol, atol=0)


@pytest.mark.parametrize("fn", [
    F.relu6, F.hardsigmoid, F.hardswish, F.selu, F.celu, F.softsign, F.tanhshrink, F.softshrink, F.hardshrink,
    F.rrelu, lambda t: F.threshold(t, 0.0, 1.0)], ids=lambda f: getattr(f, "__name__", "threshold"))
def test_nan_stays_nan(fn):
    y = fn(mg.tensor([NAN, 1.0]))
    assert np.isnan(y.numpy()[0]) and not np.isnan(y.numpy()[1])


def test_softsign_of_inf_is_nan_as_torch():
    """x / (1 + |x|) is inf / inf at +-inf: NaN, in torch too (its softsign is this quotient)."""
    with np.errstate(invalid="ignore"):
        y, g = value_and_grad(F.softsign, [-INF, INF], np.float64)
    assert np.isnan(y).all() and np.isnan(g).all()


def test_prelu_weight_gradient_is_finite_beside_inf_and_sums_the_negative_part():
    x = mg.tensor([[INF, -2.0], [0.0, -1.0]], requires_grad=True)  # (N, C) = (2, 2)
    w = mg.tensor([0.25, 0.5], requires_grad=True)
    F.prelu(x, w).sum().backward()
    np.testing.assert_array_equal(w.grad, [0.0, -3.0])  # channel 0: inf and 0 add nothing
    np.testing.assert_array_equal(x.grad, [[1.0, 0.5], [0.25, 0.5]])


def test_glu_of_huge_and_infinite_halves():
    a = np.array([1e30, -INF, 3.0, 2.0])
    b = np.array([100.0, 50.0, -INF, INF])
    y, g = value_and_grad(F.glu, np.concatenate([a, b]), np.float64)
    np.testing.assert_array_equal(y, [1e30, -INF, 0.0, 2.0])
    assert np.isfinite(g[[2, 3, 6, 7]]).all()


def test_softmax2d_of_huge_values_is_exact():
    x = mg.tensor(np.array([1e30, 0.0, -1e30], np.float32).reshape(3, 1, 1), requires_grad=True)
    y = nn.Softmax2d()(x)
    y.backward(mg.ones(3, 1, 1))
    np.testing.assert_array_equal(y.numpy().ravel(), [1, 0, 0])
    assert np.isfinite(x.grad).all()


def test_rrelu_training_draws_slopes_in_the_range_and_uses_them_as_gradient():
    mg.manual_seed(0)
    x = mg.tensor(-np.linspace(0.5, 2.0, 50), requires_grad=True)
    y = F.rrelu(x, 0.2, 0.3, training=True)
    y.backward(mg.ones(50, dtype=np.float64))
    slopes = y.numpy() / x.numpy()
    assert np.all((slopes >= 0.2) & (slopes <= 0.3)) and len(set(slopes.round(12))) > 40
    np.testing.assert_allclose(x.grad, slopes, rtol=1e-12)
    mg.manual_seed(0)
    np.testing.assert_array_equal(F.rrelu(x, 0.2, 0.3, training=True).numpy(), y.numpy())
    np.testing.assert_array_equal(F.rrelu(mg.tensor([1.0, 2.0]), training=True).numpy(), [1.0, 2.0])
    m = nn.RReLU(0.2, 0.3)
    assert m.training and not np.allclose(m(x).numpy() / x.numpy(), 0.25)
    with nn.evaluating(m):
        np.testing.assert_allclose(m(x).numpy() / x.numpy(), 0.25, rtol=1e-12)


# ----------------------------------------------------------------------------- in place


INPLACE = [
    pytest.param(F.relu6, {}, id="relu6"), pytest.param(F.hardsigmoid, {}, id="hardsigmoid"),
    pytest.param(F.hardswish, {}, id="hardswish"), pytest.param(F.selu, {}, id="selu"),
    pytest.param(F.celu, {"alpha": 0.7}, id="celu"),
    pytest.param(F.threshold, {"threshold": 0.1, "value": -1.0}, id="threshold"),
    pytest.param(F.rrelu, {}, id="rrelu"), pytest.param(F.relu, {}, id="relu"),
    pytest.param(F.elu, {}, id="elu"),
    pytest.param(F.leaky_relu, {"negative_slope": 0.2}, id="leaky_relu"),
    pytest.param(F.hardtanh, {}, id="hardtanh"), pytest.param(F.silu, {}, id="silu"),
    pytest.param(F.mish, {}, id="mish"),
]


@pytest.mark.parametrize("fn, options", INPLACE)
def test_inplace_writes_into_the_input_with_the_same_gradient(fn, options):
    a = np.array([-4.0, -1.0, 0.3, 2.0, 7.0])
    g = mg.tensor(np.arange(1.0, 6.0))
    x1, x2 = mg.tensor(a, requires_grad=True), mg.tensor(a, requires_grad=True)
    h = x1 * 2
    out = fn(h, **options, inplace=True)
    assert out is h
    expected = fn(x2 * 2, **options)
    np.testing.assert_array_equal(h.numpy(), expected.numpy())
    out.backward(g)
    expected.backward(g)
    np.testing.assert_array_equal(x1.grad, x2.grad)


@pytest.mark.parametrize("fn, options", INPLACE)
def test_inplace_on_a_leaf_that_requires_grad_is_refused(fn, options):
    with pytest.raises(RuntimeError, match=r"_: a leaf tensor that requires grad"):
        fn(mg.tensor([1.0, -1.0], requires_grad=True), **options, inplace=True)
    with mg.no_grad():
        x = mg.tensor([1.0, -1.0], requires_grad=True)
        assert fn(x, **options, inplace=True) is x


@pytest.mark.parametrize("module, inplace_repr", [
    (nn.ReLU(inplace=True), "ReLU(inplace=True)"), (nn.ReLU6(inplace=True), "ReLU6(inplace=True)"),
    (nn.ELU(0.5, inplace=True), "ELU(alpha=0.5, inplace=True)"), (nn.SELU(True), "SELU(inplace=True)"),
    (nn.CELU(2.0, True), "CELU(alpha=2.0, inplace=True)"), (nn.Hardswish(True), "Hardswish(inplace=True)"),
    (nn.Hardsigmoid(True), "Hardsigmoid(inplace=True)"), (nn.SiLU(True), "SiLU(inplace=True)"),
    (nn.Mish(True), "Mish(inplace=True)"),
    (nn.LeakyReLU(0.1, True), "LeakyReLU(negative_slope=0.1, inplace=True)"),
    (nn.Hardtanh(-2.0, 2.0, True), "Hardtanh(min_val=-2.0, max_val=2.0, inplace=True)"),
    (nn.Threshold(0.1, 20.0, True), "Threshold(threshold=0.1, value=20.0, inplace=True)"),
    (nn.RReLU(0.1, 0.2, True), "RReLU(lower=0.1, upper=0.2, inplace=True)"),
])
def test_modules_with_inplace_write_into_their_input(module, inplace_repr):
    assert repr(module) == inplace_repr
    x = mg.tensor([-1.0, 0.5, 2.0])
    with nn.evaluating(module):
        assert module(x) is x


def test_module_reprs_without_inplace_stay_short():
    assert [repr(m) for m in (nn.ReLU(), nn.ELU(), nn.ReLU6(), nn.SELU(), nn.GLU(), nn.Softshrink(),
                              nn.Hardshrink(0.3), nn.Softsign(), nn.Tanhshrink(), nn.Softmax2d())] == [
        "ReLU()", "ELU(alpha=1.0)", "ReLU6()", "SELU()", "GLU(dim=-1)", "Softshrink(lambd=0.5)",
        "Hardshrink(lambd=0.3)", "Softsign()", "Tanhshrink()", "Softmax2d()"]


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.celu(mg.zeros(2), 0.0), ZeroDivisionError, "celu: alpha cannot be 0"),
    (lambda: F.softshrink(mg.zeros(2), -0.5), ValueError, "softshrink: lambd must be at least 0"),
    (lambda: nn.Softshrink(-1.0), ValueError, "Softshrink: lambd must be at least 0"),
    (lambda: F.glu(mg.zeros(2, 3)), ValueError, r"dimension 1 of the input of shape \(2, 3\) is size 3"),
    (lambda: F.glu(mg.zeros(())), ValueError, "glu: a 0-d input"),
    (lambda: F.glu(mg.zeros(2, 4), 2), IndexError, r"glu: dim 2 is out of range .* \(2, 4\)"),
    (lambda: F.prelu(mg.zeros(2, 4), mg.zeros(3)), ValueError,
     r"prelu: the weight of shape \(3,\) must have 1 element or one per channel \(dim 1\): 4"),
    (lambda: F.prelu(mg.zeros(3), mg.zeros(3)), ValueError, r"one per channel \(dim 1\): 1"),
    (lambda: F.prelu(mg.zeros(2, 2), mg.zeros(2, 1)), ValueError, "prelu: the weight must be a number or 1"),
    (lambda: F.prelu(np.zeros(2), mg.zeros(1)), TypeError, "prelu: the input is a numpy array"),
    (lambda: nn.PReLU(0), ValueError, "PReLU: num_parameters must be a positive integer"),
    (lambda: nn.Softmax2d()(mg.zeros(2, 3)), ValueError, r"Softmax2d: .* shape \(2, 3\)"),
    (lambda: F.rrelu(mg.zeros(2), 0.5, 0.1), ValueError, "rrelu: lower 0.5 must not exceed upper 0.1"),
    (lambda: nn.RReLU(0.5, 0.1), ValueError, "RReLU: lower"),
    (lambda: F.hardswish(mg.tensor(np.zeros(2, dtype=np.int64))), TypeError, "hardswish: the input has"),
    (lambda: F.selu([1.0]), TypeError, "selu: the input is a list"),
])
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
