"""F.group_norm and nn.GroupNorm: gradchecks over drawn shapes, the edges (constant groups,
huge offsets, empty batches), the errors, and values and gradients against torch."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modcheck import affine_of, draw_affine, gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor, gradcheck
from minigrad.testing import arrays, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


@st.composite
def group_cases(draw):
    """(shape (N, C, *), num_groups) with C a multiple of num_groups."""
    groups, per = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    shape = (draw(st.integers(1, 2)), groups * per) + draw(shapes(0, 2, max_side=2))
    if shape[0] * per * int(np.prod(shape[2:])) == 1:  # one value per group: torch refuses it
        shape = (2,) + shape[1:]
    return shape, groups


def spread(a: np.ndarray, groups: int) -> bool:
    """Groups far from var ~ eps, where the normalization bends too sharply for finite
    differences, or exactly constant ones."""
    var = a.reshape(a.shape[0], groups, -1).var(axis=-1)
    return bool(np.all((var > 1e-2) | (var == 0)))


# ----------------------------------------------------------------------------- gradients


@given(case=group_cases(), affine=st.sampled_from(["none", "weight", "bias", "both"]), data=st.data())
def test_group_norm_gradcheck(case, affine, data):
    shape, groups = case
    x = data.draw(arrays(shape).filter(lambda a: spread(a, groups)))
    C = shape[1]
    w, b = draw_affine(data, C, affine)
    inputs = [x] + [p for p in (w, b) if p is not None]

    def fn(x, *params):
        weight, bias = affine_of(w, b, params)
        return F.group_norm(x, groups, weight, bias, eps=1e-5)

    assert gradcheck(fn, inputs)


@settings(max_examples=10)
@given(case=group_cases(), data=st.data())
def test_group_norm_module_gradcheck(case, data):
    shape, groups = case
    layer = nn.GroupNorm(groups, shape[1])
    rng = np.random.default_rng(0)
    for p in layer.parameters():
        p.data = rng.uniform(0.5, 1.5, p.shape)
    assert gradcheck_module(layer, data.draw(arrays(shape).filter(lambda a: spread(a, groups))))


# ----------------------------------------------------------------------------- against torch


@settings(max_examples=15)
@given(case=group_cases(), dtype=st.sampled_from([np.float64, np.float32]), data=st.data())
def test_group_norm_matches_torch(case, dtype, data):
    """nn.GroupNorm with torch's (randomized) weights copied in: outputs and the gradients of
    the input, weight and bias."""
    shape, groups = case
    a = data.draw(arrays(shape, dtype=dtype))
    theirs = torch.nn.GroupNorm(groups, shape[1], eps=1e-4).to(getattr(torch, np.dtype(dtype).name))
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        theirs.bias.uniform_(-1, 1)
    mine = nn.GroupNorm(groups, shape[1], eps=1e-4).to(dtype)
    mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x, t = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = mine(x), theirs(t)
    assert out.dtype == dtype and out.shape == tuple(tout.shape)
    tol = 1e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    for mg_grad, t_grad in ((x.grad, t.grad), (mine.weight.grad, theirs.weight.grad),
                            (mine.bias.grad, theirs.bias.grad)):
        np.testing.assert_allclose(mg_grad, t_grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_module_matches_torch_layout_and_repr():
    for args, kwargs in (((3, 6), {}), ((2, 4), {"affine": False}), ((1, 3), {"bias": False})):
        mine, theirs = nn.GroupNorm(*args, **kwargs), torch.nn.GroupNorm(*args, **kwargs)
        assert repr(mine) == repr(theirs)
        assert list(mine.state_dict()) == list(theirs.state_dict())
        for k, v in theirs.state_dict().items():
            np.testing.assert_array_equal(mine.state_dict()[k], v.numpy())
            assert mine.state_dict()[k].dtype == np.float32


# ----------------------------------------------------------------------------- edges


def test_constant_groups_give_zero_not_nan():
    x = np.ones((2, 4, 3))
    x[:, 2:] = np.arange(6.0).reshape(1, 2, 3)  # group 0 constant, group 1 spread
    out = F.group_norm(mg.tensor(x), 2).numpy()
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, :2], 0.0)
    np.testing.assert_allclose(out[:, 2:].mean(), 0.0, atol=1e-12)


def test_huge_offsets_and_2d_inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)) + 1e6  # (N, C): each group is its channels alone
    out = F.group_norm(mg.tensor(a), 2).numpy()
    ref = torch.nn.functional.group_norm(torch.tensor(a), 2).numpy()
    np.testing.assert_allclose(out, ref, atol=1e-6)
    per_group = F.group_norm(mg.tensor(a), 4).numpy()  # one channel per group: all zero
    np.testing.assert_array_equal(per_group, 0.0)


def test_empty_batch_and_empty_positions():
    assert F.group_norm(mg.tensor(np.zeros((0, 4, 3))), 2).shape == (0, 4, 3)
    out = nn.GroupNorm(2, 4)(mg.tensor(np.zeros((2, 4, 0), dtype=np.float32)))
    assert out.shape == (2, 4, 0) and out.dtype == np.float32


# ----------------------------------------------------------------------------- errors

X = np.zeros((2, 6, 3))
ERRORS = [
    pytest.param(lambda: F.group_norm(mg.tensor(np.zeros(6)), 3), ValueError,
                 r"group_norm: the input needs at least 2 dimensions \(N, C, \*\), got shape \(6,\)",
                 id="1d"),
    pytest.param(lambda: F.group_norm(mg.tensor(X), 4), ValueError,
                 r"group_norm: .*divisible by num_groups.*shape \(2, 6, 3\) and num_groups=4",
                 id="not-divisible"),
    pytest.param(lambda: F.group_norm(mg.tensor(X), 0), ValueError, r"num_groups=0", id="zero-groups"),
    pytest.param(lambda: F.group_norm(mg.tensor(X), 3, mg.tensor(np.ones(4))), ValueError,
                 r"group_norm: the weight must have shape \(6,\).*\(4,\) and an input of shape \(2, 6, 3\)",
                 id="weight-shape"),
    pytest.param(lambda: F.group_norm(mg.tensor(X), 3, None, mg.tensor(np.ones((6, 1)))), ValueError,
                 r"group_norm: the bias must have shape \(6,\)", id="bias-shape"),
    pytest.param(lambda: F.group_norm(mg.tensor(np.zeros((2, 6), dtype=np.int64)), 3), TypeError,
                 r"group_norm: the input has dtype int64", id="int-input"),
    pytest.param(lambda: F.group_norm(mg.tensor(np.zeros((1, 2, 1))), 2), ValueError,
                 r"group_norm: expected more than 1 value per group.*\(1, 2, 1\)", id="one-value"),
    pytest.param(lambda: F.group_norm(X, 3), TypeError, r"group_norm: the input is a numpy array",
                 id="numpy"),
    pytest.param(lambda: nn.GroupNorm(4, 6), ValueError,
                 r"GroupNorm: num_channels \(6\) must be divisible by num_groups \(4\)", id="module"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_group_norm_errors_name_the_function_and_the_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()
