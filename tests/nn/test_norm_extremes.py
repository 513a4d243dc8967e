"""The normalizations at the float extremes: constant rows, channels and groups normalize to
exactly 0 (the output is the bias, dw is 0, and dx is 0 for a constant upstream gradient),
and float16 inputs are computed in float32 as torch computes them. The tanh GELU of every
finite float16 value against torch, forward and gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F

torch = pytest.importorskip("torch", reason="needs the torch extra")
TF = torch.nn.functional

FLOATS = st.sampled_from([np.float16, np.float32, np.float64])


def _grads(fn, arrays, g):
    ts = [mg.Tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(g)
    return [out.numpy()] + [t.grad.numpy() for t in ts]


def _torch_grads(fn, arrays, g):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(torch.tensor(g))
    return [out.detach().numpy()] + [t.grad.numpy() for t in ts]


# ----------------------------------------------------------------------------- constant rows


@st.composite
def constant_rows(draw, max_len=800):
    """(rows, n) of one value per row (any finite value of the dtype, tiny to huge), with a
    weight and a bias, and an upstream gradient constant per row."""
    dtype = draw(FLOATS)
    rows, n = draw(st.integers(1, 4)), draw(st.integers(1, max_len))
    info = np.finfo(dtype)
    width = 32 if dtype == np.float16 else 64
    value = st.floats(-float(info.max), float(info.max), allow_nan=False, allow_infinity=False, width=width)
    values = np.array(draw(st.lists(value, min_size=rows, max_size=rows)), dtype)
    x = np.repeat(values[:, None], n, axis=1)
    w = np.full(n, draw(st.sampled_from([1.0, 0.5, -2.0, 3.7])), dtype)
    b = np.array(draw(st.lists(st.floats(-10, 10, width=width), min_size=n, max_size=n)), dtype)
    g = np.repeat(np.array(draw(st.lists(st.floats(-3, 3, width=width), min_size=rows, max_size=rows)),
                           dtype)[:, None], n, axis=1)
    return x, w, b, g


@given(constant_rows())
def test_layer_norm_of_a_constant_row_is_exactly_the_bias(case):
    x, w, b, g = case
    y, dx, dw, db = _grads(lambda a, c, d: F.layer_norm(a, x.shape[1], c, d), [x, w, b], g)
    assert y.dtype == x.dtype and np.array_equal(y, np.broadcast_to(b, x.shape)), f"{x[:, 0]} -> {y}"
    assert np.all(dw == 0), dw
    assert np.all(dx == 0), dx
    # db is a column sum of g, rounded in x's dtype (the order of the additions may differ)
    rtol = 4 * g.shape[0] * np.finfo(x.dtype).eps
    np.testing.assert_allclose(db, g.sum(axis=0, dtype=np.float64), rtol=rtol)


def test_layer_norm_of_the_issue_rows_matches_torch():
    x = np.full((1, 768), 123456.789, np.float32)
    assert np.array_equal(F.layer_norm(mg.tensor(x), 768).numpy(), np.zeros((1, 768), np.float32))
    # a constant float32 row of 90.26: dw was -2.4e-3; torch's (and the exact) dw is 0
    x = np.full((3, 5), 90.26, np.float32)
    w, b = np.linspace(-1, 1, 5).astype(np.float32), np.zeros(5, np.float32)
    g = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    got = _grads(lambda a, c, d: F.layer_norm(a, 5, c, d), [x, w, b], g)
    want = _torch_grads(lambda a, c, d: TF.layer_norm(a, (5,), c, d), [x, w, b], g)
    for name, a, e in zip(("y", "dx", "dw", "db"), got, want):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-3, err_msg=name)  # dx ~ g / sqrt(eps) ~ 300
    assert np.all(got[2] == 0)


@given(constant_rows(max_len=60), st.integers(1, 3))
def test_batch_norm_of_a_constant_channel_is_exactly_the_bias(case, n):
    """x (N, C, M): the drawn rows are the C channels' values, repeated over N samples."""
    x, w, b, g = case
    C, M = x.shape
    x3 = np.broadcast_to(x[None], (n, C, M)).copy()
    g3 = np.broadcast_to(g[None], (n, C, M)).copy()
    wc, bc = np.full(C, w[0], x.dtype), b[:C].copy() if M >= C else np.full(C, b[0], x.dtype)
    if n * M == 1:
        return  # one value per channel: batch norm refuses it in training
    y, dx, dw, db = _grads(lambda a, c, d: F.batch_norm(a, None, None, c, d, training=True), [x3, wc, bc], g3)
    assert y.dtype == x.dtype and np.array_equal(y, np.broadcast_to(bc[None, :, None], x3.shape)), y
    assert np.all(dw == 0), dw
    assert np.all(dx == 0), dx


@given(constant_rows(max_len=60), st.integers(1, 2))
def test_group_norm_of_a_constant_group_is_exactly_the_bias(case, groups_per_sample):
    """x (N, C, M) with each sample's groups constant: the rows are samples of one value."""
    x, w, b, g = case
    N, M = x.shape
    C = 2 * groups_per_sample
    x3 = np.broadcast_to(x[:, None, :], (N, C, M)).copy()
    if C // groups_per_sample * M == 1 and N == 1:
        return
    bc = np.arange(C, dtype=x.dtype)
    y = F.group_norm(mg.tensor(x3), groups_per_sample, mg.tensor(np.full(C, w[0], x.dtype)), mg.tensor(bc))
    assert y.dtype == x.dtype and np.array_equal(y.numpy(), np.broadcast_to(bc[None, :, None], x3.shape)), y


# ----------------------------------------------------------------------------- float16, as torch


def _close16(got, want, what, scale=1.0):
    """float16 results against torch's: within a few float16 ulps of the larger values."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.array_equal(np.isfinite(got), np.isfinite(want)), f"{what}: {got} vs torch {want}"
    fin = np.isfinite(want)
    top = max(np.abs(want[fin]).max(initial=0), scale)
    assert np.abs(got[fin] - want[fin]).max(initial=0) <= 4e-3 * top, f"{what}: {got} vs torch {want}"


def test_the_issue_float16_normalizations_match_torch():
    h = np.full((1, 64), 40, np.float16)
    _close16(F.normalize(mg.tensor(h)).numpy(), TF.normalize(torch.tensor(h)).numpy(), "normalize")
    _close16(F.cosine_similarity(mg.tensor(h), mg.tensor(h)).numpy(),
             TF.cosine_similarity(torch.tensor(h), torch.tensor(h)).numpy(), "cosine_similarity")
    x = (300 + np.random.default_rng(1).standard_normal((2, 4, 64))).astype(np.float16)
    y = F.group_norm(mg.tensor(x), 2).numpy()
    assert y.dtype == np.float16 and np.abs(y).max() > 1
    _close16(y, TF.group_norm(torch.tensor(x), 2).numpy(), "group_norm")


@st.composite
def float16_batches(draw):
    """(N, C, M) float16 values around a drawn offset (up to 30000), of a drawn spread."""
    shape = (draw(st.integers(1, 3)), 2 * draw(st.integers(1, 2)), draw(st.integers(2, 70)))
    offset = draw(st.sampled_from([0.0, 40.0, 300.0, -2000.0, 30000.0]))
    spread = draw(st.sampled_from([1e-2, 1.0, 30.0, 500.0]))
    seed = draw(st.integers(0, 2**16))
    x = offset + spread * np.random.default_rng(seed).standard_normal(shape)
    return np.clip(x, -60000, 60000).astype(np.float16), seed


@given(float16_batches())
def test_float16_normalizations_match_torch(case):
    """Against torch in float64 on the same float16 values, rounded to float16. (torch's own
    float16 batch norm keeps the variance in float16: 40.62 and 40.1 normalize to 1.92 and
    -0.925 there, 2.004 and -0.842 exactly; and its float32 group norm of a constant group of
    -2000 is not 0.) normalize and cosine_similarity against torch's float16 itself: they
    divide by a float16 norm, inf past 65504, in both."""
    x, seed = case
    rng = np.random.default_rng(seed + 1)
    g = rng.standard_normal(x.shape).astype(np.float16)
    N, C, M = x.shape
    w = (1 + rng.random(C)).astype(np.float16)
    b = rng.standard_normal(C).astype(np.float16)
    calls = {
        "layer_norm": (lambda a: F.layer_norm(a, M), lambda a: TF.layer_norm(a, (M,))),
        "group_norm": (lambda a: F.group_norm(a, 2, mg.tensor(w), mg.tensor(b)),
                       lambda a: TF.group_norm(a, 2, torch.tensor(w).double(), torch.tensor(b).double())),
        "batch_norm": (lambda a: F.batch_norm(a, None, None, mg.tensor(w), mg.tensor(b), training=True),
                       lambda a: TF.batch_norm(a, None, None, torch.tensor(w).double(),
                                               torch.tensor(b).double(), training=True)),
        "normalize": (lambda a: F.normalize(a, dim=-1), lambda a: TF.normalize(a, dim=-1)),
        "cosine_similarity": (lambda a: F.cosine_similarity(a, a * 0.5 + 1, dim=-1),
                              lambda a: TF.cosine_similarity(a, a * 0.5 + 1, dim=-1)),
    }
    for name, (ours, theirs) in calls.items():
        if name == "batch_norm" and N * M == 1:
            continue
        out = ours(mg.Tensor(x))
        # normalize and cosine_similarity divide by a float16 norm (inf past 65504), as torch's
        want = theirs(torch.tensor(x) if name in ("normalize", "cosine_similarity") else
                      torch.tensor(x).double()).half()
        assert out.dtype == np.float16, name
        _close16(out.numpy(), want.numpy(), name)
    got = _grads(lambda a: F.layer_norm(a, M), [x], g)
    want = _torch_grads(lambda a: TF.layer_norm(a, (M,)), [x.astype(np.float64)], g.astype(np.float64))
    assert got[1].dtype == np.float16
    # dx's natural size is |g| / sigma (it may cancel to nearly 0, in both)
    rstd = 1 / np.sqrt(x.astype(np.float64).var(axis=-1).min() + 1e-5)
    _close16(got[1], want[1], "layer_norm dx", scale=float(np.abs(g).max()) * rstd)


# ----------------------------------------------------------------------------- GELU, all of float16


def test_tanh_gelu_of_every_finite_float16_matches_torch():
    """Every finite float16 value: forward and gradient finite and as torch's (which computes
    in float32 and rounds), within 2 ulps of float16 (plus float16's smallest normal)."""
    every = np.arange(65536, dtype=np.uint16).view(np.float16)
    x = every[np.isfinite(every)]
    for approximate in ("tanh", "none"):
        y, dx = _grads(lambda t, a=approximate: F.gelu(t, approximate=a), [x], np.ones_like(x))
        ty, tdx = _torch_grads(lambda t, a=approximate: TF.gelu(t, approximate=a), [x], np.ones_like(x))
        assert y.dtype == dx.dtype == np.float16
        assert np.isfinite(y).all() and np.isfinite(dx).all(), (approximate, x[~np.isfinite(dx)][:8])
        for name, a, b in (("y", y, ty), ("dx", dx, tdx)):
            a, b = a.astype(np.float64), b.astype(np.float64)
            with np.errstate(over="ignore"):  # the spacing of 65504 is inf: no bound there
                tol = 2 * np.spacing(np.abs(b).astype(np.float16)).astype(np.float64) + 6.2e-5
            bad = np.abs(a - b) > tol
            assert not bad.any(), f"{approximate} {name} at {x[bad][:5]}: {a[bad][:5]} vs torch {b[bad][:5]}"
