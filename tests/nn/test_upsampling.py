"""F.interpolate and the upsampling layers: gradchecks over drawn shapes, sizes, scale factors,
modes and align_corners; the same math written out in plain Python; size-1 dimensions; the
values of torch's documented examples; the layers' repr; and the errors."""

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
from minigrad.nn.upsampling import UpsampleInterpOp, UpsampleNearestOp
from minigrad.testing import arrays

RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}  # the other modes take 3-D to 5-D
MODES = ["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"]
SCALES = [0.5, 0.7, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 1 / 3, 0.75]


@st.composite
def interp_cases(draw, modes=MODES):
    """(input shape, interpolate's keywords): a mode and an input of its rank with sides 1 to 4
    (1 to 3 for 5-D), and a size (an int or one per axis) or a scale factor (a number or one
    per axis, recomputed or not) giving every axis at least one output."""
    mode = draw(st.sampled_from(modes))
    rank = RANK.get(mode) or draw(st.sampled_from([3, 4, 5]))
    k = rank - 2
    spatial = tuple(draw(st.integers(1, 3 if rank == 5 else 4)) for _ in range(k))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + spatial
    kw = {"mode": mode}
    if mode in RANK:
        kw["align_corners"] = draw(st.sampled_from([None, False, True]))
    if draw(st.booleans()):
        sizes = tuple(draw(st.integers(1, 6)) for _ in range(k))
        kw["size"] = sizes[0] if len(set(sizes)) == 1 and draw(st.booleans()) else sizes
    else:
        factors = tuple(draw(st.one_of(st.sampled_from(SCALES), st.floats(0.3, 3.0))) for _ in range(k))
        assume(all(int(n * f) >= 1 for n, f in zip(spatial, factors)))
        kw["scale_factor"] = factors[0] if len(set(factors)) == 1 and draw(st.booleans()) else factors
        kw["recompute_scale_factor"] = draw(st.sampled_from([None, False, True]))
    return shape, kw


# ----------------------------------------------------------------------------- gradients


@given(case=interp_cases(), data=st.data())
def test_interpolate_gradcheck(case, data):
    shape, kw = case
    x = data.draw(arrays(shape))
    assert gradcheck(lambda x: F.interpolate(x, **kw), [x])


@given(case=interp_cases(modes=["nearest", "nearest-exact"]))
def test_nearest_output_size_and_its_gradient_counts_the_copies(case):
    """Each input element's gradient (of the sum) is how many outputs copied it: the counts add
    up to the output's size."""
    shape, kw = case
    x = mg.tensor(np.zeros(shape), requires_grad=True)
    y = F.interpolate(x, **kw)
    y.sum().backward()
    assert x.grad.numpy().sum() == y.numpy().size
    assert y.shape[:2] == shape[:2]


@pytest.mark.parametrize("module, shape", [
    pytest.param(nn.Upsample(scale_factor=1.5, mode="linear"), (2, 2, 3), id="Upsample-linear"),
    pytest.param(nn.Upsample(size=(3, 2, 4), mode="trilinear", align_corners=True), (1, 2, 2, 3, 2),
                 id="Upsample-trilinear"),
    pytest.param(nn.Upsample(scale_factor=(0.7, 2.0), mode="nearest-exact"), (1, 1, 4, 3),
                 id="Upsample-nearest-exact"),
    pytest.param(nn.UpsamplingNearest2d(scale_factor=2), (1, 2, 2, 3), id="UpsamplingNearest2d"),
    pytest.param(nn.UpsamplingBilinear2d(size=(5, 3)), (2, 1, 3, 2), id="UpsamplingBilinear2d"),
])
def test_upsampling_modules_gradcheck(module, shape):
    x = mg.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    assert gradcheck_module(module, x)


# ----------------------------------------------------------------------------- the math, written out


def _linear_1d(row, out, align_corners, scale=None):
    """Linear interpolation of a list to `out` elements, straight from the definition: the
    source coordinate, its two neighbours (the last one repeated) and their weights."""
    n = len(row)
    if out == n:
        return list(row)
    values = []
    for j in range(out):
        if align_corners:
            r = j * (n - 1) / (out - 1) if out > 1 else 0.0
        else:
            r = max((j + 0.5) * (1 / scale if scale else n / out) - 0.5, 0.0)
        i = min(math.floor(r), n - 1)
        t = min(max(r - i, 0.0), 1.0)
        values.append(row[i] * (1 - t) + row[min(i + 1, n - 1)] * t)
    return values


@given(n=st.integers(1, 6), out=st.integers(1, 9), align_corners=st.booleans(),
       scale=st.sampled_from([None, 0.7, 1.5, 2.0]), seed=st.integers(0, 20))
def test_linear_is_the_definition_written_out(n, out, align_corners, scale, seed):
    row = np.random.default_rng(seed).standard_normal(n)
    kw = dict(size=out) if scale is None else dict(scale_factor=scale)
    if scale is not None:
        out = int(n * scale)
        assume(out >= 1)
    y = F.interpolate(mg.tensor(row[None, None]), mode="linear", align_corners=align_corners, **kw)
    expected = _linear_1d(row, out, align_corners, scale)
    np.testing.assert_allclose(y.numpy()[0, 0], expected, rtol=1e-12, atol=1e-12)


@given(h=st.integers(1, 4), w=st.integers(1, 4), oh=st.integers(1, 6), ow=st.integers(1, 6),
       align_corners=st.booleans(), seed=st.integers(0, 20))
def test_bilinear_is_linear_along_each_axis(h, w, oh, ow, align_corners, seed):
    """Separable: bilinear = linear along W, then linear along H (each a 3-D interpolate)."""
    x = mg.tensor(np.random.default_rng(seed).standard_normal((2, 3, h, w)))
    y = F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=align_corners)
    along_w = F.interpolate(x.reshape(6, h, w), size=ow, mode="linear", align_corners=align_corners)
    cols = along_w.reshape(2, 3, h, ow).permute(0, 1, 3, 2).reshape(6, ow, h)
    both = F.interpolate(cols, size=oh, mode="linear", align_corners=align_corners)
    np.testing.assert_allclose(y.numpy(), both.reshape(2, 3, ow, oh).permute(0, 1, 3, 2).numpy(), rtol=1e-12,
                               atol=1e-12)


def test_nearest_indices():
    """nearest: x[floor(j in / out)]; nearest-exact: the nearest pixel centre,
    x[floor((j + 0.5) in / out)]; with scale_factor 1.5 (not recomputed) the scale is 1 / 1.5."""
    x = mg.tensor(np.arange(5.0)[None, None])
    assert F.interpolate(x, size=3).numpy().tolist() == [[[0, 1, 3]]]
    assert F.interpolate(x, size=3, mode="nearest-exact").numpy().tolist() == [[[0, 2, 4]]]
    assert F.interpolate(x, size=2, mode="nearest-exact").numpy().tolist() == [[[1, 3]]]
    assert F.interpolate(x, scale_factor=1.5).numpy().tolist() == [[[0, 0, 1, 2, 2, 3, 4]]]
    x3 = mg.tensor(np.arange(3.0)[None, None])
    # 3 * 1.2 -> 3 outputs read with the scale 1 / 1.2, not copied; recomputed, 3 / 3 copies
    assert F.interpolate(x3, scale_factor=1.2).numpy().tolist() == [[[0, 0, 1]]]
    assert F.interpolate(x3, scale_factor=1.2, recompute_scale_factor=True).numpy().tolist() == [[[0, 1, 2]]]


def test_torch_documented_values():
    """The examples of torch.nn.Upsample's docstring."""
    x = mg.tensor(np.arange(1.0, 5.0).reshape(1, 1, 2, 2))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2, mode="nearest")(x).numpy()[0, 0],
                                  [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    np.testing.assert_allclose(nn.Upsample(scale_factor=2, mode="bilinear")(x).numpy()[0, 0],
                               [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5],
                                [3.0, 3.25, 3.75, 4.0]])
    third = 1 / 3
    np.testing.assert_allclose(nn.UpsamplingBilinear2d(scale_factor=2)(x).numpy()[0, 0],
                               [[1, 1 + third, 2 - third, 2], [1 + 2 * third, 2, 2 + third, 3 - third],
                                [2 + third, 3 - third, 3, 3 + third], [3, 3 + third, 4 - third, 4]],
                               rtol=1e-12)
    x3 = mg.tensor(np.array([[1.0, 2, 0], [3, 4, 0], [0, 0, 0]]).reshape(1, 1, 3, 3))
    aligned = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    np.testing.assert_allclose(aligned(x3).numpy()[0, 0],
                               [[1.0, 1.4, 1.8, 1.6, 0.8, 0.0], [1.8, 2.2, 2.6, 2.24, 1.12, 0.0],
                                [2.6, 3.0, 3.4, 2.88, 1.44, 0.0], [2.4, 2.72, 3.04, 2.56, 1.28, 0.0],
                                [1.2, 1.36, 1.52, 1.28, 0.64, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]],
                               rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- size 1


@pytest.mark.parametrize("mode", MODES)
def test_a_size_one_input_is_repeated(mode):
    x = mg.tensor(np.full((1, 2) + (1,) * (RANK.get(mode, 4) - 2), 3.5), requires_grad=True)
    y = F.interpolate(x, scale_factor=3, mode=mode)
    assert y.shape == (1, 2) + (3,) * (x.ndim - 2)
    np.testing.assert_allclose(y.numpy(), 3.5, rtol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 ** (x.ndim - 2), rtol=1e-12)


def test_a_size_one_output():
    """One output: the first element with align_corners, the centre's interpolation without."""
    x = mg.tensor(np.array([[[0.0, 1.0, 2.0, 6.0]]]))
    assert F.interpolate(x, size=1, mode="linear", align_corners=True).numpy().tolist() == [[[0.0]]]
    assert F.interpolate(x, size=1, mode="linear").numpy().tolist() == [[[1.5]]]  # coordinate 1.5
    assert F.interpolate(x, size=1).numpy().tolist() == [[[0.0]]]
    assert F.interpolate(x, size=1, mode="nearest-exact").numpy().tolist() == [[[2.0]]]


def test_interpolate_records_one_node_and_keeps_the_dtype():
    for dtype in (mg.float32, mg.float64):
        x = mg.randn(1, 2, 3, 3, dtype=dtype, requires_grad=True)
        y = F.interpolate(x, scale_factor=1.5, mode="bicubic")
        assert type(y._node) is UpsampleInterpOp and y.dtype == dtype and y.shape == (1, 2, 4, 4)
        assert type(F.interpolate(x, size=5)._node) is UpsampleNearestOp
    ints = F.interpolate(mg.tensor(np.arange(4).reshape(1, 1, 4)), scale_factor=0.5)
    assert ints.dtype == mg.int64 and ints.numpy().tolist() == [[[0, 2]]]


# ----------------------------------------------------------------------------- layers


def test_layer_reprs_and_arguments_are_torchs():
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=(3, 4), mode="bilinear")) == "Upsample(size=(3, 4), mode='bilinear')"
    assert repr(nn.UpsamplingNearest2d(scale_factor=(2, 3))) == \
        "UpsamplingNearest2d(scale_factor=(2.0, 3.0), mode='nearest')"
    up = nn.UpsamplingBilinear2d(size=4)
    assert repr(up) == "UpsamplingBilinear2d(size=4, mode='bilinear')"
    assert up.align_corners is True and up.mode == "bilinear" and up.name == "UpsamplingBilinear2d"
    assert nn.Upsample(scale_factor=0).scale_factor is None  # as torch: a falsy factor is None
    x = mg.randn(2, 3, 3, 5)
    np.testing.assert_array_equal(up(x).numpy(),
                                  F.interpolate(x, size=4, mode="bilinear", align_corners=True).numpy())


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, error, match", [
    pytest.param(lambda: F.interpolate(mg.randn(1, 2, 4), size=3, mode="bilinear"), NotImplementedError,
                 r"interpolate: mode 'bilinear' needs a 4-D input \(N, C, H, W\), got an input of shape "
                 r"\(1, 2, 4\)", id="bilinear-3d"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 2, 4, 4), size=3, mode="linear"), NotImplementedError,
                 r"interpolate: mode 'linear' needs a 3-D input \(N, C, W\), got an input of shape "
                 r"\(1, 2, 4, 4\)", id="linear-4d"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 2, 4, 4), size=3, mode="trilinear"), NotImplementedError,
                 r"interpolate: mode 'trilinear' needs a 5-D input", id="trilinear-4d"),
    pytest.param(lambda: F.interpolate(mg.randn(2, 4), size=3), NotImplementedError,
                 r"interpolate: only 3-D, 4-D and 5-D inputs .* got an input of shape \(2, 4\)", id="rank"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=3, mode="cubic"), NotImplementedError,
                 r"interpolate: mode must be one of .* got mode='cubic'", id="mode"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=3, scale_factor=2), ValueError,
                 r"interpolate: only one of size or scale_factor should be defined, got size=3 and "
                 r"scale_factor=2", id="both"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4)), ValueError,
                 r"interpolate: either size or scale_factor should be defined \(input of shape \(1, 1, 4\)\)",
                 id="neither"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=0), ValueError,
                 r"interpolate: input and output sizes should be greater than 0, but got input \(W: 4\) and "
                 r"output \(W: 0\) for an input of shape \(1, 1, 4\)", id="size-0"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4, 4), size=(3, -2)), ValueError,
                 r"input \(H: 4, W: 4\) and output \(H: 3, W: -2\)", id="size-negative"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4, 4), scale_factor=-1.5), ValueError,
                 r"output \(H: -6, W: -6\)", id="scale-negative"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 3), scale_factor=0.3), ValueError,
                 r"input \(W: 3\) and output \(W: 0\)", id="scale-too-small"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 0), scale_factor=2), ValueError,
                 r"input \(W: 0\) and output \(W: 0\)", id="empty-input"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4, 4), size=(3, 3, 3)), ValueError,
                 r"interpolate: an input with 2 spatial dimensions \[4, 4\] \(shape \(1, 1, 4, 4\)\) needs a "
                 r"size of 2, got size=\(3, 3, 3\)", id="size-length"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4, 4), scale_factor=(2.0,)), ValueError,
                 r"needs a scale_factor of 2, got scale_factor=\(2.0,\)", id="scale-length"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=2.5), TypeError,
                 r"interpolate: size must be an int or a tuple of ints, got size=2.5", id="size-float"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=3, align_corners=True), ValueError,
                 r"interpolate: align_corners option can only be set with the interpolating modes: linear \| "
                 r"bilinear \| bicubic \| trilinear, got mode='nearest'", id="align-nearest"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=3, recompute_scale_factor=True), ValueError,
                 r"recompute_scale_factor is not meaningful with an explicit size", id="recompute-size"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4, 4), size=3, mode="bilinear", antialias=True),
                 NotImplementedError, r"interpolate: antialias=True \(mode 'bilinear'\) is not implemented",
                 id="antialias"),
    pytest.param(lambda: F.interpolate(mg.randn(1, 1, 4), size=3, antialias=True), ValueError,
                 r"antialias is restricted to the bilinear and bicubic modes", id="antialias-nearest"),
    pytest.param(lambda: F.interpolate(mg.tensor(np.ones((1, 1, 4), dtype=np.int64)), size=3, mode="linear"),
                 TypeError, r"interpolate: mode 'linear' needs a floating point input, got dtype int64",
                 id="int-linear"),
    pytest.param(lambda: F.interpolate(np.ones((1, 1, 4)), size=3), TypeError,
                 r"interpolate: the input is a numpy array of shape \(1, 1, 4\), not a Tensor", id="array"),
])
def test_errors_name_the_op_and_the_values(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_an_error_inside_a_layer_names_the_layer():
    with pytest.raises(NotImplementedError, match=r"\(in the module .*Upsample"):
        nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"))(mg.randn(1, 1, 4))
