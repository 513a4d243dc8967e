"""Pointwise ops with PyTorch's names (ops/pointwise.py, ops/rounding.py, tensor_pointwise.py):
gradients against finite differences, values against numpy, the edges of each domain, dtypes,
the function forms, and the comparison and logic methods."""

import math

import numpy as np
import pytest
from domains import nonzero, off_steps, positive, values
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.ops import pointwise, rounding
from minigrad.testing import arrays, broadcastable_shapes, dims, shapes, well_conditioned

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

# ----------------------------------------------------------------------------- input domains
# Shared domains (values, positive, ...) are in domains.py; the ones below are this file's own.


def tenths():
    """Values in [-0.3, 0.3] away from the jumps of round(x, decimals=1) (the odd multiples of 0.05)."""
    return lambda shape: off_steps(0.5)(shape).map(lambda a: a / 10)


_erf = np.vectorize(math.erf, otypes=[np.float64])

# ----------------------------------------------------------------------------- tables
# (the op as called, its numpy reference, the input domain)

UNARY = [
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
    pytest.param(mg.sign, np.sign, off_steps(), id="sign"),
    pytest.param(mg.floor, np.floor, off_steps(), id="floor"),
    pytest.param(lambda x: x.ceil(), np.ceil, off_steps(), id="ceil"),
    pytest.param(mg.round, np.round, off_steps(0.5), id="round"),
    pytest.param(lambda x: x.round(decimals=1), lambda a: np.round(a, 1), tenths(), id="round-decimals"),
    pytest.param(mg.trunc, np.trunc, off_steps(), id="trunc"),
    pytest.param(lambda x: x.frac(), lambda a: a - np.trunc(a), off_steps(), id="frac"),
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


def quotients_off_integers(shape_a, shape_b):
    """(a, b) with a / b at least 1e-2 from an integer: where remainder and fmod jump."""
    def far(pair):
        q = pair[0] / pair[1]
        return bool(np.all(np.abs(q - np.round(q)) >= 1e-2))
    return st.tuples(arrays(shape_a), well_conditioned(shape_b)).filter(far)


# (the op, its numpy reference, the domain of (a, b) as a function of their shapes)
BINARY = [
    pytest.param(mg.atan2, np.arctan2, lambda sa, sb: st.tuples(well_conditioned(sa), well_conditioned(sb)),
                 id="atan2"),
    pytest.param(lambda a, b: a.hypot(b), np.hypot,
                 lambda sa, sb: st.tuples(well_conditioned(sa), well_conditioned(sb)), id="hypot"),
    pytest.param(mg.logaddexp, np.logaddexp, lambda sa, sb: st.tuples(arrays(sa), arrays(sb)),
                 id="logaddexp"),
    pytest.param(mg.remainder, np.mod, quotients_off_integers, id="remainder"),
    pytest.param(lambda a, b: a.fmod(b), np.fmod, quotients_off_integers, id="fmod"),
    pytest.param(lambda a, b: a.lerp(b, 0.25), lambda a, b: a + 0.25 * (b - a),
                 lambda sa, sb: st.tuples(arrays(sa), arrays(sb)), id="lerp-scalar-weight"),
    pytest.param(mg.clamp_min, np.maximum, lambda sa, sb: st.tuples(arrays(sa), arrays(sb)).filter(
        lambda p: bool(np.all(np.abs(p[0] - p[1]) >= 1e-2))), id="clamp_min-tensor"),
    pytest.param(mg.max, np.maximum, lambda sa, sb: st.tuples(arrays(sa), arrays(sb)).filter(
        lambda p: bool(np.all(np.abs(p[0] - p[1]) >= 1e-2))), id="fn-max-of-two"),
]


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("fn, ref, domain", UNARY)
@given(data=st.data())
def test_unary_gradcheck(fn, ref, domain, data):
    x = data.draw(domain(shapes()), label="x")
    assert mg.gradcheck(fn, [x])


@pytest.mark.parametrize("fn, ref, domain", BINARY)
@given(data=st.data())
def test_binary_gradcheck_with_broadcasting(fn, ref, domain, data):
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a, b = data.draw(domain(shape_a, shape_b), label="a, b")
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
    np.testing.assert_array_equal(mg.max(x).data, x.max().data)
    np.testing.assert_array_equal(mg.min(x, 1).values.data, x.min(1).values.data)
    np.testing.assert_array_equal(mg.min(x, mg.tensor(0.0)).data, np.minimum(x.data, 0))
    np.testing.assert_array_equal(mg.clamp(x, -1, 1).data, np.clip(x.data, -1, 1))
    np.testing.assert_array_equal(mg.round(x).data, np.round(x.data))
    np.testing.assert_array_equal(mg.sum([1.0, 2.0]).data, np.float32(3.0))  # anything as_tensor takes
    names = {"sin", "erf", "logaddexp", "isclose", "all", "any", "sum", "max", "matmul", "transpose"}
    assert names <= set(mg.__all__)
    assert sum([1, 2]) == 3 and max(1, 2) == 2  # the builtins are untouched by `import minigrad`


# ----------------------------------------------------------------------------- values and dtypes


@pytest.mark.parametrize("fn, ref, domain", UNARY)
@fewer_examples
@given(data=st.data())
def test_unary_forward_matches_numpy_in_float32(fn, ref, domain, data):
    a = data.draw(domain(shapes()), label="x").astype(np.float32)
    out = fn(mg.tensor(a))
    assert out.dtype == np.float32 and out.shape == a.shape
    np.testing.assert_allclose(out.data, ref(a.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, ref, domain", BINARY)
@fewer_examples
@given(data=st.data())
def test_binary_forward_matches_numpy_in_float32(fn, ref, domain, data):
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a, b = (v.astype(np.float32) for v in data.draw(domain(shape_a, shape_b), label="a, b"))
    out = fn(mg.tensor(a), mg.tensor(b))
    assert out.dtype == np.float32
    expected = ref(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out.data, expected, rtol=1e-5, atol=1e-5)


INT = np.array([-7, -1, 0, 3, 8])
INF, NAN = np.inf, np.nan

DTYPES = [  # (op on an int64 tensor, result dtype, values), as in PyTorch
    pytest.param(lambda x: x.sin(), np.float32, np.sin(INT), id="sin-int-is-float32"),
    pytest.param(lambda x: mg.erf(x), np.float32, _erf(INT), id="erf-int-is-float32"),
    pytest.param(lambda x: x.log1p().isnan(), np.bool_, [True, False, False, False, False], id="log1p-int"),
    pytest.param(lambda x: x.atan2(x), np.float32, np.arctan2(INT, INT), id="atan2-int-is-float32"),
    pytest.param(lambda x: x.reciprocal(), np.float32, [-1 / 7, -1, INF, 1 / 3, 1 / 8], id="reciprocal-int"),
    pytest.param(lambda x: x.floor(), np.int64, INT, id="floor-int-stays-int"),
    pytest.param(lambda x: x.round(), np.int64, INT, id="round-int-stays-int"),
    pytest.param(lambda x: x.sign(), np.int64, np.sign(INT), id="sign-int"),
    pytest.param(lambda x: x.square(), np.int64, INT * INT, id="square-int"),
    pytest.param(lambda x: x.remainder(3), np.int64, [2, 2, 0, 0, 2], id="remainder-int"),
    pytest.param(lambda x: x.fmod(3), np.int64, [-1, -1, 0, 0, 2], id="fmod-int"),
    pytest.param(lambda x: x.remainder(2.5), np.float32, np.mod(INT, 2.5), id="remainder-int-by-float"),
    pytest.param(lambda x: x.nan_to_num(), np.int64, INT, id="nan_to_num-int"),
]


@pytest.mark.parametrize("fn, dtype, expected", DTYPES)
def test_dtypes_follow_pytorch(fn, dtype, expected):
    with np.errstate(all="ignore"):
        out = fn(mg.tensor(INT))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.data.astype(np.float64), np.asarray(expected, np.float64), rtol=1e-6)


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_integer_division_by_zero_raises_naming_the_op(op):
    with pytest.raises(ZeroDivisionError, match=f"{op}: an integer divisor is 0"):
        getattr(mg.tensor(INT), op)(mg.tensor(np.array([1, 0, 2, 0, 1])))


@pytest.mark.parametrize("op", ["atan2", "hypot", "logaddexp", "remainder", "fmod"])
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
    pytest.param(lambda x: x.round(), 2.5, 2.0, 0.0, id="round(2.5)-half-to-even"),
    pytest.param(lambda x: x.round(), -0.5, -0.0, 0.0, id="round(-0.5)"),
    pytest.param(lambda x: x.round(), 3.5, 4.0, 0.0, id="round(3.5)"),
    pytest.param(lambda x: x.sign(), 0.0, 0.0, 0.0, id="sign(0)"),
    pytest.param(lambda x: x.sign(), NAN, 0.0, 0.0, id="sign(nan)-is-0"),
    pytest.param(lambda x: x.sign(), -INF, -1.0, 0.0, id="sign(-inf)"),
    pytest.param(lambda x: x.floor(), -INF, -INF, 0.0, id="floor(-inf)"),
    pytest.param(lambda x: x.ceil(), -0.5, -0.0, 0.0, id="ceil(-0.5)"),
    pytest.param(lambda x: x.trunc(), -2.7, -2.0, 0.0, id="trunc(-2.7)"),
    pytest.param(lambda x: x.frac(), -1.5, -0.5, 1.0, id="frac(-1.5)-keeps-the-sign"),
    pytest.param(lambda x: x.remainder(3.0), -1.0, 2.0, 1.0, id="remainder(-1,3)-sign-of-divisor"),
    pytest.param(lambda x: x.remainder(-3.0), 1.0, -2.0, 1.0, id="remainder(1,-3)"),
    pytest.param(lambda x: x.fmod(3.0), -1.0, -1.0, 1.0, id="fmod(-1,3)-sign-of-dividend"),
    pytest.param(lambda x: mg.remainder(7.0, x), 3.0, 1.0, -2.0, id="remainder-divisor-gradient"),
    pytest.param(lambda x: mg.fmod(-7.0, x), 3.0, -1.0, 2.0, id="fmod-divisor-gradient"),
    pytest.param(lambda x: x.remainder(0.0), 1.0, NAN, 1.0, id="remainder-by-0.0"),
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


@pytest.mark.parametrize("fn, x, value, grad", EDGES)
def test_edge_values_and_gradients(fn, x, value, grad):
    t = mg.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        out = fn(t)
        out.backward()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, np.float32(value), rtol=1e-6)
    np.testing.assert_allclose(t.grad, np.float32(grad), rtol=1e-6)
    if value == 0:  # the sign of a zero result is part of the answer (round(-0.5) is -0.0)
        assert np.signbit(out.data) == np.signbit(np.float32(value))


# The ops of pointwise.py and rounding.py (the compositions, exp2, frac, reciprocal and rsqrt,
# warn where the arithmetic they are made of does).
EDGE_OPS = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "expm1", "log1p", "log2", "log10",
            "erf", "sign", "floor", "ceil", "round", "trunc", "nan_to_num"]


@pytest.mark.parametrize("op", EDGE_OPS + ["hypot", "logaddexp", "atan2", "remainder", "fmod"])
def test_ops_give_no_numpy_warnings_at_their_edges(op):
    """inf, nan, 0 and huge values give PyTorch's answers silently (nan, inf), as PyTorch does."""
    x = mg.tensor(np.array([-INF, -1e30, -1.0, 0.0, 1.0, 1e30, INF, NAN], np.float32), requires_grad=True)
    with np.errstate(all="raise"):  # an op that leaks a warning to the user's console fails here
        out = getattr(x, op)(x.detach()) if op in ("hypot", "logaddexp", "atan2", "remainder", "fmod") \
            else getattr(x, op)()
        out.backward(np.ones(8, np.float32))


# ----------------------------------------------------------------------------- needs_input_grad

A, B = np.array([[0.5, -1.5, 2.0]]), np.array([[1.25], [-0.75]])
TWO_INPUTS = [pointwise.Atan2, pointwise.Hypot, pointwise.LogAddExp, rounding.Remainder, rounding.Fmod]


@pytest.mark.parametrize("op", TWO_INPUTS, ids=lambda op: op.__name__)
def test_backward_computes_only_the_gradients_asked_for(op):
    """The rule of minigrad/ops/__init__.py: None for an input that needs no gradient, unless it
    is g itself (remainder's and fmod's da)."""
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


# ----------------------------------------------------------------------------- comparison and logic

SPECIALS = [-INF, -2.0, -1.0, -0.0, 0.0, 1e-9, 1.0, 2.0, INF, NAN]

COMPARISONS = [
    pytest.param("eq", np.equal, id="eq"), pytest.param("ne", np.not_equal, id="ne"),
    pytest.param("lt", np.less, id="lt"), pytest.param("le", np.less_equal, id="le"),
    pytest.param("gt", np.greater, id="gt"), pytest.param("ge", np.greater_equal, id="ge"),
    pytest.param("logical_and", np.logical_and, id="logical_and"),
    pytest.param("logical_or", np.logical_or, id="logical_or"),
    pytest.param("logical_xor", np.logical_xor, id="logical_xor"),
]


def specials(shape):
    return hnp.arrays(np.float64, shape, elements=st.sampled_from(SPECIALS))


@pytest.mark.parametrize("name, ref", COMPARISONS)
@fewer_examples
@given(data=st.data())
def test_comparisons_and_logic_broadcast_and_give_bool_without_grad(name, ref, data):
    sa, sb = data.draw(broadcastable_shapes(), label="shapes")
    a, b = data.draw(specials(sa), label="a"), data.draw(specials(sb), label="b")
    x = mg.tensor(a, requires_grad=True)
    for out in (getattr(x, name)(mg.tensor(b)), getattr(mg, name)(x, b)):
        assert out.dtype == np.bool_ and not out.requires_grad
        np.testing.assert_array_equal(out.data, ref(a, b))


@fewer_examples
@given(x=specials(shapes()))
def test_isnan_isinf_isfinite_and_logical_not(x):
    t = mg.tensor(x)
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                      ("logical_not", np.logical_not)):
        out = getattr(t, name)()
        assert out.dtype == np.bool_ and out.shape == x.shape
        np.testing.assert_array_equal(out.data, ref(x))
        np.testing.assert_array_equal(getattr(mg, name)(t).data, ref(x))


def test_integer_and_bool_tensors_are_never_nan_or_inf():
    for t in (mg.tensor(INT), mg.tensor([True, False])):
        assert not t.isnan().data.any() and not t.isinf().data.any() and t.isfinite().data.all()
        assert t.isnan().shape == t.shape


@fewer_examples
@given(data=st.data())
def test_all_and_any_over_dims(data):
    x = data.draw(hnp.arrays(np.float64, shapes(), elements=st.sampled_from([0.0, 1.0, NAN])), label="x")
    dim = data.draw(dims(x.ndim), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    axis = None if dim is None or x.ndim == 0 else dim
    for name, ref in (("all", np.all), ("any", np.any)):
        out = getattr(mg.tensor(x), name)(dim, keepdim=keepdim)
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out.data, ref(x, axis=axis, keepdims=keepdim))
        np.testing.assert_array_equal(getattr(mg, name)(x, dim=dim, keepdim=keepdim).data, out.data)


def test_all_and_any_without_dim_are_unchanged():
    x = mg.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert x.all().shape == () and not x.all().item() and x.any().item()
    np.testing.assert_array_equal(x.all(dim=-1).data, [False, True])
    np.testing.assert_array_equal(x.any(dim=(0, 1), keepdim=True).data, [[True]])
    with pytest.raises(IndexError, match="all: dim 2 is out of range"):
        x.all(2)


def _isclose_reference(a, b, rtol, atol, equal_nan):
    """PyTorch's definition written out: equal (infinities included), or finite and within
    atol + rtol * |b|; NaN close to NaN only with equal_nan."""
    with np.errstate(invalid="ignore"):
        close = (a == b) | (np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= atol + rtol * np.abs(b)))
    if equal_nan:
        close = close | (np.isnan(a) & np.isnan(b))
    return close


@fewer_examples
@given(data=st.data())
def test_isclose_allclose_and_equal(data):
    sa, sb = data.draw(broadcastable_shapes(), label="shapes")
    near = st.sampled_from(SPECIALS + [1.0 + 1e-6, 1.0 + 1e-4, 2.0 + 2e-5])
    a = data.draw(hnp.arrays(np.float64, sa, elements=near), label="a")
    b = data.draw(hnp.arrays(np.float64, sb, elements=near), label="b")
    rtol, atol = data.draw(st.sampled_from([(1e-5, 1e-8), (1e-3, 0.0), (0.0, 1e-3)]), label="tolerances")
    equal_nan = data.draw(st.booleans(), label="equal_nan")
    want = _isclose_reference(a, b, rtol, atol, equal_nan)
    out = mg.isclose(mg.tensor(a), mg.tensor(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.data, want)
    assert mg.tensor(a).allclose(mg.tensor(b), rtol, atol, equal_nan) == bool(want.all())
    assert mg.equal(mg.tensor(a), mg.tensor(a)) == (not np.isnan(a).any())  # NaN equals nothing
    assert mg.tensor(a).equal(mg.tensor(b)) == (a.shape == b.shape and bool(np.array_equal(a, b)))


def test_isclose_edges_and_errors():
    x = mg.tensor([1.0, NAN, INF, -INF, 0.0])
    np.testing.assert_array_equal(x.isclose(x).data, [True, False, True, True, True])
    np.testing.assert_array_equal(x.isclose(x, equal_nan=True).data, [True, True, True, True, True])
    np.testing.assert_array_equal(x.isclose(mg.tensor([1.0, NAN, -INF, INF, 1e-9])).data,
                                  [True, False, False, False, True])  # |0 - 1e-9| <= atol 1e-8
    assert not mg.allclose(mg.tensor([1.0]), mg.tensor([1.1])) and mg.allclose(mg.tensor([1.0]), 1.0000001)
    assert not mg.equal(mg.tensor([1.0, 2.0]), mg.tensor([[1.0, 2.0]]))  # shapes differ
    flags = mg.tensor([True, False]).isclose(mg.tensor([True, True]))
    np.testing.assert_array_equal(flags.data, [True, False])
    with pytest.raises(TypeError, match="isclose: the input is float32 and other is float64"):
        mg.tensor([1.0]).isclose(mg.tensor(np.array([1.0])))
    with pytest.raises(ValueError, match="rtol .* must be non-negative"):
        mg.tensor([1.0]).isclose(mg.tensor([1.0]), rtol=-1.0)
    with pytest.raises(ValueError, match=r"isclose: shapes \(2,\) and \(3,\) do not broadcast"):
        mg.tensor([1.0, 2.0]).isclose(mg.tensor([1.0, 2.0, 3.0]))
