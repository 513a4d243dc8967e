"""Convolution and pooling against torch.nn.functional over drawn configurations: outputs and the
gradients of input, weight and bias (float64 to 1e-10, float32 to 1e-4), where tied maxima send
their gradient, return_indices, the divisor rules, torch's own errors, and the layers' reprs."""

import math

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from hypothesis import assume, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch_pairs import assert_pairs, both  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
from minigrad import testing  # noqa: E402


@st.composite
def conv_cases(draw, n=2):
    """(x shape, weight shape, stride, padding, dilation, groups) of a valid n-d convolution."""
    groups = draw(st.integers(1, 3))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 4)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 3)) for _ in range(n))
    if all(s == 1 for s in stride) and draw(st.booleans()):
        padding, pads = draw(st.sampled_from(["same", "valid"])), [0] * n
    else:
        pads = [draw(st.integers(0, 5)) for _ in range(n)]
        padding = tuple(pads)
    spatial = tuple(max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, 6))
                    for k, d, p in zip(kernel, dilation, pads))
    return (draw(st.integers(1, 3)), cin) + spatial, (cout, cin // groups) + kernel, stride, padding, \
        dilation, groups


DTYPES = [pytest.param(np.float64, 1e-10, id="float64"), pytest.param(np.float32, 1e-4, id="float32")]


@pytest.mark.parametrize("dtype, tol", DTYPES)
@given(case=conv_cases(), bias=st.booleans(), seed=st.integers(0, 1000))
def test_conv2d_matches_torch(case, bias, seed, dtype, tol):
    x_shape, w_shape, stride, padding, dilation, groups = case
    r = np.random.default_rng(seed)
    arrays = [r.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, w_shape[:1])][:3 if bias else 2]
    pairs = both(lambda *a: F.conv2d(*a, stride=stride, padding=padding, dilation=dilation, groups=groups),
                 lambda *a: TF.conv2d(*a, stride=stride, padding=padding, dilation=dilation, groups=groups),
                 arrays, seed)
    assert_pairs(pairs, tol)


@given(case=conv_cases(n=1), seed=st.integers(0, 1000))
def test_conv1d_matches_torch(case, seed):
    x_shape, w_shape, stride, padding, dilation, groups = case
    pad = padding if isinstance(padding, str) else padding[0]
    r = np.random.default_rng(seed)
    arrays = [r.standard_normal(s) for s in (x_shape, w_shape, w_shape[:1])]
    kw = dict(stride=stride[0], padding=pad, dilation=dilation[0], groups=groups)
    assert_pairs(both(lambda *a: F.conv1d(*a, **kw), lambda *a: TF.conv1d(*a, **kw), arrays, seed), 1e-10)


def pool_cases(dilate=True):
    """Larger pools than the gradcheck's: kernels and strides up to 4, dilation up to 3."""
    return testing.pool_cases(dilate, max_kernel=4, max_stride=4, max_dilation=3, max_extra=6, max_batch=3)


@given(case=pool_cases(), seed=st.integers(0, 1000))
def test_max_pool2d_with_ties_matches_torch(case, seed):
    """Small integers make many ties: the gradient must go where torch sends it."""
    shape, kernel, stride, padding, dilation, ceil_mode = case
    x = np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float64)
    kw = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    ty, ti = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    assume(torch.isfinite(ty).all())  # a dilated window wholly in the padding: torch's index is arbitrary
    assert_pairs(both(lambda a: F.max_pool2d(a, **kw), lambda a: TF.max_pool2d(a, **kw), [x], seed), 1e-12)
    _, idx = F.max_pool2d(mg.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(idx.numpy(), ti.numpy())


@given(n=st.integers(1, 9), k=st.integers(1, 3), s=st.integers(1, 3), seed=st.integers(0, 100))
def test_max_pool1d_matches_torch(n, k, s, seed):
    assume(n >= k)
    x = np.random.default_rng(seed).integers(0, 3, (2, 3, n)).astype(np.float32)
    # overlapping windows add float32 gradients in another order than torch: a rounding apart
    assert_pairs(both(lambda a: F.max_pool1d(a, k, s), lambda a: TF.max_pool1d(a, k, s), [x], seed), 1e-6)


@given(case=pool_cases(dilate=False), count_include_pad=st.booleans(), divisor=st.sampled_from([None, 1, 5]),
       seed=st.integers(0, 1000))
def test_avg_pool2d_matches_torch(case, count_include_pad, divisor, seed):
    shape, kernel, stride, padding, _, ceil_mode = case
    x = np.random.default_rng(seed).standard_normal(shape)
    kw = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
              count_include_pad=count_include_pad, divisor_override=divisor)
    assert_pairs(both(lambda a: F.avg_pool2d(a, **kw), lambda a: TF.avg_pool2d(a, **kw), [x], seed), 1e-10)


@given(h=st.integers(1, 9), w=st.integers(1, 9), oh=st.integers(1, 5), ow=st.sampled_from([1, 2, 3, None]),
       seed=st.integers(0, 100))
def test_adaptive_avg_pool2d_matches_torch(h, w, oh, ow, seed):
    x = np.random.default_rng(seed).standard_normal((2, 3, h, w))
    assert_pairs(both(lambda a: F.adaptive_avg_pool2d(a, (oh, ow)),
                      lambda a: TF.adaptive_avg_pool2d(a, (oh, ow)), [x], seed), 1e-10)


# ----------------------------------------------------------------------------- torch's rules


@pytest.mark.parametrize("call", [
    pytest.param(lambda f, x, w: f.conv2d(x, w, stride=2, padding="same"), id="same-stride"),
    pytest.param(lambda f, x, w: f.conv2d(x, w[:, :1]), id="channels"),
    pytest.param(lambda f, x, w: f.conv2d(x[:, :, :2, :2], w), id="kernel-larger"),
    pytest.param(lambda f, x, w: f.conv2d(x, w[:3], groups=2), id="groups"),
    pytest.param(lambda f, x, w: f.max_pool2d(x, 2, padding=2), id="pool-pad"),
])
def test_what_torch_refuses_minigrad_refuses(call):
    x, w = np.ones((1, 2, 4, 4)), np.ones((4, 2, 3, 3))
    with pytest.raises(RuntimeError):
        call(TF, torch.tensor(x), torch.tensor(w))
    with pytest.raises(ValueError):
        call(F, mg.tensor(x), mg.tensor(w))


@pytest.mark.parametrize("ours, theirs", [
    pytest.param(lambda m: m.Conv2d(3, 8, 3), None, id="Conv2d"),
    pytest.param(lambda m: m.Conv2d(4, 8, (3, 1), stride=2, padding=(1, 0), dilation=2, groups=2, bias=False,
                                    padding_mode="reflect"), None, id="Conv2d-all"),
    pytest.param(lambda m: m.Conv2d(1, 2, 4, padding="same"), None, id="Conv2d-same"),
    pytest.param(lambda m: m.Conv1d(2, 3, 5, stride=2, padding=2), None, id="Conv1d"),
    pytest.param(lambda m: m.MaxPool2d(3, 2, 1, ceil_mode=True), None, id="MaxPool2d"),
    pytest.param(lambda m: m.MaxPool1d(2), None, id="MaxPool1d"),
    pytest.param(lambda m: m.AvgPool2d((2, 3), 1, (1, 1)), None, id="AvgPool2d"),
    pytest.param(lambda m: m.AdaptiveAvgPool2d((5, 7)), None, id="AdaptiveAvgPool2d"),
])
def test_reprs_and_shapes_are_torchs(ours, theirs):
    mine, ref = ours(nn), ours(torch.nn)
    assert repr(mine) == repr(ref)
    if hasattr(ref, "weight"):
        assert mine.weight.shape == tuple(ref.weight.shape)
        bound = 1 / math.sqrt(math.prod(ref.weight.shape[1:]))
        assert np.abs(mine.weight.numpy()).max() <= bound
        assert [n for n, _ in mine.named_parameters()] == [n for n, _ in ref.named_parameters()]
