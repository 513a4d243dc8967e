"""Reductions and the fused softmax / log-softmax: gradients, values against numpy, and the
numerical edges (ties, huge logits, fully masked rows, empty and single-element axes)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, dims, distinct, shapes

# Values are cheap to compare and the gradient tests draw the same inputs: a third of the
# profile's examples (at least 10) keeps the suite fast.
fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))


def axes_of(dim, ndim):
    """numpy's axis tuple for a PyTorch-style dim (None, int or tuple; () means every axis;
    0-d accepts 0 and -1)."""
    if ndim == 0 or dim is None or dim == ():
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else dim
    return tuple(sorted(d % ndim for d in dims))


def logsumexp_ref(a, axis, keepdims):
    m = a.max(axis=axis, keepdims=True)
    out = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis)


# (method, numpy reference, shapes, values). Max and min need distinct values (ties are a kink);
# var and std with correction 1 need two or more elements per reduction, std distinct values
# (its gradient is defined as 0 on a constant slice, where the finite difference is not).
REDUCTIONS = [
    pytest.param("sum", lambda a, ax, k: a.sum(ax, keepdims=k), shapes(), arrays, id="sum"),
    pytest.param("mean", lambda a, ax, k: a.mean(ax, keepdims=k), shapes(), arrays, id="mean"),
    pytest.param("amax", lambda a, ax, k: a.max(ax, keepdims=k), shapes(), distinct, id="amax"),
    pytest.param("amin", lambda a, ax, k: a.min(ax, keepdims=k), shapes(), distinct, id="amin"),
    pytest.param("var", lambda a, ax, k: a.var(ax, ddof=1, keepdims=k), shapes(1, min_side=2), arrays,
                 id="var"),
    pytest.param("std", lambda a, ax, k: a.std(ax, ddof=1, keepdims=k), shapes(1, min_side=2), distinct,
                 id="std"),
    pytest.param("logsumexp", logsumexp_ref, shapes(), arrays, id="logsumexp"),
]

SOFTMAXES = [
    pytest.param("softmax", lambda a, ax: np.exp(a - logsumexp_ref(a, ax, True)), id="softmax"),
    pytest.param("log_softmax", lambda a, ax: a - logsumexp_ref(a, ax, True), id="log_softmax"),
]


@pytest.mark.parametrize("method, ref, shape_strategy, domain", REDUCTIONS)
@given(data=st.data())
def test_reduction_gradcheck(method, ref, shape_strategy, domain, data):
    shape = data.draw(shape_strategy, label="shape")
    dim = data.draw(dims(len(shape)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = data.draw(domain(shape), label="x")
    assert mg.gradcheck(lambda t: getattr(t, method)(dim=dim, keepdim=keepdim), [x])


@pytest.mark.parametrize("method, ref, shape_strategy, domain", REDUCTIONS)
@fewer_examples
@given(data=st.data())
def test_reduction_forward_matches_numpy(method, ref, shape_strategy, domain, data):
    shape = data.draw(shape_strategy, label="shape")
    dim = data.draw(dims(len(shape)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    a = data.draw(domain(shape), label="x").astype(np.float32)
    out = getattr(mg.tensor(a), method)(dim=dim, keepdim=keepdim)
    expected = ref(a, axes_of(dim, a.ndim), keepdim)
    assert out.dtype == np.float32 and out.shape == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method, ref", SOFTMAXES)
@given(data=st.data())
def test_softmax_gradcheck(method, ref, data):
    shape = data.draw(shapes(), label="shape")
    dim = data.draw(dims(len(shape), single=True), label="dim")
    x = data.draw(arrays(shape), label="x")
    assert mg.gradcheck(lambda t: getattr(t, method)(dim), [x])


@pytest.mark.parametrize("method, ref", SOFTMAXES)
@fewer_examples
@given(data=st.data())
def test_softmax_forward_matches_numpy(method, ref, data):
    shape = data.draw(shapes(), label="shape")
    dim = data.draw(dims(len(shape), single=True), label="dim")
    a = data.draw(arrays(shape), label="x").astype(np.float32)
    out = getattr(mg.tensor(a), method)(dim)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(a, axes_of(dim, a.ndim)), rtol=1e-5, atol=1e-6)
    if method == "softmax":
        np.testing.assert_allclose(out.numpy().sum(axis=axes_of(dim, a.ndim)), 1.0, rtol=1e-6)


@given(data=st.data())
def test_std_and_var_without_correction(data):
    shape = data.draw(shapes(1), label="shape")
    x = data.draw(arrays(shape), label="x")
    assert mg.gradcheck(lambda t: t.var(dim=-1, correction=0), [x])
    # numpy's std squares unscaled (values of 1e-226 underflow to 0); minigrad scales by a power
    # of two first, as this reference scales each column by its max |x| (a constant column is then
    # all ones: its std exactly 0, as minigrad's, where an unscaled mean leaves a rounding error)
    c = np.max(np.abs(x), axis=0, initial=0)
    c = np.where(c == 0, 1.0, c)
    expected = (x / c).std(axis=0, ddof=1) * c if x.shape[0] > 1 else np.full(x.shape[1:], np.nan)
    np.testing.assert_allclose(mg.tensor(x).std(dim=0).numpy(), expected)


# ----------------------------------------------------------------------------- edges


def backward_of(fn, values, g=None):
    """The value of fn(x) and d <g, fn(x)> / dx for x = values (float32)."""
    x = mg.tensor(values, requires_grad=True)
    out = fn(x)
    out.backward(np.ones(out.shape, np.float32) if g is None else g)
    return out.numpy(), x.grad


# (fn, input, expected value, expected gradient of the sum)
EDGES = [
    pytest.param(lambda x: x.max(), [1.0, 3.0, 3.0], 3.0, [0, 0.5, 0.5], id="max-tie"),
    pytest.param(lambda x: x.min(), [2.0, 2.0, 2.0, 5.0], 2.0, [1 / 3, 1 / 3, 1 / 3, 0], id="min-tie"),
    pytest.param(lambda x: x.amax(dim=1, keepdim=True), [[1.0, 1.0], [0.0, 2.0]], [[1.0], [2.0]],
                 [[0.5, 0.5], [0, 1]], id="amax-tie-keepdim"),
    pytest.param(lambda x: x.max(dim=1, keepdim=True).values, [[1.0, 1.0], [0.0, 2.0]], [[1.0], [2.0]],
                 [[1, 0], [0, 1]], id="max-dim-tie-goes-to-the-first"),
    pytest.param(lambda x: x.softmax(-1), [1e4, 0.0, -1e4], [1, 0, 0], [0, 0, 0], id="softmax-huge"),
    pytest.param(lambda x: x.softmax(-1), [-np.inf, -np.inf], [0, 0], [0, 0], id="softmax-all-masked"),
    pytest.param(lambda x: x.masked_fill(x < 0, -np.inf).softmax(-1), [[-1.0, -2.0], [0.0, -1.0]],
                 [[0, 0], [1, 0]], [[0, 0], [0, 0]], id="masked-row-softmax"),
    pytest.param(lambda x: x.log_softmax(-1), [1e4, 0.0], [0.0, -1e4], [-1.0, 1.0], id="log_softmax-huge"),
    pytest.param(lambda x: x.logsumexp(), [1e4, 1e4], 1e4 + np.log(2), [0.5, 0.5], id="logsumexp-huge"),
    pytest.param(lambda x: x.logsumexp(), [-1e4, -1e4], -1e4 + np.log(2), [0.5, 0.5], id="logsumexp-tiny"),
    pytest.param(lambda x: x.logsumexp(), [-np.inf, -np.inf], -np.inf, [0, 0], id="logsumexp-all-masked"),
    pytest.param(lambda x: x.logsumexp(dim=0), np.zeros((0, 2), np.float32), [-np.inf, -np.inf],
                 np.zeros((0, 2)), id="logsumexp-empty"),
    pytest.param(lambda x: x.sum(), np.zeros((0, 3), np.float32), 0.0, np.zeros((0, 3)), id="sum-empty"),
    pytest.param(lambda x: x.sum(dim=0), 5.0, 5.0, 1.0, id="sum-0d-dim0"),
    pytest.param(lambda x: x.mean(dim=(0, -1)), np.ones((2, 1, 2), np.float32), [1.0],
                 np.full((2, 1, 2), 0.25), id="mean-tuple-negative"),
    pytest.param(lambda x: x.var(), [4.0], np.nan, [np.nan], id="var-one-element"),
    pytest.param(lambda x: x.var(correction=0), [4.0], 0.0, [0.0], id="var-one-element-biased"),
    pytest.param(lambda x: x.softmax(0), 7.0, 1.0, 0.0, id="softmax-0d"),
]


@pytest.mark.parametrize("fn, x, value, grad", EDGES)
def test_edges(fn, x, value, grad):
    with np.errstate(all="ignore"):
        out, dx = backward_of(fn, x)
    np.testing.assert_allclose(out, np.asarray(value, np.float32), rtol=1e-6)
    np.testing.assert_allclose(dx, np.asarray(grad, np.float32), rtol=1e-6, atol=1e-7)
    assert dx.dtype == np.float32


def test_softmax_of_huge_logits_in_float64_matches_shifted():
    a = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]])
    expected = np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)
    np.testing.assert_allclose(mg.tensor(a).softmax(-1).numpy(), expected, rtol=1e-12)
    assert mg.gradcheck(lambda t: t.softmax(-1), [a])
    assert mg.gradcheck(lambda t: t.log_softmax(0), [a])
    assert mg.gradcheck(lambda t: t.logsumexp(1), [a])


def test_max_tie_gradient_is_shared_per_row():
    _, dx = backward_of(lambda x: x.amax(dim=0), [[2.0, 0.0], [2.0, 1.0]], g=np.array([4.0, 6.0], np.float32))
    np.testing.assert_array_equal(dx, [[2.0, 0.0], [2.0, 6.0]])
