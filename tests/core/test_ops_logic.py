"""Comparisons and logic (ops/logic.py): the comparison operators and methods (eq, ne, lt, le,
gt, ge), logical_not/and/or/xor and & | ~, isnan/isinf/isfinite, isclose, allclose and equal:
values against numpy, broadcasting, bool results outside the graph, the edges (NaN, infinities,
signed zeros) and the errors. Also the boolean reductions all and any (ops/reduce.py), which
test_ops_reduce.py does not cover yet."""

import numpy as np
import pytest
from domains import INF, INT, NAN, grid
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.testing import broadcastable_shapes, dims, shapes

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

# ----------------------------------------------------------------------------- comparison operators

OPERATORS = [
    pytest.param(lambda a, b: a < b, np.less, id="lt"),
    pytest.param(lambda a, b: a <= b, np.less_equal, id="le"),
    pytest.param(lambda a, b: a > b, np.greater, id="gt"),
    pytest.param(lambda a, b: a >= b, np.greater_equal, id="ge"),
    pytest.param(lambda a, b: a == b, np.equal, id="eq"),
    pytest.param(lambda a, b: a != b, np.not_equal, id="ne"),
]


@pytest.mark.parametrize("op, ref", OPERATORS)
@fewer_examples
@given(data=st.data())
def test_comparisons_are_boolean_and_carry_no_grad(op, ref, data):
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a = data.draw(grid(0.0)(shape_a), label="a")  # a grid so that equal values do occur
    b = data.draw(grid(0.0)(shape_b), label="b")
    x = mg.tensor(a, requires_grad=True)
    for other, expected in [(mg.tensor(b), ref(a, b)), (b, ref(a, b)), (1.0, ref(a, 1.0))]:
        out = op(x, other)
        assert out.dtype == np.bool_ and not out.requires_grad and out.grad_fn is None
        np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("other", [None, [2.0, 4.0], (2.0,), "a", object()],
                         ids=["None", "list", "tuple", "str", "object"])
def test_comparing_with_what_is_not_a_tensor_or_a_number_is_left_to_python(other):
    """None, a list, a string: == is False and != True (Python's identity fallback, as torch
    gives, so `if idx_next == eos_id:` with eos_id None is False for a whole batch); the order
    operators raise Python's TypeError; the method forms raise one naming the op and the shape."""
    x = mg.tensor([2.0, 3.0])
    assert (x == other) is False and (other == x) is False
    assert (x != other) is True and (other != x) is True
    with pytest.raises(TypeError, match="not supported between instances of 'Tensor'"):
        _ = x < other
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        with pytest.raises(TypeError, match=rf"{name}: compares a tensor with a tensor or a number, got a "
                                            rf"tensor of shape \(2,\) and {type(other).__name__}"):
            getattr(mg, name)(x, other)
    with pytest.raises(TypeError, match="eq: compares a tensor"):
        x.clone().eq_(other)
    assert x in [None, x] and mg.tensor(5) in [None, 5]


def test_numbers_and_arrays_still_compare_elementwise():
    x = mg.tensor([2, 3])
    for other in (2, 2.0, np.int64(2), np.float32(2.0), np.array([2, 4]), mg.tensor([2, 4])):
        np.testing.assert_array_equal((x == other).numpy()[:1], [True])
    np.testing.assert_array_equal((x == True).numpy(), [False, False])  # noqa: E712
    np.testing.assert_array_equal((x != 2).numpy(), [False, True])


def test_boolean_combinators():
    x = mg.tensor([0.0, 1.0, 2.0])
    np.testing.assert_array_equal((~(x > 0)).numpy(), [True, False, False])
    np.testing.assert_array_equal(((x > 0) & (x < 2)).numpy(), [False, True, False])
    np.testing.assert_array_equal(((x < 1) | (x > 1)).numpy(), [True, False, True])
    assert bool((x >= 0).all()) and not bool((x > 5).any())


# ----------------------------------------------------------------------------- comparison and logic methods

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
        np.testing.assert_array_equal(out.numpy(), ref(a, b))


@fewer_examples
@given(x=specials(shapes()))
def test_isnan_isinf_isfinite_and_logical_not(x):
    t = mg.tensor(x)
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                      ("logical_not", np.logical_not)):
        out = getattr(t, name)()
        assert out.dtype == np.bool_ and out.shape == x.shape
        np.testing.assert_array_equal(out.numpy(), ref(x))
        np.testing.assert_array_equal(getattr(mg, name)(t).numpy(), ref(x))


def test_integer_and_bool_tensors_are_never_nan_or_inf():
    for t in (mg.tensor(INT), mg.tensor([True, False])):
        assert not t.isnan().numpy().any() and not t.isinf().numpy().any() and t.isfinite().numpy().all()
        assert t.isnan().shape == t.shape


# ----------------------------------------------------------------------------- all and any (ops/reduce.py)


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
        np.testing.assert_array_equal(out.numpy(), ref(x, axis=axis, keepdims=keepdim))
        np.testing.assert_array_equal(getattr(mg, name)(x, dim=dim, keepdim=keepdim).numpy(), out.numpy())


def test_all_and_any_without_dim_are_unchanged():
    x = mg.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert x.all().shape == () and not x.all().item() and x.any().item()
    np.testing.assert_array_equal(x.all(dim=-1).numpy(), [False, True])
    np.testing.assert_array_equal(x.any(dim=(0, 1), keepdim=True).numpy(), [[True]])
    with pytest.raises(IndexError, match="all: dim 2 is out of range"):
        x.all(2)


# ----------------------------------------------------------------------------- isclose, allclose, equal


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
    np.testing.assert_array_equal(out.numpy(), want)
    assert mg.tensor(a).allclose(mg.tensor(b), rtol, atol, equal_nan) == bool(want.all())
    assert mg.equal(mg.tensor(a), mg.tensor(a)) == (not np.isnan(a).any())  # NaN equals nothing
    assert mg.tensor(a).equal(mg.tensor(b)) == (a.shape == b.shape and bool(np.array_equal(a, b)))


def test_isclose_edges_and_errors():
    x = mg.tensor([1.0, NAN, INF, -INF, 0.0])
    np.testing.assert_array_equal(x.isclose(x).numpy(), [True, False, True, True, True])
    np.testing.assert_array_equal(x.isclose(x, equal_nan=True).numpy(), [True, True, True, True, True])
    np.testing.assert_array_equal(x.isclose(mg.tensor([1.0, NAN, -INF, INF, 1e-9])).numpy(),
                                  [True, False, False, False, True])  # |0 - 1e-9| <= atol 1e-8
    assert not mg.allclose(mg.tensor([1.0]), mg.tensor([1.1])) and mg.allclose(mg.tensor([1.0]), 1.0000001)
    assert not mg.equal(mg.tensor([1.0, 2.0]), mg.tensor([[1.0, 2.0]]))  # shapes differ
    flags = mg.tensor([True, False]).isclose(mg.tensor([True, True]))
    np.testing.assert_array_equal(flags.numpy(), [True, False])
    with pytest.raises(TypeError, match="isclose: the input is float32 and other is float64"):
        mg.tensor([1.0]).isclose(mg.tensor(np.array([1.0])))
    with pytest.raises(ValueError, match="rtol .* must be non-negative"):
        mg.tensor([1.0]).isclose(mg.tensor([1.0]), rtol=-1.0)
    with pytest.raises(ValueError, match=r"isclose: shapes \(2,\) and \(3,\) do not broadcast"):
        mg.tensor([1.0, 2.0]).isclose(mg.tensor([1.0, 2.0, 3.0]))
