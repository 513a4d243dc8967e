"""Creation helpers (full, linspace, empty, empty_like, from_numpy): values and dtypes against
PyTorch, and the errors. The dtype methods (to, type, int, bool, half) and names (mg.float16 ...
mg.bool) are in test_ops_dtype.py."""

import numpy as np
import pytest
from domains import _torch, torch_dtype_name
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 2))


# ----------------------------------------------------------------------------- creation


FILLS = [3, True, 2.5, -0.0, np.int32(4), np.float64(1.5), 1 + 2j, np.int64(-2)]


@pytest.mark.parametrize("fill", FILLS, ids=repr)
def test_full_infers_the_dtype_as_torch(fill):
    torch = _torch()
    ours, theirs = mg.full((2, 3), fill), torch.full((2, 3), fill)
    assert ours.shape == (2, 3) and ours.dtype == np.dtype(torch_dtype_name(theirs))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_full_with_a_dtype_and_requires_grad():
    assert mg.full((2,), 1, dtype=np.float64).dtype == np.float64
    x = mg.full([3], 2.0, requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [4, 4, 4])
    assert mg.full((), 7).shape == () and mg.full((), 7).item() == 7
    assert mg.full_like(mg.zeros(2), 3).dtype == np.float32  # full_like keeps x's dtype


@fewer_examples
@given(start=st.floats(-100, 100), end=st.floats(-100, 100), steps=st.integers(0, 40))
def test_linspace_as_torch(start, end, steps):
    torch = _torch()
    ours, theirs = mg.linspace(start, end, steps), torch.linspace(start, end, steps)
    assert ours.dtype == np.float32 and ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-4)
    ours = mg.linspace(start, end, steps, dtype=np.float64)
    theirs = torch.linspace(start, end, steps, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


LINSPACES = [((0, 10, 6), "int64"), ((1, 10, 4), "int32"), ((-1, 10, 4), "int64"), ((0.5, 10.7, 3), "int64"),
             ((0, 1, 1), "float32"), ((3, 3, 0), "float32"), ((-5, 5, 5), "int16")]


@pytest.mark.parametrize("args, dtype", LINSPACES, ids=str)
def test_linspace_edges_and_integer_dtypes_as_torch(args, dtype):
    torch = _torch()
    ours = mg.linspace(*args, dtype=np.dtype(dtype))
    theirs = torch.linspace(*args, dtype=getattr(torch, dtype))
    assert ours.dtype == np.dtype(dtype) and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_linspace_takes_0d_tensors_requires_grad_and_refuses_bad_steps():
    x = mg.linspace(mg.tensor(0.0), mg.tensor(1.0), 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.numpy().tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="linspace: number of steps must be non-negative, got -1"):
        mg.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="linspace: steps must be an int"):
        mg.linspace(0, 1, 2.0)


@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([4],), ((),), (0, 2)], ids=str)
def test_empty_and_empty_like_shapes_and_dtypes_as_torch(size):
    torch = _torch()
    ours, theirs = mg.empty(*size), torch.empty(*size)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == np.float32
    assert mg.empty(*size, dtype=np.int64).dtype == np.int64
    like = mg.empty_like(mg.tensor(np.ones((3, 1), dtype=np.int32)))
    assert like.shape == (3, 1) and like.dtype == np.int32
    assert mg.empty_like(mg.zeros(2), dtype=np.float64).dtype == np.float64
    x = mg.empty(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(ValueError, match="empty: sizes must not be negative"):
        mg.empty(2, -1)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "uint8", "bool",
                                   "complex64"])
def test_from_numpy_shares_memory_both_ways_and_keeps_the_dtype(dtype):
    torch = _torch()
    a = np.zeros((2, 2), dtype=dtype)
    x = mg.from_numpy(a)
    assert x.dtype == a.dtype == np.dtype(torch_dtype_name(torch.from_numpy(a))) and not x.requires_grad
    a[0, 0] = 1
    assert x.numpy()[0, 0] == 1
    x.numpy()[1, 1] = 1
    assert a[1, 1] == 1 and np.shares_memory(x.numpy(), a)


def test_from_numpy_errors_as_torch():
    torch = _torch()
    with pytest.raises(TypeError, match="from_numpy: expected an np.ndarray, got list"):
        mg.from_numpy([1, 2])
    with pytest.raises(TypeError):
        torch.from_numpy([1, 2])
    with pytest.raises(TypeError, match="from_numpy: cannot make a tensor from an array of <U1"):
        mg.from_numpy(np.array(["a"]))
