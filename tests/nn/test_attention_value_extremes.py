"""Attention whose values lie near the dtype's largest number: the output, a weighted mean of
the values, is finite, though sums of unnormalised weights times values are not.

The one-pass kernel weighs the keys against the row's first score, E_ij = exp(S_ij - S_i0),
and divides E V by the row sum l at the end. With l well inside its bound (scores a few units
apart) E V still overflows when |V| is near the dtype's maximum: the kernel must see that
(`isfinite(E @ V)`) and start again with the row max, whatever the path (one query or many,
no mask, causal, a boolean mask), the tiled kernel and the packed one likewise. The reference
is the softmax with the row max in float64, on V scaled down by a power of two (exact), and
scaled back: the result is linear in V, and its gradients with respect to q and k too.
"""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.nn.attention.one_block import _max_total

DTYPES = [np.float16, np.float32, np.float64]
TOL = {np.float16: 4e-3, np.float32: 2e-6, np.float64: 1e-12}


def _case(dtype, tq: int):
    """q (tq, 1), k (3, 1), v (3, 2) with scores S_ij = q_i k_j a few units apart (row sums
    l_i below `_max_total`), values 0.3-0.6 of the dtype's maximum, so that E V overflows."""
    top = float(np.finfo(dtype).max)
    q = np.linspace(1.0, 1.5, tq)[:, None].astype(dtype)
    k = np.array([[0.0], [1.0], [1.5]], dtype)
    v = (top * np.array([[0.5, -0.6], [0.6, 0.4], [0.55, -0.3]])).astype(dtype)
    return q, k, v


def _reference(q, k, v, allowed, g):
    """(O, dq, dk, dv) of softmax(q k^T, masked) v in float64 with the row max; v and g are
    scaled down by powers of two first, the results scaled back (in float64, then the dtype)."""
    dtype = q.dtype
    c = 2.0 ** (np.finfo(dtype).maxexp - 1)
    cg = 2.0 ** int(np.ceil(np.log2(max(np.abs(g).max(), 1.0))))
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    vs, gs = v.astype(np.float64) / c, g.astype(np.float64) / cg
    s = q64 @ k64.T
    s = np.where(allowed, s, -np.inf)
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a /= a.sum(axis=-1, keepdims=True)
    out = a @ vs
    da = gs @ vs.T
    ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
    with np.errstate(over="ignore"):  # a true gradient past the dtype's range is inf
        return [(x * f).astype(dtype) for x, f in
                ((out, c), (ds @ k64, c * cg), (ds.T @ q64, c * cg), (a.T @ gs, cg))]


def _assert_matches(got, want, what, size):
    """|got - want| <= tol * max(largest |want|, size), finite exactly where want is; `size` is
    the array's natural size (a gradient may cancel far below it, to what rounding leaves)."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want64)
    assert np.array_equal(np.isfinite(got64), finite), f"{what}: {got} where the reference has {want}"
    scale = max(np.abs(want64[finite]).max(initial=0.0), size)
    err = np.abs(got64[finite] - want64[finite]).max(initial=0.0)
    assert err <= TOL[got.dtype.type] * scale, f"{what}: off by {err:.3g} at scale {scale:.3g}"


def _sizes(q, k, v, g):
    """The natural size of O, dq, dk, dv: |v|, |g| |v| |k or q| dv (twice), |g| Tk."""
    top = [float(np.abs(a.astype(np.float64)).max()) for a in (q, k, v, g)]
    dq = top[3] * top[2] * max(top[0], top[1]) * v.shape[-1]
    return [top[2], dq, dq, top[3] * k.shape[-2]]


def _masks(tq: int):
    """{how: (mask, is_causal, allowed)}; in each, key 0 is allowed for every row (so the
    first-key reference applies) and some row sees more keys than key 0."""
    keep = np.ones((tq, 3), bool)
    keep[:, 1] = False
    masks = {"none": (None, False, np.ones((tq, 3), bool)), "bool-mask": (keep, False, keep)}
    if tq > 1:  # top-left causal: query 0 sees key 0 only, query 2 all three
        masks["causal"] = (None, True, np.tri(tq, 3, dtype=bool))
    return masks


CASES = [(1, "none"), (1, "bool-mask"), (3, "none"), (3, "bool-mask"), (3, "causal")]
PATHS = {
    "sdpa": lambda q, k, v, mask, causal: F.scaled_dot_product_attention(
        q, k, v, mask=mask, is_causal=causal, scale=1.0),
    "tiled": lambda q, k, v, mask, causal: F.tiled_attention(
        q, k, v, mask=mask, is_causal=causal, scale=1.0, block_size=(2, 2)),
}
# The upstream gradient: g V^T (dA) stays inside the dtype, as it must in any backward.
G = 0.25


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("tq, how", CASES, ids=[f"{tq}q-{how}" for tq, how in CASES])
@pytest.mark.parametrize("path", list(PATHS))
def test_values_near_the_dtype_max_give_the_finite_weighted_mean(dtype, tq, how, path):
    q, k, v = _case(dtype, tq)
    mask, causal, allowed = _masks(tq)[how]
    s = q.astype(np.float64) @ k.astype(np.float64).T
    e = np.where(allowed, np.exp(s - s[:, :1]), 0)  # the first-key weights
    assert (e.sum(axis=-1) <= _max_total(np.dtype(dtype))).all()  # row sums within bounds,
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(e.astype(dtype) @ v).all()  # while E V is not
    g = np.full((tq, 2), G, dtype)
    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = PATHS[path](*ts, mask, causal)
    out.backward(g)
    want = _reference(q, k, v, allowed, g)
    assert all(np.isfinite(w).all() for w in want)
    got = [out.numpy()] + [t.grad for t in ts]
    for name, a, b, size in zip(("out", "dq", "dk", "dv"), got, want, _sizes(q, k, v, g)):
        assert a.dtype == dtype, f"{name}: {a.dtype}"
        _assert_matches(a, b, f"{path} {how} {name}", size)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("heads", [1, 2])
def test_packed_attention_with_values_near_the_dtype_max(dtype, heads):
    """PackedAttention (causal) on qkv (1, 3, 3 H D), every head the case's q, k, v, D = dv = 2."""
    q, k, v = _case(dtype, 3)
    d = v.shape[1]
    q2, k2 = np.pad(q, ((0, 0), (0, d - 1))), np.pad(k, ((0, 0), (0, d - 1)))  # scores unchanged
    qkv = np.concatenate([np.tile(x, heads) for x in (q2, k2, v)], axis=-1)[None]
    x = mg.tensor(qkv, requires_grad=True)
    out = F.packed_self_attention(x, heads, is_causal=True, scale=1.0)
    g = np.full((3, d), G, dtype)
    out.backward(np.tile(g, heads)[None])
    want = _reference(q, k, v, np.tri(3, 3, dtype=bool), g)
    sizes = _sizes(q, k, v, g)
    e = heads * d
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        got = [out.numpy()[0, :, cols], x.grad[0, :, cols][:, :1],
               x.grad[0, :, e:2 * e][:, cols][:, :1], x.grad[0, :, 2 * e:][:, cols]]
        for name, a, b, size in zip(("out", "dq", "dk", "dv"), got, want, sizes):
            _assert_matches(a, b, f"packed head {h} {name}", size)
