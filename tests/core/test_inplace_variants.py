"""The in-place variants (`x.exp_()`, `x.masked_fill_(mask, v)`, `x.add_(y)`): each is the op's
method written into x's own array (ops/table.py, Tensor._take_result), in the graph where torch
allows it, refused on a leaf that requires grad, checked by the version counter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.ops import table
from minigrad.testing import arrays, shapes

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

# (in-place name, the arguments after self, a domain for self's values)
CASES = [
    ("exp_", (), (-2, 2)), ("log_", (), (0.5, 3)), ("sqrt_", (), (0.5, 3)), ("abs_", (), (0.2, 2)),
    ("tanh_", (), (-2, 2)), ("sigmoid_", (), (-2, 2)), ("relu_", (), (0.2, 2)), ("sin_", (), (-2, 2)),
    ("cos_", (), (-2, 2)), ("erf_", (), (-2, 2)), ("reciprocal_", (), (0.5, 2)), ("square_", (), (-2, 2)),
    ("clamp_", (-0.5, 0.5), (0.6, 2)), ("clip_", (None, 0.5), (-2, 0.4)), ("neg_", (), (-2, 2)),
    ("add_", (1.5,), (-2, 2)), ("sub_", (0.5,), (-2, 2)), ("mul_", (3.0,), (-2, 2)),
    ("div_", (4.0,), (-2, 2)),
    ("pow_", (2,), (0.5, 2)), ("lerp_", (1.0, 0.25), (-2, 2)), ("atan2_", (2.0,), (-2, 2)),
    ("hypot_", (2.0,), (-2, 2)), ("cumsum_", (0,), (-2, 2)), ("cumprod_", (0,), (0.5, 2)),
]


def _input(low, high, shape=(2, 3), dtype=np.float64):
    return np.random.default_rng(0).uniform(low, high, shape).astype(dtype)


def test_every_declared_in_place_variant_is_its_method_written_into_self():
    named = {e.name + "_" for e in table.entries() if e.inplace is not None}
    assert {c[0] for c in CASES} <= named and len(named) > 60
    for name, args, domain in CASES:
        a = _input(*domain)
        x = mg.tensor(a.copy())
        storage, expected = x.numpy(), getattr(mg.tensor(a.copy()), name[:-1])(*args)
        out = getattr(x, name)(*args)
        assert out is x and x.numpy() is storage, name  # the same tensor, the same memory
        np.testing.assert_array_equal(x.numpy(), expected.numpy(), err_msg=name)
        assert x._version == 1, name


@pytest.mark.parametrize("name, args, domain", CASES, ids=[c[0] for c in CASES])
@fewer_examples
@given(data=st.data())
def test_in_place_in_the_graph_has_the_gradient_of_the_op(name, args, domain, data):
    """y = x * 1; y.op_(...) then backward gives x the gradient of y.op(...), also when the op
    saved the input it overwrote (sin_, sqrt_: its old values are kept for backward)."""
    shape = data.draw(shapes(min_dims=1) if name.startswith("cum") else shapes(), label="shape")
    a = data.draw(arrays(shape, *domain), label="x")

    def in_place(x):
        y = x * 1.0
        getattr(y, name)(*args)
        return y

    def out_of_place(x):
        return getattr(x * 1.0, name[:-1])(*args)

    assert mg.gradcheck(in_place, [a])
    x1, x2 = mg.tensor(a, requires_grad=True), mg.tensor(a, requires_grad=True)
    in_place(x1).sum().backward()
    out_of_place(x2).sum().backward()
    np.testing.assert_allclose(x1.grad, x2.grad, rtol=1e-12)


def test_masked_fill_in_place_inside_a_forward_gets_masked_fills_gradients():
    """The attention idiom: scores.masked_fill_(~mask, -inf) before the softmax."""
    q = mg.tensor(_input(-1, 1, (2, 4)), requires_grad=True)
    keep = mg.tensor(np.array([[True, True, False, True], [True, False, False, True]]))
    w = mg.tensor(_input(-1, 1, (2, 4)))

    def loss(in_place):
        scores = q * 2.0
        if in_place:
            scores.masked_fill_(~keep, -np.inf)
        else:
            scores = scores.masked_fill(~keep, -np.inf)
        return (scores.softmax(-1) * w).sum()

    loss(True).backward()
    g = q.grad.numpy().copy()
    q.grad = None
    loss(False).backward()
    np.testing.assert_array_equal(g, q.grad)
    assert (g[~keep.numpy()] == 0).all()


def test_a_leaf_that_requires_grad_is_refused_and_left_unchanged():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="exp_: a leaf tensor that requires grad is used in an in-place"):
        w.exp_()
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    assert w._version == 0 and w.grad_fn is None
    with mg.no_grad():  # as an initializer or an optimizer step does
        w.mul_(2.0)
    np.testing.assert_array_equal(w.numpy(), [2.0, 4.0])
    assert w._version == 1 and w.grad_fn is None and w.requires_grad


def test_a_result_that_does_not_fit_is_refused_before_anything_is_written():
    x = mg.zeros(3)
    with pytest.raises(RuntimeError, match=r"add_: the result has shape \(2, 3\), which a tensor of shape"):
        x.add_(mg.ones(2, 3))
    i = mg.tensor([1, 2])
    with pytest.raises(TypeError, match="exp_: the result is float32, which a tensor of int64 cannot hold"):
        i.exp_()
    with pytest.raises(TypeError, match="div_: the result is float32"):
        i.div_(2)
    assert x._version == 0 and i._version == 0 and i.tolist() == [1, 2]
    i.div_(2, rounding_mode="floor")  # an integer result fits
    assert i.tolist() == [0, 1] and i.dtype == np.int64
    b = mg.tensor([0.5, -1.0])
    b.gt_(0.0)  # a bool result in a float tensor: 1.0 and 0.0, as torch's gt_
    assert b.tolist() == [1.0, 0.0] and b.dtype == np.float32


def test_views_see_the_change_and_a_node_that_saved_the_old_values_refuses_backward():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    row = x[0]
    x.mul_(10.0)
    np.testing.assert_array_equal(row.numpy(), [10.0, 20.0])
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    v = mg.tensor([3.0, 4.0])
    y = (w * v).sum()  # Mul saved v
    v.add_(1.0)
    with pytest.raises(RuntimeError, match="Mul saved its input 1"):
        y.backward()


def test_a_plain_tensor_joins_the_graph_when_the_other_operand_requires_grad():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    acc = mg.zeros(2)
    acc.add_(w * w)
    assert acc.requires_grad and acc.grad_fn is not None
    (acc * mg.tensor([3.0, -1.0])).sum().backward()
    np.testing.assert_array_equal(w.grad, [6.0, -4.0])  # 2 w times each place's weight


def test_the_in_place_function_forms_are_torchs_one_input_ones():
    x = mg.tensor([0.25, 4.0])
    assert mg.sqrt_(x) is x and x.tolist() == [0.5, 2.0]
    assert not hasattr(mg, "add_")  # torch has Tensor.add_ but no torch.add_
