"""The compiled loop kernels (minigrad.runtime.compiled) against their numpy references: every
fused op that has a loop form is run forward and backward with `compiled.using(True)` and with
`compiled.using(False)` on the same inputs, and the two must agree, values and every gradient.

Adding a kernel is one entry in CASES (a `Case`: how to draw its inputs, how to run it, the
natural size of each output, and the names of its loop kernels). The edge tests below it hold
both paths to the exact results at the extremes (constant rows, overflowing variances, inf and
NaN, GELU at huge |x|), measure the tanh GELU's accuracy against float64, check that a result
does not depend on the thread count, and that the off switches really switch the loops off.

Softmax and log_softmax over the last axis are Cases too; cross entropy and embedding's
backward (integer targets and ids, which a Case cannot draw) and Adam's update (an optimizer,
not an op) have their own tests below in the same style.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.nn.activation as activation
import minigrad.nn.functional as F
import minigrad.nn.normalization as normalization
import minigrad.nn.sparse as sparse
import minigrad.ops.reduce as reduce_ops
import minigrad.optim as optim
import minigrad.optim.optimizers as optimizers
from minigrad.runtime import compiled

if not compiled.available():
    pytest.importorskip("numba", reason="the compiled kernels need numba: pip install numba (the fast extra)")

ROOT = Path(__file__).resolve().parents[2]
EPS = 1e-5  # layer norm's eps in every test here


def grads(fn: Callable[..., mg.Tensor], arrays, g, flag: bool) -> list[np.ndarray]:
    """[fn(*arrays), d/d each array] for upstream gradient g, on the compiled path (flag) or not."""
    with compiled.using(flag):
        ts = [mg.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*ts)
        out.backward(mg.tensor(g))
        return [out.numpy()] + [t.grad.numpy() for t in ts]


def both(fn, arrays, g) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(compiled results, numpy results) of `grads`."""
    return grads(fn, arrays, g, True), grads(fn, arrays, g, False)


def assert_agree(got, want, tol: float, scale, what: str) -> None:
    """Same shape and dtype, NaN and inf exactly where `want` has them, and elsewhere
    |got - want| <= tol * scale (scale: the natural size of the value, an array or a number)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype}{got.shape}, numpy path {want.dtype}{want.shape}")
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN at other places\n{got}\n{want}"
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), f"{what}: infs"
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    bound = tol * np.broadcast_to(np.asarray(scale, np.float64), want.shape)
    err = np.abs(g64 - w64)
    bad = finite & ~(err <= bound)
    assert not bad.any(), (f"{what}: off by {err[bad].max():.3g} (allowed {bound[bad].min():.3g}) at "
                           f"{np.argwhere(bad)[:5].tolist()}\ncompiled {got[bad][:5]}\n"
                           f"numpy    {want[bad][:5]}")


# ----------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """A fused op with a compiled loop form.

    inputs(shape, dtype): a strategy of (arrays, upstream gradient); run(*tensors): the op;
    scales(arrays, g): the natural size of each of [output, *gradients] (what `tol` is relative
    to); tol: per dtype; shapes: a strategy of input shapes, and `edges` the shapes that must
    always run (one row, one feature, 0-d, ...); kernels: (module, name) of each loop kernel the
    compiled path calls on these inputs."""

    name: str
    dtypes: tuple
    shapes: st.SearchStrategy
    edges: tuple
    inputs: Callable[[tuple, type], st.SearchStrategy]
    run: Callable[..., mg.Tensor]
    scales: Callable[..., list]
    tol: dict
    kernels: tuple
    compiled_dtypes: tuple  # the dtypes the loop form takes (others run numpy on both paths)


def _floats(dtype, lo, hi):
    return st.floats(lo, hi, width=32 if dtype == np.float32 else 64)


# Layer norm. The compiled loop sums in float64 whatever the dtype, the numpy path in the dtype,
# so for float32 the two differ by float32's rounding of the numpy path: rtol 1e-5 (~80 ulp;
# the differences measured are ~5e-7 on values ~1). Relative to each term's size: y = x_hat w + b,
# dx = rstd (gx - mean gx - x_hat mean(gx x_hat)) with gx = g w, dw and db sums of g x_hat and g
# over the rows. And the numpy path rounds the row mean to float32 before x - mu, an absolute
# error of ulp(max|x|) rstd in x_hat: the row's condition 1 + max|x| rstd (1 for rows well above
# eps, up to 316 |x| for near-constant ones), counted as RESOLUTION (1/20: 1e-5 / 20 = 8 float32
# ulps) of it added to |x_hat|. float64: both sum in float64, 1e-12 (measured ~1e-15).
RESOLUTION = 0.05


def _ln_inputs(shape, dtype):
    n = shape[-1]
    values = st.one_of(_floats(dtype, -4, 4), st.sampled_from([0.0, 1.0, -2.5, 1e-3]))
    return st.tuples(
        st.tuples(hnp.arrays(dtype, shape, elements=values),
                  hnp.arrays(dtype, (n,), elements=_floats(dtype, -2, 2)),
                  hnp.arrays(dtype, (n,), elements=_floats(dtype, -2, 2))),
        hnp.arrays(dtype, shape, elements=_floats(dtype, -2, 2)))


def _ln_run(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def _ln_scales(arrays, g):
    x, w, b = (a.astype(np.float64) for a in arrays)
    n = x.shape[-1]
    x2, g2 = x.reshape(-1, n), g.astype(np.float64).reshape(-1, n)
    with np.errstate(all="ignore"):  # (inf or NaN rows: their scale is not used)
        d = x2 - x2.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt((d * d).mean(axis=1, keepdims=True) + EPS)
        h = np.abs(d * rstd)  # |x_hat|
        cond = (1 + np.abs(x2).max(axis=1, keepdims=True) * rstd) * RESOLUTION
        gw = np.abs(g2 * w)
        y = (h + cond) * np.abs(w) + np.abs(b)
        hc = h + cond
        dx = rstd * (gw + gw.mean(axis=1, keepdims=True) + hc * (gw * hc).mean(axis=1, keepdims=True))
        dw = (np.abs(g2) * (h + cond)).sum(axis=0)
        db = np.abs(g2).sum(axis=0)
    return [a + 1e-30 for a in (y.reshape(x.shape), dx.reshape(x.shape), dw, db)]


LAYER_NORM = Case(
    name="layer_norm",
    dtypes=(np.float32, np.float64),
    shapes=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6).map(
        lambda s: s[:-1] + (s[-1] * 3 - 2,)),  # features 1, 4, ..., 16 with the leading dims (B, T, C)
    edges=((1,), (1, 1), (5, 1), (1, 7), (2, 3, 1), (2, 3, 8)),
    inputs=_ln_inputs,
    run=_ln_run,
    scales=_ln_scales,
    tol={np.float32: 1e-5, np.float64: 1e-12},
    kernels=((normalization, "_normalize_loop"), (normalization, "_normalize_grad_loop")),
    compiled_dtypes=(np.float32, np.float64),
)


# GELU, tanh form. The loop computes in float64 and rounds once (within 0.5 ulp of the truth,
# measured below); the numpy path computes in float32 and 1 + tanh(u) cancels for x < 0, an
# absolute error of about float32's eps times |x|. GELU is x times a number in [0, 1], so |x|
# is y's natural size; dy/dx = (1 + t)(1/2 + (1 - t) x du / 2) has terms up to about 1 + |x|
# (times |g|). rtol 1e-5 of those (differences measured: 4.8e-7 and 1.3e-6 over [-12, 12]).
# float64 takes the numpy path on both (the loop is float32 only): they must agree to 1e-12.


def _gelu_inputs(shape, dtype):
    values = st.one_of(_floats(dtype, -12, 12), st.sampled_from([0.0, 1e-30, -1e-30, 3.0, -3.0, 40.0, -40.0]))
    return st.tuples(st.tuples(hnp.arrays(dtype, shape, elements=values)),
                     hnp.arrays(dtype, shape, elements=_floats(dtype, -2, 2)))


def _gelu_scales(arrays, g):
    x = np.abs(arrays[0].astype(np.float64))
    return [x + 1e-38, np.abs(g.astype(np.float64)) * (1 + x) + 1e-38]


GELU_TANH = Case(
    name="gelu_tanh",
    dtypes=(np.float32, np.float64),
    shapes=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=8),
    edges=((), (1,), (1, 1), (2, 3, 5), (300,)),
    inputs=_gelu_inputs,
    run=lambda x: F.gelu(x, approximate="tanh"),
    scales=_gelu_scales,
    tol={np.float32: 1e-5, np.float64: 1e-12},
    kernels=((activation, "_gelu_tanh_loop"), (activation, "_gelu_tanh_grad_loop")),
    compiled_dtypes=(np.float32,),
)

# Softmax over the last axis. Both paths shift by the same row max (the same float subtraction)
# and take numpy's exp of the same numbers, so they differ only in the row sum and the scaling:
# the loop sums in float64 whatever the dtype and multiplies by 1/s (rounded once to the dtype),
# numpy sums in the dtype (pairwise) and divides. For float32 that is numpy's rounding of a sum
# of at most 15 positive terms, a few ulp of z: rtol 2e-6 (~16 ulp; measured 3.8e-7) of z itself
# (z in [0, 1]; relative, because tiny weights are computed as accurately as large ones).
# dx = z (g - sum g z) relative to z (|g| + sum |g z|), the size of its terms before they cancel.
# float64: 1e-12 (measured 9e-16). (FLOOR: an absolute floor under subnormal float32 weights.)
FLOOR = 1e-30


def _softmax_values(dtype):
    return st.one_of(_floats(dtype, -30, 30), st.sampled_from([0.0, 1.0, -1.0, 50.0, -50.0, -np.inf]))


def _row_inputs(shape, dtype):
    return st.tuples(st.tuples(hnp.arrays(dtype, shape, elements=_softmax_values(dtype))),
                     hnp.arrays(dtype, shape, elements=_floats(dtype, -2, 2)))


def _softmax_truth(x: np.ndarray) -> np.ndarray:
    """softmax over the last axis in float64 (a row of -inf: zeros)."""
    v = x.astype(np.float64)
    with np.errstate(all="ignore"):
        m = v.max(axis=-1, keepdims=True)
        e = np.exp(v - np.where(np.isfinite(m), m, 0))
        s = e.sum(axis=-1, keepdims=True)
        return np.nan_to_num(e / np.where(s == 0, 1, s), nan=1.0)


def _softmax_scales(arrays, g):
    z = _softmax_truth(arrays[0])
    a = np.abs(g.astype(np.float64))
    return [z + FLOOR, z * (a + (a * z).sum(axis=-1, keepdims=True)) + FLOOR]


SOFTMAX = Case(
    name="softmax",
    dtypes=(np.float32, np.float64),
    shapes=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=8).map(
        lambda s: s[:-1] + (s[-1] * 2 - 1,)),  # classes 1, 3, ..., 15 with leading dims
    edges=((1,), (1, 1), (6, 1), (1, 9), (2, 3, 1), (2, 3, 8)),
    inputs=_row_inputs,
    run=lambda x: x.softmax(-1),
    scales=_softmax_scales,
    tol={np.float32: 2e-6, np.float64: 1e-12},
    kernels=((reduce_ops, "_shift_by_max_loop"), (reduce_ops, "_normalize_sum_loop"),
             (reduce_ops, "_softmax_grad_loop")),
    compiled_dtypes=(np.float32, np.float64),
)


# log_softmax over the last axis: y = (x - m) - log s. The shift and the exp are the same on both
# paths; the loop sums in float64 and takes a float64 log, numpy both in the dtype: for float32
# an absolute error in log s of about n ulp of 1 (a relative error of the sum) plus the rounding
# of y itself, so rtol 2e-6 of |y| + 1 (measured 2.4e-7). The backward is numpy's on both paths,
# dx = g - exp(y) sum g, on each path's y: exp(y)'s relative error is y's absolute one, so dx is
# relative to |g| + exp(y) (|y| + 1) sum |g|. float64: 1e-12 (measured 4e-16). A row of -inf
# gives NaN on both (-inf - log 0).


def _log_softmax_scales(arrays, g):
    z = _softmax_truth(arrays[0])
    with np.errstate(all="ignore"):
        y = np.nan_to_num(np.log(z), nan=0.0, neginf=0.0)
    a = np.abs(g.astype(np.float64))
    return [np.abs(y) + 1, a + z * (np.abs(y) + 1) * a.sum(axis=-1, keepdims=True) + FLOOR]


LOG_SOFTMAX = Case(
    name="log_softmax",
    dtypes=(np.float32, np.float64),
    shapes=SOFTMAX.shapes,
    edges=SOFTMAX.edges,
    inputs=_row_inputs,
    run=lambda x: F.log_softmax(x, dim=-1),
    scales=_log_softmax_scales,
    tol={np.float32: 2e-6, np.float64: 1e-12},
    kernels=((reduce_ops, "_shift_by_max_loop"), (reduce_ops, "_subtract_log_sum_loop")),
    compiled_dtypes=(np.float32, np.float64),
)

CASES = [LAYER_NORM, GELU_TANH, SOFTMAX, LOG_SOFTMAX]
# (each a parametrization: a case, and a dtype its loop form takes)
COMPILED = [pytest.param(c, d, id=f"{c.name}-{d.__name__}") for c in CASES for d in c.compiled_dtypes]
ALL = [pytest.param(c, d, id=f"{c.name}-{d.__name__}") for c in CASES for d in c.dtypes]
EDGES = [pytest.param(c, d, s, id=f"{c.name}-{d.__name__}-{s}") for c in CASES for d in c.dtypes
         for s in c.edges]


def check_case(case: Case, dtype, arrays, g) -> None:
    got, want = both(case.run, arrays, g)
    names = ["out"] + [f"d{i}" for i in range(len(arrays))]
    for name, a, b, scale in zip(names, got, want, case.scales(arrays, g)):
        what = f"{case.name} {name} ({dtype.__name__}, {arrays[0].shape})"
        assert_agree(a, b, case.tol[dtype], scale, what)


@pytest.mark.parametrize("case, dtype", ALL)
@given(data=st.data())
def test_compiled_kernel_agrees_with_numpy(case, dtype, data):
    shape = data.draw(case.shapes, label="shape")
    arrays, g = data.draw(case.inputs(shape, dtype), label="inputs")
    check_case(case, dtype, arrays, g)


@pytest.mark.parametrize("case, dtype, shape", EDGES)
@settings(max_examples=5)
@given(data=st.data())
def test_compiled_kernel_agrees_with_numpy_at_edge_shapes(case, dtype, shape, data):
    arrays, g = data.draw(case.inputs(shape, dtype), label="inputs")
    check_case(case, dtype, arrays, g)


# ----------------------------------------------------------------------------- layer norm at the extremes


def _ln(x, w=None, b=None):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


@pytest.mark.parametrize("flag", [False, True], ids=["numpy", "compiled"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight", ["constant", "none"])
def test_layer_norm_constant_rows_are_exact(flag, dtype, weight):
    """A constant row: x_hat = 0 exactly, so y = b exactly and dw = 0; with a constant g * w
    dx = 0 exactly (not a rounding residue divided by sqrt(eps))."""
    n = 768
    x = np.array([123456.789, -0.001, 3.0, 1e30], dtype)[:, None].repeat(n, axis=1)
    g = np.array([0.3, -0.9, 1 / 3, 2.0], dtype)[:, None].repeat(n, axis=1)
    b = np.random.default_rng(0).standard_normal(n).astype(dtype)
    if weight == "none":
        y, dx = grads(_ln, [x], g, flag)
        assert np.array_equal(y, np.zeros_like(x)), "y of a constant row is not 0"
    else:
        w = np.full(n, 0.7, dtype)
        y, dx, dw, db = grads(_ln, [x, w, b], g, flag)
        assert np.array_equal(y, np.broadcast_to(b, x.shape)), "y of a constant row is not the bias"
        assert np.array_equal(dw, np.zeros(n, dtype)), f"dw off 0 by {np.abs(dw).max():.3g}"
    assert dx.dtype == dtype
    worst = np.abs(dx).max(axis=1)
    assert not worst.any(), f"dx of constant rows (by row) is not 0 but up to {worst} ({dtype.__name__})"


@pytest.mark.parametrize("rows", [[1e200, 1e200, 1e200], [1e200, -3e200, 2e199, 5e200], [1e300, -1e300, 7.0]])
def test_layer_norm_overflowing_variance_matches_numpy(rows):
    """float64 rows whose squares overflow (var = inf in the loop) are redone by the scaled path:
    finite, and what the numpy path gives. Mixed with ordinary rows of the same width."""
    n = len(rows)
    rng = np.random.default_rng(len(rows))
    x = np.stack([np.array(rows), rng.standard_normal(n), np.array(rows[::-1]) * -0.5])
    w, b, g = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(x.shape)
    got, want = both(_ln, [x, w, b], g)
    for name, a, c, scale in zip(("y", "dx", "dw", "db"), got, want, _ln_scales([x, w, b], g)):
        assert np.isfinite(a).all(), f"{name}: {a}"
        # (dx of the huge rows is rstd-sized, ~1e-200: its scale is exactly that)
        assert_agree(a, c, 1e-12, scale, f"layer norm {name} at |x| ~ 1e200")


def test_layer_norm_float32_past_sqrt_max_matches_numpy():
    """float32 rows past sqrt(max) (1.8e19): the loop's float64 sums do not overflow, the numpy
    path rescales; the two agree."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 9)) * np.array([[1e30], [1e20], [1.0], [3e38]])).astype(np.float32)
    x[3] = np.clip(x[3], -3e38, 3e38)
    w, b = rng.standard_normal(9).astype(np.float32), rng.standard_normal(9).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    got, want = both(_ln, [x, w, b], g)
    for name, a, c, scale in zip(("y", "dx", "dw", "db"), got, want, _ln_scales([x, w, b], g)):
        assert np.isfinite(a).all(), f"{name}: {a}"
        assert_agree(a, c, 1e-5, scale, f"layer norm {name} at |x| ~ 1e30 (float32)")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_layer_norm_inf_and_nan_propagate_like_numpy(dtype, bad):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6)).astype(dtype)
    x[1, 2] = bad
    x[3, 0] = bad
    w, b, g = (rng.standard_normal(s).astype(dtype) for s in (6, 6, x.shape))
    got, want = both(_ln, [x, w, b], g)
    assert np.isnan(got[0][1]).all() and np.isnan(got[1][1]).all(), f"row with {bad}: {got[0][1]}"
    for name, a, c, scale in zip(("y", "dx", "dw", "db"), got, want, _ln_scales([x, w, b], g)):
        scale = np.nan_to_num(scale, nan=1.0)  # (the NaN rows' own scale)
        assert_agree(a, c, LAYER_NORM.tol[dtype], scale, f"layer norm {name} with {bad}")


# ----------------------------------------------------------------------------- GELU at the extremes


def _gelu(x):
    return F.gelu(x, approximate="tanh")


def test_gelu_tanh_at_huge_magnitudes_is_the_limit_on_both_paths():
    top = float(np.finfo(np.float32).max)
    x = np.array([1e30, -1e30, 3e38, -3e38, top, -top, 1e20, -1e20, 40.0, -40.0, 1e4, -1e4], np.float32)
    g = np.linspace(-2, 2, x.size).astype(np.float32)
    got, want = both(_gelu, [x], g)
    pos = x > 0
    for path, (y, dx) in (("compiled", got), ("numpy", want)):
        assert np.array_equal(y[pos], x[pos]), f"{path}: {y}"
        assert np.array_equal(y[~pos], np.zeros((~pos).sum())), f"{path}: {y}"
        assert np.array_equal(dx[pos], g[pos]) and not dx[~pos].any(), f"{path}: {dx}"
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def _gelu_truth(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh u) in float64, as x / (1 + exp(-2u)): the same number without 1 + tanh's
    cancellation for x < 0."""
    v = x.astype(np.float64)
    u = math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)
    with np.errstate(over="ignore"):
        return v / (1 + np.exp(-2 * u))


def _ulps(got: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """|got - truth| in float32 ulps of the truth."""
    ulp = np.spacing(np.abs(truth).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - truth) / ulp


# Measured: over [-5, 5] and over tiny magnitudes the loop's forward is within 0.52 ulp (0.50
# for |x| <= 4: it computes in float64, correct to ~1e-10 relative, and rounds once; the 0.52 is
# tanh's cut at |u| = 9, below). 1 ulp leaves room for
# another CPU's float64 rounding (FMA or not) near a tie. (The numpy path: 316 ulp near x = -3,
# where 1 + tanh cancels in float32.) Past x = -5 (u < -9) the loop's tanh is -1 and y = 0,
# like float32 numpy's: the truth is below 6e-8 |x| there, so the bound is eps32 |x| (measured
# 0.50 eps32 |x|). Its tanh itself is within 0.511 ulp everywhere (tanh(9) = 1 - 3.05e-8 is
# taken as 1); 0.52 allowed.
ULP_BOUND, ABS_BOUND, TANH_ULP_BOUND = 1.0, float(np.finfo(np.float32).eps), 0.52


def _accuracy_inputs() -> np.ndarray:
    tiny = np.geomspace(1e-30, 10, 20001)
    return np.concatenate([np.linspace(-12, 12, 240001), tiny, -tiny]).astype(np.float32)


def test_gelu_tanh_compiled_forward_is_within_an_ulp_of_float64():
    x = _accuracy_inputs()
    with compiled.using(True):
        y = F.gelu(mg.tensor(x), approximate="tanh").numpy()
    truth = _gelu_truth(x)
    near = np.abs(x) <= 5
    ulps = _ulps(y, truth)
    worst = np.argmax(ulps[near])
    assert ulps[near].max() <= ULP_BOUND, f"{ulps[near].max():.3f} ulp at x = {x[near][worst]}"
    err = np.abs(y.astype(np.float64) - truth) / np.abs(x.astype(np.float64)).clip(1e-300)
    assert err.max() <= ABS_BOUND, f"{err.max():.3g} |x| at x = {x[np.argmax(err)]}"
    small = np.abs(x) <= 1e-3  # y = x / 2 there: a tiny |x| is neither flushed nor rounded twice
    assert _ulps(y[small], truth[small]).max() <= ULP_BOUND


def test_gelu_tanh_loop_tanh_is_within_half_an_ulp():
    huge = np.geomspace(12, 3e38, 2001)
    x = np.concatenate([_accuracy_inputs(), huge, -huge]).astype(np.float32)
    t, y = np.empty_like(x), np.empty_like(x)
    activation._gelu_tanh_loop(x, t, y, 0, x.size)
    v = x.astype(np.float64)
    with np.errstate(over="ignore"):
        truth = np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))
    ulps = _ulps(t, truth)
    assert ulps.max() <= TANH_ULP_BOUND, f"tanh off by {ulps.max():.3f} ulp at x = {x[np.argmax(ulps)]}"


# ----------------------------------------------------------------------------- softmax at the extremes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_of_minus_inf_give_zeros_and_no_gradient_on_both_paths(dtype):
    """A row that is all -inf (every entry masked) gives weights 0 and a gradient of 0, not NaN;
    a partly masked row gives 0 where masked and a softmax of the rest."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 6)).astype(dtype)
    x[0, 1] = -np.inf
    x[1, 3] = -np.inf
    x[1, 0, :4] = -np.inf
    g = rng.standard_normal(x.shape).astype(dtype)
    got, want = both(lambda a: F.softmax(a, dim=-1), [x], g)
    masked = np.isneginf(x)
    for path, (z, dx) in (("compiled", got), ("numpy", want)):
        assert np.isfinite(z).all() and np.isfinite(dx).all(), f"{path}: {z}\n{dx}"
        assert not z[masked].any() and not dx[masked].any(), f"{path}: weights or gradient off 0"
        assert abs(float(z[1, 0, 4:].sum()) - 1) < 1e-6, f"{path}: {z[1, 0]}"
    for name, a, b, scale in zip(("z", "dx"), got, want, _softmax_scales([x], g)):
        assert_agree(a, b, SOFTMAX.tol[dtype], scale, f"softmax {name} with rows of -inf")


def _gaps(dtype):
    """Rows with gaps of 1e30 (1e300 for float64) and of the dtype's largest number, whose
    differences overflow to -inf."""
    top, big = float(np.finfo(dtype).max), (1e30 if dtype == np.float32 else 1e300)
    return np.array([[big, 0, -big], [top, -top, 0], [top, top, -top], [-top, -top, -top],
                     [0.5, -big, 2.0]], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_at_huge_logit_gaps_is_exact_on_both_paths(dtype):
    x = _gaps(dtype)
    g = np.linspace(-2, 2, x.size).reshape(x.shape).astype(dtype)
    got, want = both(lambda a: a.softmax(-1), [x], g)
    exact = np.array([[1, 0, 0], [1, 0, 0], [0.5, 0.5, 0]], dtype)
    for path, (z, dx) in (("compiled", got), ("numpy", want)):
        assert np.isfinite(z).all() and np.isfinite(dx).all(), f"{path}: {z}\n{dx}"
        assert np.array_equal(z[:3], exact), f"{path}: {z[:3]}"
        assert z[4, 1] == 0 and dx[4, 1] == 0
    for name, a, b, scale in zip(("z", "dx"), got, want, _softmax_scales([x], g)):
        assert_agree(a, b, SOFTMAX.tol[dtype], scale, f"softmax {name} at huge gaps")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_at_huge_logit_gaps_matches_numpy(dtype):
    """y = x - max exactly (down to -inf where the difference overflows, on both paths), and a
    gradient without NaN."""
    x = _gaps(dtype)
    g = np.linspace(-2, 2, x.size).reshape(x.shape).astype(dtype)
    got, want = both(lambda a: a.log_softmax(-1), [x], g)
    for path, (y, dx) in (("compiled", got), ("numpy", want)):
        assert not np.isnan(y).any() and np.isfinite(dx).all(), f"{path}: {y}\n{dx}"
        assert y[0, 0] == 0 and y[0, 1] == -x[0, 0] and y[1, 0] == 0 and y[1, 1] == -np.inf
    for name, a, b, scale in zip(("y", "dx"), got, want, _log_softmax_scales([x], g)):
        assert_agree(a, b, LOG_SOFTMAX.tol[dtype], scale, f"log_softmax {name} at huge gaps")


@pytest.mark.parametrize("case", [SOFTMAX, LOG_SOFTMAX], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_softmax_nan_and_inf_rows_propagate_like_numpy(case, dtype, bad):
    """A NaN makes its whole row NaN (the loop's max skips it; the row's sum is NaN); a +inf
    gives NaN there (inf / inf) and 0 (softmax) or -inf (log_softmax) beside it: as numpy."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 6)).astype(dtype)
    x[1, 2] = bad
    x[3] = bad
    g = rng.standard_normal(x.shape).astype(dtype)
    got, want = both(case.run, [x], g)
    assert np.isnan(got[0][1, 2]) and np.isnan(got[1][1, 2]), f"row with {bad}: {got[0][1]}\n{got[1][1]}"
    if np.isnan(bad):
        assert np.isnan(got[0][1]).all() and np.isnan(got[0][3]).all()
    assert np.isfinite(got[0][[0, 2, 4]]).all() and np.isfinite(got[1][[0, 2, 4]]).all()
    for name, a, b, scale in zip(("out", "dx"), got, want, case.scales([x], g)):
        assert_agree(a, b, case.tol[dtype], scale, f"{case.name} {name} with {bad}")


# ----------------------------------------------------------------------------- cross entropy


# F.cross_entropy of (N, C) logits and class ids runs log_softmax_last (the loop form when on),
# then numpy's gather, smoothing, reduction and backward on both paths, on each path's logp. So
# the errors are log_softmax's (rtol 2e-6 of |logp| + 1 for float32) carried through: a row's
# loss relative to max |logp| + 1 over the row, a "sum" or "mean" relative to the sum (mean:
# over the kept rows) of those, plus float32's rounding of that sum of at most 8 terms: 5e-6
# (measured 2.4e-7). dx = g_i (p - (1 - eps) onehot - eps / C), p = exp(logp) with relative
# error the absolute one of logp: relative to |g_i| (p (|logp| + 1) + (1 - eps) onehot + eps / C).
# float64: 1e-12 (measured 6e-16).
CE_TOL = {np.float32: 5e-6, np.float64: 1e-12}
IGNORE = -100


def _ce_scales(x, t, kw, g):
    keep = t != IGNORE
    z = _softmax_truth(x)
    with np.errstate(all="ignore"):
        logp = np.nan_to_num(np.log(z), nan=0.0, neginf=0.0)
    rows = np.where(keep, np.abs(logp).max(axis=-1) + 1, 0)
    count = max(int(keep.sum()), 1)
    a = np.abs(g.astype(np.float64))
    gi = a if kw["reduction"] != "mean" else a / count
    gi = np.broadcast_to(gi, t.shape)[:, None]
    eps = kw["label_smoothing"]
    onehot = np.zeros_like(z)
    onehot[np.arange(t.size), np.where(keep, t, 0)] = 1
    dx = gi * (z * (np.abs(logp) + 1) + (1 - eps) * onehot + eps / x.shape[-1]) + FLOOR
    loss = {"none": rows + FLOOR, "sum": rows.sum() + FLOOR, "mean": rows.sum() / count + FLOOR}
    return [loss[kw["reduction"]], dx]


@st.composite
def _ce_inputs(draw, shape=None):
    dtype = draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    n, c = shape or (draw(st.integers(1, 6), label="rows"), draw(st.integers(1, 9), label="classes"))
    values = st.one_of(_floats(dtype, -30, 30), st.sampled_from([0.0, 1.0, 50.0, -50.0]))
    x = draw(hnp.arrays(dtype, (n, c), elements=values), label="logits")
    t = np.array(draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n), label="target"), np.int64)
    ignored = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n), label="ignored"), bool)
    t[ignored] = IGNORE
    x[ignored] = np.nan  # never read, on either path
    kw = dict(reduction=draw(st.sampled_from(["mean", "sum", "none"]), label="reduction"),
              label_smoothing=draw(st.sampled_from([0.0, 0.1]), label="label_smoothing"))
    g = draw(hnp.arrays(dtype, (n,) if kw["reduction"] == "none" else (), elements=_floats(dtype, -2, 2)),
             label="upstream")
    return x, t, kw, g


def _ce(t, kw):
    return lambda a: F.cross_entropy(a, t, ignore_index=IGNORE, **kw)


def check_cross_entropy(x, t, kw, g) -> None:
    got, want = both(_ce(t, kw), [x], g)
    ignored = t == IGNORE
    for path, (_, dx) in (("compiled", got), ("numpy", want)):
        assert not dx[ignored].any(), f"{path}: gradient on ignored rows"
    what = f"({x.dtype}, {x.shape}, {kw}, ignored {ignored.tolist()})"
    for name, a, b, scale in zip(("loss", "dx"), got, want, _ce_scales(x, t, kw, g)):
        assert_agree(a, b, CE_TOL[x.dtype.type], scale, f"cross_entropy {name} {what}")


@given(case=_ce_inputs())
def test_cross_entropy_compiled_agrees_with_numpy(case):
    check_cross_entropy(*case)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (8, 16)])
@settings(max_examples=10)
@given(data=st.data())
def test_cross_entropy_compiled_agrees_with_numpy_at_edge_shapes(shape, data):
    check_cross_entropy(*data.draw(_ce_inputs(shape), label="case"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_at_huge_gaps_and_nan_rows_matches_numpy(dtype, reduction, smoothing):
    """Huge gaps (a target's logp of -1e30 or -max: a finite, huge loss; -inf in the smoothing
    term's mean: inf), a NaN row that is kept (its loss and gradient NaN) and one that is
    ignored (never read: gradient 0)."""
    x = np.concatenate([_gaps(dtype), np.array([[1.0, np.nan, 2.0], [np.nan] * 3, [0.3, -0.2, 0.1]], dtype)])
    t = np.array([0, 2, 1, 0, 1, 0, IGNORE, 2])
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    g = (np.linspace(-2, 2, t.size) if reduction == "none" else np.array(0.7)).astype(dtype)
    got, want = both(_ce(t, kw), [x], g)
    for path, (loss, dx) in (("compiled", got), ("numpy", want)):
        assert not dx[6].any(), f"{path}: the ignored NaN row has a gradient {dx[6]}"
        assert np.isnan(dx[5]).all(), f"{path}: {dx[5]}"
        if reduction == "none":
            assert np.isnan(loss[5]) and loss[6] == 0 and np.isfinite(loss[[0, 7]]).all(), f"{path}: {loss}"
    for name, a, b, scale in zip(("loss", "dx"), got, want, _ce_scales(x, t, kw, g)):
        scale = np.nan_to_num(scale, nan=1.0)  # (the NaN rows' own scale)
        assert_agree(a, b, CE_TOL[dtype], scale, f"cross_entropy {name} ({reduction})")


# ----------------------------------------------------------------------------- threads


def _same_bits(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), f"{what} differs between 1 and 2 threads by {np.abs(a - b).max():.3g}"


@pytest.mark.parametrize("case, shape", [(LAYER_NORM, (4096, 128)), (GELU_TANH, (2**20,)),
                                         (SOFTMAX, (8192, 128)), (LOG_SOFTMAX, (8192, 128))],
                         ids=["layer_norm", "gelu_tanh", "softmax", "log_softmax"])
def test_compiled_results_do_not_depend_on_the_thread_count(case, shape):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32) * 3
    arrays = [x] + ([rng.standard_normal(shape[-1]).astype(np.float32) for _ in range(2)]
                    if case is LAYER_NORM else [])
    g = rng.standard_normal(shape).astype(np.float32)
    try:
        mg.set_num_threads(1)
        one = grads(case.run, arrays, g, True)
        mg.set_num_threads(2)
        two = grads(case.run, arrays, g, True)
    finally:
        mg.set_num_threads(1)
    for i, (a, b) in enumerate(zip(one, two)):
        _same_bits(a, b, f"{case.name} output {i}")


def test_cross_entropy_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((8192, 128)).astype(np.float32) * 3
    t = rng.integers(0, 128, 8192)
    t[::7] = IGNORE
    kw = dict(reduction="mean", label_smoothing=0.1)
    try:
        mg.set_num_threads(1)
        one = grads(_ce(t, kw), [x], np.float32(1), True)
        mg.set_num_threads(2)
        two = grads(_ce(t, kw), [x], np.float32(1), True)
    finally:
        mg.set_num_threads(1)
    for i, (a, b) in enumerate(zip(one, two)):
        _same_bits(a, b, f"cross_entropy output {i}")


# ----------------------------------------------------------------------------- embedding's backward


@st.composite
def _scatter_inputs(draw):
    """(ids, rows, num_rows): ids with repeats (few rows to hit), any count from 0, 0-wide rows."""
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    num_rows = draw(st.integers(1, 6))
    count, width = draw(st.integers(0, 30)), draw(st.integers(0, 5))
    ids = draw(hnp.arrays(draw(st.sampled_from([np.int64, np.int32])), count,
                          elements=st.integers(0, num_rows - 1)))
    big = float(dtype(1e30))
    finite = st.floats(-big, big, allow_subnormal=False, width=32 if dtype is np.float32 else 64)
    rows = draw(hnp.arrays(dtype, (count, width), elements=finite))
    return ids, rows, num_rows


@given(case=_scatter_inputs())
def test_embedding_scatter_add_loop_is_np_add_at_to_the_bit(case):
    """The loop adds the rows of an id in their order, as np.add.at does: the same bits, also
    where a huge row cancels (the numpy form's sorted sums may differ there in the last bits)."""
    ids, rows, num_rows = case
    want = sparse.scatter_add_rows_reference(ids, rows, num_rows)
    with compiled.using(True):
        got = sparse.scatter_add_rows(ids, rows, num_rows)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want), f"ids {ids.tolist()}\n{got}\n{want}"


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_gradient_is_the_same_on_both_paths(monkeypatch, padding_idx):
    """Through nn.Embedding (ids of shape (B, T), repeats, the padding row) both paths give the
    weight's gradient of np.add.at (the compiled one to the bit, the numpy one's sorted sums to
    rounding); with using(False) a broken loop is never called."""
    rng = np.random.default_rng(12)
    ids = rng.integers(0, 7, (3, 9))
    g = rng.standard_normal((3, 9, 4)).astype(np.float32)

    def weight_grad(flag):
        with compiled.using(flag):
            emb = mg.nn.Embedding(7, 4, padding_idx=padding_idx)
            emb.weight.data = mg.tensor(np.arange(28, dtype=np.float32).reshape(7, 4))
            emb(mg.tensor(ids)).backward(mg.tensor(g))
            return emb.weight.grad.numpy()

    want = sparse.scatter_add_rows_reference(ids.reshape(-1), g.reshape(-1, 4), 7)
    if padding_idx is not None:
        want[padding_idx] = 0
    got = weight_grad(True)
    assert np.array_equal(got, want)

    def broken(*args):
        raise RuntimeError("_scatter_add_rows_loop called")

    monkeypatch.setattr(sparse, "_scatter_add_rows_loop", broken)
    np.testing.assert_allclose(weight_grad(False), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="_scatter_add_rows_loop called"):
        weight_grad(True)


# ----------------------------------------------------------------------------- the off switches


KERNELS = [pytest.param(c, d, m, n, id=f"{c.name}-{n}") for c in CASES for d in c.compiled_dtypes[:1]
           for m, n in c.kernels]


@pytest.mark.parametrize("case, dtype, module, name", KERNELS)
def test_using_false_takes_the_numpy_path(monkeypatch, case, dtype, module, name):
    """With the loop kernel broken, using(False) still computes (it never calls it) and
    using(True) fails (it does)."""
    rng = np.random.default_rng(6)
    shape = (3, 5)
    arrays = [rng.standard_normal(shape).astype(dtype)]
    if case is LAYER_NORM:
        arrays += [rng.standard_normal(shape[-1]).astype(dtype) for _ in range(2)]
    g = rng.standard_normal(shape).astype(dtype)
    want = grads(case.run, arrays, g, False)

    def broken(*args):
        raise RuntimeError(f"{name} called")

    monkeypatch.setattr(module, name, broken)
    got = grads(case.run, arrays, g, False)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    with pytest.raises(RuntimeError, match=f"{name} called"):
        grads(case.run, arrays, g, True)


@pytest.mark.parametrize("name", ["_shift_by_max_loop", "_subtract_log_sum_loop"])
def test_using_false_takes_the_numpy_path_for_cross_entropy(monkeypatch, name):
    rng = np.random.default_rng(11)
    x, t = rng.standard_normal((4, 5)), np.array([0, 4, IGNORE, 2])
    kw = dict(reduction="sum", label_smoothing=0.1)
    want = grads(_ce(t, kw), [x], np.array(1.0), False)

    def broken(*args):
        raise RuntimeError(f"{name} called")

    monkeypatch.setattr(reduce_ops, name, broken)
    got = grads(_ce(t, kw), [x], np.array(1.0), False)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    with pytest.raises(RuntimeError, match=f"{name} called"):
        grads(_ce(t, kw), [x], np.array(1.0), True)


# ----------------------------------------------------------------------------- Adam's update


# The loop computes each element's update in float64 (its scalars are Python floats) and rounds
# p, m and v once each; numpy's form rounds every one of its eleven steps in the dtype: rtol 1e-6
# for float32 (~8 ulp; measured 3.2e-7), 1e-12 for float64, of each value's natural size (as
# `assert_agree` takes it): for p, |p| + |p at the start| + steps lr (a weight that has moved to
# near 0 carries the rounding of the larger values it came from: 3.4e-15 on p = -0.0034 from
# -0.022, float64); for m, |m| plus the largest |g| it averaged (m cancels as g changes sign), and
# the L2 term wd |p|; v has no cancellation, |v| itself. (float64's v measured 1.5e-13, ~500 ulp:
# under fastmath "reassoc" the compiled loop's beta2 v + (1 - beta2) g^2 loses about
# log10(1 / (1 - beta2)) digits, where the loop run as plain Python is exact; 1e-12 holds for the
# default beta2 = 0.999, not for 0.9999.)
ADAM_TOL = {np.float32: 1e-6, np.float64: 1e-12}
ADAM_SHAPES = [(), (3, 4), (5,)]
ADAM_STEPS, ADAM_LR = 6, 0.05
ADAM_KINDS = {"adam-l2": (optim.Adam, {}), "adam-decoupled": (optim.Adam, dict(decoupled_weight_decay=True)),
              "adamw": (optim.AdamW, {})}


def _adam(flag: bool, dtype, kind: str, **options):
    """(parameters, per-parameter state, |start values|, largest |gradient|) after ADAM_STEPS
    steps on fixed gradients, on the compiled path (flag) or not."""
    cls, extra = ADAM_KINDS[kind]
    rng = np.random.default_rng(12)
    with compiled.using(flag):
        params = [mg.tensor(np.asarray(rng.standard_normal(s)).astype(dtype), requires_grad=True)
                  for s in ADAM_SHAPES]
        starts = [np.abs(p.numpy().astype(np.float64)) for p in params]
        largest = [np.zeros(s) for s in ADAM_SHAPES]
        opt = cls(params, lr=ADAM_LR, **extra, **options)
        for _ in range(ADAM_STEPS):
            for i, p in enumerate(params):
                p.grad = np.asarray(rng.standard_normal(p.shape) * 2).astype(dtype)
                largest[i] = np.maximum(largest[i], np.abs(p.grad.numpy().astype(np.float64)))
            opt.step()
    return [p.numpy() for p in params], [opt.state[i] for i in range(len(params))], starts, largest


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", list(ADAM_KINDS))
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
@pytest.mark.parametrize("maximize", [False, True], ids=["minimize", "maximize"])
def test_adam_compiled_update_agrees_with_numpy(monkeypatch, dtype, kind, weight_decay, maximize):
    calls = []
    loop = optimizers._adam_loop

    def counted(*args):
        calls.append(args[-2:])
        return loop(*args)

    monkeypatch.setattr(optimizers, "_adam_loop", counted)
    want_p, want_state, starts, largest = _adam(False, dtype, kind, weight_decay=weight_decay,
                                                maximize=maximize)
    assert not calls, "the numpy path called the loop"
    got_p, got_state, _, _ = _adam(True, dtype, kind, weight_decay=weight_decay, maximize=maximize)
    assert len(calls) == ADAM_STEPS * len(ADAM_SHAPES), "the compiled path did not take the loop"
    tol = ADAM_TOL[dtype]
    for i, (a, b, sa, sb) in enumerate(zip(got_p, want_p, got_state, want_state)):
        what = f"{kind} parameter {i} {ADAM_SHAPES[i]} ({dtype.__name__})"
        moved = starts[i] + ADAM_STEPS * ADAM_LR  # the largest |p| on the way
        assert_agree(a, b, tol, np.abs(b) + moved, what)
        assert sa.keys() == sb.keys() and sa["step"] == sb["step"] == ADAM_STEPS
        scales = {"exp_avg": np.abs(sb["exp_avg"]) + largest[i] + weight_decay * moved,
                  "exp_avg_sq": np.abs(sb["exp_avg_sq"])}
        for key, scale in scales.items():
            assert_agree(sa[key], sb[key], tol, scale, f"{what} {key}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["adam-l2", "adamw"])
def test_adam_amsgrad_takes_the_numpy_path_with_compiled_on(monkeypatch, dtype, kind):
    """amsgrad has no loop form: with compiled on it runs numpy's, bit for bit."""
    want_p, want_state, _, _ = _adam(False, dtype, kind, weight_decay=0.1, amsgrad=True)

    def broken(*args):
        raise RuntimeError("_adam_loop called")

    monkeypatch.setattr(optimizers, "_adam_loop", broken)
    got_p, got_state, _, _ = _adam(True, dtype, kind, weight_decay=0.1, amsgrad=True)
    for a, b, sa, sb in zip(got_p, want_p, got_state, want_state):
        assert a.dtype == dtype and a.tobytes() == b.tobytes()
        assert "max_exp_avg_sq" in sa and sa.keys() == sb.keys()
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            assert sa[key].tobytes() == sb[key].tobytes(), key


def _python(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "MINIGRAD_COMPILED"} | env
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_environment_switch_and_lazy_numba():
    code = ("import sys, minigrad, minigrad.nn, minigrad.nn.functional\n"
            "from minigrad.runtime import compiled\n"
            "print(compiled.enabled(), 'numba' in sys.modules)")
    assert _python(code, MINIGRAD_COMPILED="0") == "False False"
    assert _python(code) == "True False"  # on by default when numba is installed, yet not imported
