"""Tensor basics: creation functions, the dtype policy, seeding, repr, conversions and
properties, and in-place updates (the casts are in test_ops_dtype.py)."""

import numpy as np
import pytest

import minigrad as mg

# ----------------------------------------------------------------------------- creation

# (call, expected array)
CREATION = [
    pytest.param(lambda: mg.tensor([1, 2]), np.array([1, 2], np.int64), id="tensor-int-list"),
    pytest.param(lambda: mg.tensor([[1.5], [2.5]]), np.array([[1.5], [2.5]], np.float32), id="tensor-nested"),
    pytest.param(lambda: mg.tensor(3), np.int64(3), id="tensor-python-int"),
    pytest.param(lambda: mg.tensor(True), np.array(True), id="tensor-bool"),
    pytest.param(lambda: mg.tensor(np.arange(3.0)), np.arange(3.0), id="tensor-numpy-float64"),
    pytest.param(lambda: mg.tensor(np.arange(3, dtype=np.int32)), np.arange(3, dtype=np.int32),
                 id="tensor-numpy-int32"),
    pytest.param(lambda: mg.tensor([1, 2], dtype=mg.int64), np.array([1, 2]), id="tensor-explicit-dtype"),
    pytest.param(lambda: mg.zeros(2, 3), np.zeros((2, 3), np.float32), id="zeros"),
    pytest.param(lambda: mg.zeros((2, 3)), np.zeros((2, 3), np.float32), id="zeros-tuple"),
    pytest.param(lambda: mg.ones(2, dtype=mg.float64), np.ones(2), id="ones-float64"),
    pytest.param(lambda: mg.full((2,), 7.0), np.full(2, 7.0, np.float32), id="full"),
    pytest.param(lambda: mg.eye(2, 3), np.eye(2, 3, dtype=np.float32), id="eye"),
    pytest.param(lambda: mg.arange(4), np.arange(4, dtype=np.int64), id="arange-int"),
    pytest.param(lambda: mg.arange(1, 7, 2), np.array([1, 3, 5], np.int64), id="arange-start-end-step"),
    pytest.param(lambda: mg.arange(0, 1, 0.25), np.arange(0, 1, 0.25, dtype=np.float32), id="arange-float"),
    pytest.param(lambda: mg.arange(3.0), np.arange(3, dtype=np.float32), id="arange-float-end"),
    pytest.param(lambda: mg.zeros_like(mg.ones(2, dtype=mg.float64)), np.zeros(2), id="zeros_like"),
    pytest.param(lambda: mg.ones_like(mg.arange(2)), np.ones(2, np.int64), id="ones_like-int"),
    pytest.param(lambda: mg.full_like(mg.ones(2), 3.0, dtype=mg.float64), np.full(2, 3.0),
                 id="full_like-dtype"),
]


@pytest.mark.parametrize("make, expected", CREATION)
def test_creation_functions(make, expected):
    t = make()
    assert isinstance(t, mg.Tensor) and t.is_leaf and not t.requires_grad
    assert t.dtype == expected.dtype and t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)


def test_tensor_copies_and_as_tensor_does_not():
    a = np.zeros(2)
    t, shared = mg.tensor(a), mg.as_tensor(a)
    a[0] = 5.0
    assert t.numpy()[0] == 0.0 and shared.numpy()[0] == 5.0
    assert mg.as_tensor(t) is t


def test_creation_with_requires_grad():
    made = [mg.zeros(2, requires_grad=True), mg.randn(2, requires_grad=True), mg.ones(1, requires_grad=True)]
    for t in made:
        assert t.requires_grad and t.is_leaf and t.grad is None
    with pytest.raises(RuntimeError, match="only floating-point"):
        mg.zeros(2, dtype=mg.int64, requires_grad=True)


@pytest.mark.parametrize("make", [
    pytest.param(lambda: mg.randn(2, 3), id="randn"),
    pytest.param(lambda: mg.rand(2, 3), id="rand"),
    pytest.param(lambda: mg.randint(0, 10, (5,)), id="randint"),
    pytest.param(lambda: mg.randn_like(mg.zeros(4)), id="randn_like"),
    pytest.param(lambda: mg.rand_like(mg.zeros(4, dtype=mg.float64)), id="rand_like"),
])
def test_manual_seed_makes_random_draws_repeat(make):
    mg.manual_seed(123)
    first, second = make(), make()
    mg.manual_seed(123)
    again = make()
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert not np.array_equal(first.numpy(), second.numpy())


def test_random_dtypes_and_ranges():
    mg.manual_seed(0)
    assert mg.randn(3).dtype == np.float32 and mg.rand(3, dtype=mg.float64).dtype == np.float64
    u = mg.rand(1000).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    ints = mg.randint(2, 5, (1000,))
    assert ints.dtype == np.int64 and set(np.unique(ints.numpy())) == {2, 3, 4}
    assert mg.rand_like(mg.zeros(2, dtype=mg.float64)).dtype == np.float64


# ----------------------------------------------------------------------------- properties


def test_properties_and_conversions():
    t = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert t.shape == (2, 3) and t.ndim == 2 and t.dim() == 2 and t.dtype == np.float32
    assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-1) == 3 and t.numel() == 6 and len(t) == 2
    assert t.numpy() is t.numpy()
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    np.testing.assert_array_equal(t.T.numpy(), t.numpy().T)
    np.testing.assert_array_equal(np.asarray(t), t.numpy())
    assert t[1, 2].item() == 6.0 and isinstance(t[1, 2].item(), float)
    assert float(t[0, 0]) == 1.0 and int(t[1, 0]) == 4 and bool(t[0, 0] == 1.0)
    assert isinstance(mg.arange(3)[1].item(), int)
    with pytest.raises(TypeError, match="len"):
        len(mg.tensor(1.0))


def test_repr_shows_data_dtype_and_grad_fn():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    assert repr(mg.tensor([1.0, 2.5])) == "tensor([1. , 2.5])"
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<Mul>)"
    assert repr(x.sum()) == "tensor(3., grad_fn=<Sum>)"
    assert repr(mg.arange(2)) == "tensor([0, 1], dtype=int64)"
    assert repr((x * 2).grad_fn) == "<Mul>"


def test_in_place_updates_only_outside_the_graph():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    with mg.no_grad():
        w -= 0.5
        w *= 2
        w /= 2
        w += mg.tensor([1.0, 1.0])
    np.testing.assert_array_equal(w.numpy(), [1.5, 2.5])
    assert w.dtype == np.float32 and w.is_leaf
    with pytest.raises(RuntimeError, match="in-place update"):
        w += 1.0


def test_eq_is_elementwise_and_tensors_hash_by_identity():
    a, b = mg.tensor([1.0, 2.0]), mg.tensor([1.0, 3.0])
    np.testing.assert_array_equal((a == b).numpy(), [True, False])
    assert len({a, b, a}) == 2


def test_the_dim_alias_is_defined_once():
    """`Dim` (the type of a `dim` argument) lives in ops/arguments.py; the kinds import it."""
    from minigrad import tensor
    from minigrad.ops import arguments, reduce, shape

    assert reduce.Dim is arguments.Dim is shape.Dim and not hasattr(tensor, "Dim")
