"""F.conv_transpose1d, F.conv_transpose2d, nn.ConvTranspose1d and nn.ConvTranspose2d: gradchecks
over drawn configurations (strides larger than the kernel, dilation, groups, padding, output
padding, size-1 dimensions, unbatched inputs), the kernel against the definition written as a
scatter, the adjoint identity with conv2d, output_size, the initialisation, and the errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import gradcheck
from minigrad.nn import conv_kernels


@st.composite
def transpose_cases(draw, n=2, max_side=3, max_groups=2):
    """(x shape, weight shape, stride, padding, output_padding, dilation, groups) of a valid n-d
    transposed convolution: output_padding below the stride or the dilation, padding small
    enough to leave an output of at least 1."""
    groups = draw(st.integers(1, max_groups))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    extra = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    spatial = tuple(draw(st.integers(1, max_side)) for _ in range(n))
    padding = tuple(draw(st.integers(0, min(3, ((h - 1) * s + d * (k - 1) + q) // 2)))
                    for h, k, s, d, q in zip(spatial, kernel, stride, dilation, extra))
    x_shape = (draw(st.integers(1, 2)), cin) + spatial
    w_shape = (cin, cout // groups) + kernel
    return x_shape, w_shape, stride, padding, extra, dilation, groups


def draw_arrays(data, *shapes):
    return [np.asarray(data.draw(st.lists(st.floats(-2, 2), min_size=math.prod(s), max_size=math.prod(s))),
                       dtype=np.float64).reshape(s) for s in shapes]


def out_size(spatial, kernel, stride, padding, extra, dilation):
    return tuple((h - 1) * s - 2 * p + d * (k - 1) + q + 1
                 for h, k, s, p, q, d in zip(spatial, kernel, stride, padding, extra, dilation))


def reference_conv_transpose2d(x, w, b, stride, padding, extra, dilation, groups):
    """The definition, one input element at a time: each pixel adds its kernel, times its value,
    onto the full output at (h s, w s); the full output is then cropped by padding."""
    N, C, H, W = x.shape
    _, Og, kH, kW = w.shape
    OH, OW = out_size((H, W), (kH, kW), stride, padding, extra, dilation)
    full = np.zeros((N, Og * groups, OH + 2 * padding[0], OW + 2 * padding[1]))
    for n in range(N):
        for c in range(C):
            first = (c // (C // groups)) * Og
            for h in range(H):
                for v in range(W):
                    for o in range(Og):
                        for i in range(kH):
                            for j in range(kW):
                                p, q = h * stride[0] + i * dilation[0], v * stride[1] + j * dilation[1]
                                full[n, first + o, p, q] += w[c, o, i, j] * x[n, c, h, v]
    y = full[:, :, padding[0]:padding[0] + OH, padding[1]:padding[1] + OW]
    return y + (0 if b is None else b[None, :, None, None])


def call(fn, case):
    """fn(x, w, b=None) running the case's options through F.conv_transpose1d or 2d."""
    _, _, stride, padding, extra, dilation, groups = case
    if len(stride) == 1:
        return lambda x, w, b=None: F.conv_transpose1d(x, w, b, stride[0], padding[0], extra[0], groups,
                                                       dilation[0])
    return lambda x, w, b=None: F.conv_transpose2d(x, w, b, stride, padding, extra, groups, dilation)


# ----------------------------------------------------------------------------- gradients


@given(case=transpose_cases(), bias=st.booleans(), data=st.data())
def test_conv_transpose2d_gradcheck(case, bias, data):
    x_shape, w_shape = case[:2]
    x, w, b = draw_arrays(data, x_shape, w_shape, (w_shape[1] * case[-1],))
    inputs = [mg.tensor(a, requires_grad=True) for a in (x, w, b)[:3 if bias else 2]]
    assert gradcheck(call(F.conv_transpose2d, case), inputs)


@given(case=transpose_cases(n=1, max_side=5, max_groups=3), bias=st.booleans(), data=st.data())
def test_conv_transpose1d_gradcheck(case, bias, data):
    x_shape, w_shape = case[:2]
    x, w, b = draw_arrays(data, x_shape, w_shape, (w_shape[1] * case[-1],))
    inputs = [mg.tensor(a, requires_grad=True) for a in (x, w, b)[:3 if bias else 2]]
    assert gradcheck(call(F.conv_transpose1d, case), inputs)


@given(case=transpose_cases(), data=st.data())
def test_unbatched_gradcheck(case, data):
    x_shape, w_shape = case[:2]
    x, w = draw_arrays(data, x_shape[1:], w_shape)
    assert gradcheck(call(F.conv_transpose2d, case), [mg.tensor(x, requires_grad=True),
                                                        mg.tensor(w, requires_grad=True)])


@pytest.mark.parametrize("make, shape, output_size", [
    pytest.param(lambda: nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, groups=2), (1, 2, 3, 2), None,
                 id="ConvTranspose2d-groups"),
    pytest.param(lambda: nn.ConvTranspose2d(1, 2, (2, 3), stride=(2, 1), output_padding=(1, 0), bias=False),
                 (2, 1, 2, 3), None, id="ConvTranspose2d-nobias"),
    pytest.param(lambda: nn.ConvTranspose2d(2, 1, 3, stride=3, dilation=2), (1, 2, 2, 2), (9, 10),
                 id="ConvTranspose2d-output_size"),
    pytest.param(lambda: nn.ConvTranspose1d(3, 3, 2, stride=2, padding=1, groups=3), (3, 4), [7],
                 id="ConvTranspose1d-unbatched"),
    pytest.param(lambda: nn.ConvTranspose1d(2, 3, 1, dilation=2, output_padding=1), (2, 2, 4), None,
                 id="ConvTranspose1d-output_padding-below-dilation"),
])
def test_conv_transpose_modules_gradcheck(make, shape, output_size):
    mg.manual_seed(0)
    x = mg.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    assert gradcheck_module(make(), x, output_size=output_size)


# ----------------------------------------------------------------------------- values


@given(case=transpose_cases(), bias=st.booleans(), seed=st.integers(0, 100))
def test_kernel_equals_the_definition(case, bias, seed):
    x_shape, w_shape, stride, padding, extra, dilation, groups = case
    r = np.random.default_rng(seed)
    x, w, b = r.standard_normal(x_shape), r.standard_normal(w_shape), r.standard_normal(w_shape[1] * groups)
    b = b if bias else None
    y = call(F.conv_transpose2d, case)(mg.tensor(x), mg.tensor(w), None if b is None else mg.tensor(b))
    expected = reference_conv_transpose2d(x, w, b, stride, padding, extra, dilation, groups)
    assert y.shape == expected.shape == x_shape[:1] + (w_shape[1] * groups,) + out_size(
        x_shape[2:], w_shape[2:], stride, padding, extra, dilation)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-12)


@given(case=transpose_cases(), seed=st.integers(0, 100))
def test_the_forward_is_col2im_of_the_product(case, seed):
    """The kernel's forward (input_grad, a kernel column at a time) against its readable form:
    col2im(W2^T @ x2) into the padded output, then cropped."""
    x_shape, w_shape, stride, padding, extra, dilation, groups = case
    r = np.random.default_rng(seed)
    x, w = r.standard_normal(x_shape), r.standard_normal(w_shape)
    (N, C, H, W), (_, Og, kH, kW) = x_shape, w_shape
    OH, OW = out_size((H, W), (kH, kW), stride, padding, extra, dilation)
    x2 = x.transpose(1, 0, 2, 3).reshape(groups, C // groups, -1)
    w2 = w.reshape(groups, C // groups, -1)
    dcols = np.matmul(w2.transpose(0, 2, 1), x2).reshape(Og * groups, kH, kW, N, H, W)
    full = conv_kernels.col2im(dcols, (OH + 2 * padding[0], OW + 2 * padding[1]), stride, dilation)
    expected = full[:, :, padding[0]:padding[0] + OH, padding[1]:padding[1] + OW].transpose(1, 0, 2, 3)
    y = call(F.conv_transpose2d, case)(mg.tensor(x), mg.tensor(w))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-12)


@given(case=transpose_cases(), seed=st.integers(0, 100))
def test_it_is_the_adjoint_of_conv2d(case, seed):
    """<conv2d(z, W), x> == <z, conv_transpose2d(x, W)> for every z of the output's shape, with
    the same stride, padding, dilation and groups: the transpose is conv2d's input gradient. An
    output_padding of at least the stride (allowed below the dilation) gives conv2d more
    outputs than x has, reading rows the transpose never wrote: only the first ones pair."""
    x_shape, w_shape, stride, padding, extra, dilation, groups = case
    r = np.random.default_rng(seed)
    x, w = r.standard_normal(x_shape), r.standard_normal(w_shape)
    y = call(F.conv_transpose2d, case)(mg.tensor(x), mg.tensor(w))
    z = r.standard_normal(y.shape)
    back = F.conv2d(mg.tensor(z), mg.tensor(w), None, stride, padding, dilation, groups)
    back = back.numpy()[:, :, :x.shape[2], :x.shape[3]]
    assert back.shape == x.shape
    assert np.isclose((back * x).sum(), (z * y.numpy()).sum(), rtol=1e-10, atol=1e-10)


def test_conv_transpose1d_and_unbatched_match_the_2d_kernel():
    r = np.random.default_rng(2)
    x, w, b = r.standard_normal((3, 5)), r.standard_normal((3, 4, 3)), r.standard_normal(4)
    y1 = F.conv_transpose1d(mg.tensor(x), mg.tensor(w), mg.tensor(b), stride=2, padding=1, output_padding=1)
    y2 = F.conv_transpose2d(mg.tensor(x[None, :, None]), mg.tensor(w[:, :, None]), mg.tensor(b),
                            stride=(1, 2), padding=(0, 1), output_padding=(0, 1))
    assert y1.shape == (4, 10) and y2.shape == (1, 4, 1, 10)
    np.testing.assert_array_equal(y1.numpy(), y2.numpy()[0, :, 0])


def test_size_one_everything():
    """One pixel, one channel, a 1x1 kernel: the product of the two numbers plus the bias; a
    stride spreads a 1x1 kernel into zeros between the pixels."""
    y = F.conv_transpose2d(mg.tensor([[[[3.0]]]]), mg.tensor([[[[2.0]]]]), mg.tensor([0.5]), stride=5)
    np.testing.assert_array_equal(y.numpy(), [[[[6.5]]]])
    y = F.conv_transpose1d(mg.tensor([[1.0, 2.0]]), mg.tensor([[[1.0]]]), stride=3, output_padding=2)
    np.testing.assert_array_equal(y.numpy(), [[1.0, 0.0, 0.0, 2.0, 0.0, 0.0]])


def test_a_batch_of_zero_gives_an_empty_output_and_gradients():
    w = mg.randn(2, 3, 3, 3, requires_grad=True)
    x = mg.zeros(0, 2, 4, 4, requires_grad=True)
    y = F.conv_transpose2d(x, w, stride=2)
    assert y.shape == (0, 3, 9, 9)
    y.sum().backward()
    assert x.grad.shape == x.shape and np.array_equal(w.grad.numpy(), np.zeros((2, 3, 3, 3), np.float32))


def test_float32_stays_float32_and_no_grad_for_frozen_inputs():
    layer = nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1)
    x = mg.randn(2, 3, 4, 4)
    y = layer(x)
    assert y.dtype == np.float32 and y.shape == (2, 5, 8, 8)
    y.sum().backward()
    assert x.grad is None and layer.weight.grad.dtype == np.float32 and layer.bias.grad.shape == (5,)
    np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(5, 2 * 8 * 8), rtol=1e-6)
    layer64 = nn.ConvTranspose1d(2, 2, 3, dtype=mg.float64, device="cpu")
    assert layer64.weight.dtype == np.float64 and layer64(mg.randn(2, 4).double()).dtype == np.float64


# ----------------------------------------------------------------------------- the layers


def test_init_is_kaiming_uniform_with_fan_in_from_the_second_dimension():
    """torch computes fan_in from weight.size(1) * prod(kernel): out_channels / groups * k."""
    mg.manual_seed(0)
    layer = nn.ConvTranspose2d(64, 8, (3, 2), groups=2)
    bound = 1 / math.sqrt(4 * 3 * 2)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    assert w.shape == (64, 4, 3, 2) and b.shape == (8,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    assert list(layer.state_dict()) == ["weight", "bias"]
    assert nn.ConvTranspose1d(3, 2, 5, bias=False).bias is None


@pytest.mark.parametrize("output_size, expected", [
    pytest.param(None, (7, 7), id="none"), pytest.param((8, 9), (8, 9), id="spatial"),
    pytest.param([1, 2, 9, 7], (9, 7), id="whole"), pytest.param(mg.zeros(1, 2, 8, 8).shape, (8, 8),
                 id="shape"),
])
def test_output_size_picks_the_output_padding(output_size, expected):
    layer = nn.ConvTranspose2d(4, 2, 3, stride=3, padding=1)
    x = mg.randn(1, 4, 3, 3)
    y = layer(x, output_size=output_size)
    assert y.shape == (1, 2) + expected
    extra = tuple(e - 7 for e in expected)
    same = F.conv_transpose2d(x, layer.weight, layer.bias, 3, 1, extra)
    np.testing.assert_array_equal(y.numpy(), same.numpy())
    # a Conv2d with the same options takes the output back to the input's size
    assert nn.Conv2d(2, 4, 3, stride=3, padding=1)(y).shape == x.shape


def test_repr():
    assert repr(nn.ConvTranspose1d(4, 2, 3)) == "ConvTranspose1d(4, 2, kernel_size=(3,), stride=(1,))"
    assert repr(nn.ConvTranspose2d(4, 2, (3, 1), 2, 1, 1, 2, False, 2)) == (
        "ConvTranspose2d(4, 2, kernel_size=(3, 1), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
        "output_padding=(1, 1), groups=2, bias=False)")


# ----------------------------------------------------------------------------- errors


r = mg.randn


@pytest.mark.parametrize("call, match", [
    pytest.param(lambda: F.conv_transpose2d(r(2, 3, 5, 5), r(4, 2, 3, 3)),
                 r"conv_transpose2d: weight of shape \(4, 2, 3, 3\) expects an input with 4 channels, "
                 r"but the input of shape \(2, 3, 5, 5\) has 3", id="channels"),
    pytest.param(lambda: F.conv_transpose2d(r(2, 3, 5, 5), r(3, 2, 3, 3), groups=2),
                 r"conv_transpose2d: groups=2 must divide the weight's in_channels.*\(3, 2, 3, 3\)",
                 id="groups"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), output_padding=1),
                 r"conv_transpose2d: output_padding \(1, 1\) must be smaller than either the stride \(1, 1\) "
                 r"or the dilation \(1, 1\)", id="output_padding"),
    pytest.param(lambda: F.conv_transpose1d(r(1, 1, 3), r(1, 1, 3), stride=2, dilation=3,
                                            output_padding=3),
                 r"conv_transpose1d: output_padding \(3,\) must be smaller than either the stride \(2,\) "
                 r"or the dilation \(3,\)", id="output_padding-1d"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), stride=(2, 1),
                                            output_padding=(1, 1)),
                 r"output_padding \(1, 1\) must be smaller", id="output_padding-one-axis"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), padding=4),
                 r"conv_transpose2d: the output size \(-3, -3\) is too small \(input of shape "
                 r"\(1, 1, 3, 3\), weight \(1, 1, 3, 3\)", id="negative-output"),
    pytest.param(lambda: F.conv_transpose1d(r(1, 1), r(1, 1, 1), stride=2, padding=1,
                                            output_padding=1),
                 r"conv_transpose1d: the output size \(0,\) is too small", id="zero-output"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), padding=-1),
                 "conv_transpose2d: negative padding", id="negative-padding"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), output_padding=-1),
                 "conv_transpose2d: negative padding .* or output_padding", id="negative-output_padding"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), stride=0),
                 r"conv_transpose2d: stride \(0, 0\) and dilation \(1, 1\) must be positive", id="stride"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 3, 3), r(1, 1, 3, 3), padding="same"),
                 "conv_transpose2d: padding must be an int or a tuple of 2 ints, not 'same'",
                 id="padding-string"),
    pytest.param(lambda: F.conv_transpose2d(r(4, 4), r(4, 1, 3, 3)),
                 r"conv_transpose2d: expected an input of 4 dimensions \(batched\) or 3.*\(4, 4\)",
                 id="ndim"),
    pytest.param(lambda: F.conv_transpose1d(r(1, 2, 4), r(2, 1, 3, 3)),
                 r"conv_transpose1d: weight of shape \(2, 1, 3, 3\) must have 3 dimensions",
                 id="weight-ndim"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 4, 3, 3), r(4, 1, 3, 3), r(4), groups=2),
                 r"conv_transpose2d: bias has shape \(4,\) but weight \(4, 1, 3, 3\) with groups=2 "
                 r"needs \(2,\)",
                 id="bias"),
    pytest.param(lambda: F.conv_transpose2d(r(1, 1, 0, 3), r(1, 1, 3, 3)),
                 r"conv_transpose2d: the input of shape \(1, 1, 0, 3\) has a spatial dimension of size 0",
                 id="empty-spatial"),
    pytest.param(lambda: nn.ConvTranspose2d(3, 4, 3, groups=2), r"ConvTranspose2d: in_channels \(3\) and "
                 r"out_channels \(4\) must be divisible by groups \(2\)", id="module-groups"),
    pytest.param(lambda: nn.ConvTranspose1d(1, 1, 3, padding_mode="reflect"),
                 "ConvTranspose1d: only the 'zeros' padding_mode is supported, not 'reflect'",
                 id="padding-mode"),
    pytest.param(lambda: nn.ConvTranspose2d(1, 1, (3, 3, 3)),
                 "ConvTranspose2d: kernel_size must be an int or a tuple of 2", id="kernel-size"),
    pytest.param(lambda: nn.ConvTranspose2d(1, 1, 3, stride=2)(r(1, 1, 3, 3), output_size=(9, 7)),
                 r"ConvTranspose2d: requested an output size of \(9, 7\), but valid sizes range from "
                 r"\[7, 7\] to \[8, 8\] \(for an input of shape \(1, 1, 3, 3\)\)", id="output_size-range"),
    pytest.param(lambda: nn.ConvTranspose2d(1, 1, 3, stride=2)(r(1, 1, 3, 3), output_size=(1, 8, 8)),
                 r"ConvTranspose2d: for an input of 4 dimensions, output_size must have 2 or 4 elements "
                 r"\(got 3", id="output_size-length"),
])
def test_errors_name_the_op_and_the_shapes(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_type_errors_and_errors_inside_a_module_name_it():
    model = nn.Sequential(nn.ConvTranspose2d(3, 4, 3))
    with pytest.raises(ValueError, match=r"with 3 channels.*has 1.*in the module 0 \(ConvTranspose2d\)"):
        model(mg.randn(1, 1, 5, 5))
    with pytest.raises(TypeError, match="conv_transpose2d: input of dtype int64"):
        F.conv_transpose2d(mg.tensor(np.ones((1, 1, 3, 3), dtype=np.int64)), mg.randn(1, 1, 3, 3))
    with pytest.raises(TypeError, match="conv_transpose1d: input of dtype float64 and weight of dtype "
                                        "float32 differ"):
        nn.ConvTranspose1d(1, 1, 3)(mg.tensor(np.ones((1, 1, 3))))
    with pytest.raises(TypeError, match="conv_transpose2d: the weight is a numpy array"):
        F.conv_transpose2d(mg.randn(1, 1, 3, 3), np.ones((1, 1, 3, 3)))
    with pytest.raises(TypeError, match="ConvTranspose2d: dtype must be a floating point dtype"):
        nn.ConvTranspose2d(1, 1, 3, dtype=mg.int64)
    with pytest.raises(RuntimeError, match="ConvTranspose2d: device 'cuda' is not available"):
        nn.ConvTranspose2d(1, 1, 3, device="cuda")
