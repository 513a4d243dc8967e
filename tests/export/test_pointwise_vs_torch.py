"""Differential test of the pointwise ops, comparisons and logic against PyTorch.

Two levels: each Function of ops/pointwise.py and ops/rounding.py against its twin in
TORCH_OPS (float64, to 1e-10, output and the gradient of every input for a random upstream
gradient), and the public API (`x.sin()`, `minigrad.sin(x)`, the compositions, integer
inputs) against the same call in torch: values, dtypes and gradients, in float32 and float64.
"""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import minigrad as mg  # noqa: E402
from minigrad import Tensor  # noqa: E402
from minigrad.export import TORCH_OPS  # noqa: E402
from minigrad.ops import pointwise, rounding  # noqa: E402
from minigrad.testing import arrays, broadcastable_shapes, dims, shapes, well_conditioned  # noqa: E402

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))


def check_op_against_twin(op, inputs, options=None, seed=0, tol=1e-10):
    """op.apply on minigrad Tensors vs TORCH_OPS[op] on torch tensors: output, dtype, and the
    gradient of every float input for the same random upstream gradient."""
    options = options or {}
    mins = [Tensor(a, requires_grad=True) for a in inputs]
    tins = [torch.tensor(a, requires_grad=True) for a in inputs]
    out = op.apply(*mins, **options)
    tout = TORCH_OPS[op](*tins, **options)
    assert tuple(tout.shape) == out.shape and str(tout.dtype) == f"torch.{out.dtype}", op.__name__
    np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=tol, atol=tol, err_msg=op.__name__)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    for i, (m, t) in enumerate(zip(mins, tins)):
        np.testing.assert_allclose(t.grad.numpy(), m.grad, rtol=tol, atol=tol,
                                   err_msg=f"{op.__name__}: gradient of input {i}")


def off_integers(shape, offset=0.0):
    """Values in [-3, 3] at least 1e-3 from every integer + offset (the jumps of the rounding ops)."""
    return arrays(shape).filter(lambda a: bool(np.all(np.abs((a - offset) - np.round(a - offset)) >= 1e-3)))


UNARY_OPS = [
    pytest.param(pointwise.Sin, arrays, id="Sin"),
    pytest.param(pointwise.Cos, arrays, id="Cos"),
    pytest.param(pointwise.Tan, lambda s: arrays(s, -1.2, 1.2), id="Tan"),
    pytest.param(pointwise.Asin, lambda s: arrays(s, -0.95, 0.95), id="Asin"),
    pytest.param(pointwise.Acos, lambda s: arrays(s, -0.95, 0.95), id="Acos"),
    pytest.param(pointwise.Atan, lambda s: arrays(s, -30, 30), id="Atan"),
    pytest.param(pointwise.Sinh, arrays, id="Sinh"),
    pytest.param(pointwise.Cosh, arrays, id="Cosh"),
    pytest.param(pointwise.Expm1, lambda s: arrays(s, -20, 20), id="Expm1"),
    pytest.param(pointwise.Log1p, lambda s: arrays(s, -0.9, 30), id="Log1p"),
    pytest.param(pointwise.Log2, lambda s: well_conditioned(s, 1e-3, 1e3, signed=False), id="Log2"),
    pytest.param(pointwise.Log10, lambda s: well_conditioned(s, 1e-3, 1e3, signed=False), id="Log10"),
    pytest.param(pointwise.Erf, lambda s: arrays(s, -7, 7), id="Erf"),
    pytest.param(rounding.Sign, lambda s: arrays(s, away_from_zero=1e-3), id="Sign"),
    pytest.param(rounding.Floor, off_integers, id="Floor"),
    pytest.param(rounding.Ceil, off_integers, id="Ceil"),
    pytest.param(rounding.Round, lambda s: off_integers(s, 0.5), id="Round"),
    pytest.param(rounding.Trunc, off_integers, id="Trunc"),
]


@pytest.mark.parametrize("op, values", UNARY_OPS)
@fewer
@given(data=st.data())
def test_unary_ops_as_their_torch_twins(op, values, data):
    check_op_against_twin(op, [data.draw(values(shapes()))])


@fewer
@given(data=st.data())
def test_round_with_decimals_as_torch(data):
    x = data.draw(arrays(shapes(), -30, 30))
    decimals = data.draw(st.sampled_from([-1, 1, 2]))
    assume(np.all(np.abs(x * 10.0**decimals % 1 - 0.5) > 1e-6))  # no halves, where the two may round apart
    check_op_against_twin(rounding.Round, [x], {"decimals": decimals}, tol=1e-9)


def _pairs(left, right):
    return lambda sa, sb: st.tuples(left(sa), right(sb))


def _quotients_off_integers(sa, sb):
    def far(pair):
        q = pair[0] / pair[1]
        return bool(np.all(np.abs(q - np.round(q)) >= 1e-3))
    return st.tuples(arrays(sa), well_conditioned(sb)).filter(far)


BINARY_OPS = [
    pytest.param(pointwise.Atan2, _pairs(arrays, arrays), id="Atan2"),
    pytest.param(pointwise.Hypot, _pairs(arrays, arrays), id="Hypot"),
    pytest.param(pointwise.LogAddExp, _pairs(lambda s: arrays(s, -30, 30), arrays), id="LogAddExp"),
    pytest.param(pointwise.XLogY, _pairs(arrays, lambda s: arrays(s, 0.1, 3)), id="XLogY"),
    pytest.param(pointwise.CopySign, _pairs(arrays, arrays), id="CopySign"),
    pytest.param(rounding.Remainder, _quotients_off_integers, id="Remainder"),
    pytest.param(rounding.Fmod, _quotients_off_integers, id="Fmod"),
]


@pytest.mark.parametrize("op, domain", BINARY_OPS)
@fewer
@given(data=st.data())
def test_binary_ops_broadcast_as_their_torch_twins(op, domain, data):
    sa, sb = data.draw(broadcastable_shapes())
    a, b = data.draw(domain(sa, sb))
    check_op_against_twin(op, [a, b])


# ----------------------------------------------------------------------------- the public API


def check_call_against_torch(ours, theirs, inputs, dtype, tol):
    """ours(*minigrad tensors) vs theirs(*torch tensors) on the same arrays in `dtype`: value,
    dtype, and the gradient of each float input for the same random upstream gradient."""
    arrays_ = [a.astype(dtype) for a in inputs]
    grad = np.dtype(dtype).kind == "f"
    mins = [mg.tensor(a, requires_grad=grad) for a in arrays_]
    tins = [torch.tensor(a, requires_grad=grad) for a in arrays_]
    with np.errstate(all="ignore"):
        out = ours(*mins)
    tout = theirs(*tins)
    assert str(tout.dtype) == f"torch.{out.dtype}", f"dtype {out.dtype}, torch {tout.dtype}"
    assert tuple(tout.shape) == out.shape
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    if grad and out.requires_grad:
        g = np.random.default_rng(0).standard_normal(out.shape).astype(out.dtype)
        with np.errstate(all="ignore"):
            out.backward(g)
        tout.backward(torch.from_numpy(g))
        for i, (m, t) in enumerate(zip(mins, tins)):
            want = np.zeros(m.shape, m.dtype) if t.grad is None else t.grad.numpy()
            got = np.zeros(m.shape, m.dtype) if m.grad is None else m.grad
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"gradient of input {i}")


TOL = {np.float32: 2e-5, np.float64: 1e-10}

# (minigrad call, torch call, domain); each draws a float32 and a float64 case
UNARY_API = [
    pytest.param(lambda x: x.sin(), torch.sin, arrays, id="sin"),
    pytest.param(mg.cos, torch.cos, arrays, id="cos"),
    pytest.param(mg.tan, torch.tan, lambda s: arrays(s, -1.2, 1.2), id="tan"),
    pytest.param(mg.arcsin, torch.arcsin, lambda s: arrays(s, -0.9, 0.9), id="arcsin"),
    pytest.param(lambda x: x.acos(), torch.acos, lambda s: arrays(s, -0.9, 0.9), id="acos"),
    pytest.param(mg.atan, torch.atan, arrays, id="atan"),
    pytest.param(mg.sinh, torch.sinh, arrays, id="sinh"),
    pytest.param(lambda x: x.cosh(), torch.cosh, arrays, id="cosh"),
    pytest.param(mg.exp2, torch.exp2, lambda s: arrays(s, -20, 20), id="exp2"),
    pytest.param(mg.expm1, torch.expm1, lambda s: arrays(s, -1e-3, 1e-3), id="expm1-small"),
    pytest.param(mg.log2, torch.log2, lambda s: well_conditioned(s, 1e-3, 1e3, signed=False), id="log2"),
    pytest.param(mg.log10, torch.log10, lambda s: well_conditioned(s, 1e-3, 1e3, signed=False), id="log10"),
    pytest.param(mg.log1p, torch.log1p, lambda s: arrays(s, -1e-3, 1e-3), id="log1p-small"),
    pytest.param(mg.rsqrt, torch.rsqrt, lambda s: well_conditioned(s, signed=False), id="rsqrt"),
    pytest.param(mg.reciprocal, torch.reciprocal, well_conditioned, id="reciprocal"),
    pytest.param(mg.square, torch.square, arrays, id="square"),
    pytest.param(mg.erf, torch.erf, lambda s: arrays(s, -5, 5), id="erf"),
    pytest.param(mg.sign, torch.sign, lambda s: arrays(s, away_from_zero=1e-3), id="sign"),
    pytest.param(mg.floor, torch.floor, off_integers, id="floor"),
    pytest.param(mg.ceil, torch.ceil, off_integers, id="ceil"),
    pytest.param(mg.round, torch.round, lambda s: off_integers(s, 0.5), id="round"),
    pytest.param(mg.trunc, torch.trunc, off_integers, id="trunc"),
    pytest.param(mg.frac, torch.frac, off_integers, id="frac"),
    pytest.param(lambda x: x.clamp_min(0.5), lambda x: x.clamp_min(0.5), lambda s: off_integers(s, 0.5),
                 id="clamp_min"),
    pytest.param(lambda x: mg.clamp_max(x, -0.5), lambda x: torch.clamp_max(x, -0.5),
                 lambda s: off_integers(s, 0.5), id="clamp_max"),
    pytest.param(lambda x: x.remainder(1.5), lambda x: x.remainder(1.5), off_integers, id="remainder-number"),
    pytest.param(lambda x: mg.fmod(x, -1.5), lambda x: torch.fmod(x, -1.5), off_integers, id="fmod-number"),
    pytest.param(mg.exp, torch.exp, arrays, id="fn-exp"),
    pytest.param(mg.log, torch.log, lambda s: well_conditioned(s, signed=False), id="fn-log"),
    pytest.param(mg.sqrt, torch.sqrt, lambda s: well_conditioned(s, signed=False), id="fn-sqrt"),
    pytest.param(mg.tanh, torch.tanh, arrays, id="fn-tanh"),
    pytest.param(mg.sigmoid, torch.sigmoid, arrays, id="fn-sigmoid"),
    pytest.param(mg.relu, torch.relu, lambda s: arrays(s, away_from_zero=1e-3), id="fn-relu"),
    pytest.param(mg.abs, torch.abs, lambda s: arrays(s, away_from_zero=1e-3), id="fn-abs"),
]


@pytest.mark.parametrize("ours, theirs, domain", UNARY_API)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@fewer
@given(data=st.data())
def test_unary_api_as_torch(ours, theirs, domain, dtype, data):
    x = data.draw(domain(shapes()))
    check_call_against_torch(ours, theirs, [x], dtype, TOL[dtype])


@fewer
@given(x=hnp.arrays(np.float64, shapes(),
                    elements=st.sampled_from([-np.inf, -1.5, 0.0, 2.0, np.inf, np.nan])),
       kw=st.sampled_from([{}, {"nan": 1.0}, {"posinf": 9.0, "neginf": -9.0}]))
def test_nan_to_num_as_torch(x, kw):
    for dtype in (np.float32, np.float64):
        check_call_against_torch(lambda t: mg.nan_to_num(t, **kw), lambda t: torch.nan_to_num(t, **kw), [x],
                                 dtype, 0.0)


negative, positive = (lambda s: arrays(s, -3, -0.1)), (lambda s: arrays(s, 0.1, 3))

BINARY_API = [
    pytest.param(mg.atan2, torch.atan2, arrays, arrays, id="atan2"),
    pytest.param(lambda a, b: a.arctan2(b), torch.arctan2, arrays, arrays, id="arctan2"),
    # hypot's inputs stay off zero: torch's gradient is (grad * b) / hypot(a, b), whose product
    # underflows when b is subnormal (hypot(0, 1.4e-45) in float32, upstream 0.126: torch gives
    # 0, where the derivative b / hypot is 1 and minigrad gives 0.126).
    pytest.param(mg.hypot, torch.hypot, lambda s: arrays(s, away_from_zero=1e-3),
                 lambda s: arrays(s, away_from_zero=1e-3), id="hypot"),
    pytest.param(mg.logaddexp, torch.logaddexp, arrays, arrays, id="logaddexp"),
    pytest.param(mg.xlogy, torch.xlogy, arrays, positive, id="xlogy"),
    pytest.param(mg.copysign, torch.copysign, arrays, arrays, id="copysign"),
    pytest.param(lambda a, b: a.lerp(b, 0.3), lambda a, b: torch.lerp(a, b, 0.3), arrays, arrays, id="lerp"),
    pytest.param(lambda a, b: mg.lerp(a, b, b), lambda a, b: torch.lerp(a, b, b), arrays, arrays,
                 id="lerp-tensor-weight"),
    pytest.param(mg.max, torch.max, negative, positive, id="max-of-two"),
    pytest.param(mg.min, torch.min, negative, positive, id="min-of-two"),
]


@pytest.mark.parametrize("ours, theirs, left, right", BINARY_API)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@fewer
@given(data=st.data())
def test_binary_api_broadcasts_as_torch(ours, theirs, left, right, dtype, data):
    sa, sb = data.draw(broadcastable_shapes())
    if theirs is torch.lerp or ours is mg.lerp:  # torch.lerp does not broadcast start to end's shape
        sb = np.broadcast_shapes(sa, sb)
    check_call_against_torch(ours, theirs, [data.draw(left(sa)), data.draw(right(sb))], dtype, TOL[dtype])


INTEGER_API = [  # integer inputs: the result dtype is torch's (float32 for the float functions)
    pytest.param(mg.sin, torch.sin, id="sin"),
    pytest.param(mg.erf, torch.erf, id="erf"),
    pytest.param(mg.exp2, torch.exp2, id="exp2"),
    pytest.param(mg.reciprocal, torch.reciprocal, id="reciprocal"),
    pytest.param(mg.square, torch.square, id="square"),
    pytest.param(mg.sign, torch.sign, id="sign"),
    pytest.param(mg.floor, torch.floor, id="floor"),
    pytest.param(mg.round, torch.round, id="round"),
    pytest.param(lambda x: x.remainder(3), lambda x: x.remainder(3), id="remainder"),
    pytest.param(lambda x: x.fmod(-3), lambda x: x.fmod(-3), id="fmod"),
    pytest.param(lambda x: mg.atan2(x, x + 1), lambda x: torch.atan2(x, x + 1), id="atan2"),
    pytest.param(mg.nan_to_num, torch.nan_to_num, id="nan_to_num"),
    pytest.param(lambda x: mg.xlogy(x, x * x + 1), lambda x: torch.xlogy(x, x * x + 1), id="xlogy"),
]


@pytest.mark.parametrize("ours, theirs", INTEGER_API)
@fewer
@given(x=hnp.arrays(np.int64, shapes(), elements=st.integers(-9, 9)))
def test_integer_inputs_as_torch(ours, theirs, x):
    check_call_against_torch(ours, theirs, [x], np.int64, 1e-6)


# ----------------------------------------------------------------------------- comparison and logic

SPECIALS = [-np.inf, -1.0, -0.0, 0.0, 1e-9, 1.0, 1.0 + 1e-6, 1.0 + 1e-4, np.inf, np.nan]


def specials(shape):
    return hnp.arrays(np.float64, shape, elements=st.sampled_from(SPECIALS))


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                                  "logical_xor"])
@fewer
@given(data=st.data())
def test_comparisons_and_logic_as_torch(name, data):
    sa, sb = data.draw(broadcastable_shapes())
    a, b = data.draw(specials(sa)), data.draw(specials(sb))
    out = getattr(mg.tensor(a), name)(mg.tensor(b))
    want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b))
    assert want.dtype == torch.bool and out.dtype == np.bool_
    np.testing.assert_array_equal(out.numpy(), want.numpy())


class _Other:
    pass


@pytest.mark.parametrize("other", [None, [2.0, 4.0], (2.0, 1.0), "a", _Other()],
                         ids=["None", "list", "tuple", "str", "object"])
def test_comparisons_with_none_lists_and_objects_as_torch(other):
    """torch's comparison operators take a tensor or a number; anything else gives NotImplemented
    and Python's fallback: == False, != True, < a TypeError; torch.eq(x, None) is a TypeError."""
    ours, theirs = mg.tensor([2.0, 3.0]), torch.tensor([2.0, 3.0])
    for compare in (lambda a, b: a == b, lambda a, b: a != b, lambda a, b: b == a, lambda a, b: b != a):
        want = compare(theirs, other)
        assert type(want) is bool and compare(ours, other) is want
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        with pytest.raises(TypeError):
            getattr(torch, name)(theirs, other)
        with pytest.raises(TypeError, match=f"{name}: compares a tensor"):
            getattr(mg, name)(ours, other)
    for order in (lambda a, b: a < b, lambda a, b: a >= b):
        with pytest.raises(TypeError):
            order(theirs, other)
        with pytest.raises(TypeError):
            order(ours, other)


def test_a_batch_compared_with_none_is_false_as_torch():
    """The book's generate: `if idx_next == eos_id: break` with eos_id None, for a batch of two."""
    for lib in (torch, mg):
        idx_next = lib.tensor([[3], [4]])
        assert (idx_next == None) is False  # noqa: E711


@fewer
@given(x=specials(shapes()))
def test_isnan_isinf_isfinite_logical_not_as_torch(x):
    for name in ("isnan", "isinf", "isfinite", "logical_not"):
        np.testing.assert_array_equal(getattr(mg, name)(mg.tensor(x)).numpy(),
                                      getattr(torch, name)(torch.from_numpy(x)).numpy())


@fewer
@given(data=st.data())
def test_isclose_allclose_equal_as_torch(data):
    sa, sb = data.draw(broadcastable_shapes())
    a, b = data.draw(specials(sa)), data.draw(specials(sb))
    kw = {"rtol": data.draw(st.sampled_from([1e-5, 1e-3, 0.0])), "equal_nan": data.draw(st.booleans()),
          "atol": data.draw(st.sampled_from([1e-8, 0.0]))}
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    np.testing.assert_array_equal(mg.isclose(mg.tensor(a), mg.tensor(b), **kw).numpy(),
                                  torch.isclose(ta, tb, **kw).numpy())
    assert mg.allclose(mg.tensor(a), mg.tensor(b), **kw) == torch.allclose(ta, tb, **kw)
    assert mg.equal(mg.tensor(a), mg.tensor(b)) == torch.equal(ta, tb)
    assert mg.equal(mg.tensor(a), mg.tensor(a)) == torch.equal(ta, ta)


@fewer
@given(data=st.data())
def test_all_and_any_over_dims_as_torch(data):
    x = data.draw(hnp.arrays(np.float64, shapes(), elements=st.sampled_from([0.0, 1.0, np.nan])))
    dim = data.draw(dims(x.ndim))
    keepdim = data.draw(st.booleans())
    for name in ("all", "any"):
        t = torch.from_numpy(x)
        if dim is None:
            want = getattr(torch, name)(t)
            if keepdim:
                want = want.reshape((1,) * x.ndim)
        else:
            want = getattr(torch, name)(t, dim=dim, keepdim=keepdim)
        out = getattr(mg, name)(mg.tensor(x), dim=dim, keepdim=keepdim)
        assert out.dtype == np.bool_ and want.dtype == torch.bool
        np.testing.assert_array_equal(out.numpy(), want.numpy())
