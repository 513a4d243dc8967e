"""The activations of nn/activation.py and their modules: gradient checks (float64,
hypothesis shapes with size-1 and 0-d, broadcasting for cosine_similarity), edge numerics
(huge inputs, tails, zero vectors), and differential tests against PyTorch (values, dtypes,
gradients; ties and kinks included)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch_compare import same_as_torch

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.testing import arrays, distinct, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")
TF = torch.nn.functional

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))
DTYPES = [(np.float64, 1e-10), (np.float32, 2e-5)]


# (minigrad function, torch function, options, kinks to keep finite differences away from)
POINTWISE = [
    pytest.param(F.softplus, TF.softplus, {}, (), id="softplus"),
    pytest.param(F.softplus, TF.softplus, {"beta": 2.0, "threshold": 3.0}, (1.5,), id="softplus-beta"),
    pytest.param(F.softplus, TF.softplus, {"beta": -1.0}, (), id="softplus-negative-beta"),
    pytest.param(F.logsigmoid, TF.logsigmoid, {}, (), id="logsigmoid"),
    pytest.param(F.elu, TF.elu, {}, (0.0,), id="elu"),
    pytest.param(F.elu, TF.elu, {"alpha": 0.5}, (0.0,), id="elu-alpha"),
    pytest.param(F.leaky_relu, TF.leaky_relu, {}, (0.0,), id="leaky_relu"),
    pytest.param(F.leaky_relu, TF.leaky_relu, {"negative_slope": 0.2}, (0.0,), id="leaky_relu-slope"),
    pytest.param(F.silu, TF.silu, {}, (), id="silu"),
    pytest.param(F.mish, TF.mish, {}, (), id="mish"),
    pytest.param(F.hardtanh, TF.hardtanh, {}, (-1.0, 1.0), id="hardtanh"),
    pytest.param(F.hardtanh, TF.hardtanh, {"min_val": -0.5, "max_val": 2.0}, (-0.5, 2.0),
                 id="hardtanh-bounds"),
]


@pytest.mark.parametrize("mine, theirs, options, kinks", POINTWISE)
@fewer
@given(data=st.data())
def test_pointwise_activations_gradcheck(mine, theirs, options, kinks, data):
    x = data.draw(arrays(shapes(), -5, 5).filter(lambda a: all(np.all(np.abs(a - k) > 1e-3) for k in kinks)))
    assert mg.gradcheck(lambda t: mine(t, **options), [mg.tensor(x, requires_grad=True)])


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("mine, theirs, options, kinks", POINTWISE)
@fewer
@given(data=st.data())
def test_pointwise_activations_match_torch(mine, theirs, options, kinks, dtype, tol, data):
    """On drawn values, and on a grid holding the kinks themselves (0, the bounds), where the
    one-sided gradient rules must be torch's, and large values (the threshold, overflow)."""
    shape = data.draw(shapes())
    grid = [0.0, -1.0, 1.0, -0.5, 2.0, 1.5, 20.0, -20.0, 50.0, -50.0, 1e-9, -1e-9]
    x = data.draw(arrays(shape, -30, 30) | hnp.arrays(np.float64, shape, elements=st.sampled_from(grid)))
    same_as_torch(lambda t: mine(t, **options), lambda t: theirs(t, **options), [x.astype(dtype)], tol)


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@fewer
@given(data=st.data())
def test_softmin_matches_torch_and_gradcheck(dtype, tol, data):
    shape = data.draw(shapes(min_dims=1))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(arrays(shape))
    same_as_torch(lambda t: F.softmin(t, dim), lambda t: TF.softmin(t, dim), [x.astype(dtype)], tol)
    assert mg.gradcheck(lambda t: F.softmin(t, dim), [mg.tensor(x, requires_grad=True)])


# ----------------------------------------------------------------------------- normalize, cosine


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")], ids=["p1", "p2", "p3", "pinf"])
@fewer
@given(data=st.data())
def test_normalize_gradcheck(p, data):
    shape = data.draw(shapes(min_dims=1))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    # Away from |x| = 0 (the kink of p = 1 and 3) and from ties (the max of p = inf).
    x = data.draw(distinct(shape, gap=1e-2).filter(lambda a: np.all(np.abs(a) > 1e-2)
                                                   and len(set(np.abs(a).ravel().round(2))) == a.size))
    assert mg.gradcheck(lambda t: F.normalize(t, p=p, dim=dim), [mg.tensor(x, requires_grad=True)])


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, 3.0, float("inf")],
                         ids=["p0", "p.5", "p1", "p2", "p3", "pinf"])
@fewer
@given(data=st.data())
def test_normalize_matches_torch(p, dtype, tol, data):
    shape = data.draw(shapes(min_dims=1))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    # Zero vectors (clamped by eps), and 0 / 1 grids (ties for p = inf)
    x = data.draw(arrays(shape) | st.just(np.zeros(shape))
                  | hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 1.0, -1.0])))
    # Small entries become 0: |x|**p underflows below 1e-100 (torch's gradient is then NaN), and
    # a float32 gradient of a vector of norm n holds rounding noise of about eps32 / n.
    x[np.abs(x) < 0.1] = 0
    same_as_torch(lambda t: F.normalize(t, p=p, dim=dim), lambda t: TF.normalize(t, p=p, dim=dim),
                  [x.astype(dtype)], tol)


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@fewer
@given(data=st.data())
def test_cosine_similarity_broadcasts_and_matches_torch(dtype, tol, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3,
                                                         max_side=3)).input_shapes
    ndim = max(len(s1), len(s2))
    dim = data.draw(st.integers(-ndim, ndim - 1))
    x1 = data.draw(arrays(s1, away_from_zero=0.1))
    x2 = data.draw(arrays(s2, away_from_zero=0.1) | st.just(np.zeros(s2)))
    same_as_torch(lambda a, b: F.cosine_similarity(a, b, dim=dim),
                  lambda a, b: TF.cosine_similarity(a, b, dim=dim), [x1.astype(dtype), x2.astype(dtype)], tol)
    if (x2 != 0).any():
        assert mg.gradcheck(lambda a, b: F.cosine_similarity(a, b, dim=dim),
                            [mg.tensor(x1, requires_grad=True), mg.tensor(x2, requires_grad=True)])


def test_normalize_with_negative_p_and_minus_infinity_as_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    x = np.array([[1.0, 0.5, -2.0], [0.0, 0.25, 3.0]])
    for p in (-1.0, -2.0, float("-inf")):  # the zero in row 1 makes its norm 0, clamped at eps
        np.testing.assert_allclose(F.normalize(mg.tensor(x), p=p, dim=1).numpy(),
                                   TF.normalize(torch.tensor(x), p=p, dim=1).numpy(), rtol=1e-12)


def test_normalize_and_cosine_of_zero_vectors_are_zero_with_finite_gradients():
    z = mg.tensor(np.zeros((2, 3)), requires_grad=True)
    y = F.normalize(z)
    y.backward(mg.tensor(np.ones((2, 3))))
    assert (y.numpy() == 0).all() and np.isfinite(z.grad).all()
    a, b = mg.tensor(np.zeros((2, 3)), requires_grad=True), mg.tensor(np.ones((2, 3)), requires_grad=True)
    c = F.cosine_similarity(a, b)
    c.sum().backward()
    assert (c.numpy() == 0).all() and np.isfinite(a.grad).all() and np.isfinite(b.grad).all()


# ----------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softplus_and_logsigmoid_are_exact_at_huge_inputs_and_in_the_tails(dtype):
    x = np.array([1e4, -1e4, 20.0, -20.0, 100.0, -100.0], dtype=dtype)
    a = mg.tensor(x, requires_grad=True)
    ls = F.logsigmoid(a)
    ls.backward(mg.tensor(np.ones(6, dtype=dtype)))
    assert ls.dtype == dtype and np.isfinite(ls.numpy()).all() and np.isfinite(a.grad).all()
    exact = -np.logaddexp(0, -x.astype(np.float64))  # log sigmoid(x) = -log(1 + exp(-x))
    np.testing.assert_allclose(ls.numpy(), exact, rtol=1e-6, atol=1e-43)  # float32's subnormals at -100
    assert ls.numpy()[1] == -1e4 and ls.numpy()[0] == 0
    np.testing.assert_allclose(a.grad, np.exp(-np.logaddexp(0, x.astype(np.float64))), rtol=1e-6, atol=1e-43)
    sp = F.softplus(mg.tensor(x))
    np.testing.assert_allclose(sp.numpy(), np.logaddexp(0, x.astype(np.float64)), rtol=1e-6, atol=1e-43)
    assert sp.numpy()[3] > 2e-9  # softplus(-20) = 2.06e-9: log1p keeps it (log(1 + e) rounds to 0)


def test_elu_keeps_small_negative_inputs_and_large_ones_finite():
    x = mg.tensor(np.array([-1e-10, 1e4, -1e4], dtype=np.float32), requires_grad=True)
    y = F.elu(x)
    y.backward(mg.tensor(np.ones(3, dtype=np.float32)))
    np.testing.assert_allclose(y.numpy(), [-1e-10, 1e4, -1.0], rtol=1e-6)
    np.testing.assert_allclose(x.grad, [1.0, 1.0, 0.0], rtol=1e-6)


@pytest.mark.parametrize("fn", [F.mish, F.silu, F.softplus, F.logsigmoid, F.elu])
def test_no_nan_in_gradients_at_huge_inputs(fn):
    x = mg.tensor(np.array([3e38, -3e38, 1e4, -1e4], dtype=np.float32), requires_grad=True)
    fn(x).backward(mg.tensor(np.ones(4, dtype=np.float32)))
    assert not np.isnan(x.grad).any()


# ----------------------------------------------------------------------------- one_hot


@given(ids=hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(0, 4)),
       extra=st.sampled_from([-1, 0, 2]))
def test_one_hot_matches_torch(ids, extra):
    C = -1 if extra == -1 else int(ids.max()) + 1 + extra
    mine = F.one_hot(mg.tensor(ids), C)
    theirs = TF.one_hot(torch.tensor(ids), C)
    assert mine.dtype == np.int64 and mine.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.one_hot(mg.tensor(np.array([0, 3])), 3), ValueError, "num_classes=3"),
    (lambda: F.one_hot(mg.tensor(np.array([-1, 0])), 3), ValueError, "non-negative"),
    (lambda: F.one_hot(mg.tensor([0.0, 1.0])), TypeError, "must be integers"),
    (lambda: F.one_hot(mg.tensor(np.zeros(0, dtype=np.int64))), ValueError, "empty"),
    (lambda: F.softplus(mg.zeros(2), beta=0), ValueError, "beta must be nonzero"),
    (lambda: F.hardtanh(mg.zeros(2), 1.0, -1.0), ValueError, "min_val"),
    (lambda: F.cosine_similarity(mg.zeros(2, 3), mg.zeros(2, 4)), ValueError, r"\(2, 3\).*\(2, 4\)"),
    (lambda: F.silu(np.zeros(2)), TypeError, "silu: the input is a numpy array"),
    (lambda: F.elu(mg.tensor(np.zeros(2, dtype=np.int64))), TypeError, "elu: the input has dtype int64"),
    (lambda: nn.Hardtanh(2.0, 1.0), ValueError, "Hardtanh: min_val"),
])
def test_activations_name_their_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- modules


MODULES = [  # (minigrad module, its torch twin)
    pytest.param(lambda: nn.LeakyReLU(0.1), lambda: torch.nn.LeakyReLU(0.1), id="LeakyReLU"),
    pytest.param(lambda: nn.ELU(0.7), lambda: torch.nn.ELU(0.7), id="ELU"),
    pytest.param(nn.SiLU, torch.nn.SiLU, id="SiLU"),
    pytest.param(lambda: nn.Softplus(2.0, 1.0), lambda: torch.nn.Softplus(2.0, 1.0), id="Softplus"),
    pytest.param(nn.Mish, torch.nn.Mish, id="Mish"),
    pytest.param(lambda: nn.Hardtanh(-0.5, 0.5), lambda: torch.nn.Hardtanh(-0.5, 0.5), id="Hardtanh"),
    pytest.param(nn.LogSigmoid, torch.nn.LogSigmoid, id="LogSigmoid"),
    pytest.param(lambda: nn.Softmin(dim=1), lambda: torch.nn.Softmin(dim=1), id="Softmin"),
    pytest.param(lambda: nn.LogSoftmax(dim=1), lambda: torch.nn.LogSoftmax(dim=1), id="LogSoftmax"),
    pytest.param(lambda: nn.LogSoftmax(), lambda: torch.nn.LogSoftmax(dim=-1), id="LogSoftmax-last"),
]


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("mine, theirs", MODULES)
def test_activation_modules_match_torch(mine, theirs, dtype, tol):
    x = (np.random.default_rng(0).standard_normal((2, 3, 4)) * 3).astype(dtype)
    x[0, 0, :2] = [0.0, 0.5]  # kinks of leaky_relu, elu, hardtanh
    m = mine()
    same_as_torch(lambda t: m(t), lambda t: theirs()(t), [x], tol)
    assert type(m).__name__ in repr(m)


@pytest.mark.parametrize("mine, theirs", MODULES)
def test_activation_modules_gradcheck(mine, theirs):
    x = np.random.default_rng(1).uniform(0.6, 2.0, (2, 3)) * np.array([1, -1, 1])  # away from kinks
    assert mg.gradcheck(lambda t: mine()(t), [mg.tensor(x, requires_grad=True)])


# ----------------------------------------------------------------------------- Flatten, Unflatten, ModuleDict


@pytest.mark.parametrize("mine, theirs", [
    pytest.param(nn.Flatten, torch.nn.Flatten, id="Flatten"),
    pytest.param(lambda: nn.Flatten(0, 1), lambda: torch.nn.Flatten(0, 1), id="Flatten-0-1"),
    pytest.param(lambda: nn.Flatten(-2), lambda: torch.nn.Flatten(-2), id="Flatten-neg"),
    pytest.param(lambda: nn.Unflatten(1, (3, 1)), lambda: torch.nn.Unflatten(1, (3, 1)), id="Unflatten"),
    pytest.param(lambda: nn.Unflatten(-1, (2, -1)), lambda: torch.nn.Unflatten(-1, (2, -1)),
                 id="Unflatten-infer"),
])
def test_shape_modules_match_torch(mine, theirs):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    same_as_torch(lambda t: mine()(t), lambda t: theirs()(t), [x], 0)
    assert mg.gradcheck(lambda t: mine()(t), [mg.tensor(x, requires_grad=True)])


def test_unflatten_names_a_size_that_does_not_fit():
    with pytest.raises(ValueError, match=r"Unflatten: cannot split axis 1 of .* \(2, 6\) into \(4, -1\)"):
        nn.Unflatten(1, (4, -1))(mg.zeros(2, 6))
    with pytest.raises(ValueError, match="at most one -1"):
        nn.Unflatten(1, (-1, -1))(mg.zeros(2, 6))


def test_module_dict_names_its_children_as_torch():
    d = nn.ModuleDict({"enc": nn.Linear(3, 4), "dec": nn.Linear(4, 2)})
    d["act"] = nn.ReLU()
    assert list(d) == ["enc", "dec", "act"] and len(d) == 3 and "enc" in d and "x" not in d
    assert [k for k, _ in d.items()] == list(d.keys()) and d["dec"] is list(d.values())[1]
    theirs = torch.nn.ModuleDict({"enc": torch.nn.Linear(3, 4), "dec": torch.nn.Linear(4, 2),
                                  "act": torch.nn.ReLU()})
    assert list(d.state_dict()) == list(theirs.state_dict())
    d.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    out = d["dec"](d["act"](d["enc"](mg.tensor(x))))
    expected = theirs["dec"](theirs["act"](theirs["enc"](torch.tensor(x)))).detach()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    assert d.num_parameters() == 4 * 3 + 4 + 2 * 4 + 2 and "(enc): Linear" in repr(d)
    outer = nn.ModuleDict([("inner", nn.ModuleDict({"fc": nn.Linear(2, 2)}))])
    assert [n for n, _ in outer.named_parameters()] == ["inner.fc.weight", "inner.fc.bias"]
    d.pop("act")
    del d["dec"]
    assert list(d) == ["enc"]
    d.clear()
    assert len(d) == 0 and list(d.parameters()) == []


def test_module_dict_refuses_bad_keys_and_values():
    d = nn.ModuleDict()
    with pytest.raises(KeyError, match="without '.'"):
        d["a.b"] = nn.ReLU()
    with pytest.raises(TypeError, match="'a' must be a Module, not a int"):
        d["a"] = 3
    with pytest.raises(KeyError, match=r"ModuleDict has no module 'b'; it has \[\]"):
        d["b"]
