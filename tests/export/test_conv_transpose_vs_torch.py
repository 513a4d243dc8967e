"""Transposed convolution against torch over drawn configurations: F.conv_transpose1d and
F.conv_transpose2d (outputs and the gradients of input, weight and bias; float64 to 1e-10,
float32 to 1e-4; batched and unbatched), the op against its torch twin, torch's own errors, and
the layers: parameter shapes, initialisation statistics, state_dict names, reprs, output_size
and the export through to_torch."""

import math

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch_pairs import assert_pairs, both  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
from minigrad.export import TORCH_OPS, to_torch  # noqa: E402
from minigrad.nn import conv_kernels  # noqa: E402


@st.composite
def transpose_cases(draw, n=2):
    """(x shape, weight shape, stride, padding, output_padding, dilation, groups) of a transposed
    convolution torch accepts: kernels and strides up to 4, dilation up to 3, groups up to 3,
    output_padding below the stride or the dilation, an output of at least 1."""
    groups = draw(st.integers(1, 3))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 4)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 3)) for _ in range(n))
    extra = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    spatial = tuple(draw(st.integers(1, 6)) for _ in range(n))
    padding = tuple(draw(st.integers(0, min(5, ((h - 1) * s + d * (k - 1) + q) // 2)))
                    for h, k, s, d, q in zip(spatial, kernel, stride, dilation, extra))
    x_shape = (draw(st.integers(1, 3)), cin) + spatial
    return x_shape, (cin, cout // groups) + kernel, stride, padding, extra, dilation, groups


def case_arrays(case, dtype, seed, bias=True, batched=True):
    x_shape, w_shape, *_, groups = case
    r = np.random.default_rng(seed)
    arrays = [r.standard_normal(s).astype(dtype) for s in (x_shape[0 if batched else 1:], w_shape,
                                                           (w_shape[1] * groups,))]
    return arrays if bias else arrays[:2]


DTYPES = [pytest.param(np.float64, 1e-10, id="float64"), pytest.param(np.float32, 1e-4, id="float32")]


@pytest.mark.parametrize("dtype, tol", DTYPES)
@given(case=transpose_cases(), bias=st.booleans(), batched=st.booleans(), seed=st.integers(0, 1000))
def test_conv_transpose2d_matches_torch(case, bias, batched, seed, dtype, tol):
    _, _, stride, padding, extra, dilation, groups = case
    kw = dict(stride=stride, padding=padding, output_padding=extra, groups=groups, dilation=dilation)
    pairs = both(lambda *a: F.conv_transpose2d(*a, **kw), lambda *a: TF.conv_transpose2d(*a, **kw),
                 case_arrays(case, dtype, seed, bias, batched), seed)
    assert_pairs(pairs, tol)


@pytest.mark.parametrize("dtype, tol", DTYPES)
@given(case=transpose_cases(n=1), bias=st.booleans(), batched=st.booleans(), seed=st.integers(0, 1000))
def test_conv_transpose1d_matches_torch(case, bias, batched, seed, dtype, tol):
    _, _, (stride,), (padding,), (extra,), (dilation,), groups = case
    args = (stride, padding, extra, groups, dilation)  # torch's positional order
    pairs = both(lambda x, w, b=None: F.conv_transpose1d(x, w, b, *args),
                 lambda x, w, b=None: TF.conv_transpose1d(x, w, b, *args),
                 case_arrays(case, dtype, seed, bias, batched), seed)
    assert_pairs(pairs, tol)


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(case=transpose_cases(), bias=st.booleans(), seed=st.integers(0, 1000))
def test_the_op_matches_its_torch_twin(case, bias, seed):
    """ConvTranspose2dOp.apply against TORCH_OPS[ConvTranspose2dOp] with the same options, as
    the export replays it."""
    _, _, stride, padding, extra, dilation, groups = case
    op = conv_kernels.ConvTranspose2dOp
    kw = dict(stride=stride, padding=padding, output_padding=extra, dilation=dilation, groups=groups)
    pairs = both(lambda *a: op.apply(*a, **kw), lambda *a: TORCH_OPS[op](*a, **kw),
                 case_arrays(case, np.float64, seed, bias), seed)
    assert_pairs(pairs, 1e-10)


def test_a_batch_of_zero_matches_torch():
    w = np.random.default_rng(0).standard_normal((2, 3, 2, 3))
    pairs = both(lambda *a: F.conv_transpose2d(*a, stride=2), lambda *a: TF.conv_transpose2d(*a, stride=2),
                 [np.zeros((0, 2, 3, 4)), w])
    assert_pairs(pairs, 0)


# ----------------------------------------------------------------------------- torch's rules


@pytest.mark.parametrize("call", [
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w[:3]), id="channels"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x[:, :3], w[:3], groups=2), id="groups"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, output_padding=1), id="output_padding"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, stride=2, dilation=2, output_padding=2),
                 id="output_padding-stride-dilation"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, padding=3), id="negative-output"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x[:, :, :1, :1], w[:, :, :1, :1], stride=2, padding=1,
                                                    output_padding=1), id="zero-output"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, padding=-1), id="negative-padding"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, output_padding=-1), id="negative-output_padding"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, stride=0), id="stride"),
    pytest.param(lambda f, x, w: f.conv_transpose2d(x, w, w[0, 0, 0, :3]), id="bias"),
])
def test_what_torch_refuses_minigrad_refuses(call):
    x, w = np.ones((1, 4, 3, 3)), np.ones((4, 2, 3, 3))
    with pytest.raises(RuntimeError):
        call(TF, torch.tensor(x), torch.tensor(w))
    with pytest.raises(ValueError):
        call(F, mg.tensor(x), mg.tensor(w))


@pytest.mark.parametrize("call", [
    pytest.param(lambda m: m.ConvTranspose2d(3, 2, 3, groups=2), id="groups"),
    pytest.param(lambda m: m.ConvTranspose1d(2, 2, 3, padding_mode="reflect"), id="padding-mode"),
    pytest.param(lambda m: m.ConvTranspose2d(1, 1, 3, stride=2)(m_input(m, (1, 1, 3, 3)), output_size=(9, 9)),
                 id="output_size-range"),
    pytest.param(lambda m: m.ConvTranspose2d(1, 1, 3)(m_input(m, (1, 1, 3, 3)), output_size=(1, 5, 5)),
                 id="output_size-length"),
])
def test_the_layers_refuse_what_torchs_refuse(call):
    with pytest.raises(ValueError):
        call(torch.nn)
    with pytest.raises(ValueError):
        call(nn)


def m_input(m, shape):
    """An input of the library `m` belongs to (torch.nn or minigrad.nn)."""
    return torch.ones(shape) if m is torch.nn else mg.ones(*shape)


# ----------------------------------------------------------------------------- the layers


LAYERS = [
    pytest.param(lambda m: m.ConvTranspose2d(3, 8, 3), id="ConvTranspose2d"),
    pytest.param(lambda m: m.ConvTranspose2d(4, 6, (3, 1), stride=2, padding=(1, 0), output_padding=1,
                                             groups=2, bias=False, dilation=2), id="ConvTranspose2d-all"),
    pytest.param(lambda m: m.ConvTranspose2d(2, 4, 4, 2, 1, 0, 1, True, 1, "zeros", None, None),
                 id="ConvTranspose2d-positional"),
    pytest.param(lambda m: m.ConvTranspose1d(2, 3, 5, stride=2, padding=2), id="ConvTranspose1d"),
    pytest.param(lambda m: m.ConvTranspose1d(6, 3, 2, stride=3, output_padding=2, groups=3, dilation=2),
                 id="ConvTranspose1d-all"),
]


@pytest.mark.parametrize("make", LAYERS)
def test_reprs_parameters_and_state_dict_are_torchs(make):
    mine, ref = make(nn), make(torch.nn)
    assert repr(mine) == repr(ref)
    assert mine.weight.shape == tuple(ref.weight.shape)
    assert (mine.bias is None) == (ref.bias is None)
    assert mine.weight.dtype == np.float32
    assert list(mine.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in ref.named_parameters()]
    for name in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding",
                 "groups", "dilation", "padding_mode"):
        assert getattr(mine, name) == getattr(ref, name), name


def test_init_statistics_are_torchs():
    """Both draw kaiming_uniform(a=sqrt(5)) with fan_in = weight.size(1) * prod(kernel): the same
    bound, and samples of U(-bound, bound) with the same spread (the bias too)."""
    mg.manual_seed(0)
    torch.manual_seed(0)
    mine, ref = nn.ConvTranspose2d(48, 8, (3, 2), groups=2), torch.nn.ConvTranspose2d(48, 8, (3, 2), groups=2)
    bound = 1 / math.sqrt(4 * 3 * 2)  # out_channels / groups * kH * kW, not in_channels' 48 / 2
    for a, b in ((mine.weight.numpy(), ref.weight.detach().numpy()),
                 (mine.bias.numpy(), ref.bias.detach().numpy())):
        assert np.abs(a).max() <= bound and np.abs(b).max() <= bound
    w, tw = mine.weight.numpy(), ref.weight.detach().numpy()
    assert np.abs(w).max() > 0.95 * bound and np.abs(tw).max() > 0.95 * bound
    assert abs(w.std() - tw.std()) < 0.05 * bound and abs(w.mean()) < 0.05 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound


@pytest.mark.parametrize("make, shape, output_size", [
    pytest.param(lambda m: m.ConvTranspose2d(3, 4, 3, stride=2, padding=1), (2, 3, 4, 5), (8, 10), id="2d"),
    pytest.param(lambda m: m.ConvTranspose2d(2, 2, 2, stride=(3, 2), dilation=2), (2, 5, 4), [2, 16, 10],
                 id="2d-unbatched-whole"),
    pytest.param(lambda m: m.ConvTranspose1d(4, 2, 3, stride=4, groups=2), (1, 4, 3), (13,), id="1d"),
    pytest.param(lambda m: m.ConvTranspose1d(2, 2, 3, stride=4), (1, 2, 3), None, id="1d-none"),
])
def test_the_layers_match_torchs_with_output_size(make, shape, output_size):
    """The same parameters (copied) give the same outputs and gradients, output_size picking
    the same output_padding."""
    mine, ref = make(nn), make(torch.nn).double()
    mine.double()
    mine.load_state_dict({k: mg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).standard_normal(shape)
    pairs = both(lambda a: mine(a, output_size=output_size), lambda a: ref(a, output_size=output_size), [x])
    if output_size is not None:
        assert pairs[0][0].shape[-len(mine.kernel_size):] == tuple(output_size)[-len(mine.kernel_size):]
    mine_grads = [p.grad.numpy() for p in mine.parameters()]
    ref_grads = [p.grad.numpy() for p in ref.parameters()]
    assert_pairs(pairs + list(zip(mine_grads, ref_grads)), 1e-10)


def test_the_export_is_torchs_conv_transpose():
    mg.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(4, 2, 2, stride=2, groups=2, bias=False))
    x = mg.randn(2, 3, 4, 5)
    exported = to_torch(model, x)
    theirs = exported(torch.from_numpy(x.numpy()))
    np.testing.assert_allclose(theirs.detach().numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert list(exported.state_dict()) == list(model.state_dict())
