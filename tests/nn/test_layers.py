"""The layers of minigrad.nn (gradchecked whole, in float64) and minigrad.nn.init."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
from minigrad import Tensor, gradcheck
from minigrad.nn import init
from minigrad.testing import arrays, shapes


def module_gradcheck(layer: nn.Module, *inputs: np.ndarray) -> bool:
    """gradcheck of layer(*inputs) with respect to the inputs and every parameter.

    gradcheck perturbs its own float64 copies, so each parameter is swapped for its copy
    while the layer runs, and put back afterwards.
    """
    layer.double()
    names = [n for n, _ in layer.named_parameters()]
    params = [getattr(layer, n) for n in names]

    def fn(*args: Tensor) -> Tensor:
        for n, p in zip(names, args[len(inputs):]):
            setattr(layer, n, p)
        return layer(*args[: len(inputs)])

    try:
        return gradcheck(fn, [*inputs, *params])
    finally:
        for n, p in zip(names, params):
            setattr(layer, n, p)


def randomize(layer: nn.Module, seed: int = 0) -> nn.Module:
    """Move parameters off their initial values (LayerNorm starts at ones and zeros)."""
    rng = np.random.default_rng(seed)
    for p in layer.parameters():
        p.data = rng.uniform(0.5, 1.5, p.shape)
    return layer


# ----------------------------------------------------------------------------- gradchecks

FEATURES = st.integers(1, 3)


@given(lead=shapes(0, 2), n_in=FEATURES, n_out=FEATURES, bias=st.booleans(), data=st.data())
def test_linear_gradcheck(lead, n_in, n_out, bias, data):
    layer = nn.Linear(n_in, n_out, bias=bias)
    x = data.draw(arrays(lead + (n_in,)))
    assert module_gradcheck(layer, x)
    assert layer.weight.shape == (n_out, n_in) and layer(Tensor(x)).shape == lead + (n_out,)


@given(lead=shapes(0, 2), norm=shapes(1, 2), affine=st.sampled_from(["none", "weight", "both"]),
       data=st.data())
def test_layer_norm_gradcheck(lead, norm, affine, data):
    layer = randomize(nn.LayerNorm(norm, elementwise_affine=affine != "none", bias=affine == "both"))
    x = data.draw(arrays(lead + norm).filter(lambda a: spread_or_constant(a, len(norm))))
    assert module_gradcheck(layer, x)


def spread_or_constant(a: np.ndarray, ndim: int) -> bool:
    """Rows far from var ~ eps, where the normalization bends too sharply for finite differences."""
    var = a.var(axis=tuple(range(a.ndim - ndim, a.ndim)))
    return bool(np.all((var > 1e-2) | (var == 0)))


@given(idx=shapes(0, 2), data=st.data())
def test_embedding_gradcheck(idx, data):
    layer = nn.Embedding(4, 3)
    ids = np.asarray(data.draw(st.lists(st.integers(0, 3), min_size=math.prod(idx),
                                        max_size=math.prod(idx)))).reshape(idx).astype(np.int64)
    assert module_gradcheck(layer, ids)


ACTIVATIONS = [
    pytest.param(nn.ReLU(), dict(away_from_zero=1e-3), id="relu"),
    pytest.param(nn.GELU(), {}, id="gelu"),
    pytest.param(nn.GELU(approximate="tanh"), {}, id="gelu-tanh"),
    pytest.param(nn.Tanh(), {}, id="tanh"),
    pytest.param(nn.Sigmoid(), {}, id="sigmoid"),
    pytest.param(nn.Softmax(dim=0), {}, id="softmax"),
    pytest.param(nn.Identity(), {}, id="identity"),
]


@pytest.mark.parametrize("layer, domain", ACTIVATIONS)
@given(data=st.data())
def test_activation_gradcheck(layer, domain, data):
    x = data.draw(arrays(shapes(min_dims=1), **domain))
    assert module_gradcheck(layer, x)
    assert layer(Tensor(x)).shape == x.shape


def test_dropout_gradcheck_in_training():
    layer = nn.Dropout(0.3)
    x = np.random.default_rng(0).standard_normal((3, 4))
    assert gradcheck(lambda a: (mg.manual_seed(5), layer(a))[1], [x])


def test_mlp_gradcheck_through_every_parameter():
    mg.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.LayerNorm(4), nn.Linear(4, 2)).double()
    x = Tensor(np.random.default_rng(1).standard_normal((2, 3)))
    g = np.random.default_rng(2).standard_normal((2, 2))
    mlp(x).backward(g)
    for name, p in mlp.named_parameters():  # central differences, one element of each
        idx = (0,) * p.ndim
        orig = p.numpy()[idx]
        p.numpy()[idx] = orig + 1e-6
        up = (mlp(x).numpy() * g).sum()
        p.numpy()[idx] = orig - 1e-6
        down = (mlp(x).numpy() * g).sum()
        p.numpy()[idx] = orig
        assert p.grad[idx] == pytest.approx((up - down) / 2e-6, rel=1e-5, abs=1e-8), name


# ----------------------------------------------------------------------------- layer behaviour


def test_linear_init_is_pytorchs():
    mg.manual_seed(0)
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (layer.weight, layer.bias):
        assert p.dtype == np.float32 and p.requires_grad
        assert np.abs(p.numpy()).max() <= bound
    assert layer.weight.numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.01)
    assert np.abs(layer.bias.numpy()).max() > 0.9 * bound
    assert nn.Linear(3, 2, bias=False).bias is None
    assert nn.Linear(0, 2).weight.shape == (2, 0)


def test_embedding_init_and_padding():
    mg.manual_seed(0)
    layer = nn.Embedding(500, 64, padding_idx=-1)
    assert layer.padding_idx == 499
    assert np.all(layer.weight.numpy()[499] == 0)
    w = layer.weight.numpy()[:499]
    assert abs(w.mean()) < 0.01 and w.std() == pytest.approx(1.0, rel=0.01)


def test_embedding_padding_gets_no_gradient_and_repeats_accumulate():
    layer = nn.Embedding(5, 2, padding_idx=0)
    idx = mg.tensor([[0, 2, 2], [2, 4, 0]], dtype=mg.int64)
    out = layer(idx)
    assert out.shape == (2, 3, 2)
    np.testing.assert_array_equal(out.numpy()[0, 0], 0)
    g = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    out.backward(g)
    np.testing.assert_array_equal(layer.weight.grad[2], g[0, 1] + g[0, 2] + g[1, 0])
    np.testing.assert_array_equal(layer.weight.grad[4], g[1, 1])
    np.testing.assert_array_equal(layer.weight.grad[[0, 1, 3]], 0)


def test_embedding_errors():
    message = r"id 9 is out of range for an embedding of 5 rows.*largest given is 9"
    with pytest.raises(IndexError, match=message):
        nn.Embedding(5, 2)(np.array([[1, 9]]))
    with pytest.raises(ValueError, match="padding_idx 5 is out of range for 5"):
        nn.Embedding(5, 2, padding_idx=5)


def test_layer_norm_init_and_options():
    layer = nn.LayerNorm((2, 3))
    np.testing.assert_array_equal(layer.weight.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros((2, 3)))
    assert layer.eps == 1e-5 and layer.normalized_shape == (2, 3)
    assert nn.LayerNorm(3, bias=False).bias is None
    plain = nn.LayerNorm(3, elementwise_affine=False)
    assert plain.weight is None and plain.num_parameters() == 0
    y = plain(Tensor(np.array([[1.0, 2.0, 3.0]]))).numpy()
    np.testing.assert_allclose(y, [[-1.2247357, 0.0, 1.2247357]], rtol=1e-6)


def test_dropout_train_and_eval():
    layer = nn.Dropout(0.3)
    x = Tensor(np.random.default_rng(0).uniform(1, 2, (200, 500)).astype(np.float32), requires_grad=True)
    y = layer(x)
    mask = y.numpy() != 0
    np.testing.assert_allclose(y.numpy(), x.numpy() * mask / np.float32(0.7), rtol=1e-6)  # inverted scaling
    assert mask.mean() == pytest.approx(0.7, abs=0.01)
    ones = layer(Tensor(np.ones((200, 500), dtype=np.float32)))
    assert ones.numpy().mean() == pytest.approx(1.0, abs=0.01)  # the mean is preserved
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    y.backward(g)
    np.testing.assert_allclose(x.grad, g * mask / np.float32(0.7), rtol=1e-6)
    layer.eval()
    assert layer(x) is x
    layer.train()
    assert not np.array_equal(layer(x).numpy(), x.numpy())


def test_dropout_rejects_bad_p():
    for p in (-0.1, 1.0):
        with pytest.raises(ValueError, match=r"Dropout: p must lie in \[0, 1\)"):
            nn.Dropout(p)
    with pytest.raises(ValueError, match="GELU: approximate"):
        nn.GELU("fast")


REPRS = [
    pytest.param(nn.Linear(3, 4), "Linear(in_features=3, out_features=4, bias=True)", id="linear"),
    pytest.param(nn.Linear(3, 4, bias=False), "Linear(in_features=3, out_features=4, bias=False)",
                 id="linear-nobias"),
    pytest.param(nn.Embedding(10, 4, padding_idx=0), "Embedding(10, 4, padding_idx=0)", id="embedding"),
    pytest.param(nn.LayerNorm(8), "LayerNorm((8,), eps=1e-05, elementwise_affine=True)", id="layernorm"),
    pytest.param(nn.Dropout(0.1), "Dropout(p=0.1)", id="dropout"),
    pytest.param(nn.GELU("tanh"), "GELU(approximate='tanh')", id="gelu"),
    pytest.param(nn.Softmax(1), "Softmax(dim=1)", id="softmax"),
    pytest.param(nn.ReLU(), "ReLU()", id="relu"),
    pytest.param(nn.Identity(7, x=1), "Identity()", id="identity"),
]


@pytest.mark.parametrize("layer, text", REPRS)
def test_repr(layer, text):
    assert repr(layer) == text


@pytest.mark.parametrize("cls", [nn.Linear, nn.Embedding, nn.LayerNorm, nn.Dropout, nn.ReLU, nn.GELU,
                                 nn.Tanh, nn.Sigmoid, nn.Softmax, nn.Identity])
def test_every_layer_documents_its_shapes(cls):
    assert "Shape:" in cls.__doc__ and "Input:" in cls.__doc__ and "Output:" in cls.__doc__


# ----------------------------------------------------------------------------- init


def test_fans_follow_pytorch():
    assert init._calculate_fan_in_and_fan_out(Tensor(np.zeros((5, 3)))) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(Tensor(np.zeros((5, 3, 2, 2)))) == (12, 20)
    with pytest.raises(ValueError, match=r"at least 2 dimensions, not shape \(4,\)"):
        init.xavier_uniform_(Tensor(np.zeros(4)))
    with pytest.raises(ValueError, match="mode must be"):
        init.kaiming_uniform_(Tensor(np.zeros((2, 2))), mode="fan_avg")


GAINS = [
    pytest.param("linear", None, 1.0, id="linear"),
    pytest.param("sigmoid", None, 1.0, id="sigmoid"),
    pytest.param("tanh", None, 5 / 3, id="tanh"),
    pytest.param("relu", None, math.sqrt(2), id="relu"),
    pytest.param("leaky_relu", None, math.sqrt(2 / (1 + 0.01**2)), id="leaky-default"),
    pytest.param("leaky_relu", math.sqrt(5), math.sqrt(1 / 3), id="leaky-sqrt5"),
    pytest.param("selu", None, 0.75, id="selu"),
]


@pytest.mark.parametrize("name, param, gain", GAINS)
def test_calculate_gain(name, param, gain):
    assert init.calculate_gain(name, param) == pytest.approx(gain, rel=1e-12)


def test_calculate_gain_rejects_unknown():
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")


SHAPE = (200, 300)  # fan_in 300, fan_out 200
INITS = [  # (function, kwargs, expected std, bound or None)
    pytest.param(init.uniform_, dict(a=-2.0, b=4.0), 6 / math.sqrt(12), (-2, 4), id="uniform"),
    pytest.param(init.normal_, dict(mean=0.0, std=3.0), 3.0, None, id="normal"),
    pytest.param(init.xavier_uniform_, dict(gain=2.0), 2 * math.sqrt(2 / 500), 2 * math.sqrt(6 / 500),
                 id="xavier-uniform"),
    pytest.param(init.xavier_normal_, {}, math.sqrt(2 / 500), None, id="xavier-normal"),
    pytest.param(init.kaiming_uniform_, dict(nonlinearity="relu"), math.sqrt(2 / 300),
                 math.sqrt(6 / 300), id="kaiming-uniform"),
    pytest.param(init.kaiming_uniform_, dict(mode="fan_out", nonlinearity="relu"), math.sqrt(2 / 200),
                 math.sqrt(6 / 200), id="kaiming-uniform-fan-out"),
    pytest.param(init.kaiming_normal_, dict(nonlinearity="relu"), math.sqrt(2 / 300), None,
                 id="kaiming-normal"),
]


@pytest.mark.parametrize("fn, kwargs, std, bound", INITS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_init_statistics_in_place(fn, kwargs, std, bound, dtype):
    mg.manual_seed(0)
    t = Tensor(np.zeros(SHAPE, dtype=dtype), requires_grad=True)
    array = t.numpy()
    assert fn(t, **kwargs) is t
    assert t.numpy() is array and t.dtype == dtype  # in place, dtype kept
    assert t.numpy().std() == pytest.approx(std, rel=0.02)
    if bound is not None:
        lo, hi = bound if isinstance(bound, tuple) else (-bound, bound)
        assert lo <= t.numpy().min() and t.numpy().max() <= hi
        assert t.numpy().max() > hi - 0.01 * (hi - lo)


def test_init_repeats_under_manual_seed():
    a, b = Tensor(np.zeros((3, 4))), Tensor(np.zeros((3, 4)))
    mg.manual_seed(42)
    init.xavier_normal_(a)
    mg.manual_seed(42)
    init.xavier_normal_(b)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    init.zeros_(a)
    init.ones_(b)
    assert np.all(a.numpy() == 0) and np.all(b.numpy() == 1)
    init.constant_(a, 0.5)
    assert np.all(a.numpy() == 0.5)
