"""F.batch_norm, nn.BatchNorm1d and nn.BatchNorm2d: gradchecks over drawn shapes, the kernel
against its composed twin (extreme scales and constant channels included), the running
statistics, the buffers in the state dict, and the errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modcheck import affine_of, draw_affine, gradcheck_module

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor, gradcheck
from minigrad.nn.batchnorm_kernel import BatchNorm, batch_norm_reference
from minigrad.testing import arrays


@st.composite
def bn_shapes(draw, min_spatial=0, max_spatial=2):
    """(N, C, *spatial) with N >= 2, C >= 1 and spatial sides from 1."""
    spatial = draw(st.lists(st.integers(1, 3), min_size=min_spatial, max_size=max_spatial))
    return (draw(st.integers(2, 3)), draw(st.integers(1, 3))) + tuple(spatial)


def spread(a: np.ndarray) -> bool:
    """Every channel far from var ~ eps, where the normalization bends too sharply for finite
    differences."""
    return bool(np.all(a.reshape(a.shape[0], a.shape[1], -1).var(axis=(0, 2)) > 1e-2))


def per_channel(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batch mean and the unbiased variance of each channel, in numpy."""
    flat = np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)
    return flat.mean(axis=1), flat.var(axis=1, ddof=1)


# ----------------------------------------------------------------------------- gradients


@given(shape=bn_shapes(), affine=st.sampled_from(["none", "weight", "bias", "both"]), data=st.data())
def test_batch_norm_training_gradcheck(shape, affine, data):
    x = data.draw(arrays(shape).filter(spread))
    C = shape[1]
    w, b = draw_affine(data, C, affine)
    inputs = [x] + [p for p in (w, b) if p is not None]

    def fn(x, *params):
        weight, bias = affine_of(w, b, params)
        return F.batch_norm(x, None, None, weight, bias, training=True)

    assert gradcheck(fn, inputs)


@given(shape=bn_shapes(), data=st.data())
def test_batch_norm_eval_gradcheck(shape, data):
    C = shape[1]
    x, w, b = data.draw(arrays(shape)), data.draw(arrays((C,), 0.5, 1.5)), data.draw(arrays((C,)))
    mean, var = Tensor(data.draw(arrays((C,)))), Tensor(data.draw(arrays((C,), 0.1, 2.0)))
    assert gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False), [x, w, b])


@settings(max_examples=10)
@given(shape=bn_shapes(max_spatial=1), train=st.booleans(), data=st.data())
def test_batchnorm1d_module_gradcheck(shape, train, data):
    layer = nn.BatchNorm1d(shape[1]).train(train)
    rng = np.random.default_rng(0)
    for p in layer.parameters():
        p.data = rng.uniform(0.5, 1.5, p.shape)
    assert gradcheck_module(layer, data.draw(arrays(shape).filter(spread)))


@settings(max_examples=10)
@given(shape=bn_shapes(2, 2), data=st.data())
def test_batchnorm2d_module_gradcheck(shape, data):
    layer = nn.BatchNorm2d(shape[1], track_running_stats=False)
    rng = np.random.default_rng(0)
    for p in layer.parameters():
        p.data = rng.uniform(0.5, 1.5, p.shape)
    assert gradcheck_module(layer, data.draw(arrays(shape).filter(spread)))


# ----------------------------------------------------------------------------- kernel vs twin


def _kernel_and_twin(a: np.ndarray, w: np.ndarray, b: np.ndarray, dtype, g: np.ndarray):
    """Outputs and (x, w, b) gradients of the kernel in dtype and of the composed twin in
    float64 (so that the twin itself does not overflow at the extremes)."""
    out = []
    for fn, dt in ((BatchNorm.apply, dtype), (batch_norm_reference, np.float64)):
        ts = [Tensor(v.astype(dt), requires_grad=True) for v in (a, w, b)]
        y = fn(*ts, eps=1e-5)
        y.backward(g.astype(dt))
        out.append([y.numpy()] + [t.grad for t in ts])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e-20, 1e-3, 1.0, 1e6, 1e20])
def test_kernel_matches_composed_twin_at_every_scale(scale, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3, 5)) * scale + 2 * scale
    w, b, g = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3), rng.standard_normal(a.shape)
    (y, dx, dw, db), (y_ref, dx_ref, dw_ref, db_ref) = _kernel_and_twin(a.astype(dtype), w, b, dtype, g)
    assert y.dtype == dtype and dx.dtype == dtype
    tol = 2e-4 if dtype == np.float32 else 1e-9
    for mine, ref in ((y, y_ref), (dw, dw_ref), (db, db_ref)):
        assert np.isfinite(mine).all()
        np.testing.assert_allclose(mine, ref, rtol=tol, atol=tol)
    # dx scales as 1 / scale: compare it relative to its own size
    np.testing.assert_allclose(dx, dx_ref, rtol=tol, atol=tol * np.abs(dx_ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_constant_channels_give_zero_not_nan(dtype):
    a = np.ones((3, 2, 4), dtype=dtype) * np.array([7.0, 1e20], dtype=dtype)[None, :, None]
    a[:, 1, 0] = 0  # channel 1 is not constant; channel 0 is
    g = np.random.default_rng(1).standard_normal(a.shape)
    (y, dx, dw, db), (y_ref, dx_ref, *_) = _kernel_and_twin(a, np.ones(2), np.zeros(2), dtype, g)
    assert np.isfinite(y).all() and np.isfinite(dx).all()
    np.testing.assert_array_equal(y[:, 0], 0.0)
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx[:, 0], dx_ref[:, 0], rtol=1e-5, atol=1e-5)


def test_batch_norm_of_a_2d_input_uses_the_batch_axis():
    a = np.arange(12.0).reshape(4, 3) ** 1.5
    out = F.batch_norm(mg.tensor(a), None, None, training=True).numpy()
    np.testing.assert_allclose(out, (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5), rtol=1e-12)


# ----------------------------------------------------------------------------- running statistics


def test_running_stats_follow_torchs_rule():
    rng = np.random.default_rng(0)
    mean, var = Tensor(np.zeros(3)), Tensor(np.ones(3))
    a = rng.standard_normal((5, 3, 4))
    F.batch_norm(mg.tensor(a), mean, var, training=True, momentum=0.25)
    batch_mean, batch_var = per_channel(a)
    np.testing.assert_allclose(mean.numpy(), 0.25 * batch_mean, rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), 0.75 + 0.25 * batch_var, rtol=1e-12)
    before = mean.numpy().copy()
    F.batch_norm(mg.tensor(a), mean, var, training=False)  # eval reads, never writes
    np.testing.assert_array_equal(mean.numpy(), before)


def test_momentum_none_is_the_cumulative_average():
    rng = np.random.default_rng(0)
    bn = nn.BatchNorm1d(2, momentum=None).double()
    batches = [rng.standard_normal((4, 2)) * (i + 1) + i for i in range(3)]
    for a in batches:
        bn(mg.tensor(a))
    stats = [per_channel(a) for a in batches]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([m for m, _ in stats], axis=0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([v for _, v in stats], axis=0), rtol=1e-12)
    assert bn.num_batches_tracked.numpy() == 3 and bn.num_batches_tracked.dtype == np.int64


def test_running_stats_stay_out_of_the_graph():
    bn = nn.BatchNorm2d(2)
    x = mg.randn(3, 2, 2, 2, requires_grad=True)
    bn(x).sum().backward()
    assert not bn.running_mean.requires_grad and bn.running_mean.grad is None
    assert bn.running_mean.dtype == np.float32 and bn.running_var.dtype == np.float32
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]


def test_eval_uses_the_running_stats_and_no_tracking_uses_the_batch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3)).astype(np.float32) * 2 + 1
    bn = nn.BatchNorm1d(3).eval()
    np.testing.assert_allclose(bn(mg.tensor(a)).numpy(), a / np.sqrt(1 + 1e-5), rtol=1e-6)
    assert bn.num_batches_tracked.numpy() == 0
    free = nn.BatchNorm1d(3, track_running_stats=False).eval()
    mean, var = a.mean(0), a.var(0)
    expected = (a - mean) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(free(mg.tensor(a)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert free.running_mean is None and free.num_batches_tracked is None


def test_eval_accepts_one_value_per_channel():
    out = nn.BatchNorm2d(2).eval()(mg.ones(1, 2, 1, 1))
    np.testing.assert_allclose(out.numpy(), 1 / np.sqrt(1 + 1e-5), rtol=1e-6)


def test_empty_batch_leaves_the_running_stats_alone():
    bn = nn.BatchNorm1d(3)
    out = bn(mg.zeros(0, 3))
    assert out.shape == (0, 3)
    np.testing.assert_array_equal(bn.running_mean.numpy(), 0.0)
    np.testing.assert_array_equal(bn.running_var.numpy(), 1.0)
    assert bn.num_batches_tracked.numpy() == 1  # counted, as torch


# ----------------------------------------------------------------------------- state


@pytest.mark.parametrize("kwargs, keys", [
    ({}, ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]),
    ({"affine": False}, ["running_mean", "running_var", "num_batches_tracked"]),
    ({"bias": False}, ["weight", "running_mean", "running_var", "num_batches_tracked"]),
    ({"track_running_stats": False}, ["weight", "bias"]),
], ids=["default", "affine-off", "no-bias", "untracked"])
def test_state_dict_keys(kwargs, keys):
    bn = nn.BatchNorm2d(4, **kwargs)
    assert list(bn.state_dict()) == keys
    assert [n for n, _ in bn.named_buffers()] == [k for k in keys if k not in ("weight", "bias")]


def test_state_dict_round_trip_and_double():
    bn = nn.BatchNorm1d(3)
    bn(mg.randn(4, 3))
    other = nn.BatchNorm1d(3)
    other.load_state_dict(bn.state_dict())
    for k, v in bn.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k], v)
    bn.double()
    assert bn.running_var.dtype == np.float64 and bn.num_batches_tracked.dtype == np.int64


def test_reset_running_stats():
    bn = nn.BatchNorm1d(2)
    bn(mg.randn(4, 2) * 3 + 1)
    bn.reset_running_stats()
    np.testing.assert_array_equal(bn.running_mean.numpy(), 0.0)
    np.testing.assert_array_equal(bn.running_var.numpy(), 1.0)
    assert bn.num_batches_tracked.numpy() == 0


# ----------------------------------------------------------------------------- errors

X = mg.zeros(2, 3, 4)
ERRORS = [
    pytest.param(lambda: nn.BatchNorm1d(3)(mg.zeros(1, 3)), ValueError,
                 r"batch_norm: Expected more than 1 value per channel when training, got an input of shape "
                 r"\(1, 3\) \(in the module BatchNorm1d\)", id="one-value"),
    pytest.param(lambda: nn.BatchNorm2d(3)(mg.zeros(1, 3, 1, 1)), ValueError,
                 "Expected more than 1 value per channel when training", id="one-value-2d"),
    pytest.param(lambda: nn.BatchNorm1d(3)(mg.zeros(2, 3, 4, 5)), ValueError,
                 r"BatchNorm1d: expected 2D or 3D input \(got 4D input of shape \(2, 3, 4, 5\)\)",
                 id="1d-rank"),
    pytest.param(lambda: nn.BatchNorm2d(3)(X), ValueError,
                 r"BatchNorm2d: expected 4D input \(got 3D input of shape \(2, 3, 4\)\)", id="2d-rank"),
    pytest.param(lambda: nn.BatchNorm1d(4)(X), ValueError,
                 r"batch_norm: the running_mean must have shape \(3,\), the number of channels, but got a "
                 r"running_mean of shape \(4,\) and an input of shape \(2, 3, 4\)", id="channels"),
    pytest.param(lambda: F.batch_norm(X, None, None, mg.ones(2), training=True), ValueError,
                 r"batch_norm: the weight must have shape \(3,\)", id="weight-shape"),
    pytest.param(lambda: F.batch_norm(X, None, None), ValueError,
                 "running_mean and running_var must be given in evaluation mode", id="eval-no-stats"),
    pytest.param(lambda: F.batch_norm(mg.zeros(3), None, None, training=True), ValueError,
                 r"at least 2 dimensions \(N, C, \*\), got shape \(3,\)", id="1-d"),
    pytest.param(lambda: F.batch_norm(mg.tensor([[1, 2], [3, 4]]), None, None, training=True), TypeError,
                 "batch_norm: the input has dtype int64", id="int"),
    pytest.param(lambda: F.batch_norm(np.zeros((2, 3)), None, None, training=True), TypeError,
                 "batch_norm: the input is a numpy array of shape", id="array"),
    pytest.param(lambda: nn.BatchNorm1d(0), ValueError, "BatchNorm1d: num_features must be a positive int",
                 id="num-features"),
]


@pytest.mark.parametrize("call, error, match", ERRORS)
def test_errors_name_the_op_and_the_shapes(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_failed_call_does_not_update_the_running_stats():
    bn = nn.BatchNorm1d(3)
    with pytest.raises(ValueError):
        bn(mg.zeros(1, 3))
    np.testing.assert_array_equal(bn.running_mean.numpy(), 0.0)
