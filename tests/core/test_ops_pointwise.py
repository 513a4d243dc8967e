"""Pointwise ops with PyTorch's names (ops/pointwise.py): exp, log, sqrt, abs, tanh, sigmoid,
relu, clamp/clip, maximum/minimum, trigonometry, the exp/log variants, erf, atan2, hypot,
logaddexp, lerp, nan_to_num and the compositions (reciprocal, rsqrt, square, exp2): gradients
against finite differences, values against numpy, the edges of each domain, dtypes, and the
function forms (those of a few reductions, shape ops and matmul among them)."""

import math
import warnings

import numpy as np
import pytest
from domains import INF, INT, NAN, A, B, avoiding, grid, nonzero, off_steps, positive, values
from hypothesis import given, settings
from hypothesis import strategies as st
from op_checks import (
    binary_forward_in_float32,
    binary_gradcheck,
    edge_close,
    edge_exact,
    unary_forward_in_float32,
    unary_gradcheck,
)

import minigrad as mg
from minigrad.ops import pointwise
from minigrad.testing import arrays, broadcastable_shapes, dims, shapes, well_conditioned

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

# ----------------------------------------------------------------------------- input domains
# Shared domains (values, positive, ...) are in domains.py.

_erf = np.vectorize(math.erf, otypes=[np.float64])

# ----------------------------------------------------------------------------- tables
# (the op as called, its numpy reference, the input domain)

UNARY = [
    pytest.param(lambda x: x.exp(), np.exp, values(), id="exp"),
    pytest.param(lambda x: x.log(), np.log, positive(), id="log"),
    pytest.param(lambda x: x.sqrt(), np.sqrt, positive(), id="sqrt"),
    pytest.param(lambda x: x.abs(), np.abs, avoiding(0.0), id="abs"),
    pytest.param(lambda x: x.tanh(), np.tanh, values(), id="tanh"),
    pytest.param(lambda x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), values(), id="sigmoid"),
    pytest.param(lambda x: x.relu(), lambda a: np.maximum(a, 0), avoiding(0.0), id="relu"),
    pytest.param(lambda x: x.clip(-1.0, 1.0), lambda a: np.clip(a, -1, 1), avoiding(-1.0, 1.0), id="clip"),
    pytest.param(lambda x: x.clip(min=0.5), lambda a: np.maximum(a, 0.5), avoiding(0.5), id="clip-min"),
    pytest.param(lambda x: x.clamp(max=-0.5), lambda a: np.minimum(a, -0.5), avoiding(-0.5), id="clamp-max"),
    pytest.param(lambda x: x.maximum(0.5), lambda a: np.maximum(a, 0.5), avoiding(0.5), id="maximum-scalar"),
    pytest.param(lambda x: x.minimum(0.5), lambda a: np.minimum(a, 0.5), avoiding(0.5), id="minimum-scalar"),
    pytest.param(mg.sin, np.sin, values(), id="sin"),
    pytest.param(mg.cos, np.cos, values(), id="cos"),
    pytest.param(lambda x: x.tan(), np.tan, values(-1.2, 1.2), id="tan"),
    pytest.param(mg.asin, np.arcsin, values(-0.9, 0.9), id="asin"),
    pytest.param(lambda x: x.acos(), np.arccos, values(-0.9, 0.9), id="acos"),
    pytest.param(mg.atan, np.arctan, values(), id="atan"),
    pytest.param(mg.sinh, np.sinh, values(), id="sinh"),
    pytest.param(lambda x: x.cosh(), np.cosh, values(), id="cosh"),
    pytest.param(mg.exp2, np.exp2, values(), id="exp2"),
    pytest.param(lambda x: x.expm1(), np.expm1, values(), id="expm1"),
    pytest.param(mg.log2, np.log2, positive(), id="log2"),
    pytest.param(lambda x: x.log10(), np.log10, positive(), id="log10"),
    pytest.param(mg.log1p, np.log1p, values(-0.5, 3.0), id="log1p"),
    pytest.param(mg.rsqrt, lambda a: 1 / np.sqrt(a), positive(), id="rsqrt"),
    pytest.param(lambda x: x.reciprocal(), np.reciprocal, nonzero(), id="reciprocal"),
    pytest.param(mg.square, np.square, values(), id="square"),
    pytest.param(mg.erf, _erf, values(), id="erf"),
    pytest.param(lambda x: x.erf(), _erf, values(-6.5, 6.5), id="erf-tails"),
    pytest.param(lambda x: x.clamp_min(0.5), lambda a: np.maximum(a, 0.5), off_steps(0.5), id="clamp_min"),
    pytest.param(lambda x: mg.clamp_max(x, -0.5), lambda a: np.minimum(a, -0.5), off_steps(0.5),
                 id="clamp_max"),
    pytest.param(mg.nan_to_num, np.nan_to_num, values(), id="nan_to_num"),
    # the function forms of methods that already existed
    pytest.param(mg.exp, np.exp, values(), id="fn-exp"),
    pytest.param(mg.log, np.log, positive(), id="fn-log"),
    pytest.param(mg.sqrt, np.sqrt, positive(), id="fn-sqrt"),
    pytest.param(mg.tanh, np.tanh, values(), id="fn-tanh"),
    pytest.param(mg.sigmoid, lambda a: 1 / (1 + np.exp(-a)), values(), id="fn-sigmoid"),
    pytest.param(mg.relu, lambda a: np.maximum(a, 0), off_steps(), id="fn-relu"),
    pytest.param(mg.abs, np.abs, off_steps(), id="fn-abs"),
]


# (the op, its numpy reference, the domain of (a, b) as a function of their shapes)
BINARY = [
    pytest.param(mg.atan2, np.arctan2, lambda sa, sb: st.tuples(well_conditioned(sa), well_conditioned(sb)),
                 id="atan2"),
    pytest.param(lambda a, b: a.hypot(b), np.hypot,
                 lambda sa, sb: st.tuples(well_conditioned(sa), well_conditioned(sb)), id="hypot"),
    pytest.param(mg.logaddexp, np.logaddexp, lambda sa, sb: st.tuples(arrays(sa), arrays(sb)),
                 id="logaddexp"),
    pytest.param(mg.xlogy, lambda a, b: a * np.log(b),
                 lambda sa, sb: st.tuples(arrays(sa), arrays(sb, 0.1, 3)), id="xlogy"),
    # copysign's x off its kink at 0, y off the jump at 0
    pytest.param(mg.copysign, np.copysign, lambda sa, sb: st.tuples(
        arrays(sa, away_from_zero=0.1), arrays(sb, away_from_zero=0.1)), id="copysign"),
    pytest.param(lambda a, b: a.lerp(b, 0.25), lambda a, b: a + 0.25 * (b - a),
                 lambda sa, sb: st.tuples(arrays(sa), arrays(sb)), id="lerp-scalar-weight"),
    pytest.param(mg.clamp_min, np.maximum, lambda sa, sb: st.tuples(arrays(sa), arrays(sb)).filter(
        lambda p: bool(np.all(np.abs(p[0] - p[1]) >= 1e-2))), id="clamp_min-tensor"),
    pytest.param(mg.max, np.maximum, lambda sa, sb: st.tuples(arrays(sa), arrays(sb)).filter(
        lambda p: bool(np.all(np.abs(p[0] - p[1]) >= 1e-2))), id="fn-max-of-two"),
]

# (the op, its numpy reference, the domain of a, the domain of b): two grids that never tie
MAXIMUM_MINIMUM = [
    pytest.param(mg.maximum, np.maximum, grid(0.0), grid(0.5), id="maximum"),
    pytest.param(mg.minimum, np.minimum, grid(0.0), grid(0.5), id="minimum"),
]


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("fn, ref, domain", UNARY)
@given(data=st.data())
def test_unary_gradcheck(fn, ref, domain, data):
    unary_gradcheck(fn, domain, data)


@pytest.mark.parametrize("fn, ref, domain", BINARY)
@given(data=st.data())
def test_binary_gradcheck_with_broadcasting(fn, ref, domain, data):
    binary_gradcheck(fn, domain, data)


@pytest.mark.parametrize("fn, ref, domain_a, domain_b", MAXIMUM_MINIMUM)
@given(data=st.data())
def test_maximum_minimum_gradcheck_with_broadcasting(fn, ref, domain_a, domain_b, data):
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a = data.draw(domain_a(shape_a), label="a")
    b = data.draw(domain_b(shape_b), label="b")
    assert mg.gradcheck(fn, [a, b])


@given(data=st.data())
def test_lerp_gradcheck_with_a_tensor_weight(data):
    sa, sb, sw = data.draw(broadcastable_shapes(3), label="shapes")
    a, b, w = (data.draw(arrays(s), label=n) for s, n in ((sa, "start"), (sb, "end"), (sw, "weight")))
    assert mg.gradcheck(mg.lerp, [a, b, w])


@given(data=st.data())
def test_function_forms_of_reductions_and_shapes_gradcheck(data):
    x = data.draw(arrays(shapes(min_dims=2)), label="x")
    dim = data.draw(dims(x.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    assert mg.gradcheck(lambda t: mg.sum(t, dim=dim, keepdim=keepdim), [x])
    assert mg.gradcheck(lambda t: mg.mean(t, dim, keepdim), [x])
    assert mg.gradcheck(lambda t: mg.softmax(t, dim=-1), [x])
    assert mg.gradcheck(lambda t: mg.log_softmax(t, 0), [x])
    assert mg.gradcheck(lambda t: mg.transpose(t, 0, -1), [x])
    assert mg.gradcheck(lambda t: mg.permute(t, tuple(reversed(range(t.ndim)))), [x])
    assert mg.gradcheck(lambda t: mg.squeeze(mg.unsqueeze(mg.reshape(t, (-1,)), 0), 0), [x])
    w = data.draw(arrays((x.shape[-1], 2)), label="w")
    assert mg.gradcheck(mg.matmul, [x, w])


def test_function_forms_are_the_methods():
    """Each function form gives its method's value (the table above checks the gradients)."""
    x = mg.tensor([[1.0, -2.0, 3.5], [0.25, 4.0, -1.0]])
    np.testing.assert_array_equal(mg.max(x).numpy(), x.max().numpy())
    np.testing.assert_array_equal(mg.min(x, 1).values.numpy(), x.min(1).values.numpy())
    np.testing.assert_array_equal(mg.min(x, mg.tensor(0.0)).numpy(), np.minimum(x.numpy(), 0))
    np.testing.assert_array_equal(mg.clamp(x, -1, 1).numpy(), np.clip(x.numpy(), -1, 1))
    np.testing.assert_array_equal(mg.round(x).numpy(), np.round(x.numpy()))
    np.testing.assert_array_equal(mg.sum([1.0, 2.0]).numpy(), np.float32(3.0))  # anything as_tensor takes
    names = {"sin", "erf", "logaddexp", "isclose", "all", "any", "sum", "max", "matmul", "transpose"}
    assert names <= set(mg.__all__)
    assert sum([1, 2]) == 3 and max(1, 2) == 2  # the builtins are untouched by `import minigrad`


# ----------------------------------------------------------------------------- values and dtypes


@pytest.mark.parametrize("fn, ref, domain", UNARY)
@fewer_examples
@given(data=st.data())
def test_unary_forward_matches_numpy_in_float32(fn, ref, domain, data):
    unary_forward_in_float32(fn, ref, domain, data)


@pytest.mark.parametrize("fn, ref, domain", BINARY)
@fewer_examples
@given(data=st.data())
def test_binary_forward_matches_numpy_in_float32(fn, ref, domain, data):
    binary_forward_in_float32(fn, ref, domain, data)


@pytest.mark.parametrize("fn, ref, domain_a, domain_b", MAXIMUM_MINIMUM)
@fewer_examples
@given(data=st.data())
def test_maximum_minimum_forward_matches_numpy(fn, ref, domain_a, domain_b, data):
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a = data.draw(domain_a(shape_a), label="a").astype(np.float32)
    b = data.draw(domain_b(shape_b), label="b").astype(np.float32)
    out = fn(mg.tensor(a), mg.tensor(b))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(a, b), rtol=1e-5, atol=1e-6)


DTYPES = [  # (op on an int64 tensor, result dtype, values), as in PyTorch
    pytest.param(lambda x: x.sin(), np.float32, np.sin(INT), id="sin-int-is-float32"),
    pytest.param(lambda x: mg.erf(x), np.float32, _erf(INT), id="erf-int-is-float32"),
    pytest.param(lambda x: x.log1p().isnan(), np.bool_, [True, False, False, False, False], id="log1p-int"),
    pytest.param(lambda x: x.atan2(x), np.float32, np.arctan2(INT, INT), id="atan2-int-is-float32"),
    pytest.param(lambda x: x.reciprocal(), np.float32, [-1 / 7, -1, INF, 1 / 3, 1 / 8], id="reciprocal-int"),
    pytest.param(lambda x: x.square(), np.int64, INT * INT, id="square-int"),
    pytest.param(lambda x: x.nan_to_num(), np.int64, INT, id="nan_to_num-int"),
]


@pytest.mark.parametrize("fn, dtype, expected", DTYPES)
def test_dtypes_follow_pytorch(fn, dtype, expected):
    with np.errstate(all="ignore"):
        out = fn(mg.tensor(INT))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy().astype(np.float64), np.asarray(expected, np.float64), rtol=1e-6)


def test_xlogy_at_zero_is_zero_and_its_gradients_are_torchs():
    """x * log(y) is 0 where x = 0 (an entropy's 0 log 0), for any y but NaN; dx is log(y) even
    there, 0 where log(y) is not defined (y <= 0); dy = x / y, NaN at 0 / 0; an upstream 0 gives
    dx = 0 even where log(y) is infinite (PyTorch's xlogy(g, y))."""
    x = mg.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -1.0, 1.0], requires_grad=True)
    y = mg.tensor([0.0, 0.5, np.inf, -1.0, np.nan, 3.0, 0.0, -1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning at these edges
        z = mg.xlogy(x, y)
        z.backward(np.ones(8, np.float32))
    np.testing.assert_array_equal(z.numpy(), np.float32([0, 0, 0, 0, np.nan, 2 * np.log(3), np.inf, np.nan]))
    dx = [0, np.log(0.5), np.inf, 0, np.nan, np.log(3), -np.inf, np.nan]
    np.testing.assert_array_equal(x.grad, np.float32(dx))
    np.testing.assert_array_equal(y.grad, np.float32([np.nan, 0, 0, -0.0, np.nan, 2 / 3, -np.inf, -1]))
    x.grad = None
    mg.xlogy(x, y).backward(np.zeros(8, np.float32))
    assert x.grad[0] == 0 and x.grad[2] == 0 and x.grad[6] == 0  # log 0 and log inf times a zero g
    assert mg.xlogy(mg.tensor([1, 2]), mg.tensor([3, 4])).dtype == np.float32  # integers: float32
    w = mg.tensor([0.5, 2.0])
    assert w.xlogy_(mg.tensor([1.0, np.e])) is w and w.tolist() == [0.0, 2.0]


@pytest.mark.parametrize("op", ["atan2", "hypot", "logaddexp", "xlogy"])
def test_shapes_that_do_not_broadcast_are_named(op):
    with pytest.raises(ValueError, match=rf"{op}: shapes \(2,\) and \(3,\) do not broadcast"):
        getattr(mg, op)(mg.tensor([1.0, 2.0]), mg.tensor([1.0, 2.0, 3.0]))


def test_float32_inputs_keep_float32_gradients():
    x = mg.tensor(np.array([0.5, 1.5], np.float32), requires_grad=True)
    (x.sin() + x.log2() + x.erf() + x.atan2(x) + x.logaddexp(1.0) + x.remainder(0.7)).sum().backward()
    assert x.grad.dtype == np.float32


# ----------------------------------------------------------------------------- edges
# (op, float32 input, expected value, expected gradient of the output)

EDGES = [
    pytest.param(lambda x: x.expm1(), 1e-10, 1e-10, 1.0, id="expm1(tiny)-does-not-cancel"),
    pytest.param(lambda x: x.exp() - 1, 1e-10, 0.0, 1.0, id="exp(tiny)-1-cancels"),  # why expm1 is an op
    pytest.param(lambda x: x.log1p(), 1e-10, 1e-10, 1.0, id="log1p(tiny)"),
    pytest.param(lambda x: x.log1p(), -1.0, -INF, INF, id="log1p(-1)"),
    pytest.param(lambda x: x.log1p(), -2.0, NAN, -1.0, id="log1p(-2)"),
    pytest.param(lambda x: x.expm1(), 1e3, INF, INF, id="expm1(huge)"),
    pytest.param(lambda x: x.expm1(), -1e3, -1.0, 0.0, id="expm1(-huge)"),
    pytest.param(lambda x: x.log2(), 8.0, 3.0, 1 / (8 * math.log(2)), id="log2(8)-exact"),
    pytest.param(lambda x: x.log10(), 1000.0, 3.0, 1 / (1000 * math.log(10)), id="log10(1000)-exact"),
    pytest.param(lambda x: x.log2(), 0.0, -INF, INF, id="log2(0)"),
    pytest.param(lambda x: x.exp2(), -200.0, 0.0, 0.0, id="exp2(-200)-underflows"),
    pytest.param(lambda x: x.exp2(), 10.0, 1024.0, 1024 * math.log(2), id="exp2(10)"),
    pytest.param(lambda x: x.erf(), INF, 1.0, 0.0, id="erf(inf)"),
    pytest.param(lambda x: x.erf(), -INF, -1.0, 0.0, id="erf(-inf)"),
    pytest.param(lambda x: x.erf(), NAN, NAN, NAN, id="erf(nan)"),
    pytest.param(lambda x: x.erf(), 0.0, 0.0, 2 / math.sqrt(math.pi), id="erf(0)"),
    pytest.param(lambda x: x.erf(), 1e4, 1.0, 0.0, id="erf(huge)"),
    pytest.param(lambda x: x.atan(), 1e30, math.pi / 2, 0.0, id="atan(huge)"),
    pytest.param(lambda x: x.asin(), 1.0, math.pi / 2, INF, id="asin(1)"),
    pytest.param(lambda x: x.asin(), 2.0, NAN, NAN, id="asin(2)"),
    pytest.param(lambda x: x.acos(), -1.0, math.pi, -INF, id="acos(-1)"),
    pytest.param(lambda x: x.sinh(), 1e3, INF, INF, id="sinh(huge)"),
    pytest.param(lambda x: x.cosh(), -1e3, INF, -INF, id="cosh(-huge)"),
    pytest.param(lambda x: x.sin(), INF, NAN, NAN, id="sin(inf)"),
    pytest.param(lambda x: x.tan(), 0.0, 0.0, 1.0, id="tan(0)"),
    pytest.param(lambda x: x.reciprocal(), 0.0, INF, -INF, id="reciprocal(0)"),
    pytest.param(lambda x: x.rsqrt(), 0.0, INF, -INF, id="rsqrt(0)"),
    pytest.param(lambda x: x.rsqrt(), INF, 0.0, -0.0, id="rsqrt(inf)"),
    pytest.param(lambda x: x.nan_to_num(), NAN, 0.0, 0.0, id="nan_to_num(nan)"),
    pytest.param(lambda x: x.nan_to_num(), INF, np.finfo(np.float32).max, 0.0, id="nan_to_num(inf)"),
    pytest.param(lambda x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0), -INF, -2.0, 0.0,
                 id="nan_to_num(-inf)-given"),
    pytest.param(lambda x: x.nan_to_num(), 1.5, 1.5, 1.0, id="nan_to_num(finite)"),
    pytest.param(lambda x: x.hypot(x), 1e30, 1e30 * math.sqrt(2), math.sqrt(2), id="hypot(huge)-no-overflow"),
    pytest.param(lambda x: (x * x + x * x).sqrt(), 1e30, INF, 0.0, id="sqrt(x^2+y^2)-overflows"),
    pytest.param(lambda x: x.hypot(0.0), 0.0, 0.0, NAN, id="hypot(0,0)"),
    pytest.param(lambda x: x.logaddexp(x), 1e4, 1e4 + math.log(2), 1.0, id="logaddexp(huge)-no-overflow"),
    pytest.param(lambda x: x.logaddexp(0.0), -INF, 0.0, 0.0, id="logaddexp(-inf,0)"),
    pytest.param(lambda x: x.logaddexp(x), -INF, -INF, NAN, id="logaddexp(-inf,-inf)"),
    pytest.param(lambda x: x.atan2(1.0), 1e30, math.pi / 2, 0.0, id="atan2(huge,1)"),
    pytest.param(lambda x: mg.atan2(0.0, x), -1.0, math.pi, 0.0, id="atan2(0,-1)"),
    pytest.param(lambda x: x.atan2(x), 0.0, 0.0, 0.0, id="atan2(0,0)-gradient-0"),
    pytest.param(lambda x: x.clamp_min(1.0), 1.0, 1.0, 1.0, id="clamp_min-at-bound"),
    pytest.param(lambda x: x.clamp_max(1.0), NAN, NAN, 0.0, id="clamp_max(nan)"),
]


# Edges whose value and gradient are exact in float32 (no rounding allowed): 0-d inputs.
EXACT_EDGES = [
    pytest.param(lambda x: x.log(), 0.0, -np.inf, np.inf, id="log(0)"),
    pytest.param(lambda x: x.log(), -1.0, np.nan, -1.0, id="log(-1)"),
    pytest.param(lambda x: x.sqrt(), 0.0, 0.0, np.inf, id="sqrt(0)"),
    pytest.param(lambda x: x.sqrt(), -1.0, np.nan, np.nan, id="sqrt(-1)"),
    pytest.param(lambda x: x.sigmoid(), 1e4, 1.0, 0.0, id="sigmoid(1e4)"),
    pytest.param(lambda x: x.sigmoid(), -1e4, 0.0, 0.0, id="sigmoid(-1e4)"),
    pytest.param(lambda x: x.tanh(), 1e4, 1.0, 0.0, id="tanh(1e4)"),
    pytest.param(lambda x: x.abs(), 0.0, 0.0, 0.0, id="abs(0)"),
    pytest.param(lambda x: x.relu(), 0.0, 0.0, 0.0, id="relu(0)"),
    pytest.param(lambda x: x.clip(0.0, 1.0), 1.0, 1.0, 1.0, id="clip-at-bound"),
    pytest.param(lambda x: x.clip(0.0, 1.0), 2.0, 1.0, 0.0, id="clip-outside"),
    pytest.param(lambda x: x.maximum(1.0), 1.0, 1.0, 0.5, id="maximum-tie"),
    pytest.param(lambda x: x.minimum(1.0), 1.0, 1.0, 0.5, id="minimum-tie"),
]


@pytest.mark.parametrize("fn, x, value, grad", EXACT_EDGES)
def test_exact_edge_values_and_gradients(fn, x, value, grad):
    edge_exact(fn, x, value, grad)


@pytest.mark.parametrize("fn, x, value, grad", EDGES)
def test_edge_values_and_gradients(fn, x, value, grad):
    edge_close(fn, x, value, grad)


def test_maximum_tie_splits_gradient_between_tensors():
    a = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = mg.tensor([1.0, 5.0, 0.0], requires_grad=True)
    mg.maximum(a, b).backward(np.array([2.0, 2.0, 2.0], np.float32))
    np.testing.assert_array_equal(a.grad, [1.0, 0.0, 2.0])
    np.testing.assert_array_equal(b.grad, [1.0, 2.0, 0.0])


# The ops of pointwise.py with a Function of their own (the compositions, exp2, reciprocal and
# rsqrt, warn where the arithmetic they are made of does); the rounding ops are in
# test_ops_rounding.py.
EDGE_OPS = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "expm1", "log1p", "log2", "log10",
            "erf", "nan_to_num"]
EDGE_BINARY_OPS = ["hypot", "logaddexp", "atan2"]


@pytest.mark.parametrize("op", EDGE_OPS + EDGE_BINARY_OPS)
def test_ops_give_no_numpy_warnings_at_their_edges(op):
    """inf, nan, 0 and huge values give PyTorch's answers silently (nan, inf), as PyTorch does."""
    x = mg.tensor(np.array([-INF, -1e30, -1.0, 0.0, 1.0, 1e30, INF, NAN], np.float32), requires_grad=True)
    with np.errstate(all="raise"):  # an op that leaks a warning to the user's console fails here
        out = getattr(x, op)(x.detach()) if op in EDGE_BINARY_OPS else getattr(x, op)()
        out.backward(np.ones(8, np.float32))


# ----------------------------------------------------------------------------- needs_input_grad

TWO_INPUTS = [pointwise.Atan2, pointwise.Hypot, pointwise.LogAddExp]


@pytest.mark.parametrize("op", TWO_INPUTS, ids=lambda op: op.__name__)
def test_backward_computes_only_the_gradients_asked_for(op):
    """The rule of minigrad/ops/__init__.py: None for an input that needs no gradient, unless it
    is g itself (remainder's and fmod's da, in test_ops_rounding.py)."""
    g = np.random.default_rng(0).normal(size=(2, 3))
    grads = {}
    for needs in [(True, True), (True, False), (False, True)]:
        ctx = op()
        op.forward(ctx, A, B)
        ctx.needs_input_grad = needs
        grads[needs] = op.backward(ctx, g)
    full = grads[True, True]
    for needs, got in grads.items():
        for i, want in enumerate(needs):
            if want:
                np.testing.assert_allclose(got[i], full[i], rtol=1e-12)
            else:
                assert got[i] is None or got[i] is g


def test_copysign_signs_zeros_and_gradients():
    x = mg.tensor([1.0, -2.0, 0.0, -0.0, 3.0, -np.inf], requires_grad=True)
    y = mg.tensor([-1.0, -0.0, -3.0, 2.0, np.nan, 1.0], requires_grad=True)
    z = mg.copysign(x, y)
    assert np.array_equal(np.signbit(z.numpy()), [True, True, True, False, False, False])
    assert z.numpy()[-1] == np.inf
    z.backward(mg.ones(6))
    assert x.grad.tolist() == [-1.0, 1.0, 0.0, 0.0, 1.0, -1.0]  # 0 at x = 0: z is flat there
    assert y.grad.tolist() == [0.0] * 6  # zeros, as torch, not None
    assert mg.copysign(mg.tensor([1, 2]), -1).dtype == np.float32  # integers give float32
    w = mg.tensor([1.0, -2.0])
    assert w.copysign_(-1.0) is w and w.tolist() == [-1.0, -2.0]
