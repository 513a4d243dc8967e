"""Max, average and adaptive average pooling: gradchecks over drawn windows (stride, padding,
dilation, ceil mode), where the gradient of tied maxima goes, overlapping windows, the divisor
rules, the layers, and the errors."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import gradcheck
from minigrad.testing import pool_cases


def distinct(shape, seed=0):
    """Values 0.1 apart in random order: no ties, so finite differences see one maximum."""
    r = np.random.default_rng(seed)
    return mg.tensor(r.permutation(int(np.prod(shape))).reshape(shape) * 0.1, dtype=mg.float64,
                     requires_grad=True)


# ----------------------------------------------------------------------------- gradients


@given(case=pool_cases(), seed=st.integers(0, 100))
def test_max_pool2d_gradcheck(case, seed):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    x = distinct(shape, seed)
    # a dilated window may fall wholly in the padding (-inf there, as in torch): nothing to check
    assume(np.isfinite(F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode).numpy()).all())
    assert gradcheck(lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), [x], eps=1e-3)


@given(case=pool_cases(dilate=False), count_include_pad=st.booleans(), divisor=st.sampled_from([None, 3]),
       seed=st.integers(0, 100))
def test_avg_pool2d_gradcheck(case, count_include_pad, divisor, seed):
    shape, kernel, stride, padding, _, ceil_mode = case
    x = mg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)
    def fn(x):
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)

    assert gradcheck(fn, [x])


@given(h=st.integers(1, 6), w=st.integers(1, 6), oh=st.integers(1, 4), ow=st.integers(1, 4))
def test_adaptive_avg_pool2d_gradcheck(h, w, oh, ow):
    x = mg.tensor(np.random.default_rng(h * w).standard_normal((2, 1, h, w)), requires_grad=True)
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (oh, ow)), [x])


@pytest.mark.parametrize("module, shape", [
    pytest.param(nn.MaxPool2d(2, 1, padding=1, ceil_mode=True), (1, 2, 3, 4), id="MaxPool2d"),
    pytest.param(nn.MaxPool1d(3, 2, padding=1, dilation=1), (2, 2, 5), id="MaxPool1d"),
    pytest.param(nn.AvgPool2d(3, 2, padding=1, count_include_pad=False), (2, 1, 5, 4), id="AvgPool2d"),
    pytest.param(nn.AdaptiveAvgPool2d((2, None)), (1, 2, 5, 3), id="AdaptiveAvgPool2d"),
])
def test_pool_modules_gradcheck(module, shape):
    assert gradcheck_module(module, distinct(shape))


# ----------------------------------------------------------------------------- ties and windows


def test_tied_maxima_send_the_gradient_to_the_first_in_scan_order():
    """A constant input: each 2x2 window passes its whole gradient to its top-left element."""
    x = mg.tensor(np.ones((1, 1, 4, 4)), requires_grad=True)
    F.max_pool2d(x, 2).backward(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    expected = np.zeros((4, 4))
    expected[::2, ::2] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(x.grad[0, 0], expected)


def test_overlapping_windows_accumulate():
    """Stride 1, kernel 3 over [0 1 2 ... ] with the top at the centre: every window holding the
    centre picks it, so it receives all their gradients."""
    a = np.zeros((1, 1, 5, 5))
    a[0, 0, 2, 2] = 9.0
    x = mg.tensor(a, requires_grad=True)
    y = F.max_pool2d(x, 3, stride=1)
    assert y.shape == (1, 1, 3, 3) and (y.numpy() == 9).all()
    y.backward(np.ones(y.shape))
    assert x.grad[0, 0, 2, 2] == 9 and x.grad.sum() == 9


def test_padding_is_never_the_maximum():
    """An all -inf input padded by 1: the maxima are the -inf elements, never the padding, and
    the indices point inside the input."""
    x = mg.tensor(np.full((1, 1, 2, 2), -np.inf), requires_grad=True)
    y, idx = F.max_pool2d(x, 2, stride=1, padding=1, return_indices=True)
    assert (y.numpy() == -np.inf).all() and idx.dtype == np.int64
    assert idx.numpy().min() >= 0 and idx.numpy().max() <= 3
    y.backward(np.ones(y.shape))
    assert x.grad.sum() == 9


def test_return_indices_are_flat_positions_in_the_plane():
    x = mg.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(idx.numpy()[0, 0], [[5, 7], [13, 15]])
    y1, idx1 = nn.MaxPool1d(2, return_indices=True)(mg.tensor(np.array([[3.0, 1.0, 2.0, 5.0]])))
    np.testing.assert_array_equal(idx1.numpy(), [[0, 3]])
    np.testing.assert_array_equal(y1.numpy(), [[3.0, 5.0]])


def test_avg_pool_divisors():
    x = mg.tensor(np.ones((1, 1, 3, 3)))
    with_pad = F.avg_pool2d(x, 2, stride=2, padding=1)
    np.testing.assert_allclose(with_pad.numpy()[0, 0], [[0.25, 0.5], [0.5, 1.0]])
    np.testing.assert_allclose(F.avg_pool2d(x, 2, 2, 1, count_include_pad=False).numpy(), 1.0)
    np.testing.assert_allclose(F.avg_pool2d(x, 3, divisor_override=2).numpy(), 4.5)
    assert F.avg_pool2d(mg.tensor(np.ones((1, 1, 5, 5))), 2, ceil_mode=True).shape == (1, 1, 3, 3)


def test_adaptive_pool_to_one_is_the_mean_and_unbatched_inputs_work():
    x = np.random.default_rng(0).standard_normal((3, 5, 7))
    y = nn.AdaptiveAvgPool2d(1)(mg.tensor(x))
    assert y.shape == (3, 1, 1)
    np.testing.assert_allclose(y.numpy()[:, 0, 0], x.mean(axis=(1, 2)), rtol=1e-12)
    assert F.max_pool2d(mg.tensor(x), 2).shape == (3, 2, 3)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, match", [
    pytest.param(lambda: F.max_pool2d(mg.randn(1, 1, 5, 5), 2, padding=2),
                 "max_pool2d: pad should be at most half of kernel size, but got pad=2 and kernel_size=2",
                 id="pad"),
    pytest.param(lambda: F.max_pool2d(mg.randn(1, 1, 2, 2), 3),
                 r"max_pool2d: input of shape \(1, 1, 2, 2\) is too small for kernel_size \(3, 3\)",
                 id="small"),
    pytest.param(lambda: F.avg_pool2d(mg.randn(1, 1, 2, 5), (3, 1)),
                 r"avg_pool2d: input of shape \(1, 1, 2, 5\) is too small", id="avg-small"),
    pytest.param(lambda: F.max_pool1d(mg.randn(2, 2, 2, 5), 2),
                 r"max_pool1d: expected an input of 2 or 3 dimensions, got shape \(2, 2, 2, 5\)", id="ndim"),
    pytest.param(lambda: F.max_pool2d(mg.randn(1, 1, 4, 4), (2, 2, 2)),
                 "max_pool2d: kernel_size must be an int or a tuple of 2", id="kernel"),
    pytest.param(lambda: F.avg_pool2d(mg.randn(1, 1, 4, 4), 2, divisor_override=0),
                 "avg_pool2d: divisor_override must be a non-zero int", id="divisor"),
    pytest.param(lambda: F.adaptive_avg_pool2d(mg.randn(4, 4), 2),
                 r"adaptive_avg_pool2d: expected an input of 3 or 4 dimensions, got shape \(4, 4\)",
                 id="adaptive"),
])
def test_errors_name_the_op_and_the_shapes(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_integer_max_pool2d_as_torch_and_other_pools_refuse_integers(dtype):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    a = np.random.default_rng(0).integers(0, 200, (2, 3, 5, 6)).astype(dtype)
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                   {"kernel_size": 2, "dilation": 2, "ceil_mode": True}):
        y, i = F.max_pool2d(mg.tensor(a), return_indices=True, **kwargs)
        ty, ti = torch.nn.functional.max_pool2d(torch.from_numpy(a), return_indices=True, **kwargs)
        assert y.dtype == dtype
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    with pytest.raises(TypeError, match="max_pool1d: the input has dtype int64; pooling needs floating"):
        F.max_pool1d(mg.tensor(np.zeros((1, 1, 4), np.int64)), 2)  # torch: not implemented for Long
