"""Rows of a loss whose target is ignore_index are never read: whatever they hold (the PAD
logit masked to -inf, a row of -inf, NaN, huge values), cross_entropy and nll_loss give
PyTorch's loss, and a gradient of exactly 0 on those rows, for every reduction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")
TF = torch.nn.functional

FILLS = ("pad-masked", "all-inf", "nan", "huge", "inf")


def _fill(row: np.ndarray, kind: str, pad: int) -> None:
    """Spoil an ignored row in place."""
    big = np.finfo(row.dtype).max
    if kind == "pad-masked":  # the common case: the PAD column masked out before log_softmax
        row[pad] = -np.inf
    elif kind == "all-inf":
        row[:] = -np.inf
    elif kind == "nan":
        row[:] = np.nan
    elif kind == "huge":
        row[:] = big * np.where(np.arange(row.size) % 2, 1, -1)
    else:
        row[:] = np.inf


@st.composite
def cases(draw, all_ignored: bool = False):
    lead = draw(st.sampled_from([(1,), (4,), (2, 3), (3, 2)]))
    C = draw(st.integers(2, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    ignore_index = draw(st.sampled_from([0, -100]))  # 0: PAD, also a class id
    n = int(np.prod(lead))
    if all_ignored:
        ignored = np.ones(n, bool)
    else:
        ignored = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal((n, C))).astype(dtype)
    t = rng.integers(1 if ignore_index == 0 else 0, C, n)  # kept targets are never PAD
    for i in np.flatnonzero(ignored):
        _fill(x[i], draw(st.sampled_from(FILLS)), pad=0)
        t[i] = ignore_index
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    smoothing = draw(st.sampled_from([0.0, 0.1]))
    g = rng.standard_normal(lead).astype(dtype)  # upstream gradient for reduction="none"
    return x.reshape(*lead, C), t.reshape(lead), ignore_index, reduction, smoothing, g, ignored.reshape(lead)


def _logp(x: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """log_softmax of the kept rows; the ignored rows keep their spoiled values."""
    out = x.copy()
    kept = x[~ignored]
    if kept.size:
        m = kept.max(-1, keepdims=True)
        out[~ignored] = kept - m - np.log(np.exp(kept - m).sum(-1, keepdims=True))
    return out


def _classes_on_dim_1(a):
    """a (*, C) in torch's layout, classes on dim 1: the same losses, read where torch reads them."""
    return a.movedim(-1, 1) if a.ndim >= 3 else a


def _minigrad(fn, x, t, ignore_index, reduction, g, **kw):
    a = mg.tensor(x, requires_grad=True)
    with np.errstate(invalid="raise", over="raise"):  # reading a spoiled row would raise here
        loss = fn(_classes_on_dim_1(a), t, ignore_index=ignore_index, reduction=reduction, **kw)
        (loss * mg.tensor(g) if reduction == "none" else loss).sum().backward()
    return loss.numpy(), a.grad


def _torch(fn, x, t, ignore_index, reduction, g, **kw):
    C = x.shape[-1]
    a = torch.from_numpy(x.reshape(-1, C).copy()).requires_grad_()
    loss = fn(a, torch.from_numpy(t.reshape(-1)), ignore_index=ignore_index, reduction=reduction, **kw)
    if reduction == "none":
        loss = loss.reshape(t.shape)
        (loss * torch.from_numpy(g)).sum().backward()
    else:
        loss.backward()
    return loss.detach().numpy(), a.grad.numpy().reshape(x.shape)


def _check(mine, theirs, ignored, dtype):
    (loss, grad), (t_loss, t_grad) = mine, theirs
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert np.isfinite(loss).all() and np.isfinite(grad).all()
    np.testing.assert_allclose(loss, t_loss, rtol=tol, atol=tol)
    assert (grad[ignored] == 0).all()  # exactly 0, never 0 * nan
    # torch's cross_entropy gives nan on a spoiled ignored row's gradient: compare the kept rows
    np.testing.assert_allclose(grad[~ignored], t_grad[~ignored], rtol=tol, atol=tol)


@given(cases())
def test_nll_loss_does_not_read_ignored_rows(case):
    x, t, ignore_index, reduction, _, g, ignored = case
    logp = _logp(x, ignored)
    mine = _minigrad(F.nll_loss, logp, t, ignore_index, reduction, g)
    if ignored.all() and reduction == "mean":  # torch: nan (0 / 0); minigrad: 0.0, documented
        assert mine[0] == 0.0 and (mine[1] == 0).all()
        return
    _check(mine, _torch(TF.nll_loss, logp, t, ignore_index, reduction, g), ignored, x.dtype)


@given(cases())
def test_cross_entropy_does_not_read_ignored_rows(case):
    x, t, ignore_index, reduction, smoothing, g, ignored = case
    mine = _minigrad(F.cross_entropy, x, t, ignore_index, reduction, g, label_smoothing=smoothing)
    if ignored.all() and reduction == "mean":
        assert mine[0] == 0.0 and (mine[1] == 0).all()
        return
    theirs = _torch(TF.cross_entropy, x, t, ignore_index, reduction, g, label_smoothing=smoothing)
    _check(mine, theirs, ignored, x.dtype)


@given(cases(all_ignored=True))
def test_every_row_ignored(case):
    """sum: 0 and "none": zeros, as torch; mean: 0.0 where torch gives nan (0 / 0), so a batch
    of padding only leaves the weights alone. The gradient is 0 everywhere."""
    x, t, ignore_index, reduction, smoothing, g, ignored = case
    for fn, inp, kw in ((F.nll_loss, _logp(x, ignored), {}),
                        (F.cross_entropy, x, dict(label_smoothing=smoothing))):
        loss, grad = _minigrad(fn, inp, t, ignore_index, reduction, g, **kw)
        assert loss.shape == (t.shape if reduction == "none" else ())
        assert (loss == 0).all() and (grad == 0).all() and grad.shape == x.shape
        if reduction == "mean":
            assert np.isnan(_torch(TF.nll_loss, inp, t, ignore_index, "mean", g)[0])


def test_pad_masked_to_minus_inf_and_ignored():
    """The case that went NaN: log-probabilities whose PAD column is -inf, PAD rows ignored."""
    logits = np.array([[-np.inf, 1.0, 2.0, 0.5], [-np.inf, 0.3, -1.0, 2.0], [-np.inf, 0.0, 0.0, 0.0]],
                      np.float32)
    t = np.array([2, 0, 3])  # row 1 is PAD
    logp = mg.tensor(logits, requires_grad=True).log_softmax(-1)
    a = mg.tensor(logp.numpy(), requires_grad=True)
    for reduction in ("mean", "sum", "none"):
        loss = F.nll_loss(a, t, ignore_index=0, reduction=reduction)
        want = TF.nll_loss(torch.from_numpy(logp.numpy()), torch.from_numpy(t), ignore_index=0,
                           reduction=reduction).numpy()
        np.testing.assert_allclose(loss.numpy(), want, rtol=1e-6)
        assert np.isfinite(loss.numpy()).all()
    loss = F.nll_loss(a, t, ignore_index=0)
    loss.backward()
    np.testing.assert_array_equal(a.grad, [[0, 0, -0.5, 0], [0, 0, 0, 0], [0, 0, 0, -0.5]])
