"""The fills (fill_, zero_, copy_, the random fills, detach_) and the new_* methods: values,
gradients inside a forward (the old values get zero, copy_'s source the gradient of what it gave),
the in-place rules (a leaf that requires grad is refused, the version counter moves), dtypes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, shape_and_broadcastable, shapes


@given(data=st.data())
def test_fill_inside_a_forward_gives_the_old_values_zero_and_a_tensor_value_the_sum(data):
    shape = data.draw(shapes(), label="shape")
    a = data.draw(arrays(shape), label="x")

    def filled(x, v):
        y = x * 2.0
        y.fill_(v)
        return y * x  # dx = y (the filled value), dv = sum(x)

    assert mg.gradcheck(filled, [a, np.array(0.7)])
    x, v = mg.tensor(a, requires_grad=True), mg.tensor(0.7, dtype=mg.float64, requires_grad=True)
    filled(x, v).sum().backward()
    np.testing.assert_allclose(x.grad, np.full(shape, 0.7))
    np.testing.assert_allclose(v.grad, a.sum())


@given(data=st.data())
def test_copy_gives_its_source_the_gradient_of_what_it_gave_broadcast_back(data):
    shape, src_shape = data.draw(shape_and_broadcastable(), label="shapes")
    a = data.draw(arrays(shape), label="x")
    s = data.draw(arrays(src_shape), label="src")

    def copied(x, src):
        y = x * 3.0
        y.copy_(src)
        return y * y + x

    assert mg.gradcheck(copied, [a, s])


def test_zero_and_copy_write_into_the_same_memory_and_move_the_version():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    storage = x.numpy()
    assert x.zero_() is x and x.numpy() is storage and x._version == 1
    np.testing.assert_array_equal(x.numpy(), 0)
    assert x.copy_(mg.tensor([5.0, 6.0])) is x and x._version == 2
    np.testing.assert_array_equal(x.numpy(), [[5, 6], [5, 6]])
    assert x.fill_(-1) is x and (x.numpy() == -1).all() and x._version == 3


def test_copy_casts_to_the_tensors_dtype_as_torch_and_overflows_to_inf():
    ints = mg.zeros(3, dtype=mg.long)
    ints.copy_(mg.tensor([1.7, -2.7, 3.2]))
    assert ints.dtype is mg.int64 and ints.tolist() == [1, -2, 3]  # toward zero, as torch
    half = mg.zeros(2, dtype=mg.half)
    half.copy_(mg.tensor([1e6, -1e6], dtype=mg.float64))
    assert np.isposinf(half.numpy()[0]) and np.isneginf(half.numpy()[1])
    nan = mg.zeros(2).fill_(float("nan"))
    assert np.isnan(nan.numpy()).all()


def test_fills_refuse_a_leaf_that_requires_grad_outside_no_grad():
    w = mg.zeros(3, requires_grad=True)
    for fill in (lambda: w.fill_(1), lambda: w.zero_(), lambda: w.copy_(mg.ones(3)),
                 lambda: w.uniform_(), lambda: w.normal_()):
        with pytest.raises(RuntimeError, match="a leaf tensor that requires grad"):
            fill()
    np.testing.assert_array_equal(w.numpy(), 0)  # nothing was written
    with mg.no_grad():
        w.normal_(0, 0.02)  # as nn.init does
    assert w.requires_grad and w.numpy().std() > 0


def test_copy_from_a_source_that_does_not_broadcast_names_both_shapes():
    with pytest.raises(RuntimeError,
                       match=r"copy_: the source of shape \(3,\) does not broadcast to \(2, 2\)"):
        mg.zeros(2, 2).copy_(mg.ones(3))


def test_random_fills_draw_from_their_distribution_and_repeat_with_a_generator():
    g = mg.Generator().manual_seed(5)
    u = mg.empty(20000).uniform_(-2, 3, generator=g)
    assert u.numpy().min() >= -2 and u.numpy().max() < 3 and abs(u.numpy().mean() - 0.5) < 0.05
    n = mg.empty(20000, dtype=mg.float64).normal_(1.0, 0.5, generator=g)
    assert n.dtype is mg.float64 and abs(n.numpy().mean() - 1) < 0.02 and abs(n.numpy().std() - 0.5) < 0.02
    b = mg.empty(20000).bernoulli_(0.25, generator=g)
    assert set(np.unique(b.numpy())) <= {0.0, 1.0} and abs(b.numpy().mean() - 0.25) < 0.02
    e = mg.empty(20000).exponential_(4.0, generator=g)
    assert e.numpy().min() >= 0 and abs(e.numpy().mean() - 0.25) < 0.02
    again = mg.empty(20000).uniform_(-2, 3, generator=g.manual_seed(5))
    np.testing.assert_array_equal(again.numpy(), u.numpy())


@pytest.mark.parametrize("call, message", [
    (lambda x: x.normal_(0, -1), "normal_: std must be non-negative, got -1"),
    (lambda x: x.bernoulli_(1.5), r"bernoulli_: p must be in \[0, 1\], got 1.5"),
    (lambda x: x.exponential_(0), "exponential_: lambd must be positive, got 0"),
    (lambda x: x.uniform_(generator=3), "uniform_: generator must be a minigrad.Generator, got int"),
])
def test_random_fills_name_a_bad_argument(call, message):
    x = mg.zeros(2)
    with pytest.raises((RuntimeError, TypeError), match=message):
        call(x)
    assert x._version == 0


def test_detach_in_place_makes_a_leaf_that_requires_no_grad():
    x = mg.ones(2, requires_grad=True)
    y = x * 2
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad


@pytest.mark.parametrize("name, args", [
    ("new_zeros", ((2, 3),)), ("new_zeros", (2, 3)), ("new_ones", ((1, 2),)), ("new_empty", (4,)),
    ("new_full", ((2, 2), 7.5)),
])
def test_new_tensors_take_this_tensors_dtype_unless_told(name, args):
    x = mg.ones(3, dtype=mg.float64)
    out = getattr(x, name)(*args)
    assert out.dtype is mg.float64 and not out.requires_grad and out.grad_fn is None
    assert out.shape == (tuple(args[0]) if isinstance(args[0], tuple) else tuple(args))
    if name == "new_full":
        assert (out.numpy() == 7.5).all()
    other = getattr(x, name)(*args, dtype=mg.int32, requires_grad=False)
    assert other.dtype is mg.int32


def test_new_tensor_copies_its_data_in_this_tensors_dtype():
    x = mg.ones(2, dtype=mg.float16)
    src = mg.tensor([1.0, 2.0], requires_grad=True)
    out = x.new_tensor(src)
    assert out.dtype is mg.float16 and not out.requires_grad and out.tolist() == [1.0, 2.0]
    out.numpy()[0] = 9
    assert src.numpy()[0] == 1  # a copy
    assert x.new_tensor([1, 2], dtype=mg.long).dtype is mg.int64
    with pytest.raises(TypeError, match=r"new_zeros: a size is non-negative ints, got \(2, -1\)"):
        x.new_zeros(2, -1)
