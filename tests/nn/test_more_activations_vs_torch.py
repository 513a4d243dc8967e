"""The activations relu6 ... prelu, Softmax2d and rms_norm / RMSNorm against PyTorch: values,
dtypes and the gradients of every input for a random upstream gradient, in float64 and
float32, on drawn shapes (size-1 and 0-d) and values, the kinks themselves and huge values
among them; the in-place forms; and every activation module of torch.nn is in minigrad.nn."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch_compare import same_as_torch

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.testing import arrays, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
TF = torch.nn.functional

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))
DTYPES = [pytest.param(np.float64, 1e-10, id="float64"), pytest.param(np.float32, 2e-5, id="float32")]


def _grad_tol(fn, dtype):
    """torch's float64 hardsigmoid gradient is 1/6 rounded to float32, a relative 3e-8 off
    (test_where_torch_rounds_a_float64_gradient_to_float32); minigrad's is 1/6."""
    return 1e-7 if fn is F.hardsigmoid and dtype == np.float64 else None


# (minigrad function, torch function, options; celu's alpha exact in float32, see
# test_where_torch_rounds_a_float64_gradient_to_float32)
POINTWISE = [
    pytest.param(F.relu6, TF.relu6, {}, id="relu6"),
    pytest.param(F.hardsigmoid, TF.hardsigmoid, {}, id="hardsigmoid"),
    pytest.param(F.hardswish, TF.hardswish, {}, id="hardswish"),
    pytest.param(F.selu, TF.selu, {}, id="selu"),
    pytest.param(F.celu, TF.celu, {}, id="celu"),
    pytest.param(F.celu, TF.celu, {"alpha": 0.5}, id="celu-alpha"),
    pytest.param(F.softsign, TF.softsign, {}, id="softsign"),
    pytest.param(F.tanhshrink, TF.tanhshrink, {}, id="tanhshrink"),
    pytest.param(F.threshold, TF.threshold, {"threshold": 0.5, "value": -2.0}, id="threshold"),
    pytest.param(F.threshold, TF.threshold, {"threshold": -3.0, "value": 6.0}, id="threshold-negative"),
    pytest.param(F.softshrink, TF.softshrink, {}, id="softshrink"),
    pytest.param(F.softshrink, TF.softshrink, {"lambd": 3.0}, id="softshrink-lambd"),
    pytest.param(F.hardshrink, TF.hardshrink, {}, id="hardshrink"),
    pytest.param(F.hardshrink, TF.hardshrink, {"lambd": 3.0}, id="hardshrink-lambd"),
    pytest.param(F.rrelu, TF.rrelu, {}, id="rrelu-eval"),
    pytest.param(F.rrelu, TF.rrelu, {"lower": 0.05, "upper": 0.5}, id="rrelu-eval-range"),
    pytest.param(F.elu, TF.elu, {"alpha": 0.5}, id="elu"),  # ELUOp took torch's scale and input_scale
]
# the kinks of all of them, and values past where their pieces change
GRID = [0.0, -3.0, 3.0, 6.0, -0.5, 0.5, -2.0, 2.0, 1e-9, -1e-9, 20.0, -20.0, 50.0, -50.0, 1e30, -1e30]


@pytest.mark.parametrize("dtype, tol", DTYPES)
@pytest.mark.parametrize("mine, theirs, options", POINTWISE)
@fewer
@given(data=st.data())
def test_pointwise_match_torch(mine, theirs, options, dtype, tol, data):
    """On drawn values, and on a grid holding every kink, where the one-sided gradients must be
    torch's, and huge values."""
    shape = data.draw(shapes())
    x = data.draw(arrays(shape, -10, 10) | hnp.arrays(np.float64, shape, elements=st.sampled_from(GRID)))
    same_as_torch(lambda t: mine(t, **options), lambda t: theirs(t, **options), [x.astype(dtype)], tol,
                  _grad_tol(mine, dtype))


@pytest.mark.parametrize("dtype, tol", DTYPES)
@pytest.mark.parametrize("mine, theirs, options", POINTWISE)
def test_infinities_and_nan_values_match_torch(mine, theirs, options, dtype, tol):
    """+-inf and NaN: the same values as torch, NaN where torch's is NaN, except hardswish(-inf),
    which is 0 in minigrad (the limit) and NaN in torch (its -inf * 0)."""
    x = np.array([-np.inf, np.inf, np.nan, -1e30, 1e30], dtype)
    with np.errstate(invalid="ignore"):
        a = mine(mg.tensor(x), **options).numpy()
    b = theirs(torch.tensor(x), **options).numpy()
    if mine is F.hardswish:
        assert a[0] == 0 and np.isnan(b[0])
        a, b = a[1:], b[1:]
    np.testing.assert_allclose(a, b, rtol=tol, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype, tol", DTYPES)
@fewer
@given(data=st.data())
def test_glu_matches_torch_along_any_dim(dtype, tol, data):
    shape = list(data.draw(shapes(min_dims=1)))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape[dim] *= 2
    x = data.draw(arrays(tuple(shape), -10, 10)).astype(dtype)
    same_as_torch(lambda t: F.glu(t, dim), lambda t: TF.glu(t, dim), [x], tol)


@pytest.mark.parametrize("dtype, tol", DTYPES)
@fewer
@given(data=st.data())
def test_prelu_matches_torch_weight_over_dim_1(dtype, tol, data):
    shape = data.draw(shapes())
    wshape = data.draw(st.sampled_from([(1,), ()] + ([(shape[1],)] if len(shape) >= 2 else [])))
    grid = hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, -1.0, 2.0, -1e30, 1e30]))
    x = data.draw(arrays(shape, -5, 5) | grid).astype(dtype)
    w = data.draw(arrays(wshape, -1, 1)).astype(dtype)
    same_as_torch(F.prelu, TF.prelu, [x, w], tol)


@pytest.mark.parametrize("dtype, tol", DTYPES)
@fewer
@given(data=st.data())
def test_softmax2d_matches_torch(dtype, tol, data):
    x = data.draw(arrays(shapes(min_dims=3, max_dims=4), -10, 10)).astype(dtype)
    same_as_torch(nn.Softmax2d(), torch.nn.Softmax2d(), [x], tol)


MODULES = [  # (minigrad module, its torch twin)
    pytest.param(lambda: nn.ReLU6(), lambda: torch.nn.ReLU6(), id="ReLU6"),
    pytest.param(nn.Hardsigmoid, torch.nn.Hardsigmoid, id="Hardsigmoid"),
    pytest.param(nn.Hardswish, torch.nn.Hardswish, id="Hardswish"),
    pytest.param(nn.SELU, torch.nn.SELU, id="SELU"),
    pytest.param(lambda: nn.CELU(0.75), lambda: torch.nn.CELU(0.75), id="CELU"),
    pytest.param(lambda: nn.GLU(1), lambda: torch.nn.GLU(1), id="GLU"),
    pytest.param(nn.Softsign, torch.nn.Softsign, id="Softsign"),
    pytest.param(nn.Tanhshrink, torch.nn.Tanhshrink, id="Tanhshrink"),
    pytest.param(lambda: nn.Threshold(0.2, -1.0), lambda: torch.nn.Threshold(0.2, -1.0), id="Threshold"),
    pytest.param(lambda: nn.Softshrink(0.3), lambda: torch.nn.Softshrink(0.3), id="Softshrink"),
    pytest.param(lambda: nn.Hardshrink(0.3), lambda: torch.nn.Hardshrink(0.3), id="Hardshrink"),
    pytest.param(nn.Softmax2d, torch.nn.Softmax2d, id="Softmax2d"),
    pytest.param(lambda: nn.RMSNorm([3, 4]), lambda: torch.nn.RMSNorm([3, 4]), id="RMSNorm"),
    pytest.param(lambda: nn.RMSNorm(4, 1e-3, False), lambda: torch.nn.RMSNorm(4, 1e-3, False),
                 id="RMSNorm-bare"),
]


@pytest.mark.parametrize("dtype, tol", DTYPES)
@pytest.mark.parametrize("mine, theirs", MODULES)
def test_modules_match_torch(mine, theirs, dtype, tol):
    x = (np.random.default_rng(0).standard_normal((2, 4, 3, 4)) * 4).astype(dtype)
    x[0, 0, 0, :4] = [0.0, 3.0, -3.0, 0.3]  # kinks
    m, t = mine(), theirs()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    if dtype == np.float64:
        m, t = m.double(), t.double()
    with nn.evaluating(m):
        same_as_torch(lambda a: m(a), lambda a: t.eval()(a), [x], tol,
                      _grad_tol(F.hardsigmoid if isinstance(m, nn.Hardsigmoid) else None, dtype))


@pytest.mark.parametrize("dtype, tol", DTYPES)
@pytest.mark.parametrize("num_parameters", [1, 3])
def test_prelu_module_matches_torch_with_its_gradient(num_parameters, dtype, tol):
    m, t = nn.PReLU(num_parameters, 0.3), torch.nn.PReLU(num_parameters, 0.3)
    assert list(m.state_dict()) == list(t.state_dict()) and m.weight.shape == tuple(t.weight.shape)
    np.testing.assert_array_equal(m.weight.numpy(), t.weight.detach().numpy())
    w = np.array([0.3, -0.5, 1.5][:num_parameters], dtype)
    m.load_state_dict({"weight": w})
    t.load_state_dict({"weight": torch.tensor(w)})
    x = (np.random.default_rng(1).standard_normal((2, 3, 4))).astype(dtype)
    x[0, :, 0] = 0.0
    g = np.random.default_rng(2).standard_normal(x.shape).astype(dtype)
    a, ta = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = m.to(dtype)(a), t.to(torch.float64 if dtype == np.float64 else torch.float32)(ta)
    y.backward(mg.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(m.weight.grad, t.weight.grad.numpy(), rtol=tol, atol=tol)


INPLACE = [
    pytest.param(F.relu6, TF.relu6, {}, id="relu6"),
    pytest.param(F.hardsigmoid, TF.hardsigmoid, {}, id="hardsigmoid"),
    pytest.param(F.hardswish, TF.hardswish, {}, id="hardswish"), pytest.param(F.selu, TF.selu, {}, id="selu"),
    pytest.param(F.celu, TF.celu, {"alpha": 0.75}, id="celu"),
    pytest.param(F.threshold, TF.threshold, {"threshold": 0.1, "value": -1.0}, id="threshold"),
    pytest.param(F.rrelu, TF.rrelu, {}, id="rrelu-eval"), pytest.param(F.relu, TF.relu, {}, id="relu"),
    pytest.param(F.elu, TF.elu, {"alpha": 0.5}, id="elu"),
    pytest.param(F.leaky_relu, TF.leaky_relu, {"negative_slope": 0.2}, id="leaky_relu"),
    pytest.param(F.hardtanh, TF.hardtanh, {"min_val": -0.5, "max_val": 2.0}, id="hardtanh"),
    pytest.param(F.silu, TF.silu, {}, id="silu"), pytest.param(F.mish, TF.mish, {}, id="mish"),
]


@pytest.mark.parametrize("mine, theirs, options", INPLACE)
def test_inplace_forms_match_torch(mine, theirs, options):
    """F.<fn>(h, inplace=True) on a tensor in the graph: h itself comes back, holding torch's
    values, and the gradient through it is torch's."""
    x = np.array([-4.0, -3.0, -1.0, 0.0, 0.3, 2.0, 3.0, 6.0, 7.0])
    g = np.random.default_rng(0).standard_normal(x.shape)
    a, ta = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    h, th = a * 2, ta * 2
    assert mine(h, **options, inplace=True) is h and theirs(th, **options, inplace=True) is th
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12, atol=1e-12)
    h.backward(mg.tensor(g))
    th.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=_grad_tol(mine, np.float64) or 1e-12, atol=1e-12)


UNDERSCORE = [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 2.0)),
              ("threshold_", (0.1, -1.0)), ("celu_", (0.75,)), ("selu_", ()), ("rrelu_", (0.1, 0.3, False))]


@pytest.mark.parametrize("name, args", UNDERSCORE, ids=[n for n, _ in UNDERSCORE])
def test_underscore_functions_match_torch(name, args):
    """torch's F.relu_(x), F.elu_(x, alpha), ...: the input itself comes back holding torch's
    values, with torch's positional arguments; inside the graph the gradient is torch's, and a
    leaf that requires grad is refused as torch refuses it."""
    assert sorted(n for n in dir(TF) if n.endswith("_") and not n.startswith("_")) == sorted(
        n for n, _ in UNDERSCORE)
    x = np.array([-4.0, -3.0, -1.0, 0.0, 0.3, 2.0, 3.0, 6.0, 7.0])
    mine, theirs = getattr(F, name), getattr(TF, name)
    a, ta = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    h, th = a * 2, ta * 2
    assert mine(h, *args) is h and theirs(th, *args) is th
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12, atol=1e-12)
    h.backward(mg.tensor(np.arange(9.0)))
    th.backward(torch.arange(9.0, dtype=torch.float64))
    np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match=name):
        mine(mg.tensor(x, requires_grad=True), *args)
    with pytest.raises(RuntimeError):
        theirs(torch.tensor(x, requires_grad=True), *args)


def test_where_torch_rounds_a_float64_gradient_to_float32():
    """Two float64 gradients of torch's are a float32 rounding off the derivative of its own
    forward: hardsigmoid's 1/6 is the float32 1/6, and celu's backward takes 1 / alpha of alpha
    rounded to float32 (its forward takes the float64 one). minigrad's are the exact derivative,
    which the float32-rounded constants reproduce torch's to the last bit."""
    x = np.array([-2.0, -1.0, -0.3, 0.5, 1.5])
    a, ta = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.hardsigmoid(a).sum().backward()
    TF.hardsigmoid(ta).sum().backward()
    np.testing.assert_array_equal(a.grad, np.full(5, 1 / 6))
    np.testing.assert_array_equal(ta.grad.numpy(), np.full(5, float(np.float32(1) / np.float32(6))))
    alpha, neg = 0.7, x[:3]
    a, ta = mg.tensor(neg, requires_grad=True), torch.tensor(neg, requires_grad=True)
    y, ty = F.celu(a, alpha), TF.celu(ta, alpha)
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())  # the same forward
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(a.grad, np.exp(neg / alpha), rtol=1e-15)  # d(alpha expm1(x / alpha))
    inv32 = 1 / float(np.float32(alpha))
    np.testing.assert_array_equal(ta.grad.numpy(), inv32 * alpha * np.exp(neg * inv32))
    assert 1e-9 < np.abs(a.grad / ta.grad.numpy() - 1).max() < 1e-7


# ----------------------------------------------------------------------------- rms_norm


@pytest.mark.parametrize("dtype, tol", DTYPES)
@fewer
@given(data=st.data(), with_weight=st.booleans(), eps=st.sampled_from([None, 1e-6, 0.25]))
def test_rms_norm_matches_torch(dtype, tol, data, with_weight, eps):
    batch = data.draw(shapes(max_dims=2))
    norm = data.draw(shapes(min_dims=1, max_dims=2))
    x = data.draw(arrays(batch + norm, -10, 10) | st.just(np.zeros(batch + norm))).astype(dtype)
    w = [data.draw(arrays(norm, -2, 2)).astype(dtype)] if with_weight else []
    same_as_torch(lambda t, *w: F.rms_norm(t, list(norm), *w, eps=eps),
                  lambda t, *w: TF.rms_norm(t, list(norm), *w, eps=eps), [x] + w, tol)


def test_rms_norm_float16_matches_torch():
    """float16 is computed in float32 with float32's eps, times the weight, rounded once: torch's
    numbers exactly, and its dtype."""
    x = (np.random.default_rng(0).standard_normal((6, 8)) * [[1e-4], [1e-2], [1], [10], [100], [1e4]])
    x = x.astype(np.float16)
    w = np.random.default_rng(1).uniform(0.5, 1.5, 8).astype(np.float16)
    a = F.rms_norm(mg.tensor(x), 8, mg.tensor(w))
    b = TF.rms_norm(torch.tensor(x), [8], torch.tensor(w))
    assert str(a.dtype) == str(b.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# ----------------------------------------------------------------------------- export


class EveryNewLayer(nn.Module):
    """(B, 4) -> Linear -> PReLU -> the new activations, summed -> RMSNorm -> GLU: (B, 3)."""

    def __init__(self):
        self.lin, self.act, self.norm, self.glu = nn.Linear(4, 6), nn.PReLU(6), nn.RMSNorm(6), nn.GLU()

    def forward(self, x):
        y = self.act(self.lin(x))
        y = (F.selu(y) + F.celu(y, 0.5) + F.hardswish(y) + F.relu6(y) + F.softshrink(y)
             + F.threshold(y, 0.1, -1.0) + F.hardsigmoid(y) + F.softsign(y) + F.tanhshrink(y)
             + F.hardshrink(y) + F.rrelu(y))
        return self.glu(self.norm(y))


def test_to_torch_of_the_new_layers_computes_what_minigrad_computes():
    from minigrad.export import to_torch

    mg.manual_seed(0)
    model = EveryNewLayer().double()
    rng = np.random.default_rng(0)
    exported = to_torch(model, rng.standard_normal((3, 4)))
    for B in (3, 5):
        model.zero_grad()
        exported.zero_grad()
        a = rng.standard_normal((B, 4))
        x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, tout = model(x), exported(t)
        np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=1e-12, atol=1e-12)
        g = rng.standard_normal(out.shape)
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        np.testing.assert_allclose(t.grad.numpy(), x.grad, rtol=1e-12, atol=1e-12)
        tparams = dict(exported.named_parameters())
        for name, p in model.named_parameters():
            np.testing.assert_allclose(tparams[name].grad.numpy(), p.grad, rtol=1e-12, atol=1e-12,
                                       err_msg=name)


# ----------------------------------------------------------------------------- local_response_norm


@pytest.mark.parametrize("dtype, tol", DTYPES)
@fewer
@given(data=st.data(), size=st.integers(1, 6), alpha=st.sampled_from([1e-4, 0.5, 2.0]),
       beta=st.sampled_from([0.75, 0.5, 1.3]), k=st.sampled_from([1.0, 2.0, 0.5]))
def test_local_response_norm_matches_torch(dtype, tol, data, size, alpha, beta, k):
    """Windows wider than the channels, a single channel, 3-D to 5-D inputs."""
    batch, channels = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 7))
    shape = (batch, channels) + data.draw(shapes(min_dims=1, max_dims=3))
    x = data.draw(arrays(shape, -3, 3)).astype(dtype)
    same_as_torch(lambda t: F.local_response_norm(t, size, alpha, beta, k),
                  lambda t: TF.local_response_norm(t, size, alpha, beta, k), [x], tol)
    m, tm = nn.LocalResponseNorm(size, alpha, beta, k), torch.nn.LocalResponseNorm(size, alpha, beta, k)
    np.testing.assert_allclose(m(mg.tensor(x)).numpy(), tm(torch.tensor(x)).numpy(), rtol=tol, atol=tol)
    assert repr(m) == repr(tm)


def test_local_response_norm_gradcheck_and_errors():
    x = mg.tensor(np.random.default_rng(0).standard_normal((2, 5, 3)), requires_grad=True)
    assert mg.gradcheck(lambda t: F.local_response_norm(t, 3, alpha=0.9, beta=0.6, k=0.7), [x])
    with pytest.raises(ValueError, match=r"local_response_norm: .*3 or more dimensions.*\(2, 5\)"):
        F.local_response_norm(mg.zeros(2, 5), 2)
    with pytest.raises(ValueError, match="size must be a positive int, got 0"):
        F.local_response_norm(mg.zeros(2, 5, 3), 0)
    with pytest.raises(ValueError):  # torch's type too
        TF.local_response_norm(torch.zeros(2, 5), 2)
    assert F.local_response_norm(mg.zeros(0, 3, 2), 2).shape == (0, 3, 2)


# ----------------------------------------------------------------------------- coverage


def test_every_torch_activation_module_is_in_minigrad():
    from torch.nn.modules import activation

    assert sorted(n for n in activation.__all__ if not hasattr(nn, n)) == []
    assert hasattr(nn, "RMSNorm") and hasattr(F, "rms_norm")
    functions = ["relu6", "hardsigmoid", "hardswish", "selu", "celu", "glu", "softsign", "tanhshrink",
                 "threshold", "softshrink", "hardshrink", "rrelu", "prelu"]
    assert [f for f in functions if not hasattr(F, f) or not hasattr(TF, f)] == []
