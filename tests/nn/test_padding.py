"""F.pad: gradchecks of every mode over drawn shapes and pads (negative ones crop), the edges,
the errors, and the values, dtypes and gradients against torch.nn.functional.pad."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import Tensor, gradcheck
from minigrad.nn.padding import ConstantPad
from minigrad.testing import arrays, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
TF = torch.nn.functional

MODES = ["constant", "reflect", "replicate", "circular"]


@st.composite
def pad_cases(draw, mode):
    """(shape, pad) that torch accepts for `mode`: any shape for constant (0-d included), else
    1 to 3 padded dimensions after 1 or 2 leading ones; pads from a crop to a little more
    than the size (reflect: smaller than it; circular: at most what is left after cropping)."""
    if mode == "constant":
        shape = draw(shapes(0, 3))
        k = draw(st.integers(0, len(shape)))
    else:
        k = draw(st.integers(1, 2 if draw(st.booleans()) else 3))
        lead = draw(shapes(1, 2, max_side=2))
        shape = lead + draw(shapes(k, k))
    pad = []
    for i in range(k):
        n = shape[-1 - i]
        floor = 0 if mode == "constant" else 1  # the other modes need an element left to copy
        before = draw(st.integers(-(n - floor), n - 1 if mode == "reflect" else n))
        kept = n - max(-before, 0)
        after = draw(st.integers(-(kept - floor), n - 1 if mode == "reflect" else n))
        kept -= max(-after, 0)
        if mode == "circular":  # wrap around what is left once at most
            before, after = min(before, kept), min(after, kept)
        pad += [before, after]
    return shape, tuple(pad)


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_pad_gradcheck(mode, data):
    shape, pad = data.draw(pad_cases(mode))
    value = data.draw(st.floats(-2, 2)) if mode == "constant" else None
    x = data.draw(arrays(shape))
    assert gradcheck(lambda x: F.pad(x, pad, mode=mode, value=value), [x])


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=15)
@given(data=st.data())
def test_pad_matches_torch(mode, data):
    """Values, dtype and input gradient against torch, in float64 and float32."""
    shape, pad = data.draw(pad_cases(mode))
    dtype = data.draw(st.sampled_from([np.float64, np.float32]))
    value = data.draw(st.sampled_from([None, 0.0, -1.5])) if mode == "constant" else None
    a = data.draw(arrays(shape, dtype=dtype))
    x, t = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = F.pad(x, pad, mode=mode, value=value), TF.pad(t, pad, mode=mode, value=value)
    assert out.shape == tuple(tout.shape) and str(tout.dtype) == f"torch.{out.dtype}"
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    g = np.random.default_rng(0).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- edges


def test_pad_order_is_last_dimension_first():
    x = mg.tensor(np.ones((2, 3)))
    assert F.pad(x, (1, 2)).shape == (2, 6)
    assert F.pad(x, (1, 2, 3, 0)).shape == (5, 6)
    out = F.pad(x, (0, 0, 1, 0), value=7.0).numpy()
    np.testing.assert_array_equal(out[0], [7, 7, 7])
    np.testing.assert_array_equal(out[1:], 1)


def test_modes_on_one_row():
    x = mg.tensor(np.array([[0.0, 1.0, 2.0]]))
    assert F.pad(x, (2, 2), mode="reflect").numpy().tolist() == [[2, 1, 0, 1, 2, 1, 0]]
    assert F.pad(x, (2, 2), mode="replicate").numpy().tolist() == [[0, 0, 0, 1, 2, 2, 2]]
    assert F.pad(x, (2, 2), mode="circular").numpy().tolist() == [[1, 2, 0, 1, 2, 0, 1]]
    assert F.pad(x, (2, 2)).numpy().tolist() == [[0, 0, 0, 1, 2, 0, 0]]


def test_negative_pads_crop_and_their_gradient_is_zero():
    x = Tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    out = F.pad(x, (-1, -2, 1, -1), value=9.0)  # drop column 0, columns 2-3 and row 2; add a row
    np.testing.assert_array_equal(out.numpy(), [[9], [1], [5]])
    out.backward(np.array([[10.0], [20.0], [30.0]]))
    expected = np.zeros((3, 4))
    expected[0, 1], expected[1, 1] = 20.0, 30.0
    np.testing.assert_array_equal(x.grad, expected)
    assert F.pad(x, (-2, -2)).shape == (3, 0)  # cropped to nothing, as torch


def test_reflect_gradient_counts_every_copy():
    x = Tensor(np.zeros((1, 3)), requires_grad=True)
    F.pad(x, (2, 2), mode="reflect").sum().backward()  # [2 1 | 0 1 2 | 1 0]
    np.testing.assert_array_equal(x.grad, [[2, 3, 2]])
    x.grad = None
    F.pad(x, (2, 1), mode="replicate").sum().backward()  # [0 0 | 0 1 2 | 2]
    np.testing.assert_array_equal(x.grad, [[3, 1, 2]])


def test_integer_and_zero_d_inputs():
    out = F.pad(mg.tensor(np.array([0, 1, 2])), (1, 1), value=2.5)
    assert out.dtype == np.int64 and out.numpy().tolist() == [2, 0, 1, 2, 2]  # the value is cast, as torch
    zero_d = mg.tensor(np.float64(3.0))
    assert F.pad(zero_d, ()).shape == () and float(F.pad(zero_d, []).numpy()) == 3.0
    assert F.pad(mg.tensor(np.zeros((2, 0))), (1, 1)).shape == (2, 2)
    assert F.pad(mg.tensor(np.ones((2, 3))), (1, 1), mode="reflect", value=0).shape == (2, 5)  # 0 is no value


def test_constant_pad_is_one_node_and_its_twin_agrees():
    from minigrad.export import TORCH_OPS

    x = Tensor(np.random.default_rng(1).standard_normal((2, 3, 4)), requires_grad=True)
    out = ConstantPad.apply(x, pad=(1, -2, 0, 3), value=0.25)
    t = torch.tensor(x.numpy(), requires_grad=True)
    tout = TORCH_OPS[ConstantPad](t, pad=(1, -2, 0, 3), value=0.25)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    g = np.random.default_rng(2).standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(x.grad, t.grad.numpy())


# ----------------------------------------------------------------------------- errors

X3 = np.zeros((2, 3, 4))
ERRORS = [
    pytest.param(X3, (1,), "constant", None, ValueError, r"pad: .*divisible by 2.*\(1,\)", id="odd-length"),
    pytest.param(X3, (1,) * 8, "constant", None, ValueError, r"pad: .*pads 4 dimensions.*\(2, 3, 4\) has 3",
                 id="too-long"),
    pytest.param(X3, (1.0, 1), "constant", None, TypeError, r"pad: pad must be a tuple of ints",
                 id="float-pad"),
    pytest.param(X3, 2, "constant", None, TypeError, r"pad: pad must be a tuple of ints", id="int-pad"),
    pytest.param(X3, (1, 1), "wrap", None, ValueError, r"pad: mode must be one of .*'wrap'", id="bad-mode"),
    pytest.param(X3, (-3, -2), "constant", None, ValueError,
                 r"pad: pad \(-3, -2\) crops dimension 2 of an input of shape \(2, 3, 4\) to a negative size",
                 id="crop-too-much"),
    pytest.param(X3, (4, 0), "reflect", None, ValueError,
                 r"pad: reflect pads must be smaller .*\(4, 0\) for dimension 2 .*\(2, 3, 4\)",
                 id="reflect-too-big"),
    pytest.param(X3, (0, 5), "circular", None, ValueError, r"pad: circular pads of at most .*\(0, 5\)",
                 id="circular-too-big"),
    pytest.param(X3, (1, 1), "replicate", 1.0, ValueError, r"pad: mode 'replicate' takes no value",
                 id="value-with-replicate"),
    pytest.param(np.zeros(4), (1, 1), "reflect", None, ValueError,
                 r"pad: mode 'reflect' .* needs a 2-d or 3-d input; got pad \(1, 1\) and an input of shape "
                 r"\(4,\)",
                 id="reflect-1d"),
    pytest.param(X3, (1, 1, 1, 1, 1, 1), "replicate", None, ValueError, r"needs a 4-d or 5-d input",
                 id="replicate-3-dims-of-3d"),
    pytest.param(np.zeros((2, 0)), (1, 1), "replicate", None, ValueError,
                 r"pad: mode 'replicate' needs elements to pad from; dimension 1 .*\(2, 0\)",
                 id="empty-replicate"),
]


@pytest.mark.parametrize("a, pad, mode, value, error, message", ERRORS)
def test_pad_errors_name_the_function_and_the_shapes(a, pad, mode, value, error, message):
    with pytest.raises(error, match=message):
        F.pad(mg.tensor(a), pad, mode=mode, value=value)


def test_pad_refuses_a_numpy_array():
    with pytest.raises(TypeError, match=r"pad: the input is a numpy array of shape \(2,\), not a Tensor"):
        F.pad(np.zeros(2), (1, 1))


# ----------------------------------------------------------------------------- each axis its own pads

# (shape, pad): every (before, after) pair different, on non-square inputs, 1 to 3 padded dims
AXIS_CASES = [
    pytest.param((2, 3, 7), (1, 2), id="1d"),
    pytest.param((2, 3, 5, 7), (1, 2, 3, 0), id="2d"),
    pytest.param((2, 3, 5, 7), (0, 3, 2, 1), id="2d-other-side"),
    pytest.param((3, 4, 6), (2, 0, 1, 3), id="2d-unbatched"),
    pytest.param((1, 2, 3, 4, 5), (1, 2, 0, 3, 2, 1), id="3d"),
    pytest.param((2, 3, 4, 5), (3, 1, 2, 0, 1, 2), id="3d-unbatched"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, pad", AXIS_CASES)
def test_every_axis_gets_its_own_pads_as_in_torch(mode, shape, pad):
    """Each axis's (before, after) pair goes to that axis (pad lists the last dimension first)
    and to its sides: values and gradient against torch, entries all distinct."""
    a = np.random.default_rng(0).standard_normal(shape)
    x, t = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = F.pad(x, pad, mode=mode), TF.pad(t, pad, mode=mode)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, pad", [
    pytest.param((2, 3, 5, 7), (1, -2, -1, 3), id="2d"),
    pytest.param((1, 2, 3, 4, 5), (-1, 2, 0, -2, 1, 0), id="3d"),
])
def test_constant_pads_and_crops_per_axis_as_in_torch(shape, pad):
    a = np.random.default_rng(0).standard_normal(shape)
    x, t = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = F.pad(x, pad, value=-2.5), TF.pad(t, pad, value=-2.5)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(x.grad, t.grad.numpy())
