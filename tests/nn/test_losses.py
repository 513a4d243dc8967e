"""The losses of nn/losses.py and their modules: gradient checks (float64, hypothesis shapes
with size-1 and 0-d), edge numerics (huge logits, probabilities at and next to 0 and 1), and
differential tests against PyTorch (values, dtypes, gradients) for every reduction."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.testing import arrays, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")
TF = torch.nn.functional

REDUCTIONS = ["none", "mean", "sum"]
fewer = settings(max_examples=max(10, settings.default.max_examples // 2))


def probs(shape, low=0.05, high=0.95):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high, width=64))


def away_from(center, gap=1e-3):
    """Differences d whose |d| keeps `gap` from each kink in `center` (finite differences
    straddling a kink measure the mean of the two slopes)."""
    return lambda a: all(np.all(np.abs(np.abs(a) - c) > gap) for c in center)


def run(fn, arrays_, grads=None, lib="mg"):
    """fn on tensors of `arrays_` (float ones require grad), backward with a fixed random
    upstream gradient; returns (output array, output dtype name, gradients of float inputs)."""
    if lib == "mg":
        ins = [mg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays_]
    else:
        ins = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays_]
    out = fn(*ins)
    g = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(arrays_[0].dtype)
    if lib == "mg":
        out.backward(mg.tensor(g))
        return out.numpy(), str(out.dtype), [t.grad for t in ins if t.requires_grad]
    out.backward(torch.from_numpy(g))
    return (out.detach().numpy(), str(out.dtype).removeprefix("torch."),
            [t.grad.numpy() for t in ins if t.requires_grad])


def same_as_torch(mine, theirs, arrays_, tol):
    a, b = run(mine, arrays_), run(theirs, arrays_, lib="torch")
    assert a[1] == b[1]  # dtype
    assert a[0].shape == b[0].shape
    np.testing.assert_allclose(a[0], b[0], rtol=tol, atol=tol)
    for ga, gb in zip(a[2], b[2]):
        np.testing.assert_allclose(ga, gb, rtol=tol, atol=tol)


DTYPES = [(np.float64, 1e-10), (np.float32, 2e-5)]

# ----------------------------------------------------------------------------- gradient checks


@pytest.mark.parametrize("reduction", REDUCTIONS)
@fewer
@given(data=st.data())
def test_regression_losses_gradcheck(reduction, data):
    shape = data.draw(shapes())
    t = data.draw(arrays(shape))
    d = data.draw(arrays(shape).filter(away_from([0.0, 0.5, 1.0])))
    x = mg.tensor(t + d, requires_grad=True)
    target = mg.tensor(t, requires_grad=True)  # the target gets its gradient too, as in torch
    assert mg.gradcheck(lambda a, b: F.l1_loss(a, b, reduction=reduction), [x, target])
    assert mg.gradcheck(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5), [x, target])
    assert mg.gradcheck(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=1.0), [x, target])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@fewer
@given(data=st.data())
def test_binary_cross_entropy_gradcheck(reduction, data):
    shape = data.draw(shapes())
    p, y = data.draw(probs(shape)), data.draw(probs(shape, 0.0, 1.0))
    w = data.draw(st.none() | probs(shape[data.draw(st.integers(0, len(shape))):], 0.5, 2.0))
    fn = lambda a, b: F.binary_cross_entropy(a, b, weight=w, reduction=reduction)  # noqa: E731
    assert mg.gradcheck(fn, [mg.tensor(p, requires_grad=True), mg.tensor(y, requires_grad=True)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@fewer
@given(data=st.data())
def test_binary_cross_entropy_with_logits_gradcheck(reduction, data):
    shape = data.draw(shapes(min_dims=1))
    x, y = data.draw(arrays(shape, -6, 6)), data.draw(probs(shape, 0.0, 1.0))
    pw = data.draw(probs(shape[-1:], 0.2, 3.0))
    w = data.draw(probs((1,) * (len(shape) - 1) + shape[-1:], 0.5, 2.0))
    inputs = [mg.tensor(a, requires_grad=True) for a in (x, y, pw, w)]
    fn = lambda a, b, c, d: F.binary_cross_entropy_with_logits(  # noqa: E731
        a, b, weight=d, reduction=reduction, pos_weight=c)
    assert mg.gradcheck(fn, inputs)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@fewer
@given(data=st.data())
def test_kl_div_gradcheck(reduction, log_target, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3)).input_shapes
    x = data.draw(arrays(s1))
    t = data.draw(arrays(s2, -3, 0.5) if log_target else probs(s2, 0.05, 1.0))
    fn = lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target)  # noqa: E731
    assert mg.gradcheck(fn, [mg.tensor(x, requires_grad=True), mg.tensor(t, requires_grad=True)])


# ----------------------------------------------------------------------------- against PyTorch


REGRESSION = [
    pytest.param(F.l1_loss, TF.l1_loss, {}, id="l1_loss"),
    pytest.param(F.mse_loss, TF.mse_loss, {}, id="mse_loss"),
    pytest.param(F.smooth_l1_loss, TF.smooth_l1_loss, {"beta": 0.5}, id="smooth_l1_loss"),
    pytest.param(F.smooth_l1_loss, TF.smooth_l1_loss, {"beta": 0.0}, id="smooth_l1_loss-beta0"),
    pytest.param(F.huber_loss, TF.huber_loss, {"delta": 0.7}, id="huber_loss"),
]


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("mine, theirs, options", REGRESSION)
@fewer
@given(data=st.data())
def test_regression_losses_match_torch(mine, theirs, options, reduction, dtype, tol, data):
    shape = data.draw(shapes())
    # Some elements on the kinks (d = 0, |d| = beta or delta), where the gradient rules differ.
    x = data.draw(arrays(shape) | hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 0.5, 0.7])))
    t = data.draw(arrays(shape) | st.just(np.zeros(shape)))
    same_as_torch(lambda a, b: mine(a, b, reduction=reduction, **options),
                  lambda a, b: theirs(a, b, reduction=reduction, **options),
                  [x.astype(dtype), t.astype(dtype)], tol)


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@fewer
@given(data=st.data())
def test_binary_cross_entropy_matches_torch(reduction, dtype, tol, data):
    shape = data.draw(shapes())
    edges = st.sampled_from([0.0, 1.0, 1e-30, 1e-7, 1 - 1e-7, 0.5])
    p = data.draw(probs(shape, 0.0, 1.0) | hnp.arrays(np.float64, shape, elements=edges))
    y = data.draw(probs(shape, 0.0, 1.0))
    w = data.draw(probs(shape, 0.5, 2.0))
    p = p.astype(dtype)
    y, w = y.astype(dtype), w.astype(dtype)
    # The target's gradient is log(1 - p) - log(p): inf at p = 0 or 1 in both; only p's here.
    same_as_torch(lambda a: F.binary_cross_entropy(a, mg.tensor(y), weight=mg.tensor(w), reduction=reduction),
                  lambda a: TF.binary_cross_entropy(a, torch.tensor(y), weight=torch.tensor(w),
                                                    reduction=reduction),
                  [p], tol * (1e12 if (p == 0).any() or (p == 1).any() else 1))  # gradients of 1e12 there
    inside = np.clip(p, 0.01, 0.99)
    same_as_torch(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
                  lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction), [inside, y], tol)


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@fewer
@given(data=st.data())
def test_binary_cross_entropy_with_logits_matches_torch(reduction, dtype, tol, data):
    shape = data.draw(shapes(min_dims=1))
    x = data.draw(arrays(shape, -40, 40)).astype(dtype)
    y = data.draw(probs(shape, 0.0, 1.0)).astype(dtype)
    pw = data.draw(probs(shape[-1:], 0.2, 3.0)).astype(dtype) if data.draw(st.booleans()) else None
    w = data.draw(probs(shape, 0.5, 2.0)).astype(dtype) if data.draw(st.booleans()) else None
    wrap = lambda lib, a: None if a is None else lib(a)  # noqa: E731
    same_as_torch(
        lambda a, b: F.binary_cross_entropy_with_logits(
            a, b, weight=wrap(mg.tensor, w), reduction=reduction, pos_weight=wrap(mg.tensor, pw)),
        lambda a, b: TF.binary_cross_entropy_with_logits(
            a, b, weight=wrap(torch.tensor, w), reduction=reduction, pos_weight=wrap(torch.tensor, pw)),
        [x, y], tol * 40)  # |x| up to 40: the loss itself is that large


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@fewer
@given(data=st.data())
def test_kl_div_matches_torch(reduction, log_target, dtype, tol, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3)).input_shapes
    x = data.draw(arrays(s1)).astype(dtype)
    # Zeros in a probability target: the xlogy term is 0 (its target gradient is torch's NaN; not compared)
    t = data.draw(arrays(s2, -3, 0.5) if log_target else probs(s2, 0.0, 1.0) | st.just(np.zeros(s2)))
    t = t.astype(dtype)
    with warnings.catch_warnings():  # torch warns that its "mean" divides by every element
        warnings.simplefilter("ignore", UserWarning)
        if log_target or (t > 0).all():
            same_as_torch(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                          lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target),
                          [x, t], tol)
        same_as_torch(lambda a: F.kl_div(a, mg.tensor(t), reduction=reduction, log_target=log_target),
                      lambda a: TF.kl_div(a, torch.tensor(t), reduction=reduction, log_target=log_target),
                      [x], tol)



# ----------------------------------------------------------------------------- edges


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_cross_entropy_at_and_next_to_0_and_1(dtype):
    """The logs are clamped at -100 (a certain wrong answer costs 100, not inf) and the
    gradient's denominator at 1e-12, as torch; next to the ends the exact values."""
    p = np.array([0.0, 1.0, 1e-30, 1 - 1e-7, 0.0, 1.0], dtype=dtype)
    y = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0], dtype=dtype)
    x = mg.tensor(p, requires_grad=True)
    loss = F.binary_cross_entropy(x, y, reduction="none")
    loss.backward(mg.tensor(np.ones(6, dtype=dtype)))
    with np.errstate(divide="ignore"):
        ref = -(y * np.maximum(np.log(p.astype(np.float64)), -100)
                + (1 - y) * np.maximum(np.log1p(-p.astype(np.float64)), -100))
    np.testing.assert_allclose(loss.numpy(), ref, rtol=1e-6)
    assert loss.numpy()[0] == loss.numpy()[1] == 100 and loss.numpy()[4] == loss.numpy()[5] == 0
    assert np.isfinite(x.grad).all() and x.grad[0] < -1e11 and x.grad[1] > 1e11
    t = torch.tensor(p, requires_grad=True)
    TF.binary_cross_entropy(t, torch.tensor(y), reduction="sum").backward()
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_cross_entropy_with_logits_is_exact_for_huge_logits(dtype):
    """softplus never overflows: |x| = 1e4 gives 0 or |x| exactly, and gradients of 0 or 1;
    binary_cross_entropy(sigmoid(x)) would give 100 (clamped log(0)) where the truth is 1e4."""
    x = np.array([1e4, -1e4, 1e4, -1e4, 30.0, -30.0], dtype=dtype)
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0], dtype=dtype)
    a = mg.tensor(x, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(a, y, reduction="none")
    loss.backward(mg.tensor(np.ones(6, dtype=dtype)))
    assert loss.dtype == dtype
    np.testing.assert_allclose(loss.numpy(), [0, 0, 1e4, 1e4, np.exp(-30.0), 30.0], rtol=1e-6)
    np.testing.assert_allclose(a.grad, [0, 0, 1, -1, -np.exp(-30.0), -1], rtol=1e-6, atol=0)
    t = torch.tensor(x, requires_grad=True)
    TF.binary_cross_entropy_with_logits(t, torch.tensor(y), reduction="sum").backward()
    np.testing.assert_allclose(a.grad, t.grad.numpy(), rtol=1e-6, atol=1e-12)  # torch's float32: 0 at 30


def test_kl_div_zero_target_gives_zero_and_finite_gradients():
    x = mg.tensor(np.array([[-1.0, -2.0, -0.5]]), requires_grad=True)
    t = mg.tensor(np.array([[0.0, 0.5, 0.5]]), requires_grad=True)
    loss = F.kl_div(x, t, reduction="none")
    assert loss.numpy()[0, 0] == 0
    loss.sum().backward()
    assert np.isfinite(t.grad).all() and np.isfinite(x.grad).all()


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.l1_loss(mg.zeros(2, 3), mg.zeros(3)), ValueError, r"l1_loss: input of shape \(2, 3\)"),
    (lambda: F.huber_loss(mg.zeros(2), mg.zeros(2), delta=0.0), ValueError, "delta must be positive"),
    (lambda: F.smooth_l1_loss(mg.zeros(2), mg.zeros(2), beta=-1.0), ValueError, "beta must be non-negative"),
    (lambda: F.l1_loss(mg.zeros(2), mg.zeros(2), reduction="avg"), ValueError, "reduction must be one of"),
    (lambda: F.kl_div(mg.zeros(2), mg.zeros(2), reduction="max"), ValueError, "batchmean"),
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, 1.5]), mg.zeros(2)), ValueError, "holds 1.5"),
    (lambda: F.binary_cross_entropy_with_logits(mg.zeros(2, 3), mg.zeros(2, 3), pos_weight=mg.zeros(2)),
     ValueError, "pos_weight of shape"),
    (lambda: F.binary_cross_entropy(np.zeros(2), np.zeros(2)), TypeError, "not a Tensor"),
    (lambda: F.cross_entropy(mg.zeros(2, 3), [0, 1], weight=mg.ones(2)), ValueError,
     r"cross_entropy: weight has shape \(2,\) but the input's 3 classes need \(3,\)"),
    (lambda: F.nll_loss(mg.zeros(2, 3), [0, 1], weight=np.ones(3)), TypeError, "nll_loss: weight"),
])
def test_losses_name_their_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- modules against torch


def _ids(r, shape, C):
    return r.integers(0, C, shape)


MODULES = [  # (minigrad module, torch module, (input, target) maker)
    pytest.param(lambda red: nn.CrossEntropyLoss(reduction=red, label_smoothing=0.1),
                 lambda red: torch.nn.CrossEntropyLoss(reduction=red, label_smoothing=0.1),
                 lambda r: (r.standard_normal((4, 5)), _ids(r, (4,), 5)), id="CrossEntropyLoss"),
    pytest.param(lambda red: nn.CrossEntropyLoss(ignore_index=1, reduction=red),
                 lambda red: torch.nn.CrossEntropyLoss(ignore_index=1, reduction=red),
                 lambda r: (r.standard_normal((6, 3)), np.array([0, 1, 2, 1, 0, 2])),
                 id="CrossEntropyLoss-ignore"),
    pytest.param(lambda red: nn.CrossEntropyLoss(mg.tensor([0.5, 2.0, 1.0]), ignore_index=1, reduction=red,
                                                 label_smoothing=0.2),
                 lambda red: torch.nn.CrossEntropyLoss(torch.tensor([0.5, 2.0, 1.0]), ignore_index=1,
                                                       reduction=red, label_smoothing=0.2),
                 lambda r: (r.standard_normal((6, 3)), np.array([0, 1, 2, 1, 0, 2])),
                 id="CrossEntropyLoss-weight"),
    pytest.param(lambda red: nn.NLLLoss(mg.tensor([1.0, 0.2, 3.0, 1.5, 0.7]), reduction=red),
                 lambda red: torch.nn.NLLLoss(torch.tensor([1.0, 0.2, 3.0, 1.5, 0.7]), reduction=red),
                 lambda r: (r.standard_normal((4, 5)), _ids(r, (4,), 5)), id="NLLLoss-weight"),
    pytest.param(lambda red: nn.NLLLoss(reduction=red), lambda red: torch.nn.NLLLoss(reduction=red),
                 lambda r: (r.standard_normal((4, 5)), _ids(r, (4,), 5)), id="NLLLoss"),
    pytest.param(lambda red: nn.MSELoss(reduction=red), lambda red: torch.nn.MSELoss(reduction=red),
                 lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))), id="MSELoss"),
    pytest.param(lambda red: nn.L1Loss(reduction=red), lambda red: torch.nn.L1Loss(reduction=red),
                 lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))), id="L1Loss"),
    pytest.param(lambda red: nn.SmoothL1Loss(reduction=red, beta=0.3),
                 lambda red: torch.nn.SmoothL1Loss(reduction=red, beta=0.3),
                 lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))), id="SmoothL1Loss"),
    pytest.param(lambda red: nn.HuberLoss(red, 0.3), lambda red: torch.nn.HuberLoss(red, 0.3),
                 lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))), id="HuberLoss"),
    pytest.param(lambda red: nn.BCELoss(mg.tensor([1.0, 2.0, 0.5]), reduction=red),
                 lambda red: torch.nn.BCELoss(torch.tensor([1.0, 2.0, 0.5]), reduction=red),
                 lambda r: (r.uniform(0, 1, (4, 3)), r.uniform(0, 1, (4, 3))), id="BCELoss"),
    pytest.param(lambda red: nn.BCEWithLogitsLoss(mg.tensor([[2.0], [1.0]]), reduction=red,
                                                  pos_weight=mg.tensor([1.0, 3.0, 0.5])),
                 lambda red: torch.nn.BCEWithLogitsLoss(torch.tensor([[2.0], [1.0]]), reduction=red,
                                                        pos_weight=torch.tensor([1.0, 3.0, 0.5])),
                 lambda r: (r.standard_normal((2, 3)) * 5, r.uniform(0, 1, (2, 3))), id="BCEWithLogitsLoss"),
    pytest.param(lambda red: nn.KLDivLoss(reduction=red), lambda red: torch.nn.KLDivLoss(reduction=red),
                 lambda r: (r.standard_normal((3, 4)), r.uniform(0.01, 1, (3, 4))), id="KLDivLoss"),
    pytest.param(lambda red: nn.KLDivLoss(reduction=red, log_target=True),
                 lambda red: torch.nn.KLDivLoss(reduction=red, log_target=True),
                 lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))), id="KLDivLoss-log"),
]


@pytest.mark.parametrize("dtype, tol", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("mine, theirs, inputs", MODULES)
def test_loss_modules_match_torch(mine, theirs, inputs, reduction, dtype, tol):
    is_kl = "KLDiv" in type(mine("sum")).__name__
    if reduction == "batchmean" and not is_kl:
        with pytest.raises(ValueError, match="reduction must be one of"):
            mine(reduction)(*[mg.tensor(a) for a in inputs(np.random.default_rng(0))])
        return
    x, t = inputs(np.random.default_rng(1))
    x = x.astype(dtype)
    t = t.astype(dtype) if t.dtype.kind == "f" else t
    m, tm = mine(reduction), theirs(reduction)
    if getattr(tm, "weight", None) is not None:
        tm = tm.to(torch.float64 if dtype == np.float64 else torch.float32)
        for name in ("weight", "pos_weight"):  # minigrad's weights follow the input's dtype
            if getattr(m, name, None) is not None:
                setattr(m, name, mg.tensor(getattr(m, name).numpy().astype(dtype)))
    assert m.reduction == reduction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        same_as_torch(lambda a, b: m(a, b), lambda a, b: tm(a, b), [x, t], tol)
