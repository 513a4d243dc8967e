"""F.rms_norm and nn.RMSNorm (nn/normalization.py): gradient checks over drawn shapes (batch
axes of size 1, 0-d batches, one or two normalized axes, with and without a weight), the same
math written plainly with Tensor ops, the default eps of each dtype, huge, tiny, zero and
infinite rows, and the argument errors. Against PyTorch: tests/export/test_more_activations_vs_torch.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.testing import arrays, shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))


@st.composite
def rms_cases(draw):
    """(input shape, normalized_shape as passed: an int or a list)."""
    batch = draw(shapes(max_dims=2))
    norm = draw(shapes(min_dims=1, max_dims=2))
    as_int = len(norm) == 1 and draw(st.booleans())
    return batch + norm, (norm[0] if as_int else list(norm)), norm


def plain(x, norm, weight, eps):
    """The definition, as Tensor ops: x / sqrt(mean(x^2) + eps) * weight."""
    dims = tuple(range(-len(norm), 0))
    y = x / ((x * x).mean(dims, keepdim=True) + eps).sqrt()
    return y if weight is None else y * weight


@fewer
@given(case=rms_cases(), with_weight=st.booleans(), eps=st.sampled_from([None, 1e-5, 0.5]), data=st.data())
def test_rms_norm_gradcheck_and_the_plain_formula(case, with_weight, eps, data):
    shape, normalized_shape, norm = case
    x = data.draw(arrays(shape, away_from_zero=0.1))  # no row of near-zeros: its gradient is ~1/sqrt(eps)
    w = data.draw(arrays(norm, 0.5, 1.5)) if with_weight else None
    inputs = [mg.tensor(x, requires_grad=True)] + ([mg.tensor(w, requires_grad=True)] if with_weight else [])

    def fn(t, *weight):
        return F.rms_norm(t, normalized_shape, weight[0] if weight else None, eps)

    assert mg.gradcheck(fn, inputs)
    e = np.finfo(np.float64).eps if eps is None else eps
    expected = plain(mg.tensor(x), norm, None if w is None else mg.tensor(w), e)
    got = fn(mg.tensor(x), *([mg.tensor(w)] if with_weight else []))
    assert got.shape == shape and got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-14, atol=1e-15)


def test_rms_norm_module_gradcheck_and_parameters():
    m = nn.RMSNorm([2, 3], eps=1e-6)
    assert m.normalized_shape == (2, 3) and m.eps == 1e-6 and m.elementwise_affine
    assert m.weight.shape == (2, 3) and m.weight.dtype == np.float32 and np.all(m.weight.numpy() == 1)
    assert list(m.state_dict()) == ["weight"]
    assert repr(m) == "RMSNorm((2, 3), eps=1e-06, elementwise_affine=True)"
    m.weight.data = np.random.default_rng(0).uniform(0.5, 1.5, (2, 3)).astype(np.float32)
    x = np.random.default_rng(1).uniform(0.3, 2.0, (4, 2, 3)) * np.array([1, -1, 1])
    assert gradcheck_module(m, mg.tensor(x, requires_grad=True))
    m.reset_parameters()
    assert np.all(m.weight.numpy() == 1)
    bare = nn.RMSNorm(3, elementwise_affine=False)
    assert bare.weight is None and list(bare.state_dict()) == [] and bare.normalized_shape == (3,)
    assert repr(bare) == "RMSNorm((3,), eps=None, elementwise_affine=False)"


@pytest.mark.parametrize("dtype, eps_dtype", [(np.float64, np.float64), (np.float32, np.float32),
                                              (np.float16, np.float32)],
                         ids=["float64", "float32", "float16"])
def test_default_eps_is_the_machine_epsilon_of_the_computing_dtype(dtype, eps_dtype):
    """Tiny rows, where eps decides the result: float16 is computed in float32 with float32's
    eps, as torch (float16's eps 1e-3 would give 0.003 instead of 0.25 below)."""
    x = np.array([[1e-4, -2e-4, 3e-4]])
    got = F.rms_norm(mg.tensor(x.astype(dtype)), 3)
    assert got.dtype == dtype
    eps = np.finfo(eps_dtype).eps
    exact = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    rtol = 2e-3 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.numpy().astype(np.float64), exact, rtol=rtol)
    explicit = F.rms_norm(mg.tensor(x.astype(dtype)), 3, eps=float(eps))
    np.testing.assert_array_equal(got.numpy(), explicit.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e20, 1e30, 3e38 / 3, 1e-20, 1e-30], ids=lambda s: f"{s:.0e}")
def test_huge_and_tiny_rows_are_exact(dtype, scale):
    """x^2 of |x| > 1.8e19 overflows float32 (torch gives 0 there); a power-of-two scaling keeps
    the exact y = x / sqrt(mean(x^2) + eps), and its gradient, finite."""
    base = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]])
    x = (base * scale).astype(dtype)
    t = mg.tensor(x, requires_grad=True)
    g = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]], dtype)
    y = F.rms_norm(t, 3)
    y.backward(mg.tensor(g))
    x64, eps = x.astype(np.float64), float(np.finfo(dtype).eps)
    if scale < 1:  # tiny rows: work in units of the row's scale, so the float64 reference does not underflow
        x64, eps = x64 / scale, eps / scale**2
    rstd = 1 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps)
    x_hat = x64 * rstd
    np.testing.assert_allclose(y.numpy(), x_hat, rtol=1e-5 if dtype == np.float32 else 1e-13)
    dx = rstd * (g - x_hat * (g * x_hat).mean(-1, keepdims=True))  # in the row's units
    if scale < 1:
        dx = dx / scale
    assert np.isfinite(t.grad).all()
    np.testing.assert_allclose(t.grad, dx, rtol=1e-4 if dtype == np.float32 else 1e-12,
                               atol=1e-6 * np.abs(dx).max())


def test_zero_constant_and_infinite_rows():
    x = mg.tensor(np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0], [np.inf, 1.0, 1.0]]), requires_grad=True)
    with np.errstate(invalid="ignore"):
        y = F.rms_norm(x, 3, eps=1e-6)
    np.testing.assert_array_equal(y.numpy()[0], 0.0)
    np.testing.assert_allclose(y.numpy()[1], 1 / np.sqrt(1 + 1e-6 / 4), rtol=1e-15)
    assert np.isnan(y.numpy()[2, 0]) and np.all(y.numpy()[2, 1:] == 0)  # as torch: inf * rsqrt(inf)
    with np.errstate(invalid="ignore"):  # the inf row's gradient is NaN (0 * inf), as torch's
        y[:2].sum().backward()
    assert np.isfinite(x.grad[:2]).all()
    np.testing.assert_allclose(x.grad[0], 1 / np.sqrt(1e-6))  # d(x / sqrt(eps)) at 0
    np.testing.assert_allclose(x.grad[1], 1e-6 / (4 + 1e-6) ** 1.5, rtol=1e-6)  # d(c / sqrt(c^2 + eps)) / dc


def test_empty_inputs_give_empty_outputs():
    assert F.rms_norm(mg.zeros(2, 0), [0]).shape == (2, 0)
    assert F.rms_norm(mg.zeros(0, 3), 3, mg.ones(3)).shape == (0, 3)


def test_weight_dtype_and_float16():
    """The result has the input's dtype (torch's rule); float16 is normalized in float32, times the
    weight, and rounded once."""
    x = np.random.default_rng(0).standard_normal((4, 5))
    w = np.random.default_rng(1).uniform(0.5, 1.5, 5)
    y = F.rms_norm(mg.tensor(x.astype(np.float32)), 5, mg.tensor(w))
    assert y.dtype == np.float32
    h = F.rms_norm(mg.tensor(x.astype(np.float16)), 5, mg.tensor(w.astype(np.float32)))
    assert h.dtype == np.float16
    x16 = x.astype(np.float16).astype(np.float32)
    once = (x16 / np.sqrt((x16 * x16).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
            * w.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(h.numpy(), once)


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.rms_norm(mg.ones(2, 3), []), ValueError, "at least one dimension"),
    (lambda: F.rms_norm(mg.ones(2, 3), 4), ValueError, r"input of shape \(2, 3\) does not end in .* \(4,\)"),
    (lambda: F.rms_norm(mg.ones(3), [2, 3]), ValueError, r"does not end in normalized_shape \(2, 3\)"),
    (lambda: F.rms_norm(mg.ones(2, 3), 3, mg.ones(4)), ValueError, r"weight has shape \(4,\)"),
    (lambda: F.rms_norm(mg.ones(2, 3), 3, np.ones(3)), TypeError, "rms_norm: the weight"),
    (lambda: F.rms_norm(np.ones((2, 3)), 3), TypeError, "rms_norm: the input"),
    (lambda: F.rms_norm(mg.tensor(np.ones((2, 3), dtype=np.int64)), 3), TypeError, "dtype int64"),
])
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
