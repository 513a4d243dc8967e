"""Convolutions whose padding differs between the sides or the axes, against torch: padding="same"
with an even kernel or a dilation that makes the total padding d (k - 1) odd (torch puts the extra
row or column after: on the bottom, on the right), and the layers' padding modes with different
pads on the two axes of a non-square input. Outputs and the gradients of input, weight and bias,
in float64."""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402
import torch.nn.functional as TF  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402

# torch's note that it copies the input to pad an even kernel's "same" unevenly
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")
TOL = 1e-10
MODES = ["zeros", "reflect", "replicate", "circular"]


def _pairs(mg_fn, torch_fn, arrays, seed=0):
    """[(minigrad, torch)] for the output and the gradient of each array, one random upstream."""
    mins = [mg.tensor(a, requires_grad=True) for a in arrays]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = mg_fn(*mins), torch_fn(*tins)
    g = np.random.default_rng(seed).standard_normal(y.shape)
    y.backward(g)
    ty.backward(torch.from_numpy(g))
    return [(y.numpy(), ty.detach().numpy())] + [(m.grad, t.grad.numpy()) for m, t in zip(mins, tins)]


def _assert_pairs(pairs, what):
    for name, (mine, theirs) in zip(("out", "dx", "dweight", "dbias"), pairs):
        assert mine.shape == theirs.shape, f"{what} {name}: shape {mine.shape}, torch {theirs.shape}"
        np.testing.assert_allclose(mine, theirs, rtol=TOL, atol=TOL, err_msg=f"{what} {name}")


def _arrays(x_shape, w_shape, seed=0):
    """x, weight and bias; x's entries all differ, so a shifted window cannot match by chance."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])]


# kernel (kH, kW) and dilation (dH, dW): even kernels, odd totals d (k - 1), non-square both
SAME_2D = [((2, 2), (1, 1)), ((4, 2), (1, 1)), ((2, 3), (1, 1)), ((3, 4), (1, 1)),
           ((2, 2), (3, 1)), ((4, 3), (1, 3)), ((2, 4), (2, 3)), ((1, 4), (1, 1)), ((3, 2), (2, 2))]
SAME_1D = [(2, 1), (4, 1), (2, 3), (4, 3), (3, 2), (5, 1)]


@pytest.mark.parametrize("kernel, dilation", SAME_2D, ids=[f"k{k}-d{d}" for k, d in SAME_2D])
def test_conv2d_same_matches_torch(kernel, dilation):
    arrays = _arrays((2, 3, 5, 7), (4, 3) + kernel)
    pairs = _pairs(lambda x, w, b: F.conv2d(x, w, b, padding="same", dilation=dilation),
                   lambda x, w, b: TF.conv2d(x, w, b, padding="same", dilation=dilation), arrays)
    assert pairs[0][0].shape[2:] == (5, 7)
    _assert_pairs(pairs, f"conv2d same k={kernel} d={dilation}")


@pytest.mark.parametrize("kernel, dilation", SAME_1D, ids=[f"k{k}-d{d}" for k, d in SAME_1D])
def test_conv1d_same_matches_torch(kernel, dilation):
    arrays = _arrays((2, 3, 9), (2, 3, kernel))
    pairs = _pairs(lambda x, w, b: F.conv1d(x, w, b, padding="same", dilation=dilation),
                   lambda x, w, b: TF.conv1d(x, w, b, padding="same", dilation=dilation), arrays)
    assert pairs[0][0].shape[2:] == (9,)
    _assert_pairs(pairs, f"conv1d same k={kernel} d={dilation}")


def _layer_pairs(n, x_shape, **options):
    """(minigrad, torch) pairs of nn.Conv{n}d and torch.nn.Conv{n}d with the same weights."""
    ours = (nn.Conv1d if n == 1 else nn.Conv2d)(3, 2, **options)
    theirs = (torch.nn.Conv1d if n == 1 else torch.nn.Conv2d)(3, 2, dtype=torch.float64, **options)
    w = np.random.default_rng(1).standard_normal(ours.weight.shape)
    b = np.random.default_rng(2).standard_normal(ours.bias.shape)
    ours.weight.data, ours.bias.data = w, b
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(w))
        theirs.bias.copy_(torch.from_numpy(b))
    x = np.random.default_rng(3).standard_normal(x_shape)
    xm, xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = ours(xm), theirs(xt)
    g = np.random.default_rng(4).standard_normal(y.shape)
    y.backward(g)
    ty.backward(torch.from_numpy(g))
    return [(y.numpy(), ty.detach().numpy()), (xm.grad, xt.grad.numpy()),
            (ours.weight.grad, theirs.weight.grad.numpy()), (ours.bias.grad, theirs.bias.grad.numpy())]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kernel, dilation", SAME_2D[:6], ids=[f"k{k}-d{d}" for k, d in SAME_2D[:6]])
def test_conv2d_layer_same_in_every_padding_mode_matches_torch(mode, kernel, dilation):
    pairs = _layer_pairs(2, (2, 3, 5, 7), kernel_size=kernel, padding="same", dilation=dilation,
                         padding_mode=mode)
    _assert_pairs(pairs, f"Conv2d same {mode} k={kernel} d={dilation}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kernel, dilation", SAME_1D[:4], ids=[f"k{k}-d{d}" for k, d in SAME_1D[:4]])
def test_conv1d_layer_same_in_every_padding_mode_matches_torch(mode, kernel, dilation):
    pairs = _layer_pairs(1, (2, 3, 9), kernel_size=kernel, padding="same", dilation=dilation,
                         padding_mode=mode)
    _assert_pairs(pairs, f"Conv1d same {mode} k={kernel} d={dilation}")


# padding (pH, pW) different on the two axes, of a (5, 7) input, and non-square kernels
AXES = [((1, 2), (3, 3)), ((2, 0), (2, 3)), ((0, 3), (3, 2)), ((3, 1), (1, 4))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding, kernel", AXES, ids=[f"p{p}-k{k}" for p, k in AXES])
def test_conv2d_layer_padding_modes_with_different_pads_per_axis_match_torch(mode, padding, kernel):
    pairs = _layer_pairs(2, (2, 3, 5, 7), kernel_size=kernel, padding=padding, padding_mode=mode)
    _assert_pairs(pairs, f"Conv2d {mode} padding={padding} k={kernel}")
