"""F.conv1d, F.conv2d, nn.Conv1d and nn.Conv2d: gradchecks over drawn configurations (odd sizes,
stride larger than the kernel, dilation, groups, padding larger than the kernel, 1x1 kernels,
a batch of one, "same"), the kernel against the definition written as a sum, the padding
modes, the initialisation, and the errors."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import gradcheck
from minigrad.nn import conv_kernels


@st.composite
def conv_cases(draw, n=2, max_side=3):
    """(x shape, weight shape, stride, padding, dilation, groups) of a valid n-d convolution."""
    groups = draw(st.integers(1, 2))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 4)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    if all(s == 1 for s in stride) and draw(st.booleans()):
        padding = "same"
        pads = [0] * n
    else:
        pads = [draw(st.integers(0, 4)) for _ in range(n)]
        padding = tuple(pads)
    spatial = tuple(max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, max_side))
                    for k, d, p in zip(kernel, dilation, pads))
    x_shape = (draw(st.integers(1, 2)), cin) + spatial
    w_shape = (cout, cin // groups) + kernel
    return x_shape, w_shape, stride, padding, dilation, groups


def draw_arrays(data, *shapes):
    return [np.asarray(data.draw(st.lists(st.floats(-2, 2), min_size=math.prod(s), max_size=math.prod(s))),
                       dtype=np.float64).reshape(s) for s in shapes]


def reference_conv2d(x, w, b, stride, pads, dilation, groups):
    """The definition, one output element at a time: a sum over channels and kernel offsets."""
    N, C, H, W = x.shape
    Cout, Cg, kH, kW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    OH = (xp.shape[2] - dilation[0] * (kH - 1) - 1) // stride[0] + 1
    OW = (xp.shape[3] - dilation[1] * (kW - 1) - 1) // stride[1] + 1
    y = np.zeros((N, Cout, OH, OW))
    for n in range(N):
        for o in range(Cout):
            first = (o // (Cout // groups)) * Cg
            for p in range(OH):
                for q in range(OW):
                    for c in range(Cg):
                        for i in range(kH):
                            for j in range(kW):
                                h, v = p * stride[0] + i * dilation[0], q * stride[1] + j * dilation[1]
                                y[n, o, p, q] += w[o, c, i, j] * xp[n, first + c, h, v]
            y[n, o] += 0 if b is None else b[o]
    return y


# ----------------------------------------------------------------------------- gradients


@given(case=conv_cases(), bias=st.booleans(), data=st.data())
def test_conv2d_gradcheck(case, bias, data):
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, w, b = draw_arrays(data, x_shape, w_shape, w_shape[:1])
    inputs = [mg.tensor(a, requires_grad=True) for a in (x, w, b)[:3 if bias else 2]]

    def fn(x, w, b=None):
        return F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    assert gradcheck(fn, inputs)


@given(case=conv_cases(n=1, max_side=4), bias=st.booleans(), data=st.data())
def test_conv1d_gradcheck(case, bias, data):
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, w, b = draw_arrays(data, x_shape, w_shape, w_shape[:1])
    inputs = [mg.tensor(a, requires_grad=True) for a in (x, w, b)[:3 if bias else 2]]

    def fn(x, w, b=None):
        pad = padding if isinstance(padding, str) else padding[0]
        return F.conv1d(x, w, b, stride=stride[0], padding=pad, dilation=dilation[0], groups=groups)

    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("make, shape", [
    pytest.param(lambda: nn.Conv2d(2, 4, 3, padding=1, groups=2), (1, 2, 4, 3), id="Conv2d-groups"),
    pytest.param(lambda: nn.Conv2d(1, 2, (2, 3), stride=2, padding="valid", bias=False), (2, 1, 5, 4),
                 id="Conv2d-nobias"),
    pytest.param(lambda: nn.Conv2d(2, 2, 2, padding="same", padding_mode="reflect"), (1, 2, 3, 4),
                 id="Conv2d-reflect-same"),
    pytest.param(lambda: nn.Conv2d(1, 2, 3, padding=2, padding_mode="circular"), (1, 1, 3, 3),
                 id="Conv2d-circular"),
    pytest.param(lambda: nn.Conv1d(2, 3, 2, dilation=2, padding_mode="replicate", padding=1), (2, 2, 4),
                 id="Conv1d-replicate"),
])
def test_conv_modules_gradcheck(make, shape):
    mg.manual_seed(0)
    x = mg.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    assert gradcheck_module(make(), x)


# ----------------------------------------------------------------------------- values


@given(case=conv_cases(), data=st.data())
def test_conv2d_kernel_equals_the_definition(case, data):
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, w, b = draw_arrays(data, x_shape, w_shape, w_shape[:1])
    y = F.conv2d(mg.tensor(x), mg.tensor(w), mg.tensor(b), stride, padding, dilation, groups)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(w_shape[2:], dilation)]
        pads = (totals[0] // 2, totals[0] - totals[0] // 2, totals[1] // 2, totals[1] - totals[1] // 2)
    else:
        pads = (padding[0], padding[0], padding[1], padding[1])
    np.testing.assert_allclose(y.numpy(), reference_conv2d(x, w, b, stride, pads, dilation, groups),
                               rtol=1e-12, atol=1e-12)
    if padding == "same":
        assert y.shape[2:] == x.shape[2:]


def test_col2im_is_the_adjoint_of_im2col():
    """<im2col(x), c> == <x, col2im(c)> for any x and c, stride and dilation."""
    r = np.random.default_rng(1)
    xp = r.standard_normal((2, 3, 7, 6))  # (C, N, Hp, Wp)
    kernel, stride, dilation, out = (2, 3), (2, 1), (2, 1), (2, 4)
    cols = conv_kernels.im2col(xp, kernel, stride, dilation, out)
    c = r.standard_normal(cols.shape)
    back = conv_kernels.col2im(c, xp.shape[2:], stride, dilation)
    assert np.isclose((cols * c).sum(), (xp * back).sum(), rtol=1e-12)


@given(case=conv_cases(), seed=st.integers(0, 100))
def test_fused_input_grad_equals_col2im_of_the_product(case, seed):
    """The fast path of backward (a kernel column at a time) against its readable definition."""
    x_shape, w_shape, stride, _, dilation, groups = case
    r = np.random.default_rng(seed)
    (N, C, H, W), (Cout, _, kH, kW) = x_shape, w_shape
    out = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip((H, W), (kH, kW), stride, dilation))
    assume(min(out) >= 1)
    w, g2 = r.standard_normal(w_shape), r.standard_normal((groups, Cout // groups, N * out[0] * out[1]))
    w2 = w.reshape(groups, Cout // groups, -1)
    dcols = np.matmul(w2.transpose(0, 2, 1), g2).reshape((C, kH, kW, N) + out)
    expected = conv_kernels.col2im(dcols, (H, W), stride, dilation)
    np.testing.assert_allclose(conv_kernels.input_grad(w, g2, (H, W), stride, dilation, out), expected,
                               rtol=1e-12, atol=1e-12)


def test_unbatched_input_and_conv1d_match_conv2d_of_height_one():
    r = np.random.default_rng(2)
    x, w, b = r.standard_normal((3, 7)), r.standard_normal((4, 3, 3)), r.standard_normal(4)
    y1 = F.conv1d(mg.tensor(x), mg.tensor(w), mg.tensor(b), stride=2, padding=1)
    y2 = F.conv2d(mg.tensor(x[None, :, None]), mg.tensor(w[:, :, None]), mg.tensor(b), stride=(1, 2),
                  padding=(0, 1))
    assert y1.shape == (4, 4)
    np.testing.assert_allclose(y1.numpy(), y2.numpy()[0, :, 0], rtol=1e-14)


def test_float32_stays_float32_and_no_grad_for_frozen_inputs():
    conv = nn.Conv2d(3, 5, 3, padding=1)
    x = mg.randn(2, 3, 6, 6)
    y = conv(x)
    assert y.dtype == np.float32 and y.shape == (2, 5, 6, 6)
    y.sum().backward()
    assert x.grad is None and conv.weight.grad.dtype == np.float32 and conv.bias.grad.shape == (5,)


def test_init_is_kaiming_uniform_with_the_bias_bound():
    mg.manual_seed(0)
    conv = nn.Conv2d(4, 64, (3, 2), groups=2)
    fan_in = 2 * 3 * 2
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_ with a = sqrt(5)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    assert w.shape == (64, 2, 3, 2) and b.shape == (64,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound and np.abs(b).max() > 0.8 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    assert nn.Conv1d(3, 2, 5, bias=False).bias is None


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, match", [
    pytest.param(lambda: F.conv2d(mg.randn(2, 3, 5, 5), mg.randn(4, 2, 3, 3)),
                 r"conv2d: with groups=1, weight of shape \(4, 2, 3, 3\) expects an input with 2 channels, "
                 r"but the input of shape \(2, 3, 5, 5\) has 3", id="channels"),
    pytest.param(lambda: F.conv2d(mg.randn(2, 4, 5, 5), mg.randn(3, 2, 3, 3), groups=2),
                 r"conv2d: groups=2 must divide the weight's out_channels.*\(3, 2, 3, 3\)", id="groups"),
    pytest.param(lambda: F.conv2d(mg.randn(1, 1, 2, 2), mg.randn(1, 1, 3, 3)),
                 r"conv2d: kernel of size \(3, 3\).*larger than the padded input.*\(1, 1, 2, 2\)",
                 id="kernel"),
    pytest.param(lambda: F.conv1d(mg.randn(1, 1, 4), mg.randn(1, 1, 3), dilation=2),
                 r"conv1d: kernel of size \(3,\) \(dilation \(2,\)\) is larger", id="dilated-kernel"),
    pytest.param(lambda: F.conv2d(mg.randn(1, 1, 4, 4), mg.randn(1, 1, 3, 3), stride=2, padding="same"),
                 "conv2d: padding='same' is not supported for strided convolutions", id="same-stride"),
    pytest.param(lambda: F.conv2d(mg.randn(1, 1, 4, 4), mg.randn(1, 1, 3, 3), padding="full"),
                 "conv2d: invalid padding string 'full'", id="padding-string"),
    pytest.param(lambda: F.conv2d(mg.randn(1, 1, 4, 4), mg.randn(1, 1, 3, 3), padding=-1),
                 "conv2d: negative padding", id="negative-padding"),
    pytest.param(lambda: F.conv2d(mg.randn(4, 4), mg.randn(1, 1, 3, 3)),
                 r"conv2d: expected an input of 4 dimensions \(batched\) or 3.*\(4, 4\)", id="ndim"),
    pytest.param(lambda: F.conv2d(mg.randn(1, 1, 4, 4), mg.randn(1, 1, 3, 3), mg.randn(2)),
                 r"conv2d: bias has shape \(2,\) but weight \(1, 1, 3, 3\) needs \(1,\)", id="bias"),
    pytest.param(lambda: nn.Conv2d(3, 4, 3, groups=2), r"Conv2d: in_channels \(3\) and out_channels \(4\) "
                 r"must be divisible by groups \(2\)", id="module-groups"),
    pytest.param(lambda: nn.Conv2d(1, 1, 3, stride=2, padding="same"),
                 "Conv2d: padding='same' is not supported for strided", id="module-same-stride"),
    pytest.param(lambda: nn.Conv1d(1, 1, 3, padding_mode="mirror"), "Conv1d: padding_mode must be one of",
                 id="padding-mode"),
    pytest.param(lambda: nn.Conv2d(1, 1, (3, 3, 3)), "Conv2d: kernel_size must be an int or a tuple of 2",
                 id="kernel-size"),
])
def test_errors_name_the_op_and_the_shapes(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_errors_inside_a_module_name_it():
    model = nn.Sequential(nn.Conv2d(3, 4, 3))
    with pytest.raises(ValueError, match=r"input with 3 channels.*has 1.*in the module 0 \(Conv2d\)"):
        model(mg.randn(1, 1, 5, 5))
    with pytest.raises(TypeError, match="conv2d: input of dtype int64"):
        F.conv2d(mg.tensor(np.ones((1, 1, 3, 3), dtype=np.int64)), mg.randn(1, 1, 3, 3))
    with pytest.raises(TypeError, match="conv2d: input of dtype float64 and weight of dtype float32 differ"):
        nn.Conv2d(1, 1, 3)(mg.tensor(np.ones((1, 1, 3, 3))))
