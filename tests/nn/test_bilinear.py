"""F.bilinear and nn.Bilinear: gradchecks over drawn shapes, the same math written as a sum,
the errors, and values and gradients against torch (weights copied from torch.nn.Bilinear)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor, gradcheck
from minigrad.testing import arrays, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

SIZES = st.integers(1, 3)


@given(lead=shapes(0, 2), in1=SIZES, in2=SIZES, out=SIZES, bias=st.booleans(), data=st.data())
def test_bilinear_gradcheck(lead, in1, in2, out, bias, data):
    x1, x2 = data.draw(arrays(lead + (in1,))), data.draw(arrays(lead + (in2,)))
    w = data.draw(arrays((out, in1, in2)))
    inputs = [x1, x2, w] + ([data.draw(arrays((out,)))] if bias else [])
    assert gradcheck(lambda a, b, w, *bb: F.bilinear(a, b, w, *bb), inputs)


@settings(max_examples=10)
@given(lead=shapes(1, 2), in1=SIZES, in2=SIZES, out=SIZES, data=st.data())
def test_bilinear_module_gradcheck(lead, in1, in2, out, data):
    layer = nn.Bilinear(in1, in2, out)
    assert gradcheck_module(layer, data.draw(arrays(lead + (in1,))), data.draw(arrays(lead + (in2,))))


@given(lead=shapes(0, 2), in1=SIZES, in2=SIZES, out=SIZES, data=st.data())
def test_bilinear_is_the_sum_over_i_and_j(lead, in1, in2, out, data):
    x1, x2 = data.draw(arrays(lead + (in1,))), data.draw(arrays(lead + (in2,)))
    w, b = data.draw(arrays((out, in1, in2))), data.draw(arrays((out,)))
    expected = np.einsum("...i,kij,...j->...k", x1, w, x2) + b
    got = F.bilinear(mg.tensor(x1), mg.tensor(x2), mg.tensor(w), mg.tensor(b))
    assert got.shape == lead + (out,)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=15)
@given(lead=shapes(0, 2), in1=SIZES, in2=SIZES, out=SIZES, bias=st.booleans(),
       dtype=st.sampled_from([np.float64, np.float32]), data=st.data())
def test_bilinear_matches_torch(lead, in1, in2, out, bias, dtype, data):
    """nn.Bilinear with torch's initial weights copied in: output, dtype, and the gradients of
    both inputs, the weight and the bias."""
    theirs = torch.nn.Bilinear(in1, in2, out, bias=bias).to(getattr(torch, np.dtype(dtype).name))
    mine = nn.Bilinear(in1, in2, out, bias=bias).to(dtype)
    mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    a1, a2 = data.draw(arrays(lead + (in1,), dtype=dtype)), data.draw(arrays(lead + (in2,), dtype=dtype))
    xs = [Tensor(a1, requires_grad=True), Tensor(a2, requires_grad=True)]
    ts = [torch.tensor(a1, requires_grad=True), torch.tensor(a2, requires_grad=True)]
    y, ty = mine(*xs), theirs(*ts)
    assert y.shape == tuple(ty.shape) and str(ty.dtype) == f"torch.{y.dtype}"
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    g = np.random.default_rng(0).standard_normal(y.shape).astype(dtype)
    y.backward(g)
    ty.backward(torch.from_numpy(g))
    pairs = [(x.grad, t.grad) for x, t in zip(xs, ts)] + [(mine.weight.grad, theirs.weight.grad)]
    if bias:
        pairs.append((mine.bias.grad, theirs.bias.grad))
    for mg_grad, t_grad in pairs:
        np.testing.assert_allclose(mg_grad, t_grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_layout_init_and_repr_as_torch():
    mg.manual_seed(0)
    layer = nn.Bilinear(4, 3, 2)
    theirs = torch.nn.Bilinear(4, 3, 2)
    assert repr(layer) == repr(theirs)
    assert list(layer.state_dict()) == list(theirs.state_dict()) == ["weight", "bias"]
    assert layer.weight.shape == (2, 4, 3) and layer.weight.dtype == np.float32
    bound = 1 / np.sqrt(4)  # U(-1/sqrt(in1), 1/sqrt(in1)) for both
    big = nn.Bilinear(4, 50, 40)
    for p in big.parameters():
        assert np.abs(p.numpy()).max() <= bound and np.abs(p.numpy()).max() > 0.9 * bound
    assert nn.Bilinear(4, 3, 2, bias=False).bias is None


def test_empty_batch():
    out = F.bilinear(mg.tensor(np.zeros((0, 3))), mg.tensor(np.zeros((0, 2))), mg.tensor(np.ones((4, 3, 2))))
    assert out.shape == (0, 4)


W = mg.tensor(np.zeros((2, 3, 5)))
V3, V5 = mg.tensor(np.zeros(3)), mg.tensor(np.zeros(5))
ERRORS = [
    pytest.param(lambda: F.bilinear(mg.tensor(np.zeros((4, 3))), mg.tensor(np.zeros((2, 5))), W),
                 r"bilinear: input1 of shape \(4, 3\) and input2 of shape \(2, 5\) .*same leading",
                 id="lead"),
    pytest.param(lambda: F.bilinear(mg.tensor(np.zeros((2, 4, 3))), mg.tensor(np.zeros((4, 5))), W),
                 r"bilinear: .*\(2, 4, 3\) and input2 of shape \(4, 5\)", id="ndim"),
    pytest.param(lambda: F.bilinear(mg.tensor(np.zeros((4, 2))), mg.tensor(np.zeros((4, 5))), W),
                 r"bilinear: input1 of shape \(4, 2\) must end in 3 for a weight of shape \(2, 3, 5\)",
                 id="in1"),
    pytest.param(lambda: F.bilinear(mg.tensor(np.zeros((4, 3))), mg.tensor(np.zeros((4, 4))), W),
                 r"bilinear: input2 of shape \(4, 4\) must end in 5", id="in2"),
    pytest.param(lambda: F.bilinear(V3, V5, mg.tensor(np.zeros((3, 5)))),
                 r"bilinear: the weight must have shape \(out_features, in1_features, in2_features\), "
                 r"got \(3, 5\)",
                 id="weight-2d"),
    pytest.param(lambda: F.bilinear(V3, V5, W, V3),
                 r"bilinear: the bias must have shape \(2,\) for a weight of shape \(2, 3, 5\), got \(3,\)",
                 id="bias"),
    pytest.param(lambda: F.bilinear(mg.tensor(np.float64(1)), mg.tensor(np.float64(1)), W),
                 r"bilinear: .*at least 1 dimension", id="0d"),
    pytest.param(lambda: nn.Bilinear(0, 3, 2), r"Bilinear: in1_features must be > 0, not 0", id="module"),
]


@pytest.mark.parametrize("call, message", ERRORS)
def test_bilinear_errors_name_the_function_and_the_shapes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_bilinear_refuses_a_numpy_array():
    with pytest.raises(TypeError, match=r"bilinear: input2 is a numpy array of shape \(5,\)"):
        F.bilinear(mg.tensor(np.zeros(3)), np.zeros(5), W)
