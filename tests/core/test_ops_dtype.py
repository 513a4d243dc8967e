"""Dtype conversions (ops/dtype.py): the Cast op and the methods to, type, float, double, half,
long, int and bool, with the dtype names (mg.float16 ... mg.bool) they take: values and dtypes
against PyTorch and numpy, gradients through the casts (back in the input's dtype), the numerical
edges (overflow to inf, rounding of large integers) and the errors."""

import warnings

import numpy as np
import pytest
from domains import _torch, torch_dtype_name
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, shapes

# Half the profile's examples (at least 10), as in test_creation_dtype.py where the tests of the
# methods began.
fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 2))

# minigrad's dtype names and torch's, side by side
DTYPES = [("float16", "float16"), ("float32", "float32"), ("float64", "float64"), ("int8", "int8"),
          ("int16", "int16"), ("int32", "int32"), ("int64", "int64"), ("uint8", "uint8"), ("bool", "bool")]


# ----------------------------------------------------------------------------- dtype names and methods


@pytest.mark.parametrize("ours, theirs", DTYPES, ids=[d[0] for d in DTYPES])
def test_dtype_names_match_torch(ours, theirs):
    torch = _torch()
    dtype = np.dtype(getattr(mg, ours))
    assert str(torch.from_numpy(np.zeros(1, dtype=dtype)).dtype) == f"torch.{theirs}"
    x = mg.zeros(2).to(getattr(mg, ours))
    assert x.dtype == dtype
    # .type() is torch's legacy name with minigrad's prefix; and it goes back through .type(name)
    name = torch.zeros(2).to(getattr(torch, theirs)).type()
    assert x.type() == name.replace("torch.", "minigrad.")
    assert mg.zeros(2).type(x.type()).dtype == dtype and mg.zeros(2).type(name).dtype == dtype


@fewer_examples
@given(a=arrays(shapes(), -300, 300))
def test_int_bool_half_as_torch(a):
    torch = _torch()
    t = torch.from_numpy(a.astype(np.float32))
    x = mg.tensor(a.astype(np.float32))
    pairs = [(x.int(), t.int()), (x.bool(), t.bool()), (x.half(), t.half()), (x.long(), t.long()),
             (x.type(mg.int16), t.type(torch.int16)), (x.to(dtype=mg.float64), t.to(dtype=torch.float64))]
    for ours, theirs in pairs:
        assert ours.dtype == np.dtype(torch_dtype_name(theirs))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert not ours.requires_grad or ours.dtype.kind == "f"


@fewer_examples
@given(x=arrays(shapes(), -3, 3))
def test_gradients_flow_through_float_casts(x):
    t = mg.Tensor(x, requires_grad=True)
    assert mg.gradcheck(lambda v: v.to(mg.float64, copy=True) * v.type(mg.float64), [t])
    assert mg.gradcheck(lambda v: v.to(dtype=np.float64) * 3, [t])
    h = mg.Tensor(x, requires_grad=True)
    y = (h.half() * 2).to(h)  # float16 and back: the gradient arrives in h's dtype
    y.backward(np.ones(y.shape))
    assert y.dtype == np.float64 and h.grad.dtype == np.float64
    np.testing.assert_array_equal(h.grad, np.full(x.shape, 2.0))


def test_to_returns_itself_unless_asked_to_copy():
    torch = _torch()
    x = mg.zeros(3, requires_grad=True)
    assert x.to(mg.float32) is x and x.type(mg.float32) is x and x.to(x) is x and x.to() is x
    y = x.to(mg.float32, copy=True)
    assert y is not x and y.requires_grad and not np.shares_memory(y.numpy(), x.numpy())
    i = mg.tensor(np.arange(3))
    j = i.to(copy=True)
    assert j is not i and j.dtype == np.int64 and not np.shares_memory(i.numpy(), j.numpy())
    assert x.to(i).dtype == np.int64 and not x.to(i).requires_grad
    t = torch.zeros(3)
    assert t.to(torch.float32) is t and t.to(torch.float32, copy=True) is not t


def test_dtype_errors():
    torch = _torch()
    x = mg.zeros(2)
    with pytest.raises(ValueError, match="type: invalid type 'float64'"):
        x.type("float64")
    with pytest.raises(ValueError):
        torch.zeros(2).type("float64")
    with pytest.raises(ValueError, match="type: invalid type 'numpy.FloatTensor'"):
        x.type("numpy.FloatTensor")
    with pytest.raises(TypeError, match="to: expected a dtype or a tensor, not 3"):
        x.to(3)
    with pytest.raises(TypeError, match="to: the dtype was given both"):
        x.to(mg.float64, dtype=mg.float64)
    with pytest.raises(TypeError, match="to: expected a device, a dtype or a tensor, got 2 more arguments"):
        x.to(mg.float64, mg.float32)

# ----------------------------------------------------------------------------- casts and their gradients


@given(a=arrays(shapes()))
def test_cast_round_trip_and_gradient(a):
    x = mg.tensor(a.astype(np.float32), requires_grad=True)
    y = x.double()
    assert y.dtype == np.float64 and y.grad_fn is not None and x.float() is x
    y.backward(np.ones(a.shape))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, np.ones(a.shape, np.float32))
    # linear, so a large step is exact and float32 rounding stays small against it
    assert mg.gradcheck(lambda t: t.to(np.float32) * 2, [a], eps=1e-2, atol=1e-4)


def test_integer_casts_carry_no_gradient():
    x = mg.tensor([1.7, -2.2], requires_grad=True)
    n = x.long()
    assert n.dtype == np.int64 and not n.requires_grad and n.grad_fn is None
    np.testing.assert_array_equal(n.numpy(), [1, -2])


@fewer_examples
@given(data=st.data())
def test_cast_round_trips_gradcheck(data):
    x = data.draw(arrays(shapes()), label="x")  # shapes() draws 0-d inputs and size-1 axes too
    # gradcheck's inputs are float64: float() is a Cast to float32 and double() one back. Casts
    # are linear, so a large step is exact and float32's rounding stays small against it.
    assert mg.gradcheck(lambda t: t.float().double(), [x], eps=1e-2, atol=1e-4)
    assert mg.gradcheck(lambda t: t.float().double() * t, [x], eps=1e-2, atol=1e-4)


FLOATS = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("source, target", [(s, t) for s in FLOATS for t in FLOATS if s is not t],
                         ids=lambda d: np.dtype(d).name)
def test_cast_gradient_goes_back_in_the_input_dtype(source, target):
    x = mg.tensor(np.array([0.5, -2.0, 3.0], source), requires_grad=True)
    y = x.to(target)
    assert y.dtype == target and y.grad_fn is not None
    g = np.array([0.25, 1.5, -4.0], target)
    y.backward(g)
    assert x.grad.dtype == source
    np.testing.assert_array_equal(x.grad, g.astype(source))


def test_cast_edges_round_and_overflow_as_numpy():
    """float64 -> float16 overflows to inf (65520, halfway to 2**16, rounds to even: inf), and
    int64 -> float32 rounds 2**24 + 1 to the nearest float32 (2**24), as numpy's astype does; the
    gradient goes back in the input's dtype, overflowing there as numpy does too."""
    big = np.array([1e5, -1e5, 65504.0, 65519.0, 65520.0, np.inf, np.nan])
    with np.errstate(over="ignore"):  # numpy warns of the overflow; minigrad, as torch, does not
        want = big.astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half = mg.tensor(big).half()
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half.numpy(), want)
    np.testing.assert_array_equal(half.numpy(), [np.inf, -np.inf, 65504.0, 65504.0, np.inf, np.inf, np.nan])

    ints = np.array([2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**53 + 1])
    single = mg.tensor(ints).float()
    assert single.dtype == np.float32
    np.testing.assert_array_equal(single.numpy(), ints.astype(np.float32))
    assert single.numpy()[0] == 2**24 and single.numpy()[1] == 2**24 + 4 and single.numpy()[2] == -(2**24)

    x = mg.tensor(big, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x.half()
    y.backward(np.ones(big.shape, np.float16))
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad, np.ones(big.shape))
    h = mg.tensor(np.array([1.0, 2.0], np.float16), requires_grad=True)
    g = np.array([1e5, 0.5])  # 1e5 is past float16's largest value, 65504
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h.double().backward(g)
    with np.errstate(over="ignore"):
        want = g.astype(np.float16)
    assert h.grad.dtype == np.float16
    np.testing.assert_array_equal(h.grad, want)
    assert h.grad[0] == np.inf
