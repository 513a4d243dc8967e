"""The version check at its boundary: the global edit count a node records against the edit
counts (ticks) of the storages it saved.

A node records the count as its forward starts; a change whose tick is above that count may
have happened during or after the forward, so backward raises. A change whose tick equals the
count is the last one made before the forward began, which the forward saw: backward is fine.
"""

import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import versions
from minigrad.autograd import Function

MODIFIED = "changed in place afterwards"


def vec(*values, requires_grad=False):
    return mg.tensor(np.array(values, dtype=np.float64), requires_grad=requires_grad)


def test_a_change_just_before_forward_is_seen_by_the_forward_and_allowed():
    w, x, other = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0), vec(0.0)
    x += 1.0  # the last change before the forward: its tick is the count Mul records
    y = (w * x).sum()
    assert versions.counter(x.numpy()).ticks[-1] == y._node.inputs[0]._node.edits
    other += 1.0  # a later change elsewhere makes backward check every node's saved arrays
    y.backward()
    np.testing.assert_array_equal(w.grad, [4.0, 5.0])


def test_a_change_one_edit_after_forward_is_caught():
    w, x = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0)
    x += 1.0
    y = (w * x).sum()
    mul = y._node.inputs[0]._node
    x += 1.0  # the very next edit: tick = the recorded count + 1
    assert versions.counter(x.numpy()).ticks[-1] == mul.edits + 1
    with pytest.raises(RuntimeError, match=MODIFIED) as e:
        y.backward()
    msg = str(e.value)
    assert "Mul saved its input 1 (a tensor of shape (2,))" in msg
    assert "now at version 2, Mul saw version 1," in msg
    assert w.grad is None


class _SlowMul(Function):
    """w * x whose forward waits, after reading x, until another thread has changed x."""

    read = threading.Event()
    changed = threading.Event()

    @staticmethod
    def forward(ctx, w, x):
        ctx.save_for_backward(w, x)
        out = w * x
        _SlowMul.read.set()
        assert _SlowMul.changed.wait(30), "the other thread did not change x"
        return out

    @staticmethod
    def backward(ctx, g):
        w, x = ctx.saved
        return g * x, g * w


def test_a_change_made_by_another_thread_during_forward_is_caught():
    # The forward computed with x's old values; the saved x holds the new ones, so the
    # gradient would be wrong. The change's tick is the count as the forward ends: a node
    # that recorded the count after its forward would take it for a change before.
    w, x = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0)
    _SlowMul.read.clear()
    _SlowMul.changed.clear()

    def change_x():
        nonlocal x
        try:
            assert _SlowMul.read.wait(30)
            x += 10.0
        finally:
            _SlowMul.changed.set()

    other = threading.Thread(target=change_x)
    other.start()
    y = _SlowMul.apply(w, x).sum()
    other.join()
    np.testing.assert_array_equal(y.numpy(), 11.0)  # the forward saw the old x
    with pytest.raises(RuntimeError, match=r"_SlowMul saved its input 1 .* now at version 1"):
        y.backward()
