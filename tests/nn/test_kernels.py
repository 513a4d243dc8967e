"""The fused kernels of minigrad.nn against readable twins composed from core Tensor ops.

Each kernel is checked three ways: values and gradients (random upstream gradient) equal its
twin on hypothesis shapes, float64 gradcheck, and edge cases (huge logits, constant rows,
every target ignored). The twins below are the math to read first.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import Tensor, gradcheck
from minigrad.nn import _pieces
from minigrad.nn.classification import CrossEntropy
from minigrad.nn.linear import LinearOp
from minigrad.nn.sparse import scatter_add_rows, scatter_add_rows_reference
from minigrad.ops.erf import erf
from minigrad.runtime import compiled
from minigrad.testing import arrays, shapes

# ----------------------------------------------------------------------------- twins


def cross_entropy_twin(x: Tensor, target: np.ndarray, ignore_index: int = -100,
                       reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """loss_i = (1 - eps) * -log p[i, t_i] + eps * mean_c -log p[i, c], ignored rows 0."""
    C = x.shape[-1]
    logp = x.log_softmax(dim=-1).reshape(-1, C)  # (N, C)
    t = target.reshape(-1)
    keep = t != ignore_index
    nll = -logp[np.arange(t.size), np.where(keep, t, 0)]  # (N,)
    smooth = -logp.mean(dim=-1)
    loss = (nll * (1 - label_smoothing) + smooth * label_smoothing) * Tensor(keep.astype(x.dtype))
    if reduction == "none":
        return loss.reshape(target.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / max(int(keep.sum()), 1)


def layer_norm_twin(x: Tensor, ndim: int, weight: Tensor | None = None, bias: Tensor | None = None,
                    eps: float = 1e-5) -> Tensor:
    dims = tuple(range(x.ndim - ndim, x.ndim))
    mu = x.mean(dim=dims, keepdim=True)
    d = x - mu
    var = (d * d).mean(dim=dims, keepdim=True)
    y = d / (var + eps).sqrt()
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def gelu_tanh_twin(x: Tensor) -> Tensor:
    u = (x + x**3 * 0.044715) * math.sqrt(2 / math.pi)
    return x * 0.5 * (u.tanh() + 1)


def embedding_twin(idx: np.ndarray, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    if padding_idx is not None:  # the padding row keeps its value but passes no gradient
        free = np.ones((weight.shape[0], 1), dtype=weight.dtype)
        free[padding_idx] = 0
        weight = weight * Tensor(free) + weight.detach() * Tensor(1 - free)
    return weight[idx]


def run(fn, arrays_in, g=None, seed=0):
    """fn's value and the gradients of its inputs, with a random (seeded) upstream gradient."""
    xs = [Tensor(np.array(a, dtype=np.float64), requires_grad=True) for a in arrays_in]
    out = fn(*xs)
    if g is None:
        g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(g)
    return out.numpy(), [x.grad for x in xs]


def assert_same(fused, twin, fused_args, g_seed=0, tol=1e-10):
    v1, g1 = run(fused, fused_args, seed=g_seed)
    v2, g2 = run(twin, fused_args, seed=g_seed)
    np.testing.assert_allclose(v1, v2, rtol=tol, atol=tol)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- erf


def test_erf_matches_math_erf_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        np.linspace(-7, 7, 20001),
        rng.uniform(-6.5, 6.5, 20000),
        10.0 ** rng.uniform(-300, 0.5, 5000) * rng.choice([-1, 1], 5000),  # tiny to ~3
        [0.0, -0.0, 5e-324, 1e-300, 0.84375, 1.25, 1 / 0.35, 6.0, -6.0, 5.9999999, 27.0, 1e300],
    ])
    ref = np.array([math.erf(v) for v in x])
    got = erf(x)
    assert np.abs(got - ref).max() < 1e-14
    small = np.abs(ref) < 1e-3  # relative accuracy where erf is tiny
    assert (np.abs(got[small] - ref[small]) / np.abs(ref[small]).clip(1e-320)).max() < 1e-14


def test_erf_special_values_and_dtypes():
    got = erf(np.array([0.0, -0.0, np.inf, -np.inf, np.nan]))
    assert got[0] == 0 and np.signbit(got[1]) and got[2] == 1 and got[3] == -1 and np.isnan(got[4])
    assert erf(np.float32([0.5])).dtype == np.float32
    assert abs(float(erf(np.float32(0.5))) - math.erf(0.5)) < 1e-7
    assert erf(np.array([1, 2])).dtype == np.float64
    np.testing.assert_array_equal(erf(-np.linspace(0, 5, 51)), -erf(np.linspace(0, 5, 51)))


# ----------------------------------------------------------------------------- cross entropy


@st.composite
def ce_cases(draw):
    lead = draw(shapes(min_dims=0, max_dims=2))
    C = draw(st.integers(1, 4))
    x = draw(arrays(lead + (C,), low=-5, high=5))
    ignore_index = draw(st.sampled_from([-100, 0]))
    ids = st.integers(0, C - 1) | st.just(ignore_index)
    t = draw(hnp.arrays(np.int64, lead, elements=ids))
    reduction = draw(st.sampled_from(["mean", "sum", "none"]))
    eps = draw(st.sampled_from([0.0, 0.1, 1.0]))
    return x, t, dict(ignore_index=ignore_index, reduction=reduction, label_smoothing=eps)


def _classes_on_dim_1(a):
    """a (*, C) in torch's layout, classes on dim 1: the same losses, read where torch reads them."""
    return a.movedim(-1, 1) if a.ndim >= 3 else a


@given(ce_cases())
def test_cross_entropy_matches_twin(case):
    x, t, kw = case
    assert_same(lambda a: F.cross_entropy(_classes_on_dim_1(a), t, **kw),
                lambda a: cross_entropy_twin(a, t, **kw), [x])


@given(ce_cases())
def test_cross_entropy_gradcheck(case):
    x, t, kw = case
    assert gradcheck(lambda a: F.cross_entropy(_classes_on_dim_1(a), t, **kw), [x])


@pytest.mark.parametrize("dtype", [pytest.param(np.float32, id="f32"), pytest.param(np.float64, id="f64")])
def test_cross_entropy_huge_logits(dtype):
    x = Tensor(np.array([[1e4, 0, -1e4], [1e4, 0, -1e4]], dtype=dtype), requires_grad=True)
    loss = F.cross_entropy(x, np.array([0, 1]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [0.0, 1e4])
    loss.backward(np.ones(2, dtype=dtype))
    np.testing.assert_allclose(x.grad, [[0, 0, 0], [1, -1, 0]], atol=1e-6)
    assert loss.dtype == dtype and x.grad.dtype == dtype


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_all_ignored(reduction):
    x = Tensor(np.random.default_rng(1).standard_normal((2, 3, 4)), requires_grad=True)
    loss = F.cross_entropy(x.movedim(-1, 1), np.full((2, 3), -100), reduction=reduction, label_smoothing=0.1)
    assert not np.isnan(loss.numpy()).any() and np.all(loss.numpy() == 0.0)
    loss.backward(np.ones(loss.shape))
    assert np.all(x.grad == 0)


def test_cross_entropy_mean_counts_only_kept_rows():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3))
    t = np.array([2, -100, 0, -100, 1])
    per_row = F.cross_entropy(Tensor(x), t, reduction="none").numpy()
    mean = F.cross_entropy(Tensor(x), t).item()
    assert per_row[1] == 0 and per_row[3] == 0
    kept = F.cross_entropy(Tensor(x[[0, 2, 4]]), t[[0, 2, 4]]).item()
    assert mean == pytest.approx(kept, rel=1e-12) == pytest.approx(per_row.sum() / 3, rel=1e-12)


def test_cross_entropy_ignore_index_may_be_a_class():
    x = np.log(np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]]))
    loss = F.cross_entropy(Tensor(x), np.array([0, 1, 0]), ignore_index=0)
    assert loss.item() == pytest.approx(-math.log(0.5))


def test_cross_entropy_label_smoothing_by_hand():
    logits, eps = [1.0, 2.0, 3.0], 0.1
    lse = math.log(sum(math.exp(v) for v in logits))
    logp = [v - lse for v in logits]
    expected = (1 - eps) * -logp[0] + eps * -sum(logp) / 3  # PyTorch's definition
    got = F.cross_entropy(Tensor(np.array([logits])), np.array([0]), label_smoothing=eps)
    assert got.item() == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(2.3076059644443806, rel=1e-12)  # the same, as a number


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_backward_twice_with_retain_graph(smoothing):
    """backward keeps the saved softmax intact (it writes the gradient into a new array)."""
    rng = np.random.default_rng(6)
    x = Tensor(rng.standard_normal((4, 5)).astype(np.float32), requires_grad=True)
    loss = F.cross_entropy(x, np.array([0, 4, 2, -100]), label_smoothing=smoothing)
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad, 2 * first, rtol=1e-6)
    assert x.grad.dtype == np.float32 and not x.grad[3].any()  # the ignored row


def test_cross_entropy_is_one_node():
    x = Tensor(np.zeros((2, 3)), requires_grad=True)
    assert isinstance(F.cross_entropy(x, np.array([0, 1])).grad_fn, CrossEntropy)


# ----------------------------------------------------------------------------- layer norm


@st.composite
def ln_cases(draw):
    norm = draw(shapes(min_dims=1, max_dims=2))
    lead = draw(shapes(min_dims=0, max_dims=2))
    x = draw(arrays(lead + norm))
    affine = draw(st.sampled_from(["none", "weight", "both"]))
    w = draw(arrays(norm)) if affine != "none" else None
    b = draw(arrays(norm)) if affine == "both" else None
    return x, norm, w, b


@given(ln_cases())
def test_layer_norm_matches_twin(case):
    x, norm, w, b = case
    args = [a for a in (x, w, b) if a is not None]
    assert_same(lambda *t: F.layer_norm(t[0], norm, *t[1:]),
                lambda *t: layer_norm_twin(t[0], len(norm), *t[1:]), args, tol=1e-8)


@given(ln_cases())
def test_layer_norm_gradcheck(case):
    x, norm, w, b = case
    dims = tuple(range(x.ndim - len(norm), x.ndim))
    var = x.var(axis=dims)
    assume(np.all((var > 1e-2) | (var == 0)))  # finite differences are poor where var ~ eps
    args = [a for a in (x, w, b) if a is not None]
    assert gradcheck(lambda *t: F.layer_norm(t[0], norm, *t[1:]), args)


def test_layer_norm_bias_without_weight():
    x = np.random.default_rng(3).standard_normal((2, 3))
    b = np.array([1.0, -1.0, 0.5])
    assert gradcheck(lambda a, c: F.layer_norm(a, 3, bias=c), [x, b])
    np.testing.assert_allclose(F.layer_norm(Tensor(x), 3, bias=Tensor(b)).numpy(),
                               layer_norm_twin(Tensor(x), 1, bias=Tensor(b)).numpy(), atol=1e-12)


@pytest.mark.parametrize("dtype", [pytest.param(np.float32, id="f32"), pytest.param(np.float64, id="f64")])
def test_layer_norm_constant_rows_are_stable(dtype):
    x = Tensor(np.full((2, 4), 7.5, dtype=dtype), requires_grad=True)
    w = Tensor(np.arange(1, 5, dtype=dtype), requires_grad=True)
    b = Tensor(np.array([0.5, -1, 2, 0], dtype=dtype), requires_grad=True)
    y = F.layer_norm(x, 4, w, b)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(b.numpy(), (2, 4)))
    g = np.random.default_rng(0).standard_normal((2, 4)).astype(dtype)
    y.backward(g)
    for grad in (x.grad, w.grad, b.grad):
        assert np.isfinite(grad).all()
    np.testing.assert_array_equal(w.grad, 0)  # x_hat = 0
    gx = g * w.numpy()  # dx = (gx - mean(gx)) / sqrt(eps) when x_hat = 0
    np.testing.assert_allclose(x.grad, (gx - gx.mean(-1, keepdims=True)) / np.sqrt(dtype(1e-5)), rtol=1e-5)


@pytest.mark.parametrize("size", [1e20, 1e30, 1e37])
def test_layer_norm_of_float32_rows_past_sqrt_max_is_right(size):
    """(x - mu)^2 overflows float32 past ~1.8e19: the kernel still gives the float64 values and
    gradients (not zeros), and rows of ordinary size beside them are untouched."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5))
    x[0] *= size
    x[1] = 4e36 if size > 1e30 else 2 * size  # a huge constant row: x_hat = 0
    w, g = rng.standard_normal(5), rng.standard_normal((3, 5))
    rows = [0, 2]  # (float64's own mean of a constant row near 1e36 is off by its rounding)
    out = {}
    for dtype in (np.float32, np.float64):
        ts = [Tensor(a.astype(dtype), requires_grad=True) for a in (x, w)]
        y = F.layer_norm(ts[0], 5, ts[1])
        y.backward(g.astype(dtype))
        out[dtype] = [y.numpy(), ts[0].grad, ts[1].grad]
    for got, want in zip(out[np.float32][:2], out[np.float64][:2]):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got[rows], want[rows], rtol=1e-4, atol=1e-5 * np.abs(want[rows]).max())
    y, dx, dw = out[np.float32]
    assert np.abs(y[0]).max() > 0.5  # not the zeros an overflowed variance gives
    np.testing.assert_array_equal(y[1], 0)  # the constant row: x_hat = 0, dx = (gx - mean gx) / sqrt(eps)
    gx = g[1] * w
    np.testing.assert_allclose(dx[1], (gx - gx.mean()) / np.sqrt(1e-5), rtol=1e-4)
    x_hat = out[np.float64][0][rows] / w  # (float64; w has no zeros here)
    np.testing.assert_allclose(dw, (g[rows] * x_hat).sum(0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_tanh_gradient_at_huge_inputs_is_its_limit(dtype):
    """x^3 overflows for huge |x|; the slope is still 1 (x -> inf) and 0 (x -> -inf), not NaN."""
    big = 1e30 if dtype == np.float32 else 1e300
    x = Tensor(np.array([big, -big, 1e20, -1e20, 2.0], dtype), requires_grad=True)
    y = F.gelu(x, approximate="tanh")
    y.backward(np.ones(5, dtype))
    np.testing.assert_array_equal(y.numpy()[:4], np.array([big, 0, 1e20, 0], dtype))
    np.testing.assert_array_equal(x.grad[:4], [1, 0, 1, 0])
    t = math.tanh(math.sqrt(2 / math.pi) * (2 + 0.044715 * 8))
    slope = 0.5 * (1 + t) + (1 - t * t) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * 4)
    np.testing.assert_allclose(x.grad[4], slope, rtol=1e-6)


def test_layer_norm_normalizes():
    x = np.random.default_rng(4).normal(3.0, 5.0, (3, 2, 50))
    y = F.layer_norm(Tensor(x), (2, 50)).numpy()
    np.testing.assert_allclose(y.mean(axis=(1, 2)), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=(1, 2)), 1, atol=1e-4)


@given(hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=5),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 2**16))
def test_blas_row_and_column_reductions_match_numpy(shape, dtype, seed):
    """The matrix-vector sums that layer norm and the linear bias use, empty sides included."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    cols, rows = _pieces.col_sums(a), _pieces.row_means(a)
    assert cols.dtype == rows.dtype == dtype and cols.shape == (shape[1],) and rows.shape == (shape[0], 1)
    np.testing.assert_allclose(cols, a.sum(axis=0), rtol=1e-5, atol=1e-5)
    if shape[1]:
        np.testing.assert_allclose(rows, a.mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_layer_norm_float32_at_model_size_is_close_to_float64():
    """The float32 kernel (BLAS sums in float32) against the float64 twin on a GPT-sized
    batch with an offset mean: forward and every gradient."""
    rng = np.random.default_rng(5)
    x = rng.normal(4.0, 3.0, (1024, 128))
    w, b, g = rng.standard_normal(128), rng.standard_normal(128), rng.standard_normal((1024, 128))
    out = {}
    for dtype, fn in ((np.float32, lambda *t: F.layer_norm(t[0], 128, *t[1:])),
                      (np.float64, lambda *t: layer_norm_twin(t[0], 1, *t[1:]))):
        ts = [Tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b)]
        y = fn(*ts)
        y.backward(g.astype(dtype))
        assert y.dtype == dtype and all(t.grad.dtype == dtype for t in ts)
        out[dtype] = [y.numpy()] + [t.grad for t in ts]
    for got, want, tol in zip(out[np.float32], out[np.float64], (1e-5, 1e-4, 1e-3, 1e-3)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


# ----------------------------------------------------------------------------- GELU


@given(arrays(shapes()))
def test_gelu_exact_values_and_gradient(x):
    flat = x.reshape(-1)
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in flat]).reshape(x.shape)
    pdf = np.array([math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in flat]).reshape(x.shape)
    want, dwant = x * cdf, cdf + x * pdf
    g = np.random.default_rng(0).standard_normal(x.shape)
    value, (grad,) = run(lambda a: F.gelu(a), [x], g=g)
    np.testing.assert_allclose(value, want, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(grad, g * dwant, rtol=1e-13, atol=1e-15)


@given(arrays(shapes()))
def test_gelu_tanh_matches_twin(x):
    assert_same(lambda a: F.gelu(a, approximate="tanh"), gelu_tanh_twin, [x])


@given(x=arrays(shapes(min_dims=1, max_dims=2, max_side=5)))
def test_gelu_tanh_in_pieces_matches_twin(x):
    """Arrays larger than a piece (here 3 elements) go through GELU piece by piece."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_pieces, "PIECE", 3)
        assert_same(lambda a: F.gelu(a, approximate="tanh"), gelu_tanh_twin, [x])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_a_0d_tensor_stays_0d(approximate):
    x = Tensor(np.array(0.5), requires_grad=True)
    y = F.gelu(x, approximate=approximate)
    y.backward()
    assert y.shape == () and x.grad.shape == ()


def test_gelu_tanh_of_a_non_contiguous_view_in_pieces():
    x = np.random.default_rng(1).standard_normal((3, 2 * _pieces.PIECE // 3 + 7))
    assert_same(lambda a: F.gelu(a.transpose(0, 1), approximate="tanh"),
                lambda a: gelu_tanh_twin(a.transpose(0, 1)), [x])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@given(x=arrays(shapes(), low=-6, high=6))
def test_gelu_gradcheck(approximate, x):
    assert gradcheck(lambda a: F.gelu(a, approximate=approximate), [x])


def test_gelu_forms_agree_and_keep_float32():
    x = np.linspace(-8, 8, 1601)
    exact = F.gelu(Tensor(x)).numpy()
    approx = F.gelu(Tensor(x), approximate="tanh").numpy()
    assert np.abs(exact - approx).max() < 1e-3
    assert exact[0] == pytest.approx(-8 * 0.5 * math.erfc(8 / math.sqrt(2)), abs=1e-15)
    x32 = Tensor(x.astype(np.float32), requires_grad=True)
    y = F.gelu(x32)
    y.backward(np.ones(x.shape, dtype=np.float32))
    assert y.dtype == np.float32 and x32.grad.dtype == np.float32


# ----------------------------------------------------------------------------- dropout


@pytest.mark.parametrize("p", [pytest.param(0.2, id="p0.2"), pytest.param(0.5, id="p0.5"),
                               pytest.param(0.9, id="p0.9")])
@given(x=arrays(shapes(min_dims=1), low=0.5, high=2.0))
def test_dropout_matches_twin(p, x):
    mg.manual_seed(7)
    mask = run(lambda a: F.dropout(a, p), [x])[0] != 0  # x is never 0: zeros are drops
    assert_same(lambda a: (mg.manual_seed(7), F.dropout(a, p))[1],
                lambda a: a * Tensor(mask.astype(np.float64)) / (1 - p), [x], tol=1e-14)


@given(x=arrays(shapes(min_dims=1)))
def test_dropout_gradcheck(x):
    assert gradcheck(lambda a: (mg.manual_seed(3), F.dropout(a, 0.4))[1], [x])


def test_dropout_mask_from_the_global_generator():
    mg.manual_seed(11)
    a = F.dropout(Tensor(np.ones(50)), 0.5).numpy()
    mg.manual_seed(11)
    b = F.dropout(Tensor(np.ones(50)), 0.5).numpy()
    c = F.dropout(Tensor(np.ones(50)), 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)
    assert set(np.unique(a)) <= {0.0, 2.0}


# ----------------------------------------------------------------------------- embedding


@st.composite
def emb_cases(draw):
    V, D = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    idx = draw(hnp.arrays(np.int64, shapes(min_dims=0, max_dims=2), elements=st.integers(0, V - 1)))
    w = draw(arrays((V, D)))
    pad = draw(st.none() | st.integers(0, V - 1))
    return idx, w, pad


@given(emb_cases())
def test_embedding_matches_twin(case):
    idx, w, pad = case
    assert_same(lambda a: F.embedding(idx, a, pad), lambda a: embedding_twin(idx, a, pad), [w], tol=1e-12)


@given(emb_cases())
def test_embedding_gradcheck(case):
    idx, w, _ = case  # with padding_idx the gradient deliberately differs from the numeric one
    assert gradcheck(lambda a: F.embedding(idx, a), [w])


def test_embedding_backward_accumulates_repeats_and_skips_padding():
    w = Tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    idx = np.array([[1, 1, 0], [3, 1, 0]])
    y = F.embedding(idx, w, padding_idx=0)
    np.testing.assert_array_equal(y.numpy(), w.numpy()[idx])
    g = np.arange(18.0).reshape(2, 3, 3)
    y.backward(g)
    np.testing.assert_array_equal(w.grad[1], g[0, 0] + g[0, 1] + g[1, 1])
    np.testing.assert_array_equal(w.grad[3], g[1, 0])
    np.testing.assert_array_equal(w.grad[0], 0)
    np.testing.assert_array_equal(w.grad[2], 0)


@pytest.mark.parametrize("ids", [
    pytest.param([0, 1, 2, 3, 4, 5, 6], id="positions"),
    pytest.param([1, 4, 6], id="increasing-with-gaps"),
    pytest.param([5, 0, 3, 6, 1], id="unique-unsorted"),
    pytest.param([0, 1, 1, 2], id="sorted-with-repeat"),
    pytest.param([3], id="one"),
])
def test_scatter_add_rows_without_repeats_copies(ids):
    """The copy paths (no repeated id) of the numpy form give what np.add.at gives (the compiled
    loop: tests/nn/test_compiled_kernels.py)."""
    ids = np.array(ids, dtype=np.int64)
    rows = np.random.default_rng(len(ids)).standard_normal((ids.size, 4)).astype(np.float32)
    with compiled.using(False):
        fast = scatter_add_rows(ids, rows, 7)
    np.testing.assert_array_equal(fast, scatter_add_rows_reference(ids, rows, 7))


@given(
    ids=hnp.arrays(np.int64, st.integers(0, 40), elements=st.integers(0, 6)),
    seed=st.integers(0, 2**16),
)
def test_fast_scatter_add_rows_matches_reference(ids, seed):
    rows = np.random.default_rng(seed).standard_normal((ids.size, 3)).astype(np.float32)
    with compiled.using(False):
        fast = scatter_add_rows(ids, rows, 7)
    # The two sum a row's up to 40 terms in different orders: float32 rounding of up to about
    # 40 * 2**-24 * the partial sums' size (|rows| < 5 here) apart.
    np.testing.assert_allclose(fast, scatter_add_rows_reference(ids, rows, 7), rtol=1e-6, atol=2e-5)
    assert fast.dtype == np.float32 and fast.shape == (7, 3)


@given(
    lead=shapes(min_dims=0, max_dims=2),
    sizes=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fused_linear_matches_twin_and_gradcheck(lead, sizes, bias, seed):
    n_in, n_out = sizes
    rng = np.random.default_rng(seed)
    x = Tensor(rng.standard_normal((*lead, n_in)), requires_grad=True)
    w = Tensor(rng.standard_normal((n_out, n_in)), requires_grad=True)
    b = Tensor(rng.standard_normal(n_out), requires_grad=True)
    args = [x, w, b] if bias else [x, w]
    assert_same(lambda *a: F.linear(*a), lambda x, w, b=None: x @ w.T if b is None else x @ w.T + b, args)
    assert gradcheck(lambda *a: LinearOp.apply(*a), args)


def test_float32_erf_fast_path_is_within_float32_resolution():
    from minigrad.ops.erf import erf_float32

    x = np.concatenate([np.linspace(-8, 8, 40001), [0.0, -0.0, 1e-30, -1e-30]]).astype(np.float32)
    got = erf_float32(x)
    assert got.dtype == np.float32
    assert np.abs(got.astype(np.float64) - np.array([math.erf(float(v)) for v in x])).max() < 6e-7
    special = erf_float32(np.array([np.nan, np.inf, -np.inf], dtype=np.float32))
    assert np.isnan(special[0]) and special[1] == 1 and special[2] == -1
    # the exact GELU uses it for float32 inputs and stays close to the float64 reference
    x32 = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    fast = F.gelu(Tensor(x32)).numpy()
    ref = F.gelu(Tensor(x32.astype(np.float64))).numpy()
    assert fast.dtype == np.float32 and np.abs(fast - ref).max() < 2e-6
