"""Rounding ops (ops/rounding.py): sign, floor, ceil, round, trunc, frac, remainder and fmod:
gradients against finite differences (zero between the jumps), values against numpy, the edges
of each domain, dtypes, integer division by zero and the errors."""

import numpy as np
import pytest
from domains import INF, INT, NAN, A, B, off_steps
from hypothesis import given, settings
from hypothesis import strategies as st
from op_checks import (
    binary_forward_in_float32,
    binary_gradcheck,
    edge_close,
    unary_forward_in_float32,
    unary_gradcheck,
)

import minigrad as mg
from minigrad.ops import rounding
from minigrad.testing import arrays, well_conditioned

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

# ----------------------------------------------------------------------------- input domains
# Shared domains (off_steps, ...) are in domains.py; the ones below are this file's own.


def tenths():
    """Values in [-0.3, 0.3] away from the jumps of round(x, decimals=1) (the odd multiples of 0.05)."""
    return lambda shape: off_steps(0.5)(shape).map(lambda a: a / 10)


# ----------------------------------------------------------------------------- tables
# (the op as called, its numpy reference, the input domain)

UNARY = [
    pytest.param(mg.sign, np.sign, off_steps(), id="sign"),
    pytest.param(mg.floor, np.floor, off_steps(), id="floor"),
    pytest.param(lambda x: x.ceil(), np.ceil, off_steps(), id="ceil"),
    pytest.param(mg.round, np.round, off_steps(0.5), id="round"),
    pytest.param(lambda x: x.round(decimals=1), lambda a: np.round(a, 1), tenths(), id="round-decimals"),
    pytest.param(mg.trunc, np.trunc, off_steps(), id="trunc"),
    pytest.param(lambda x: x.frac(), lambda a: a - np.trunc(a), off_steps(), id="frac"),
]


def quotients_off_integers(shape_a, shape_b):
    """(a, b) with a / b at least 1e-2 from an integer: where remainder and fmod jump."""
    def far(pair):
        q = pair[0] / pair[1]
        return bool(np.all(np.abs(q - np.round(q)) >= 1e-2))
    return st.tuples(arrays(shape_a), well_conditioned(shape_b)).filter(far)


# (the op, its numpy reference, the domain of (a, b) as a function of their shapes)
BINARY = [
    pytest.param(mg.remainder, np.mod, quotients_off_integers, id="remainder"),
    pytest.param(lambda a, b: a.fmod(b), np.fmod, quotients_off_integers, id="fmod"),
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


DTYPES = [  # (op on an int64 tensor, result dtype, values), as in PyTorch
    pytest.param(lambda x: x.floor(), np.int64, INT, id="floor-int-stays-int"),
    pytest.param(lambda x: x.round(), np.int64, INT, id="round-int-stays-int"),
    pytest.param(lambda x: x.sign(), np.int64, np.sign(INT), id="sign-int"),
    pytest.param(lambda x: x.remainder(3), np.int64, [2, 2, 0, 0, 2], id="remainder-int"),
    pytest.param(lambda x: x.fmod(3), np.int64, [-1, -1, 0, 0, 2], id="fmod-int"),
    pytest.param(lambda x: x.remainder(2.5), np.float32, np.mod(INT, 2.5), id="remainder-int-by-float"),
]


@pytest.mark.parametrize("fn, dtype, expected", DTYPES)
def test_dtypes_follow_pytorch(fn, dtype, expected):
    with np.errstate(all="ignore"):
        out = fn(mg.tensor(INT))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy().astype(np.float64), np.asarray(expected, np.float64), rtol=1e-6)


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_integer_division_by_zero_raises_naming_the_op(op):
    with pytest.raises(ZeroDivisionError, match=f"{op}: an integer divisor is 0"):
        getattr(mg.tensor(INT), op)(mg.tensor(np.array([1, 0, 2, 0, 1])))


@pytest.mark.parametrize("op", ["remainder", "fmod"])
def test_shapes_that_do_not_broadcast_are_named(op):
    with pytest.raises(ValueError, match=rf"{op}: shapes \(2,\) and \(3,\) do not broadcast"):
        getattr(mg, op)(mg.tensor([1.0, 2.0]), mg.tensor([1.0, 2.0, 3.0]))


# ----------------------------------------------------------------------------- edges
# (op, float32 input, expected value, expected gradient of the output)

EDGES = [
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
]


@pytest.mark.parametrize("fn, x, value, grad", EDGES)
def test_edge_values_and_gradients(fn, x, value, grad):
    edge_close(fn, x, value, grad)


# The ops of rounding.py with a Function of their own (frac, a composition, warns where the
# arithmetic it is made of does).
EDGE_OPS = ["sign", "floor", "ceil", "round", "trunc"]
EDGE_BINARY_OPS = ["remainder", "fmod"]


@pytest.mark.parametrize("op", EDGE_OPS + EDGE_BINARY_OPS)
def test_ops_give_no_numpy_warnings_at_their_edges(op):
    """inf, nan, 0 and huge values give PyTorch's answers silently (nan, inf), as PyTorch does."""
    x = mg.tensor(np.array([-INF, -1e30, -1.0, 0.0, 1.0, 1e30, INF, NAN], np.float32), requires_grad=True)
    with np.errstate(all="raise"):  # an op that leaks a warning to the user's console fails here
        out = getattr(x, op)(x.detach()) if op in EDGE_BINARY_OPS else getattr(x, op)()
        out.backward(np.ones(8, np.float32))


# ----------------------------------------------------------------------------- needs_input_grad

TWO_INPUTS = [rounding.Remainder, rounding.Fmod]


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
