"""binary_cross_entropy of a sigmoid's output at confident logits, against PyTorch: the loss and
the gradient to the logits are PyTorch's over a sweep of logits (float32 and float64, targets 0,
1 and in between, every reduction, with and without weight), and never huge. Before, float32
x = 17, y = 0 gave a gradient of 41399 (PyTorch: 0) and x = 15 was 15% off."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]
REDUCTIONS = ["none", "mean", "sum"]
# Dense around the points where float32's sigmoid rounds to 1 (x near 16.6) and where
# p (1 - p) falls below PyTorch's 1e-12 (|x| near 27.6 and, in float64, 36). Not below -85:
# there PyTorch's float32 sigmoid underflows to 0 (so -log p is clamped to 100) where
# minigrad's keeps the tail (sigmoid(-90) = 8e-40, -log p = 90; see test_sigmoid_tail_...).
LOGITS = np.concatenate([np.linspace(-85, 120, 411), np.linspace(14, 19, 201), np.linspace(-30, -25, 101),
                         np.linspace(34, 38, 81)])


def _both(z, y, reduction="mean", weight=None, module=False):
    """(loss, d loss / d z) of minigrad and of PyTorch for BCE(sigmoid(z), y), and both sigmoids."""
    g = np.random.default_rng(0).standard_normal(z.shape).astype(z.dtype) if reduction == "none" else None
    mz = mg.tensor(z, requires_grad=True)
    mw = None if weight is None else mg.tensor(weight)
    mp = mg.sigmoid(mz)
    if module:
        ml = nn.BCELoss(mw, reduction=reduction)(mp, mg.tensor(y))
    else:
        ml = F.binary_cross_entropy(mp, mg.tensor(y), mw, reduction=reduction)
    ml.backward(g)
    tz = torch.tensor(z, requires_grad=True)
    tw = None if weight is None else torch.tensor(weight)
    tp = torch.sigmoid(tz)
    tl = TF.binary_cross_entropy(tp, torch.tensor(y), tw, reduction=reduction)
    tl.backward(None if g is None else torch.tensor(g))
    return (ml.numpy(), mz.grad), (tl.detach().numpy(), tz.grad.numpy()), (mp.numpy(), tp.detach().numpy())


def _assert_as_torch(mine, theirs, sigmoids, dtype, elementwise=True):
    """Values and gradients close to PyTorch's. Where the two sigmoids round p differently (an
    ulp, which can move p across 1 - p = 0 in float32), the gradient only has to stay bounded."""
    rtol = 2e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(mine[0], theirs[0], rtol=rtol, atol=1e-30)
    same = sigmoids[0] == sigmoids[1] if elementwise else np.ones(mine[1].shape, bool)
    np.testing.assert_allclose(mine[1][same], theirs[1][same], rtol=rtol, atol=10 * np.finfo(dtype).eps)
    assert np.all(np.isfinite(mine[1]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("y", [0.0, 1.0, 0.3])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_of_sigmoid_matches_torch_over_a_sweep_of_logits(dtype, y, reduction):
    z = LOGITS.astype(dtype)
    mine, theirs, sig = _both(z, np.full_like(z, y), reduction)
    _assert_as_torch(mine, theirs, sig, dtype, elementwise=True)
    # A confident prediction never gives a huge gradient: |dz| <= |p - y| per element (times
    # the upstream gradient and the mean's 1/n).
    scale = 1.0 if reduction == "sum" else 1.0 / z.size if reduction == "mean" else None
    if scale is not None:
        assert np.all(np.abs(mine[1]) <= np.abs(sig[0] - y) * scale * (1 + 1e-5) + 1e-30)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("module", [False, True], ids=["F", "BCELoss"])
def test_bce_of_sigmoid_with_weight_matches_torch(dtype, reduction, module):
    rng = np.random.default_rng(1)
    z = LOGITS.astype(dtype).reshape(-1, 2)
    y = rng.integers(0, 2, z.shape).astype(dtype)
    weight = rng.uniform(0.1, 3.0, (2,)).astype(dtype)  # broadcasts along the rows
    mine, theirs, sig = _both(z, y, reduction, weight, module)
    _assert_as_torch(mine, theirs, sig, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_reported_confident_logits(dtype):
    """float32 x = 17, y = 0: p rounds to 1, the loss is clamped at 100 and PyTorch's gradient
    is 0 (minigrad gave 41399); x = 15 gives p - y (minigrad was 15% off)."""
    z = np.array([15.0, 17.0, -17.0, 40.0], dtype)
    y = np.array([0.0, 0.0, 1.0, 0.0], dtype)
    mine, theirs, sig = _both(z, y, "sum")
    _assert_as_torch(mine, theirs, sig, dtype)
    assert np.all(np.abs(mine[1]) <= 1.0)
    assert mine[1][0] == pytest.approx(1.0, rel=1e-6)  # p - y, p = 0.9999997
    if dtype == np.float32:
        grad_at_17 = mg.tensor(z[1:2], requires_grad=True)
        loss = F.binary_cross_entropy(mg.sigmoid(grad_at_17), mg.tensor(y[1:2]))
        loss.backward()
        assert loss.item() == 100.0 and grad_at_17.grad[0] == 0.0


def test_target_gradient_and_plain_probabilities_stay_torch():
    """A target that requires grad gets PyTorch's dy; probabilities that are not a sigmoid's
    output (a leaf) keep PyTorch's dp = (p - y) / max(p (1 - p), 1e-12)."""
    z = np.array([-3.0, 0.5, 17.0, 30.0])
    y = np.array([0.2, 0.9, 0.0, 1.0])
    mz, my = mg.tensor(z, requires_grad=True), mg.tensor(y, requires_grad=True)
    F.binary_cross_entropy(mg.sigmoid(mz), my).backward()
    tz, ty = torch.tensor(z, requires_grad=True), torch.tensor(y, requires_grad=True)
    TF.binary_cross_entropy(torch.sigmoid(tz), ty).backward()
    np.testing.assert_allclose(mz.grad, tz.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(my.grad, ty.grad.numpy(), rtol=1e-12)
    p = np.array([0.0, 1e-13, 0.5, 1 - 1e-13, 1.0])
    t = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    mp, tp = mg.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    F.binary_cross_entropy(mp, mg.tensor(t), reduction="sum").backward()
    TF.binary_cross_entropy(tp, torch.tensor(t), reduction="sum").backward()
    np.testing.assert_allclose(mp.grad, tp.grad.numpy(), rtol=1e-12)


def test_a_watched_sigmoid_output_gets_its_own_gradient():
    """When p's own gradient is asked for (retain_grad), the loss goes through p: p.grad is
    PyTorch's dp, and the logits get the chain through the sigmoid."""
    z = np.array([-2.0, 0.0, 3.0])
    y = np.array([0.0, 1.0, 1.0])
    mz = mg.tensor(z, requires_grad=True)
    mp = mg.sigmoid(mz)
    mp.retain_grad()
    F.binary_cross_entropy(mp, mg.tensor(y)).backward()
    tz = torch.tensor(z, requires_grad=True)
    tp = torch.sigmoid(tz)
    tp.retain_grad()
    TF.binary_cross_entropy(tp, torch.tensor(y)).backward()
    np.testing.assert_allclose(mp.grad, tp.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mz.grad, tz.grad.numpy(), rtol=1e-12)


def test_sigmoid_tail_beyond_float32s_exp_keeps_its_exact_loss():
    """Below x = -88 PyTorch's float32 sigmoid is 0 and its loss the clamp's 100; minigrad's
    sigmoid keeps the tail, so the loss is the exact -log sigmoid(x) = -x; the gradient is
    bounded (and about 0) in both."""
    z = np.array([-89.0, -90.0], np.float32)
    mine, theirs, _ = _both(z, np.ones(2, np.float32), "none")
    np.testing.assert_allclose(mine[0], [89.0, 90.0], rtol=1e-5)  # p is subnormal: a few digits
    np.testing.assert_array_equal(theirs[0], [100.0, 100.0])
    assert np.all(np.abs(mine[1]) < 1e-20) and np.all(theirs[1] == 0)
