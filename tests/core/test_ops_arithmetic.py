"""Arithmetic (ops/arithmetic.py): + - * / ** and negation, gradients against finite differences,
values against numpy, the edges of each domain, reflected operators, and the dtype policy of
arithmetic with Python scalars (its expressions mix in a few pointwise and indexing ops)."""

import warnings

import numpy as np
import pytest
from domains import nonzero, positive, values
from hypothesis import given, settings
from hypothesis import strategies as st
from op_checks import (
    binary_forward_in_float32,
    binary_gradcheck,
    edge_exact,
    unary_forward_in_float32,
    unary_gradcheck,
)

import minigrad as mg
from minigrad.testing import arrays, shapes

# Values are cheap to compare and the gradient tests draw the same inputs: a third of the
# profile's examples (at least 10) keeps the suite fast.
fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

# The input domains of the tables (values, positive, ...) are in domains.py.

# ----------------------------------------------------------------------------- tables

UNARY = [
    pytest.param(lambda x: -x, np.negative, values(), id="neg"),
    pytest.param(lambda x: x**2, lambda a: a**2, values(), id="pow-scalar-2"),
    pytest.param(lambda x: x**3, lambda a: a**3, values(), id="pow-scalar-3"),
    pytest.param(lambda x: x**0, lambda a: a**0, values(), id="pow-scalar-0"),
    pytest.param(lambda x: x**0.5, np.sqrt, positive(), id="pow-scalar-half"),
    pytest.param(lambda x: x**-1.5, lambda a: a**-1.5, positive(), id="pow-scalar-neg"),
    pytest.param(lambda x: 2.0**x, lambda a: 2.0**a, values(), id="rpow-scalar"),
]

BINARY = [
    pytest.param(lambda a, b: a + b, np.add, values(), values(), id="add"),
    pytest.param(lambda a, b: a - b, np.subtract, values(), values(), id="sub"),
    pytest.param(lambda a, b: a * b, np.multiply, values(), values(), id="mul"),
    pytest.param(lambda a, b: a / b, np.divide, values(), nonzero(), id="div"),
    pytest.param(lambda a, b: a**b, np.power, positive(), values(-2, 2), id="pow-tensor"),
]


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("fn, ref, domain", UNARY)
@given(data=st.data())
def test_unary_gradcheck(fn, ref, domain, data):
    unary_gradcheck(fn, domain, data)


@pytest.mark.parametrize("fn, ref, domain_a, domain_b", BINARY)
@given(data=st.data())
def test_binary_gradcheck_with_broadcasting(fn, ref, domain_a, domain_b, data):
    binary_gradcheck(fn, lambda sa, sb: st.tuples(domain_a(sa), domain_b(sb)), data)


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize("fn, ref, domain", UNARY)
@fewer_examples
@given(data=st.data())
def test_unary_forward_matches_numpy(fn, ref, domain, data):
    unary_forward_in_float32(fn, ref, domain, data, reference_in=np.float32)


@pytest.mark.parametrize("fn, ref, domain_a, domain_b", BINARY)
@fewer_examples
@given(data=st.data())
def test_binary_forward_matches_numpy(fn, ref, domain_a, domain_b, data):
    pair = lambda sa, sb: st.tuples(domain_a(sa), domain_b(sb))  # noqa: E731
    binary_forward_in_float32(fn, ref, pair, data, reference_in=np.float32, atol=1e-6)


# ----------------------------------------------------------------------------- edges
# (op, input, expected value, expected gradient of the sum), float32, 0-d.

EDGES = [
    pytest.param(lambda x: x**0, 0.0, 1.0, 0.0, id="pow(0,0)"),
    pytest.param(lambda x: x**2, 0.0, 0.0, 0.0, id="pow(0,2)"),
    pytest.param(lambda x: x**0.5, 0.0, 0.0, np.inf, id="pow(0,half)"),
    pytest.param(lambda x: 1.0 / x, 0.0, np.inf, -np.inf, id="rdiv-by-0"),
]


@pytest.mark.parametrize("fn, x, value, grad", EDGES)
def test_edge_values_and_gradients(fn, x, value, grad):
    edge_exact(fn, x, value, grad)


def test_pow_zero_of_a_tiny_base_has_gradient_zero_without_a_warning():
    x = mg.tensor(np.array([1e-310, -1e-310, 2.0]), requires_grad=True)  # 1 / x overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x**0).backward(np.array([1.5, -2.0, 3.0]))
    np.testing.assert_array_equal(x.grad, [0.0, 0.0, 0.0])


def test_pow_tensor_exponent_at_zero_base():
    base = mg.tensor([0.0, 0.0], requires_grad=True)
    exponent = mg.tensor([2.0, 0.0], requires_grad=True)
    (base**exponent).sum().backward()
    np.testing.assert_array_equal(base.grad, [0.0, 0.0])
    np.testing.assert_array_equal(exponent.grad, [0.0, 0.0])


# ----------------------------------------------------------------------------- reflected operators
# (expression of x = [1, 2, 3], expected value, expected d sum / dx)

REFLECTED = [
    pytest.param(lambda x: 2 + x, [3, 4, 5], [1, 1, 1], id="radd"),
    pytest.param(lambda x: 2 - x, [1, 0, -1], [-1, -1, -1], id="rsub"),
    pytest.param(lambda x: 2 * x, [2, 4, 6], [2, 2, 2], id="rmul"),
    pytest.param(lambda x: 6 / x, [6, 3, 2], [-6, -1.5, -6 / 9], id="rtruediv"),
    pytest.param(lambda x: 2**x, [2, 4, 8], [2 * np.log(2), 4 * np.log(2), 8 * np.log(2)], id="rpow"),
    pytest.param(lambda x: np.ones(3) * x, [1, 2, 3], [1, 1, 1], id="numpy-rmul"),
    pytest.param(lambda x: np.full(3, 4.0) - x, [3, 2, 1], [-1, -1, -1], id="numpy-rsub"),
    pytest.param(lambda x: np.ones((2, 1)) - x, [[0, -1, -2]] * 2, [-2, -2, -2], id="numpy-rsub-broadcast"),
    pytest.param(lambda x: x - np.ones((2, 1)), [[0, 1, 2]] * 2, [2, 2, 2], id="sub-numpy-broadcast"),
    pytest.param(lambda x: np.arange(2.0)[:, None] * x, [[0, 0, 0], [1, 2, 3]], [1, 1, 1],
                 id="numpy-column-rmul"),
    pytest.param(lambda x: [1.0, 1.0, 1.0] + x, [2, 3, 4], [1, 1, 1], id="list-radd"),
]


@pytest.mark.parametrize("expr, value, grad", REFLECTED)
def test_reflected_operators(expr, value, grad):
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = expr(x)
    assert isinstance(out, mg.Tensor)
    np.testing.assert_allclose(out.numpy(), value, rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(x.grad, grad, rtol=1e-6)
    assert x.grad.dtype == np.float32


# ----------------------------------------------------------------------------- dtype policy

FLOAT32_EXPRESSIONS = [
    pytest.param(lambda x: x * 2.5, id="mul-float"),
    pytest.param(lambda x: x + 1, id="add-int"),
    pytest.param(lambda x: 3 - x, id="rsub-int"),
    pytest.param(lambda x: 1.5 / x, id="rdiv"),
    pytest.param(lambda x: x**2, id="pow-int"),
    pytest.param(lambda x: 2.0**x, id="rpow"),
    pytest.param(lambda x: x.maximum(0.5), id="maximum-scalar"),
    pytest.param(lambda x: x.clip(0.0, 1.0), id="clip"),
    pytest.param(lambda x: mg.where(x > 1, x, 0.0), id="where-scalar"),
    pytest.param(lambda x: x.masked_fill(x > 1, -np.inf), id="masked_fill"),
    pytest.param(lambda x: x.sigmoid() * x.tanh() + x.exp().log(), id="composite"),
]


@pytest.mark.parametrize("expr", FLOAT32_EXPRESSIONS)
def test_python_scalars_never_promote_float32(expr):
    x = mg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    h = x * 1.0
    h.retain_grad()
    out = expr(h)
    assert out.dtype == np.float32
    out.backward(np.ones(3, np.float32))
    assert x.grad.dtype == np.float32 and h.grad.dtype == np.float32


def test_float64_is_kept_and_numpy_float64_operand_wins():
    x64 = mg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    assert (x64 * 2.5).dtype == np.float64
    x32 = mg.tensor([1.0, 2.0], requires_grad=True)
    out = x32 * np.array([1.0, 2.0])  # a numpy float64 array keeps its dtype, as in numpy
    assert out.dtype == np.float64
    out.sum().backward()
    assert x32.grad.dtype == np.float32


def test_integer_tensor_with_python_int_stays_integer():
    index = mg.arange(3)
    assert (index + 1).dtype == np.int64 and (2 * index).dtype == np.int64
    np.testing.assert_array_equal((index + 1).numpy(), [1, 2, 3])


@given(x=arrays(shapes()), e=st.sampled_from([0.0, 1.0, 2.0, 3.0, -1.0, 2.5]))
def test_fast_small_integer_powers_match_numpy_pow(x, e):
    from minigrad.ops.arithmetic import power

    for dtype in (np.float32, np.float64):
        a, b = x.astype(dtype), np.asarray(e, dtype=dtype)
        with np.errstate(all="ignore"):  # 0**-1 divides, a tiny x**-1 overflows: alike in both
            fast, slow = power(a, b), a**b
        np.testing.assert_allclose(fast, slow, rtol=1e-6)
        assert fast.dtype == dtype


def test_pow_gives_nan_and_inf_silently_as_torch():
    """A negative base to a fractional power is NaN, 0 to a negative power inf; numpy warns of
    both, PyTorch does not, nor does minigrad."""
    x = mg.tensor([-8.0, 0.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = x ** mg.tensor([0.5, -1.0, 0.5])
    np.testing.assert_array_equal(out.numpy(), np.float32([np.nan, np.inf, 2.0]))
