"""The semantics that changed to PyTorch's in 0.2.0, each checked against torch itself:
bitwise operators, max(dim) / min(dim) named tuples, dtype inference of mg.tensor, rounded
division and //, %, view(dtype), tuples inside an index, and sigmoid in both tails."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.testing import shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

INTS = [np.int32, np.int64]


def same(m, t):
    """minigrad tensor m equals torch tensor t: values (nan where nan) and dtype."""
    assert str(t.dtype) == f"torch.{m.dtype}", (m.dtype, t.dtype)
    np.testing.assert_array_equal(m.numpy(), t.detach().numpy())


# ----------------------------------------------------------------------------- bitwise


ints = hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-2**40, 2**40))


@given(a=ints, b=st.integers(-100, 100), dtype=st.sampled_from(INTS + [np.bool_]))
def test_bitwise_operators_match_torch(a, b, dtype):
    a = a.astype(dtype)
    x, t = mg.tensor(a), torch.from_numpy(a)
    other = bool(b % 2) if dtype is np.bool_ else b
    for op in (lambda u: u & other, lambda u: u | other, lambda u: u ^ other, lambda u: ~u,
               lambda u: other & u, lambda u: u & u, lambda u: u ^ u):
        same(op(x), op(t))


def test_bitwise_names_and_errors():
    x = mg.tensor([5, -3])
    assert x.bitwise_and(3).tolist() == [1, 1] and (~x).tolist() == [-6, 2]
    assert (mg.tensor([True, False]) & 1).dtype == np.int64
    with pytest.raises(TypeError, match=r"bitwise_and: bitwise ops take integer or bool tensors, got float"):
        mg.tensor([1.0]) & 1
    with pytest.raises(TypeError, match="bitwise_not: .* got float32"):
        ~mg.tensor([1.0])


# ----------------------------------------------------------------------------- max(dim), min(dim)


@given(data=st.data(), op=st.sampled_from(["max", "min"]), keepdim=st.booleans())
def test_max_min_with_dim_are_named_tuples_as_torch(data, op, keepdim):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    # few distinct values: ties are common, and the first index must win as in torch
    a = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 1.0, 2.0, np.nan])))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    got, want = getattr(x, op)(dim, keepdim), getattr(t, op)(dim, keepdim)
    assert type(got).__name__ == ("MaxResult" if op == "max" else "MinResult")
    values, indices = got
    same(indices, want.indices)
    np.testing.assert_array_equal(values.numpy(), want.values.detach().numpy())
    g = np.random.default_rng(0).standard_normal(values.shape)
    values.backward(g)
    want.values.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(x.grad, t.grad.numpy())


def test_max_without_dim_stays_a_tensor_and_amax_takes_several_dims():
    x = mg.tensor([[1.0, 3.0], [3.0, 0.0]], requires_grad=True)
    assert isinstance(x.max(), mg.Tensor) and x.max().item() == 3.0
    assert x.amax((0, 1)).item() == 3.0 and x.max(1).values.tolist() == [3.0, 3.0]
    assert x.max(mg.tensor(2.0)).tolist() == [[2.0, 3.0], [3.0, 2.0]]  # maximum, as torch
    v, i = mg.max(x, 0)
    assert v.tolist() == [3.0, 3.0] and i.tolist() == [1, 0]
    assert mg.tensor(np.array(2.0)).max(0).indices.item() == 0  # a 0-d tensor, as torch
    with pytest.raises(TypeError, match=r"max: dim must be one int, got \(0, 1\); for several dims use amax"):
        x.max((0, 1))
    with pytest.raises(IndexError, match="min: cannot reduce the empty dim 0"):
        mg.zeros(0, 2).min(0)


# ----------------------------------------------------------------------------- dtype inference


@pytest.mark.parametrize("data", [[1, 2], 3, [[1], [2]], [True, False], True, [1.5, 2], 2.5, [1, 2.0], []],
                         ids=repr)
def test_tensor_infers_dtypes_as_torch(data):
    same(mg.tensor(data), torch.tensor(data))


def test_labels_from_a_list_index_and_huge_ints_are_refused():
    logits = mg.randn(3, 4)
    assert logits[mg.tensor([0, 1, 2]), mg.tensor([3, 0, 1])].shape == (3,)
    with pytest.raises(OverflowError, match="tensor: a value does not fit in int64"):
        mg.tensor([2**63])
    with pytest.raises(RuntimeError, match="only floating-point tensors can require grad, not int64"):
        mg.tensor([1, 2], requires_grad=True)


# ----------------------------------------------------------------------------- division


nums = st.one_of(st.integers(-50, 50).map(float), st.floats(-50, 50, allow_subnormal=False))


@given(a=hnp.arrays(np.float64, shapes(max_dims=2), elements=nums),
       b=st.one_of(st.sampled_from([0.1, -0.1, 3.0, -2.0, 0.0, 7.5]), nums))
def test_floor_and_trunc_division_match_torch_on_floats(a, b):
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    same(x // b, t // b)
    same(x % b, t % b)
    for mode in ("floor", "trunc"):
        got, want = x.div(b, rounding_mode=mode), t.div(b, rounding_mode=mode)
        same(got, want)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_array_equal(x.grad, t.grad.numpy())  # zero, as torch


@given(a=hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-1000, 1000)),
       b=st.integers(-9, 9).filter(bool), dtype=st.sampled_from(INTS))
def test_integer_division_matches_torch(a, b, dtype):
    a = a.astype(dtype)
    x, t = mg.tensor(a), torch.from_numpy(a)
    same(x // b, t // b)
    same(x % b, t % b)
    same(x / b, t / b)  # true division of ints is float32
    same(x.div(b, rounding_mode="trunc"), t.div(b, rounding_mode="trunc"))
    divisors = np.array([3, -4], dtype)
    same(b // mg.tensor(divisors), b // torch.from_numpy(divisors))


def test_division_forms_and_errors():
    x = mg.tensor([7, -7])
    with pytest.raises(ZeroDivisionError, match=r"div\(rounding_mode='floor'\): an integer divisor is 0"):
        x // 0
    with pytest.raises(ValueError, match="div: rounding_mode must be None, 'floor' or 'trunc', got 'round'"):
        x.div(2, rounding_mode="round")
    with pytest.raises(TypeError, match="add: alpha=0.5 is a float, and the input is int64"):
        x.add(1, alpha=0.5)
    assert x.add(1, alpha=2).tolist() == [9, -5] and x.sub(x, alpha=2).tolist() == [-7, 7]
    assert x.floor_divide(2).tolist() == [3, -4] and x.true_divide(2).tolist() == [3.5, -3.5]
    assert mg.tensor([2.0]).pow(3).item() == 8.0 and x.neg().tolist() == [-7, 7]


# ----------------------------------------------------------------------------- view(dtype)


@pytest.mark.parametrize("src, dst", [(np.float32, np.int32), (np.float32, np.int16), (np.int64, np.float64),
                                      (np.int32, np.int64), (np.float64, np.uint8)])
def test_view_dtype_reads_the_same_bytes_as_torch(src, dst):
    a = np.arange(1, 9, dtype=src).reshape(2, 4)
    got = mg.tensor(a).view(dst)
    want = torch.from_numpy(a).view(getattr(torch, np.dtype(dst).name))
    same(got, want)


def test_view_dtype_errors():
    with pytest.raises(RuntimeError, match=r"view: the last dim of shape \(3,\) .* does not divide into"):
        mg.tensor([1.0, 2.0, 3.0]).view(np.float64)
    with pytest.raises(RuntimeError, match="requires grad as float64 has no gradient"):
        mg.tensor([1.0, 2.0], requires_grad=True).view(np.float64)
    assert mg.tensor([1.0, 2.0], requires_grad=True).view(np.int32).dtype == np.int32
    assert mg.tensor([1.0, 2.0, 3.0, 4.0]).view(2, 2).shape == (2, 2)


# ----------------------------------------------------------------------------- tuples in an index


@pytest.mark.parametrize("index", [
    lambda i: (1, (2, 1, 0), i), lambda i: (slice(None), (1, 0)), lambda i: ((1, 0),),
    lambda i: (0, slice(None), (3, 1)), lambda i: ((1, 0), slice(None), i[:2]), lambda i: (1, 2),
    lambda i: (slice(None), ((1, 0), (2, 3))), lambda i: [1, 0],
], ids=["int-tuple-tensor", "slice-tuple", "tuple-alone", "int-slice-tuple", "tuple-slice-tensor",
        "plain-ints", "nested-tuple", "list"])
def test_tuples_inside_an_index_mean_what_torch_means(index):
    a = np.arange(2 * 4 * 5, dtype=np.float64).reshape(2, 4, 5)
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    got = x[index(mg.tensor([0, 4, 1]))]
    want = t[index(torch.tensor([0, 4, 1]))]
    same(got, want)
    g = np.random.default_rng(0).standard_normal(got.shape)  # each selected place its own weight
    got.backward(g)
    want.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(x.grad, t.grad.numpy())


# ----------------------------------------------------------------------------- sigmoid tails


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_keeps_both_tails_exact(dtype):
    x = mg.tensor(np.array([-80.0, -20.0, -1.0, 0.0, 1.0, 20.0, 80.0], dtype), requires_grad=True)
    z = x.sigmoid()
    exact = 1 / (1 + np.exp(-np.float64(x.numpy())))
    np.testing.assert_allclose(z.numpy(), exact, rtol=1e-6)
    assert z.log().numpy()[1] == pytest.approx(-20.0, rel=1e-6)  # not -inf
    z.backward(np.ones(7, dtype))
    e = np.exp(-np.abs(np.float64(x.numpy())))
    np.testing.assert_allclose(x.grad, e / (1 + e) ** 2, rtol=1e-5)  # z (1 - z), exact in both tails
    assert x.grad[5] > 0 and x.grad[1] == pytest.approx(2.0611e-9, rel=1e-4)  # both tails, not 0


def test_sigmoid_gradcheck_and_nan():
    assert mg.gradcheck(lambda t: t.sigmoid(), [np.linspace(-30, 30, 13)])
    assert np.isnan(mg.tensor([np.nan]).sigmoid().item())
