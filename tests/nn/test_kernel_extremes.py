"""Every fused or fast kernel against its reference composed from primitive Tensor ops, at the
extremes: score gaps up to the dtype's exp limit (~88 in float32, ~709 in float64), huge and
tiny magnitudes, masks that leave one key (or none), both dtypes, forward and backward.

The kernels: attention (the one-pass `Attention`, `PackedAttention`, `TiledAttention`), the core's
softmax and log-softmax, cross entropy (log-softmax + NLL), layer norm and GELU. A fast path
that cannot match its reference here must not be the default. Comparisons are relative to the
largest reference value of each array (`assert_close`): an inf or NaN where the reference is
finite always fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad.nn.functional as F
from minigrad import Tensor
from minigrad.nn.functional import attention_reference

DTYPES = st.sampled_from([np.float32, np.float64])
EXP_LIMIT = {np.float32: 88.0, np.float64: 709.0}  # exp(x) overflows a little past these
TOL = {np.float32: 2e-4, np.float64: 1e-9}  # relative to each array's largest reference value
HUGE = {np.float32: 1e30, np.float64: 1e300}  # magnitudes whose squares overflow the dtype
TINY = {np.float32: 1e-30, np.float64: 1e-300}


pytestmark = pytest.mark.usefixtures("both_kernel_paths")  # numpy and compiled kernels (conftest.py)


def assert_close(got: np.ndarray, want: np.ndarray, tol: float, what: str, floor: float = 0.0) -> None:
    """|got - want| <= tol * max(largest |want|, floor), and finite exactly where want is.
    `floor` is the array's natural size where the true value may cancel to 0 (a gradient
    through a softmax over one key): rounding leaves residues of that size times eps. Values
    below the dtype's normal range (tiny) may round to 0 or lose digits."""
    tiny = float(np.finfo(np.asarray(got).dtype).tiny) * 2**4
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, reference {want.shape}"
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite), f"{what}: {got} where the reference has {want}"
    if not finite.any():
        return
    scale = max(np.abs(want[finite]).max(), floor)
    err = np.abs(got[finite] - want[finite]).max()
    assert err <= tol * scale + tiny, f"{what}: off by {err:.3g} at scale {scale:.3g}\n{got}\n{want}"


def gaps(dtype, shape):
    """Score differences up to (and a little past) the dtype's exp limit, its edges included."""
    lim = EXP_LIMIT[dtype]
    return hnp.arrays(np.float64, shape, elements=st.one_of(
        st.floats(-1.05 * lim, 1.05 * lim),
        st.sampled_from([lim, -lim, 0.97 * lim, -0.97 * lim, 0.0, 1.0])))


def magnitudes(dtype, shape):
    """Values of one sign-and-size pattern times 10**e, e drawn from tiny to huge-but-safe."""
    top = 25 if dtype == np.float32 else 250
    return st.tuples(hnp.arrays(np.float64, shape, elements=st.floats(-2, 2)),
                     st.sampled_from([-top, -8, 0, 3, top])).map(lambda a: a[0] * 10.0 ** a[1])


def keeping_masks(tq, tk):
    """None or a bool (Tq, Tk) mask: rows that keep exactly one key (not always key 0), and
    sometimes a row that keeps none."""
    def build(choice):
        kind, keys, empty_row = choice
        if kind == "none":
            return None
        allowed = np.zeros((tq, tk), bool)
        allowed[np.arange(tq), np.asarray(keys[:tq]) % tk] = True
        if kind == "some":
            allowed[:, : max(1, tk // 2)] |= True
        if empty_row is not None:
            allowed[empty_row % tq] = False
        return allowed
    return st.tuples(st.sampled_from(["none", "one", "some"]),
                     st.lists(st.integers(0, 7), min_size=tq, max_size=tq),
                     st.none() | st.integers(0, 7)).map(build)


@st.composite
def attention_extremes(draw, self_attention=False):
    """q, k, v (float32 or float64) whose scores S = q k^T are exactly the drawn matrix:
    k is the identity (d = Tk) and q holds S, each row a base score plus gaps up to the exp
    limit (key 0 at the base); values and the upstream gradient from tiny to huge."""
    dtype = draw(DTYPES)
    tq = draw(st.integers(1, 3))
    tk = tq if self_attention else draw(st.integers(1, 4))
    base = draw(hnp.arrays(np.float64, (tq, 1), elements=st.sampled_from([0.0, -30.0, 50.0, 1e-3])))
    g = draw(gaps(dtype, (tq, tk)))
    g[:, 0] = 0
    if draw(st.booleans()):  # tiny scores: a uniform softmax
        g *= TINY[dtype]
    q = (base + g).astype(dtype)
    k = np.eye(tk, dtype=dtype)
    dv = tk if self_attention else draw(st.integers(1, 3))
    v = draw(magnitudes(dtype, (tk, dv))).astype(dtype)
    mask = draw(keeping_masks(tq, tk))
    causal = draw(st.booleans())
    top = 5 if dtype == np.float32 else 50  # g * v stays inside the dtype in the reference too
    up = draw(hnp.arrays(np.float64, (tq, dv), elements=st.floats(-2, 2))) * 10.0 ** draw(
        st.sampled_from([-top, 0, top]))
    return q, k, v, mask, causal, up.astype(dtype)


def _grads(fn, arrays, g):
    ts = [Tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(g)
    return [out.numpy()] + [t.grad for t in ts]


def _sizes(q, k, v, g):
    """The natural size of out, dq, dk, dv: |v|, |g| |v| |q or k| (twice), |g|, with one
    factor of the number of terms summed."""
    top = [float(np.abs(a).max(initial=0)) for a in (q, k, v, g)]
    n = max(q.shape[-2], k.shape[-2], v.shape[-1], 1)
    dq = n * n * top[3] * top[2] * max(top[0], top[1], 1.0)
    return [top[2], dq, dq, n * top[3]]


def _compare(fast, ref, arrays, g, what):
    dtype = arrays[0].dtype.type
    got, want = _grads(fast, arrays, g), _grads(ref, arrays, g)
    for name, a, b, size in zip(("out", "dq", "dk", "dv"), got, want, _sizes(*arrays, g)):
        assert_close(a, b, TOL[dtype], f"{what} {name} ({dtype.__name__})", floor=size * 1e-3)


@given(attention_extremes())
def test_one_pass_attention_matches_reference_at_the_extremes(case):
    q, k, v, mask, causal, g = case
    kw = dict(mask=mask, is_causal=causal, scale=1.0)
    _compare(lambda *t: F.scaled_dot_product_attention(*t, **kw),
             lambda *t: attention_reference(*t, **kw), [q, k, v], g, "sdpa")


@given(attention_extremes(), st.integers(1, 3), st.integers(1, 3))
def test_tiled_attention_matches_reference_at_the_extremes(case, bq, bk):
    q, k, v, mask, causal, g = case
    kw = dict(mask=mask, is_causal=causal, scale=1.0)
    _compare(lambda *t: F.tiled_attention(*t, block_size=(bq, bk), **kw),
             lambda *t: attention_reference(*t, **kw), [q, k, v], g, "tiled")


@given(attention_extremes(self_attention=True), st.integers(1, 2))
def test_packed_attention_matches_reference_at_the_extremes(case, heads):
    """PackedAttention on qkv (1, T, 3 H D) built from H copies of the drawn q, k, v (one
    head's scores scaled by 1/2, so that heads differ), against the split-attend-merge pipeline
    composed from Tensor ops."""
    q, k, v, mask, causal, g = case
    T = q.shape[0]
    heads_q = np.stack([q * q.dtype.type(0.5 ** h) for h in range(heads)])[None]  # (1, H, T, D)
    heads_k = np.broadcast_to(k, (1, heads, T, T))
    heads_v = np.stack([v] * heads)[None]

    def merged(x):  # (1, H, T, D) -> (1, T, H D)
        return x.transpose(0, 2, 1, 3).reshape(1, T, heads * T)

    qkv = np.concatenate([merged(x) for x in (heads_q, heads_k, heads_v)], axis=-1)
    up = np.concatenate([g] * heads, axis=-1)[None]  # (1, T, H D)
    kw = dict(mask=mask, is_causal=causal, scale=1.0)

    def reference(x):
        E = heads * T
        parts = [x[:, :, i * E:(i + 1) * E].reshape(1, T, heads, T).transpose(1, 2) for i in range(3)]
        return attention_reference(*parts, **kw).transpose(1, 2).reshape(1, T, E)

    dtype = q.dtype.type
    got = _grads(lambda x: F.packed_self_attention(x, heads, **kw), [qkv], up)
    want = _grads(reference, [qkv], up)
    sizes = _sizes(q, k, v, g)
    for name, a, b, size in zip(("out", "dqkv"), got, want, (sizes[0], max(sizes[1:]))):
        assert_close(a, b, TOL[dtype], f"packed {name} ({dtype.__name__})", floor=size * 1e-3)


# ----------------------------------------------------------------------------- softmax family


@st.composite
def logit_rows(draw, allow_masked=True):
    """(rows, C) logits: a base (tiny to huge) plus gaps up to the exp limit; with -inf
    entries that may leave a single finite one per row."""
    dtype = draw(DTYPES)
    rows, C = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    base = draw(st.sampled_from([0.0, 1e-3, -500.0, 1e4, HUGE[dtype] / 100, -HUGE[dtype] / 100]))
    x = base + draw(gaps(dtype, (rows, C)))
    if abs(base) < 1e5 and draw(st.booleans()):  # (a huge base times huge would overflow)
        x = x * draw(st.sampled_from([TINY[dtype], HUGE[dtype] / 1e3]))
    if allow_masked and draw(st.booleans()):
        keep = draw(hnp.arrays(np.int64, (rows,), elements=st.integers(0, C - 1)))
        hide = draw(hnp.arrays(np.bool_, (rows, C)))
        hide[np.arange(rows), keep] = False  # every row keeps at least one logit
        x = np.where(hide, -np.inf, x)
    up = draw(hnp.arrays(np.float64, (rows, C), elements=st.floats(-2, 2)))
    return x.astype(dtype), up.astype(dtype)


def _row_max(x: Tensor) -> Tensor:
    """The rows' max as a constant (softmax does not depend on the reference subtracted)."""
    return Tensor(np.max(x.numpy(), axis=-1, keepdims=True))


def softmax_reference(x: Tensor) -> Tensor:
    e = (x - _row_max(x)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def log_softmax_reference(x: Tensor) -> Tensor:
    shifted = x - _row_max(x)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


@given(logit_rows())
def test_softmax_matches_reference_at_the_extremes(case):
    x, g = case
    dtype = x.dtype.type
    got = _grads(lambda t: t.softmax(dim=-1), [x], g)
    want = _grads(softmax_reference, [x], g)
    for name, a, b, floor in zip(("softmax", "dx"), got, want, (0.0, np.abs(g).max())):
        assert_close(a, b, TOL[dtype], f"{name} ({dtype.__name__})", floor)


@given(logit_rows())
def test_log_softmax_matches_reference_at_the_extremes(case):
    x, g = case
    dtype = x.dtype.type
    got = _grads(lambda t: t.log_softmax(dim=-1), [x], g)
    want = _grads(log_softmax_reference, [x], g)
    finite = np.abs(x[np.isfinite(x)])
    for name, a, b, floor in zip(("log_softmax", "dx"), got, want, (finite.max() * 1e-3, np.abs(g).max())):
        assert_close(a, b, TOL[dtype], f"{name} ({dtype.__name__})", floor)


@given(logit_rows(allow_masked=False), st.data(), st.sampled_from([0.0, 0.1]),
       st.sampled_from(["mean", "sum", "none"]))
def test_cross_entropy_matches_reference_at_the_extremes(case, data, smoothing, reduction):
    """The CrossEntropy kernel (log-softmax + NLL in one node) against -log_softmax gathered."""
    x, _ = case
    rows, C = x.shape
    t = np.asarray(data.draw(st.lists(st.integers(0, C - 1), min_size=rows, max_size=rows)))
    g = np.ones(rows, x.dtype) * 0.7 if reduction == "none" else np.asarray(0.7, x.dtype)

    def reference(z):
        logp = log_softmax_reference(z)
        loss = -logp[np.arange(rows), t] * (1 - smoothing) - logp.mean(dim=-1) * smoothing
        return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.sum() / rows

    dtype = x.dtype.type
    got = _grads(lambda z: F.cross_entropy(z, Tensor(t), reduction=reduction, label_smoothing=smoothing),
                 [x], g)
    want = _grads(reference, [x], g)
    for name, a, b, floor in zip(("loss", "dx"), got, want, (np.abs(x).max() * 1e-3, 0.7)):
        assert_close(a, b, TOL[dtype], f"cross entropy {name} ({dtype.__name__})", floor)


# ----------------------------------------------------------------------------- layer norm, GELU


def layer_norm_reference(x: Tensor, weight: Tensor) -> Tensor:
    mu = x.mean(dim=-1, keepdim=True)
    d = x - mu
    return d / ((d * d).mean(dim=-1, keepdim=True) + 1e-5).sqrt() * weight


@given(DTYPES, st.integers(1, 3), st.integers(1, 5), st.data())
def test_layer_norm_matches_reference_at_the_extremes(dtype, rows, features, data):
    """Rows from tiny to past sqrt(max) (where (x - mu)^2 overflows the dtype), constant rows
    included; the reference runs in float64 on the same values, scaled down by c = 2**500 for
    float64 inputs near 1e300 (layer norm of c x with eps equals that of x with eps / c^2), so
    that it cannot overflow. A power of 2 scales exactly: a constant row stays constant."""
    x = data.draw(hnp.arrays(np.float64, (rows, features), elements=st.sampled_from([1.0, -2.0, 0.5, 3.0])
                             | st.floats(-3, 3)))
    size = data.draw(st.sampled_from([TINY[dtype], 1.0, 1e3, HUGE[dtype]]))
    x = (x * size).astype(dtype)
    w = data.draw(hnp.arrays(np.float64, (features,), elements=st.floats(-2, 2))).astype(dtype)
    g = data.draw(hnp.arrays(np.float64, (rows, features), elements=st.floats(-2, 2))).astype(dtype)
    got = _grads(lambda a, b: F.layer_norm(a, features, b), [x, w], g)
    c = 2.0**500 if size == HUGE[np.float64] and dtype == np.float64 else 1.0  # squares of 1e150: in range
    x64 = x.astype(np.float64) / c

    def reference(a, b):
        mu = a.mean(dim=-1, keepdim=True)
        d = a - mu
        return d / ((d * d).mean(dim=-1, keepdim=True) + 1e-5 / c / c).sqrt() * b

    want = _grads(reference, [x64, w.astype(np.float64)], g.astype(np.float64))
    want[1] = want[1] / c  # d/dx of f(x / c) is f'(x / c) / c
    # float32 rows near their resolution lose digits in x - mu in both; compare at float32's
    tol = 5e-3 if dtype == np.float32 else 1e-7
    # dx may cancel to 0 (equal weights and gradients): its natural size is |g| |w| / sigma
    rstd = 1 / np.sqrt(x64.var(axis=-1).min() + 1e-5 / c / c) / c
    floors = (1.0, np.abs(g).max() * np.abs(w).max() * rstd * 1e-3, np.abs(g).max() * 1e-3)
    for name, a, b, floor in zip(("y", "dx", "dw"), got, want, floors):
        assert_close(a, b, tol, f"layer norm {name} ({dtype.__name__}, |x| ~ {size:g})", floor)


def gelu_reference(x: np.ndarray, g: np.ndarray, approximate: str) -> list[np.ndarray]:
    """(y, dx) in float64. The tanh form is composed from Tensor ops; the exact form, which
    needs erf (no core op), is x Phi(x) with dy/dx = Phi(x) + x phi(x) from math.erf. For
    |x| > 1e3 the cubic would overflow, and GELU is x or 0 to the last digit there, slope 1 or
    0: those limits are used."""
    moderate = np.abs(x) <= 1e3
    xm = np.where(moderate, x, 0.0)
    if approximate == "tanh":
        def f(t):
            u = (t + t**3 * 0.044715) * math.sqrt(2 / math.pi)
            return t * 0.5 * (u.tanh() + 1)
        y, dx = _grads(f, [xm], g)
    else:
        phi_cdf = 0.5 * (1 + np.vectorize(math.erf)(xm * math.sqrt(0.5)))
        y = xm * phi_cdf
        dx = g * (phi_cdf + xm * np.exp(-0.5 * xm * xm) / math.sqrt(2 * math.pi))
    big = ~moderate & (x > 0)
    return [np.where(big, x, y), np.where(big, g, np.where(moderate, dx, 0.0))]


@given(DTYPES, st.sampled_from(["none", "tanh"]), st.data())
def test_gelu_matches_reference_at_the_extremes(dtype, approximate, data):
    lim = 1e30 if dtype == np.float32 else 1e300
    x = data.draw(hnp.arrays(np.float64, (6,), elements=st.sampled_from([lim, -lim, 1e20, -1e20, 40.0, -40.0,
                                                                         1e-30, -1e-30, 0.0, 3.0, -3.0])
                             | st.floats(-10, 10)))
    x = x.astype(dtype)
    g = data.draw(hnp.arrays(np.float64, (6,), elements=st.floats(-2, 2))).astype(dtype)
    got = _grads(lambda t: F.gelu(t, approximate=approximate), [x], g)
    want = gelu_reference(x.astype(np.float64), g.astype(np.float64), approximate)
    tol = 1e-5 if dtype == np.float32 else 1e-9
    # Phi(x) = (1 + erf) / 2 cancels for x < 0: an absolute error of the dtype's resolution
    # times |x| (both forms, and the reference's formula too), not a relative one
    moderate = np.abs(x[np.abs(x) <= 1e3]).max(initial=0.0)
    for name, a, b, floor in zip(("gelu", "dx"), got, want, (moderate, np.abs(g).max())):
        assert_close(a, b, tol, f"{name} {approximate} ({dtype.__name__})", floor * 0.1)
