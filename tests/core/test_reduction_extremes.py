"""var, std and the norms at the float extremes, and var/std's positional arguments, each
against torch 2.13 (or against the exact value in float64 where torch's float32 squares
overflow): float32 values near 1e20 or 1e-25 whose squares leave float32, float16 values
whose sums of squares pass 65504 (torch sums float16 in float32, and so does minigrad), and
`x.var(0, False)`, whose second positional is torch's `unbiased`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg

torch = pytest.importorskip("torch", reason="needs the torch extra")


@pytest.mark.parametrize("scale", [1e20, 1e-25, 3e38, 1e-38])
def test_float32_std_and_var_neither_overflow_nor_underflow(scale):
    x = np.float32([1, -1, 0]) * np.float32(scale)
    exact_std = float(np.std(x.astype(np.float64), ddof=1))
    assert mg.tensor(x).std().item() == pytest.approx(exact_std, rel=1e-6)  # was inf (1e20) and 0 (1e-25)
    exact_var = exact_std**2
    var = mg.tensor(x).var().item()
    if float(np.finfo(np.float32).tiny) < exact_var < float(np.finfo(np.float32).max):
        assert var == pytest.approx(exact_var, rel=1e-6)
    if scale in (1e20, 1e-25):  # torch's own float32 std is right here, and minigrad agrees with it
        assert mg.tensor(x).std().item() == pytest.approx(torch.tensor(x).std().item(), rel=1e-6)


@pytest.mark.parametrize("scale", [1e20, 1e-25])
def test_float32_norm_neither_overflows_nor_underflows(scale):
    x = np.float32([3, -4, 0]) * np.float32(scale)
    assert mg.tensor(x).norm().item() == pytest.approx(5 * scale, rel=1e-6)
    for p in (1, 3, 0.5):
        exact = float(np.sum(np.abs(x.astype(np.float64)) ** p) ** (1 / p))
        assert mg.tensor(x).norm(p).item() == pytest.approx(exact, rel=1e-5), p


def test_the_issue_float16_reductions_match_torch():
    h = np.full(64, 40, np.float16)
    assert mg.tensor(h).norm().item() == torch.tensor(h).norm().item() == 320  # was inf
    s = np.float16([200, -200, 0])
    assert mg.tensor(s).std().item() == torch.tensor(s).std().item() == 200  # was inf
    assert mg.tensor(s).var().item() == torch.tensor(s).var().item() == 40000
    assert mg.tensor(s).var().dtype == np.float16


@given(st.integers(1, 70), st.sampled_from([1.0, 40.0, 300.0, 3000.0]), st.integers(0, 2**16))
def test_float16_reductions_match_torchs_float32_accumulation(n, offset, seed):
    x = (offset * (1 + 0.1 * np.random.default_rng(seed).standard_normal(n))).astype(np.float16)
    t = torch.tensor(x)
    checks = {
        "sum": (mg.tensor(x).sum(), t.sum()),
        "mean": (mg.tensor(x).mean(), t.mean()),
        "norm": (mg.tensor(x).norm(), t.norm()),
        "std": (mg.tensor(x).std(), t.std()) if n > 1 else None,
        "var": (mg.tensor(x).var(), t.var()) if n > 1 else None,
        "logsumexp": (mg.tensor(x).logsumexp(0), t.logsumexp(0)),
    }
    for name, pair in checks.items():
        if pair is None:
            continue
        got, want = pair
        assert got.dtype == np.float16, name
        a, b = float(got.item()), float(want.item())
        if math.isinf(b):
            assert a == b, (name, a, b)
        else:
            assert a == pytest.approx(b, rel=2e-3, abs=1e-3), (name, a, b)


@pytest.mark.parametrize("method", ["var", "std"])
def test_var_and_std_take_torchs_positional_arguments(method):
    a = np.array([[1.0, 2.0, 9.0], [4.0, 5.0, 2.0], [8.0, 3.0, 1.0]])
    x, t = mg.tensor(a), torch.tensor(a)
    for args in [(0, False), (1, False), (0, True), (1, True, True), (0, False, True), (False,), (True,), ()]:
        got, want = getattr(x, method)(*args), getattr(t, method)(*args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, err_msg=f"{method}{args}")
        got = getattr(mg, method)(x, *args)
        np.testing.assert_allclose(got.numpy(), getattr(torch, method)(t, *args).numpy(), rtol=1e-12)
    keywords = [dict(dim=0, correction=0), dict(dim=1, correction=2, keepdim=True),
                dict(dim=0, unbiased=False)]
    for kw in keywords:
        got, want = getattr(x, method)(**kw), getattr(t, method)(**kw)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    # the issue's case: x.var(0, False) read False as keepdim and divided by n - 1
    if method == "var":
        np.testing.assert_allclose(x.var(0, False).numpy(), a.var(axis=0), rtol=1e-12)


def test_var_refuses_both_unbiased_and_correction():
    x = mg.tensor([1.0, 2.0, 4.0])
    with pytest.raises(TypeError, match="var: give unbiased=False or correction=1, not both"):
        x.var(0, False, correction=1)
    with pytest.raises(TypeError, match="std: unbiased .* must be a bool"):
        x.std(0, 2)
