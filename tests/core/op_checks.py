"""The checks the tables of tests/core/test_ops_<kind>.py run, written once: each kind's file
holds its tables (op, numpy reference, input domain) and parametrizes these over them."""

from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad.testing import broadcastable_shapes, shapes


def unary_gradcheck(fn, domain, data) -> None:
    """fn's gradient against central differences on one input drawn from domain (any shape,
    0-d and size 1 included)."""
    x = data.draw(domain(shapes()), label="x")
    assert mg.gradcheck(fn, [x])


def binary_gradcheck(fn, draw_pair, data) -> None:
    """fn's gradients on two inputs of broadcastable shapes; draw_pair(shape_a, shape_b) draws them."""
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a, b = data.draw(draw_pair(shape_a, shape_b), label="a, b")
    assert mg.gradcheck(fn, [a, b])


def unary_forward_in_float32(fn, ref, domain, data, reference_in=np.float64) -> None:
    """fn on float32 values gives float32 of its shape, close to ref on the same values (taken in
    `reference_in`)."""
    a = data.draw(domain(shapes()), label="x").astype(np.float32)
    out = fn(mg.tensor(a))
    assert out.dtype == np.float32 and out.shape == a.shape
    np.testing.assert_allclose(out.numpy(), ref(a.astype(reference_in)), rtol=1e-5, atol=1e-6)


def binary_forward_in_float32(fn, ref, draw_pair, data, reference_in=np.float64, atol=1e-5) -> None:
    """fn on two float32 inputs of broadcastable shapes gives float32 close to ref."""
    shape_a, shape_b = data.draw(broadcastable_shapes(), label="shapes")
    a, b = (v.astype(np.float32) for v in data.draw(draw_pair(shape_a, shape_b), label="a, b"))
    out = fn(mg.tensor(a), mg.tensor(b))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(a.astype(reference_in), b.astype(reference_in)),
                               rtol=1e-5, atol=atol)


def _edge(fn, x):
    t = mg.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        out = fn(t)
        out.backward()
    return out, t


def edge_exact(fn, x, value, grad) -> None:
    """fn at a 0-d float32 x: exactly this value and this gradient (NaN where NaN)."""
    out, t = _edge(fn, x)
    np.testing.assert_array_equal(out.numpy(), np.float32(value))
    np.testing.assert_array_equal(t.grad, np.float32(grad))


def edge_close(fn, x, value, grad) -> None:
    """fn at a 0-d float32 x: float32, this value and gradient to float32 rounding, and a zero
    with its sign (round(-0.5) is -0.0)."""
    out, t = _edge(fn, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.float32(value), rtol=1e-6)
    np.testing.assert_allclose(t.grad, np.float32(grad), rtol=1e-6)
    if value == 0:
        assert np.signbit(out.numpy()) == np.signbit(np.float32(value))
