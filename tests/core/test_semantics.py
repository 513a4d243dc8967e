"""Where numpy and PyTorch disagree, minigrad follows PyTorch (it promises PyTorch's names):
mixed advanced indexing, `dim=()` in reductions, type promotion of integer tensors, and
iterating a 0-d tensor. Expected values are PyTorch 2.13's, written out."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
ALL = slice(None)

# (index, shape PyTorch gives). Where an integer and an index array are separated by a slice,
# numpy moves the array's axis to the front; PyTorch selects with the integer first.
MIXED = [
    pytest.param((0, ALL, [0, 1, 2]), (3, 3, 5), id="int-slice-array"),
    pytest.param((ALL, 0, ALL, [1, 2]), (2, 4, 2), id="slice-int-slice-array"),
    pytest.param((0, ALL, ALL, [1, 2]), (3, 4, 2), id="int-slices-array"),
    pytest.param((None, 0, ALL, [1, 2]), (1, 3, 2, 5), id="none-int-slice-array"),
    pytest.param((0, None, [1, 2]), (1, 2, 4, 5), id="int-none-array"),
    pytest.param((0, ALL, [[0, 1], [2, 3]]), (3, 2, 2, 5), id="int-slice-2d-array"),
    pytest.param((1, ALL, [True, False, True, True]), (3, 3, 5), id="int-slice-bool-mask"),
    pytest.param((0, Ellipsis, [1, 2]), (3, 4, 2), id="int-ellipsis-array"),
    pytest.param((np.array(0), ALL, [0, 1, 2]), (3, 3, 5), id="0d-array-slice-array"),
    # Cases where numpy and PyTorch already agree stay as they were.
    pytest.param(([0, 1], ALL, [0, 1]), (2, 3, 5), id="arrays-around-slice"),
    pytest.param((0, [1, 2]), (2, 4, 5), id="int-next-to-array"),
    pytest.param((0, [0, 1], ALL, [0, 1]), (2, 4), id="int-then-arrays-around-slice"),
    pytest.param(([0, 1], 0, ALL, [1, 2]), (2, 4), id="array-int-slice-array"),
    pytest.param((Ellipsis, 0, [1, 2]), (2, 3, 2), id="ellipsis-int-array"),
    pytest.param((0, ALL, 1), (3, 5), id="no-array"),
]


def torch_rule(a, index):
    """PyTorch's result, spelled with numpy: integers select first, arrays index the rest."""
    first = tuple(p if not isinstance(p, list) else ALL for p in index)
    rest = tuple(p if isinstance(p, list) or p is Ellipsis else ALL for p in index
                 if not (isinstance(p, (int, np.ndarray)) and np.ndim(p) == 0))
    return a[first][tuple(np.asarray(p) if isinstance(p, list) else p for p in rest)]


@pytest.mark.parametrize("index, shape", MIXED)
def test_mixed_indexing_follows_pytorch(index, shape):
    out = mg.tensor(A)[index]
    assert out.shape == shape
    np.testing.assert_array_equal(out.numpy(), torch_rule(A, index))


def test_square_sizes_are_not_transposed():
    t = mg.tensor(np.arange(27.0).reshape(3, 3, 3))
    # PyTorch: t[0, :, [0, 1, 2]] is t[0] (rows i, columns j), here the identity index.
    np.testing.assert_array_equal(t[0, :, [0, 1, 2]].numpy(), np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(t[0, :, mg.tensor([2, 0], dtype=mg.int64)], [[2, 0], [5, 3], [8, 6]])


@pytest.mark.parametrize("index, shape", MIXED)
def test_mixed_indexing_gradient_lands_where_the_values_came_from(index, shape):
    x = mg.tensor(A, requires_grad=True)
    g = np.random.default_rng(0).standard_normal(shape)
    x[index].backward(g)
    expected = np.zeros_like(A)
    positions = torch_rule(A, index).astype(int)  # A holds each element's flat position
    np.add.at(expected.reshape(-1), positions.reshape(-1), g.reshape(-1))
    np.testing.assert_array_equal(x.grad, expected)


def test_mixed_indexing_gradcheck_with_repeats():
    a = np.random.default_rng(1).standard_normal((2, 3, 3))
    assert mg.gradcheck(lambda t: t[1, :, [2, 0, 2]] * t[0, [1, 1], :2].sum(), [a])


@pytest.mark.parametrize("index", [p.values[0] for p in MIXED])
def test_mixed_indexing_matches_torch(index):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    t_index = tuple(torch.tensor(p) if isinstance(p, (list, np.ndarray)) else p for p in index)
    np.testing.assert_array_equal(mg.tensor(A)[index].numpy(), torch.tensor(A)[t_index].numpy())


# ----------------------------------------------------------------------------- dim=()


REDUCTIONS = ["sum", "mean", "var", "std", "amax", "amin", "logsumexp"]  # max(dim) takes one int, as torch


@pytest.mark.parametrize("method", REDUCTIONS)
@pytest.mark.parametrize("empty", [(), []], ids=["tuple", "list"])
def test_an_empty_dim_reduces_everything(method, empty):
    a = np.array([[1.0, 4.0, 2.0], [0.5, 3.0, -1.0]])
    whole = getattr(mg.tensor(a), method)()
    for keepdim, shape in ((False, ()), (True, (1, 1))):
        out = getattr(mg.tensor(a), method)(dim=empty, keepdim=keepdim)
        assert out.shape == shape
        np.testing.assert_allclose(out.numpy().reshape(()), whole.numpy(), rtol=1e-12)


def test_an_empty_dim_backward_reaches_every_element():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x.mean(dim=()).backward()
    np.testing.assert_array_equal(x.grad, np.full((2, 2), 0.25))


def test_squeeze_with_an_empty_dim_squeezes_nothing():  # as in PyTorch
    assert mg.ones(1, 2).squeeze(dim=()).shape == (1, 2)


@pytest.mark.parametrize("dim", [1.0, "0", (0, 1.5), [None]])
def test_a_dim_that_is_not_an_int_is_named(dim):
    with pytest.raises(TypeError, match=r"sum: dim must be an int or a tuple of ints, not"):
        mg.ones(2, 3).sum(dim)


# ----------------------------------------------------------------------------- type promotion

I64 = np.array([1, 2, 3], dtype=np.int64)
OPS = {
    "add": lambda a, b: a + b, "radd": lambda a, b: b + a, "sub": lambda a, b: a - b,
    "rsub": lambda a, b: b - a, "mul": lambda a, b: a * b, "rmul": lambda a, b: b * a,
    "div": lambda a, b: a / b, "rdiv": lambda a, b: b / a, "pow": lambda a, b: a ** b,
    "rpow": lambda a, b: b ** a,
    "maximum": lambda a, b: a.maximum(b) if isinstance(a, mg.Tensor) else np.maximum(a, b),
    "minimum": lambda a, b: a.minimum(b) if isinstance(a, mg.Tensor) else np.minimum(a, b),
}


@pytest.mark.parametrize("op", OPS)
def test_int_tensor_with_a_python_float_is_float32(op):
    out = OPS[op](mg.tensor(I64), 0.5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), OPS[op](I64.astype(np.float64), 0.5), rtol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_int_tensor_with_a_python_int_stays_int_except_true_division(op):
    out = OPS[op](mg.tensor(I64), 2)
    assert out.dtype == (np.float32 if "div" in op else np.int64)
    np.testing.assert_allclose(out.numpy(), OPS[op](I64, 2), rtol=1e-6)


@pytest.mark.parametrize("a, b, dtype", [
    pytest.param(np.int64, np.float32, np.float32, id="int64-float32"),
    pytest.param(np.int64, np.float64, np.float64, id="int64-float64"),
    pytest.param(np.int8, np.float16, np.float16, id="int8-float16"),
    pytest.param(np.int32, np.float16, np.float16, id="int32-float16"),
    pytest.param(np.bool_, np.float32, np.float32, id="bool-float32"),
    pytest.param(np.uint8, np.float32, np.float32, id="uint8-float32"),
    pytest.param(np.int32, np.int64, np.int64, id="int32-int64"),
    pytest.param(np.float32, np.float64, np.float64, id="float32-float64"),
])
@pytest.mark.parametrize("op", ["add", "radd", "mul", "sub", "maximum"])
def test_tensor_tensor_promotion_is_pytorchs(a, b, dtype, op):
    x, y = mg.tensor(np.ones(2, a)), mg.tensor(np.full(2, 2, b))
    assert OPS[op](x, y).dtype == dtype


def test_int_by_int_division_and_where_are_float32():
    i = mg.tensor(I64)
    assert (i / mg.tensor(I64)).dtype == np.float32
    assert mg.where(mg.tensor([True, False, True]), i, 0.5).dtype == np.float32
    np.testing.assert_array_equal(mg.where(mg.tensor([True, False, True]), i, 0.5).numpy(), [1, 0.5, 3])


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=4), st.floats(-4, 4, allow_nan=False))
def test_a_float_tensor_gradient_through_an_int_operand(ints, f):
    w = mg.tensor(np.float32(f), requires_grad=True)
    (mg.tensor(np.array(ints)) * w).sum().backward()
    assert w.grad.dtype == np.float32 and w.grad == np.float32(sum(ints))


# ----------------------------------------------------------------------------- iteration


def test_iterating_a_0d_tensor_raises():
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(mg.tensor(3.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        a, = mg.tensor(3.0)


def test_iterating_gives_the_rows():
    rows = list(mg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    assert list(mg.zeros(0, 3)) == []


@pytest.mark.parametrize("method", ["exp", "log", "sqrt", "tanh", "sigmoid"])
def test_transcendental_functions_of_ints_are_float32(method):  # torch.sqrt(long) is float32
    ints = mg.tensor(np.array([1, 4, 9]))
    out = getattr(ints, method)()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), getattr(mg.tensor([1.0, 4.0, 9.0]), method)().numpy())


@pytest.mark.parametrize("method", ["mean", "var", "std"])
def test_averages_of_ints_are_refused_as_in_pytorch(method):
    with pytest.raises(TypeError, match=rf"{method}: the input is int64, not a floating-point tensor"):
        getattr(mg.tensor(np.array([1, 2, 3])), method)()
