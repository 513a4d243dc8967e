"""In-place changes: a tensor changed after an op saved it makes backward raise (version
counters), never give a silently wrong gradient; in-place arithmetic keeps the dtype's kind."""

import gc

import numpy as np
import pytest

import minigrad as mg
from minigrad import versions
from minigrad.optim import SGD, Adam

MODIFIED = "changed in place afterwards"


def vec(*values, requires_grad=False):
    return mg.tensor(np.array(values, dtype=np.float64), requires_grad=requires_grad)


# ----------------------------------------------------------------------------- the cases


def test_changing_a_saved_input_after_forward_raises():
    w, x = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0)
    y = (w * x).sum()
    x += 10  # the old code gave w.grad == [13, 14]
    with pytest.raises(RuntimeError, match=MODIFIED) as e:
        y.backward()
    msg = str(e.value)
    # Names the op, which input, its shape, both versions and what to do instead.
    assert "Mul saved its input 1" in msg and "shape (2,)" in msg
    assert "now at version 1" in msg and "saw version 0" in msg
    assert "x = x + 1, not x += 1" in msg and "after backward" in msg
    assert w.grad is None


def test_an_update_under_no_grad_before_backward_raises():
    w = vec(1.0, 2.0, requires_grad=True)
    y = (w * w).sum()
    with mg.no_grad():
        w -= 1.0  # an optimizer step before backward: the old code gave w.grad == [0, 2]
    with pytest.raises(RuntimeError, match="Mul saved its input 0"):
        y.backward()


def test_changing_a_detached_output_that_the_op_saved_raises():
    w = vec(0.5, 1.0, requires_grad=True)
    z = w.exp()  # Exp saves its output
    y = z.sum()
    d = z.detach()
    d += 1.0
    assert z._version == d._version == 1  # one storage, one counter
    with pytest.raises(RuntimeError, match="Exp saved its output") as e:
        y.backward()
    assert "shape (2,)" in str(e.value)


def test_changing_a_detached_input_raises():
    w, x = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0)
    y = (w * x).sum()
    xd = x.detach()
    xd *= 2.0
    with pytest.raises(RuntimeError, match="Mul saved its input 1"):
        y.backward()


@pytest.mark.parametrize("make_view", [
    pytest.param(lambda x: x.reshape(2, 2), id="reshape"),
    pytest.param(lambda x: x[1:], id="slice"),
    pytest.param(lambda x: x.reshape(2, 2).T, id="transpose-of-view"),
    pytest.param(lambda x: x.unsqueeze(0), id="unsqueeze"),
])
def test_a_view_shares_the_version_of_its_base(make_view):
    w, x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True), vec(3.0, 4.0, 5.0, 6.0)
    y = (w * x).sum()
    v = make_view(x)
    v += 1.0  # changes x's memory
    assert x._version == v._version == 1
    with pytest.raises(RuntimeError, match="Mul saved its input 1"):
        y.backward()


def test_a_view_saved_by_an_op_is_checked_against_its_base():
    w, x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True), vec(3.0, 4.0, 5.0, 6.0)
    y = (w.reshape(2, 2) * x.reshape(2, 2)).sum()  # Mul saves a view of x
    x -= 1.0
    with pytest.raises(RuntimeError, match=r"Mul saved its input 1 \(a tensor of shape \(2, 2\)\)"):
        y.backward()


# ----------------------------------------------------------------------------- what must not raise

# (name, f(w, c), does f save c's array?). Changing c in place after forward must raise
# exactly when the op saved it: PyTorch's rule, and what keeps the check from crying wolf.
OPS = [
    pytest.param(lambda w, c: w + c, False, id="add"),
    pytest.param(lambda w, c: w - c, False, id="sub"),
    pytest.param(lambda w, c: w * c, True, id="mul"),
    pytest.param(lambda w, c: w / c, True, id="div"),
    pytest.param(lambda w, c: w ** c, True, id="pow"),
    pytest.param(lambda w, c: w.maximum(c), True, id="maximum"),
    pytest.param(lambda w, c: w.reshape(2, 2) @ c.reshape(2, 2), True, id="matmul"),
    pytest.param(lambda w, c: w * c.exp(), False, id="mul-by-exp"),  # Mul saved exp(c), a new array
    pytest.param(lambda w, c: mg.cat([w, c]), False, id="cat"),
]


@pytest.mark.parametrize("f, saves", OPS)
def test_backward_raises_exactly_when_the_op_saved_the_changed_array(f, saves):
    w, c = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True), vec(2.0, 3.0, 2.0, 3.0)
    y = f(w, c).sum()
    c += 0.5
    if saves:
        with pytest.raises(RuntimeError, match=MODIFIED):
            y.backward()
    else:
        y.backward()
        assert w.grad is not None and np.isfinite(w.grad).all()


def test_changes_before_forward_or_after_backward_are_fine():
    w, x = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0)
    x += 1.0  # before the graph saw it
    y = (w * x).sum()
    y.backward()
    np.testing.assert_array_equal(w.grad, [4.0, 5.0])
    x += 1.0  # after backward: nothing left to protect
    with mg.no_grad():
        w -= 0.1 * mg.tensor(w.grad)
    assert w._version == 1 and x._version == 2


def test_changing_an_input_that_no_op_saved_keeps_a_retained_graph_usable():
    w = vec(1.0, 2.0, requires_grad=True)
    y = (w.tanh() * 3.0).sum()  # Tanh saves its output, Mul the tanh and the constant
    y.backward(retain_graph=True)
    with mg.no_grad():
        w += 1.0  # Tanh saved its output, not w: the second backward is still right
    y.backward()
    np.testing.assert_allclose(w.grad, 2 * 3 * (1 - np.tanh([1.0, 2.0]) ** 2))


@pytest.mark.parametrize("opt", [
    pytest.param(lambda ps: SGD(ps, lr=0.1), id="SGD"),
    pytest.param(lambda ps: Adam(ps, lr=0.1), id="Adam"),
])
def test_an_optimizer_step_between_forward_and_backward_raises(opt):
    w = vec(1.0, 2.0, requires_grad=True)
    optimizer = opt([w])
    for _ in range(3):  # the usual loop, forward - backward - step, is fine
        optimizer.zero_grad()
        (w * w).sum().backward()
        optimizer.step()
    assert w._version == 3
    optimizer.zero_grad()
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    optimizer.step()  # the graph still holds the old w
    with pytest.raises(RuntimeError, match="Mul saved its input 0"):
        loss.backward()


def test_the_error_says_earlier_when_older_changes_were_forgotten():
    w, x = vec(1.0, requires_grad=True), vec(2.0)
    y = (w * x).sum()
    for _ in range(versions.VersionCounter.KEEP_TICKS + 3):
        x += 1.0
    with pytest.raises(RuntimeError, match=r"now at version 35, Mul saw version 3 or earlier"):
        y.backward()


def test_counters_are_freed_with_their_arrays():
    ts = [vec(1.0, 2.0) for _ in range(50)]
    for t in ts:
        t += 1.0
    keys = {id(versions.storage(t.numpy())) for t in ts}
    assert keys <= set(versions._counters)
    del ts, t
    gc.collect()
    assert not keys & set(versions._counters)  # no counter outlives its array
    assert vec(1.0, 2.0)._version == 0  # a new array never inherits an old one's counter


# ----------------------------------------------------------------------------- dtype of in-place results


@pytest.mark.parametrize("update, symbol", [
    pytest.param(lambda i: i.__iadd__(0.7), r"\+=", id="int += float"),
    pytest.param(lambda i: i.__isub__(mg.tensor([0.5, 0.5, 0.5])), "-=", id="int -= float tensor"),
    pytest.param(lambda i: i.__imul__(np.float64(1.5)), r"\*=", id="int *= numpy float"),
    pytest.param(lambda i: i.__itruediv__(2), "/=", id="int /= int"),
])
def test_inplace_on_an_integer_tensor_with_a_float_result_raises(update, symbol):
    i = mg.tensor(np.array([1, 2, 3]))
    with pytest.raises(TypeError, match=rf"{symbol}: the result of int64 .* is float\d+, which an int64 "
                                        r"tensor cannot hold in place"):
        update(i)
    np.testing.assert_array_equal(i.numpy(), [1, 2, 3])  # not truncated, not changed
    assert i._version == 0


def test_a_bool_tensor_cannot_take_an_integer_result_in_place():
    m = mg.tensor(np.array([True, False]))
    with pytest.raises(TypeError, match=r"\+=: the result of bool \+ int is int64"):
        m += 1


def test_inplace_results_of_the_same_kind_are_fine():
    i = mg.tensor(np.array([1, 2, 3]))
    i += 2
    i *= mg.tensor(np.array([1, 0, 1], dtype=np.int32))
    np.testing.assert_array_equal(i.numpy(), [3, 0, 5])
    assert i.dtype == np.int64 and i._version == 2
    f = mg.tensor([1.0, 2.0])  # float32
    f += np.array([0.5, 0.25])  # float64 operand: rounded into float32, as in PyTorch
    f /= 2
    assert f.dtype == np.float32
    np.testing.assert_allclose(f.numpy(), [0.75, 1.125])


def test_re_initialising_a_weight_after_forward_makes_backward_raise():
    import minigrad.nn as nn

    lin = nn.Linear(2, 2)
    y = lin(mg.randn(3, 2, requires_grad=True)).sum()
    nn.init.normal_(lin.weight)  # writes the weight's array in place
    with pytest.raises(RuntimeError, match="changed in place"):
        y.backward()
