"""cross_entropy and nll_loss take the classes on dim 1, as torch does: an (N, C, d1, ..., dk)
input with (N, d1, ..., dk) class ids (or probabilities of the input's shape), against torch
2.13 with weights, ignore_index, label smoothing and each reduction. A (B, T, V) language
model's logits with (B, T) targets are refused, naming the flattening torch code uses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F

torch = pytest.importorskip("torch", reason="needs the torch extra")
TF = torch.nn.functional


pytestmark = pytest.mark.usefixtures("both_kernel_paths")  # numpy and compiled kernels (conftest.py)


@st.composite
def layouts(draw):
    N, C = draw(st.integers(1, 3)), draw(st.integers(2, 4))
    rest = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C) + rest)
    t = rng.integers(0, C, (N,) + rest)
    t[rng.random(t.shape) < 0.2] = -100
    kw = dict(reduction=draw(st.sampled_from(["mean", "sum", "none"])),
              label_smoothing=draw(st.sampled_from([0.0, 0.1])))
    weight = rng.random(C) + 0.5 if draw(st.booleans()) else None
    return x, t, kw, weight


def _both(fn_mg, fn_torch, x, t, kw, weight):
    """Loss and input gradient in both, with a random upstream gradient of the loss's shape (a
    per-position weight for "none", so that a loss put in the wrong place cannot hide in a sum)."""
    a = mg.tensor(x, requires_grad=True)
    out = fn_mg(a, mg.tensor(t), weight=None if weight is None else mg.tensor(weight), **kw)
    g = np.random.default_rng(7).standard_normal(out.shape)
    out.backward(g)
    b = torch.tensor(x, requires_grad=True)
    want = fn_torch(b, torch.tensor(t), weight=None if weight is None else torch.tensor(weight), **kw)
    want.backward(torch.from_numpy(np.asarray(g)))
    return (out.numpy(), a.grad), (want.detach().numpy(), b.grad.numpy())


@given(layouts())
def test_cross_entropy_takes_the_classes_on_dim_1_as_torch(case):
    x, t, kw, weight = case
    if kw["reduction"] == "mean" and (t == -100).all():
        return  # torch: nan (0 / 0); minigrad: 0.0, documented and tested in test_losses_ignore.py
    (got, dx), (want, tdx) = _both(F.cross_entropy, TF.cross_entropy, x, t, kw, weight)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, tdx, rtol=1e-10, atol=1e-12)


@given(layouts())
def test_nll_loss_takes_the_classes_on_dim_1_as_torch(case):
    x, t, kw, weight = case
    kw.pop("label_smoothing")
    if kw["reduction"] == "mean" and (t == -100).all():
        return
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))  # log_softmax over dim 1
    (got, dx), (want, tdx) = _both(F.nll_loss, TF.nll_loss, logp, t, kw, weight)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, tdx, rtol=1e-10, atol=1e-12)


def test_the_issue_case_and_probability_targets():
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((2, 3, 3)), rng.integers(0, 3, (2, 3))
    want = TF.cross_entropy(torch.tensor(x), torch.tensor(t)).item()
    assert F.cross_entropy(mg.tensor(x), mg.tensor(t)).item() == pytest.approx(want, rel=1e-12)
    assert nn.CrossEntropyLoss()(mg.tensor(x), mg.tensor(t)).item() == pytest.approx(want, rel=1e-12)
    q = rng.random((2, 3, 4))
    q /= q.sum(axis=1, keepdims=True)  # probabilities over dim 1
    x = rng.standard_normal((2, 3, 4))
    want = TF.cross_entropy(torch.tensor(x), torch.tensor(q), label_smoothing=0.1).item()
    got = F.cross_entropy(mg.tensor(x), mg.tensor(q), label_smoothing=0.1).item()
    assert got == pytest.approx(want, rel=1e-12)


def test_a_language_models_unflattened_logits_are_refused_with_the_fix():
    logits, targets = mg.zeros(2, 5, 7), mg.tensor(np.zeros((2, 5), np.int64))
    refusal = (r"cross_entropy: input of shape \(2, 5, 7\) has its classes on dim 1, as in PyTorch, so the "
               r"target must have shape \(2, 7\), but it has \(2, 5\): "
               r".*cross_entropy\(input.reshape\(-1, 7\), target.reshape\(-1\)\)")
    with pytest.raises(ValueError, match=refusal):
        F.cross_entropy(logits, targets)
    with pytest.raises(ValueError, match=r"nll_loss: .* must have shape \(2, 7\), but it has \(2, 4\)$"):
        F.nll_loss(logits, np.zeros((2, 4), np.int64))
    flat = F.cross_entropy(logits.reshape(-1, 7), targets.reshape(-1))
    assert flat.item() == pytest.approx(np.log(7))
