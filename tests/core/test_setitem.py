"""`y[index] = value` (Tensor.__setitem__, ops/indexing.py IndexPut): the gradients of the old
values (zero where overwritten) and of value (summed over its broadcasting), every kind of
index, the leaf and view rules, the version counter, dtypes and the errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

A = np.zeros((3, 4, 2))
# index kinds on a (3, 4, 2) tensor; the int arrays hold no repeated place (finite differences
# see only the copy that is written, see test_repeated_places_give_every_copy_its_gradient)
INDICES = [
    pytest.param(1, id="int"),
    pytest.param(-1, id="negative-int"),
    pytest.param((slice(None), slice(1, 3)), id="slices"),
    pytest.param((Ellipsis, 0), id="ellipsis"),
    pytest.param((None, 0, slice(None, None, 2)), id="none-step"),
    pytest.param(np.array([2, 0]), id="int-array"),
    pytest.param((np.array([0, 2]), slice(None), np.array([1, 0])), id="arrays-split-by-slice"),
    pytest.param((0, slice(None), [1, 0]), id="int-beside-list"),
    pytest.param(np.array([True, False, True]), id="bool-mask"),
    pytest.param((slice(None), np.array([True, False, False, True])), id="bool-mask-axis-1"),
    pytest.param(A[..., 0] == 0, id="bool-mask-2d"),
    pytest.param((), id="empty-tuple"),
]


def _target_shape(index):
    y = mg.tensor(A.copy())
    return y[index].shape


@pytest.mark.parametrize("index", INDICES)
@fewer_examples
@given(data=st.data())
def test_gradcheck_of_both_inputs_with_broadcast_values(index, data):
    target = _target_shape(index)
    kept = [s if data.draw(st.booleans()) else 1 for s in target]
    vshape = tuple(kept[data.draw(st.integers(0, len(target))):])  # broadcasts to the target
    if data.draw(st.booleans()):
        vshape = (1,) + vshape  # numpy and torch accept a leading axis of size 1 too
    x, v = data.draw(arrays(A.shape), label="x"), data.draw(arrays(vshape), label="value")

    def put(x, v):
        y = x * 1.0
        y[index] = v
        return y

    assert mg.gradcheck(put, [x, v])


@fewer_examples
@given(x=arrays((3, 4)), v=arrays(()))
def test_a_number_or_a_0d_value_and_the_clone_pattern(x, v):
    t = mg.tensor(x, requires_grad=True)
    y = t.clone()
    y[0] = 0
    y[:, 1] = mg.tensor(v, requires_grad=True)
    g = np.random.default_rng(0).standard_normal((3, 4))
    y.backward(g)
    expected = g.copy()
    expected[0] = 0
    expected[:, 1] = 0
    np.testing.assert_array_equal(t.grad, expected)
    assert y.numpy()[0, 0] == 0 and np.all(y.numpy()[:, 1] == v)


def test_repeated_places_give_every_copy_its_gradient():
    y = mg.zeros(4)
    v = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y[mg.tensor(np.array([0, 0, 2]))] = v
    assert y.grad_fn.name == "IndexPut" and not y.is_leaf
    np.testing.assert_array_equal(y.numpy(), [2, 0, 3, 0])  # one copy is written
    y.backward(np.array([10.0, 20.0, 30.0, 40.0], np.float32))
    np.testing.assert_array_equal(v.grad, [10, 10, 30])  # as torch's index_put


def test_a_leaf_that_requires_grad_refuses_unless_no_grad():
    x = mg.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x[0] = 0
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0][1] = 0
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))
    with mg.no_grad():
        x[0] = 5
    assert x.is_leaf and x.requires_grad and x.numpy()[0, 0] == 5 and x._version == 1


def test_views_and_read_only_arrays_are_refused():
    x = mg.tensor(np.ones(3), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"a view of a tensor that requires grad \(made by Reshape\)"):
        y.reshape(3, 1)[0] = 0
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        mg.zeros(3).expand(2, 3)[0] = 1


def test_nodes_that_saved_the_old_values_make_backward_raise():
    x = mg.tensor(np.arange(1.0, 4.0), requires_grad=True)
    y = x * 1.0
    w = y * y  # saves y's array
    y[0] = 0.0
    with pytest.raises(RuntimeError, match="Mul saved its input 0.*changed in place"):
        w.sum().backward()
    x.grad = None
    z = y.clone()
    z[1] = y[2] * 2
    z.sum().backward()
    np.testing.assert_array_equal(x.grad, [0, 0, 3])  # y[0] was overwritten; z[1] = 2 y[2]


def test_uses_before_the_write_keep_their_gradients_as_in_torch():
    """Each op keeps the node its inputs had when it ran: y[i] = f(y), and y used before the
    write (by an op that saved nothing of y), give torch's gradients."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    a = np.array([0.5, -1.0, 2.0, 1.5])
    cases = [
        lambda y, lib: (y.__setitem__(1, y[2] * 2), y)[1],  # y[1] = f(y)
        lambda y, lib: (lambda e: (y.__setitem__(1, 0.0), e + y)[1])(lib.exp(y)),  # exp(y) used after
        lambda y, lib: (y.__setitem__(slice(0, 2), y[2:] + y[1:3]), y)[1],  # a value that reads y twice
    ]
    for case in cases:
        x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        case(x * 1.0, mg).sum().backward()
        case(t * 1.0, torch).sum().backward()
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-12)


def test_plain_writes_without_a_graph_and_dtypes():
    y = mg.zeros((2, 3))
    v = mg.tensor(np.array(2.5))  # float64 into float32: cast, as torch
    y[1] = v
    assert y.is_leaf and not y.requires_grad and y.dtype == np.float32 and y._version == 1
    np.testing.assert_array_equal(y.numpy(), [[0, 0, 0], [2.5, 2.5, 2.5]])
    ints = mg.tensor(np.zeros(3, np.int64))
    ints[0] = 2.7
    assert ints.dtype == np.int64 and ints.numpy().tolist() == [2, 0, 0]
    w = mg.tensor(np.array(1.0), requires_grad=True)
    z = mg.zeros((2, 2), dtype=np.float32)
    z[:, 0] = w
    z.sum().backward()
    assert w.grad.dtype == np.float64 and w.grad == 2  # summed over the broadcast
    views = mg.zeros(4)
    head = views[:2]
    views[0] = 7.0  # an earlier view sees the change, as in torch
    assert head.numpy()[0] == 7


def test_retain_grad_moves_to_the_new_value():
    x = mg.tensor(np.ones(3), requires_grad=True)
    y = x * 2
    y.retain_grad()
    y[0] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [0, 2, 2])
    np.testing.assert_array_equal(y.grad, [1, 1, 1])  # the gradient of the new value


def test_errors_name_setitem_and_the_shapes():
    y = mg.zeros((2, 3))
    with pytest.raises(ValueError, match=r"setitem: shape mismatch: value of shape \(4,\) cannot be "
                                         r"broadcast to the indexed part of shape \(3,\)"):
        y[0] = mg.ones(4)
    with pytest.raises(IndexError, match=r"setitem: .*out of bounds.*\(tensor of shape \(2, 3\)\)"):
        y[mg.tensor(np.array([0, 5]))] = 1
    with pytest.raises(IndexError, match="setitem: index arrays must be integer or boolean, not float32"):
        y[mg.tensor(np.array([0.0], np.float32))] = 1
    assert y._version == 0 and np.all(y.numpy() == 0)
