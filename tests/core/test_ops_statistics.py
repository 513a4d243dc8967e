"""Median, norms and multinomial sampling (ops/statistics.py, tensor_statistics.py, linalg.py):
gradients against finite differences, the edges (ties, NaN, zeros, empty, 0-d), the errors,
and the sampling distribution under a fixed seed."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, dims, distinct, shapes

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))
inf = math.inf


def one_dim(data, shape):
    n = max(len(shape), 1)
    return data.draw(st.integers(-n, n - 1), label="dim")


def distinct_magnitudes(shape, low=0.1):
    """|x| at least 1e-2 apart and away from 0: no ties for the inf norms, no kinks for |x|."""
    return distinct(shape, low, 3.0, gap=1e-2).map(
        lambda a: a * np.where(np.arange(a.size).reshape(a.shape) % 2 == 0, 1.0, -1.0))


# ----------------------------------------------------------------------------- gradchecks

# (the call with x and a dim argument drawn for it, the input domain)
GRADCHECKS = [
    pytest.param(lambda x, d: x.median(), distinct, id="median-all"),
    pytest.param(lambda x, d: mg.median(x, one_axis(d, x)).values, distinct, id="median-dim"),
    pytest.param(lambda x, d: x.median(one_axis(d, x), keepdim=True)[0], distinct, id="median-keepdim"),
    # "fro" over at most two dims (over three torch asks for a matrix norm and refuses, as minigrad)
    pytest.param(lambda x, d: x.norm(dim=d if d is None or isinstance(d, int) else d[:2]),
                 lambda s: arrays(s, away_from_zero=0.1), id="norm-fro"),
    pytest.param(lambda x, d: mg.linalg.vector_norm(x, 1, d, keepdim=True),
                 lambda s: arrays(s, away_from_zero=1e-2), id="vector_norm-1"),
    pytest.param(lambda x, d: mg.linalg.vector_norm(x, inf, d), distinct_magnitudes, id="vector_norm-inf"),
    pytest.param(lambda x, d: mg.linalg.vector_norm(x, -inf, d), distinct_magnitudes, id="vector_norm--inf"),
    pytest.param(lambda x, d: mg.norm(x, 3, d), lambda s: arrays(s, away_from_zero=0.1), id="norm-3"),
    pytest.param(lambda x, d: x.norm(1.5, d, True), lambda s: arrays(s, away_from_zero=0.1), id="norm-1.5"),
    pytest.param(lambda x, d: x.norm(0.5, d), lambda s: arrays(s, away_from_zero=0.1), id="norm-0.5"),
    pytest.param(lambda x, d: mg.linalg.vector_norm(x, -1.5, d), lambda s: arrays(s, away_from_zero=0.1),
                 id="vector_norm-negative"),
    pytest.param(lambda x, d: mg.linalg.vector_norm(x, 0, d), lambda s: arrays(s, away_from_zero=0.1),
                 id="vector_norm-0"),
]


def one_axis(d, x):
    """The first axis of a drawn dim argument (median takes one int), 0 for None or ()."""
    if d is None or d == ():
        return 0
    return d if isinstance(d, int) else d[0]


@pytest.mark.parametrize("fn, domain", GRADCHECKS)
@fewer_examples
@given(data=st.data())
def test_gradcheck(fn, domain, data):
    shape = data.draw(shapes(), label="shape")
    x = mg.Tensor(data.draw(domain(shape), label="x"), requires_grad=True)
    d = data.draw(dims(len(shape)), label="dim")
    assert mg.gradcheck(lambda t: fn(t, d), [x])


# ----------------------------------------------------------------------------- median edges


def test_median_is_the_lower_median_and_ties_share_the_gradient():
    x = mg.tensor([3.0, 1.0, 2.0, 1.0, 3.0, 2.0], requires_grad=True)
    m = x.median()
    assert m.shape == () and m.item() == 2.0
    m.backward()
    np.testing.assert_array_equal(x.grad, [0, 0, 0.5, 0, 0, 0.5])
    v, i = x.median(0)
    assert v.item() == 2.0 and i.item() == 2 and i.dtype == np.int64
    v.backward()  # along a dim the gradient goes to the element the index names
    np.testing.assert_array_equal(x.grad, [0, 0, 1.5, 0, 0, 0.5])


def test_median_ties_pick_the_stable_sort_place_nan_propagates():
    a = np.array([[5.0, 2.0, 2.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0], [2.0, np.nan, 0.0, np.nan, 1.0]])
    v, i = mg.tensor(a).median(dim=-1)
    np.testing.assert_array_equal(i.numpy(), [2, 2, 1])
    np.testing.assert_array_equal(v.numpy(), [2.0, 1.0, np.nan])
    assert np.isnan(mg.tensor(a).median().item())
    x = mg.tensor(a[2], requires_grad=True)
    x.median().backward()  # NaN: the NaNs share the gradient
    np.testing.assert_array_equal(x.grad, [0, 0.5, 0, 0.5, 0])


def test_median_shapes_dtypes_and_empty():
    x = mg.tensor(np.arange(24, dtype=np.int64).reshape(2, 3, 4))
    r = x.median(1, keepdim=True)
    assert type(r).__name__ == "MedianResult" and r.values is r[0] and r.indices is r[1]
    assert r.values.shape == (2, 1, 4) and r.values.dtype == np.int64
    np.testing.assert_array_equal(r.values.numpy()[:, 0], x.numpy()[:, 1])
    assert x.median().dtype == np.int64 and x.median().item() == 11
    v, i = mg.tensor(5.0).median(-1)
    assert v.shape == () and i.shape == () and i.item() == 0
    assert np.isnan(mg.zeros(0).median().item()) and np.isnan(mg.zeros(2, 0).median().item())
    v, i = mg.zeros(0, 3).median(1)
    assert v.shape == (0,) and i.shape == (0,)


def test_median_errors():
    with pytest.raises(IndexError, match=r"median: expected reduction dim 1 to have non-zero size.*\(2, 0\)"):
        mg.zeros(2, 0).median(1)
    with pytest.raises(IndexError, match="median: dim 2 is out of range"):
        mg.zeros(2, 3).median(2)
    with pytest.raises(TypeError, match="median: not implemented for bool"):
        mg.tensor(np.array([True, False])).median()
    with pytest.raises(TypeError, match="median: keepdim=True needs a dim"):
        mg.zeros(3).median(keepdim=True)
    with pytest.raises(TypeError, match="median: dim must be an int"):
        mg.zeros(2, 3).median((0, 1))
    with pytest.raises(RuntimeError, match="median: an empty int64 tensor"):
        mg.tensor(np.zeros(0, dtype=np.int64)).median()


# ----------------------------------------------------------------------------- norm edges


@pytest.mark.parametrize("p", [2, 1, inf, -inf, 3, 1.5, 0.5, -1, -2, 0, "fro"])
def test_norm_gradient_at_zero_is_zero(p):
    x = mg.zeros(3, requires_grad=True)
    n = x.norm(p)
    assert n.item() == 0.0
    n.backward()
    if p == 0:
        assert x.grad is None  # the count of nonzeros has no gradient, as in PyTorch
    else:
        np.testing.assert_array_equal(x.grad, [0, 0, 0])


def test_norm_values_with_zeros_and_ties():
    x = mg.tensor([0.0, 1.0, -2.0], requires_grad=True)
    assert mg.linalg.vector_norm(x, 0).item() == 2.0
    assert mg.linalg.vector_norm(x, -1).item() == 0.0  # 1 / |0| is inf
    mg.linalg.vector_norm(x, 0.5).backward()  # |0|^(p - 1) is inf: the gradient there is 0
    np.testing.assert_allclose(x.grad, [0.0, 1 + math.sqrt(2), -(1 + math.sqrt(2)) / math.sqrt(2)])
    t = mg.tensor([3.0, -3.0, 1.0, 3.0], requires_grad=True)
    t.norm(inf).backward()  # ties share, with the sign of each
    np.testing.assert_allclose(t.grad, [1 / 3, -1 / 3, 0, 1 / 3])
    s = mg.tensor([1.0, -1.0, 1.0, 2.0], requires_grad=True)
    s.norm(-inf).backward()
    np.testing.assert_allclose(s.grad, [1 / 3, -1 / 3, 1 / 3, 0])


def test_norm_dims_keepdim_0d_nan_and_dtypes():
    x = mg.ones(2, 3, 4)
    assert x.norm(dim=(0, 2)).shape == (3,) and x.norm(dim=(0, 1), keepdim=True).shape == (1, 1, 4)
    assert x.norm(keepdim=True).shape == (1, 1, 1)
    assert mg.norm(x, dim=()).item() == pytest.approx(math.sqrt(24))
    assert mg.linalg.vector_norm(mg.tensor(-3.0), dim=0).item() == 3.0
    assert mg.linalg.vector_norm(x, dtype=np.float64).dtype == np.float64 and x.norm().dtype == np.float32
    assert x.double().norm(3).dtype == np.float64
    nan = mg.tensor([1.0, np.nan])
    assert all(np.isnan(nan.norm(p).item()) for p in (2, 1, inf, -inf, 3))
    assert nan.norm(0).item() == 2.0
    assert mg.zeros(0).norm().item() == 0.0 and mg.zeros(0, 3).norm(inf, dim=1).shape == (0,)


def test_the_two_norm_neither_overflows_nor_underflows():
    # Computed on x / c, c a power of two near max |x| (as LAPACK's nrm2): the sum of squares
    # of 1e30 would overflow float32 (PyTorch gives inf) and that of 1e-30 underflow to 0.
    assert mg.tensor([1e30, 1e30]).norm().item() == pytest.approx(math.sqrt(2) * 1e30, rel=1e-6)
    assert mg.tensor([1e-30, 1e-30]).norm().item() == pytest.approx(math.sqrt(2) * 1e-30, rel=1e-6)
    assert mg.tensor([1e30, 1e30]).norm(inf).item() == pytest.approx(1e30)


def test_norm_errors():
    with pytest.raises(RuntimeError, match="vector_norm: expected a floating-point tensor, got int64"):
        mg.tensor(np.array([1, 2])).norm()
    with pytest.raises(RuntimeError, match="vector_norm: cannot compute the inf norm over an empty"):
        mg.zeros(0, 3).norm(inf, dim=0)
    with pytest.raises(RuntimeError, match="cannot compute the -1.0 norm"):
        mg.linalg.vector_norm(mg.zeros(0), -1)
    with pytest.raises(ValueError, match="norm: p='nuc'.*matrix norm"):
        mg.ones(2, 3).norm("nuc")
    with pytest.raises(ValueError, match="norm: p='fro' with dim=\\(0, 1, 2\\)"):
        mg.ones(2, 3, 4).norm("fro", dim=(0, 1, 2))
    with pytest.raises(TypeError, match="vector_norm: ord must be a number"):
        mg.linalg.vector_norm(mg.ones(2), "fro")
    with pytest.raises(IndexError, match="vector_norm: dim 3"):
        mg.ones(2, 3).norm(dim=3)


# ----------------------------------------------------------------------------- multinomial


def chi_square(counts, probs):
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_multinomial_with_replacement_follows_the_weights():
    mg.manual_seed(0)
    w = np.array([[1.0, 0.0, 3.0, 6.0], [5.0, 5.0, 0.0, 0.0]])  # not normalised
    out = mg.tensor(w).multinomial(20000, replacement=True)
    assert out.shape == (2, 20000) and out.dtype == np.int64 and not out.requires_grad
    for row, weights in zip(out.numpy(), w):
        counts = np.bincount(row, minlength=4)
        assert np.all(counts[weights == 0] == 0)  # zero-weight categories are never drawn
        keep = weights > 0
        # chi-square with (nonzero categories - 1) <= 2 degrees of freedom: 13.8 is its 0.999 quantile
        assert chi_square(counts[keep], weights[keep] / weights.sum()) < 13.8


def test_multinomial_without_replacement_first_draw_and_distinct_draws():
    mg.manual_seed(1)
    w = np.array([0.1, 0.0, 0.2, 0.3, 0.4], dtype=np.float32)
    rows = mg.tensor(np.tile(w, (5000, 1))).multinomial(3)
    assert rows.shape == (5000, 3)
    assert all(len(set(r)) == 3 for r in rows.numpy()[:200].tolist())
    assert not np.any(rows.numpy() == 1)
    counts = np.bincount(rows.numpy()[:, 0], minlength=5)  # the first draw is a plain draw
    keep = w > 0
    assert chi_square(counts[keep], w[keep] / w.sum()) < 16.3  # 3 degrees of freedom, 0.999
    # the second draw: P(j second) = sum_i p_i p_j / (1 - p_i), i != j
    p = w[keep] / w.sum()
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(4) if i != j) for j in range(4)])
    assert chi_square(np.bincount(rows.numpy()[:, 1], minlength=5)[keep], second) < 16.3


def test_multinomial_is_reproducible_and_takes_a_generator():
    x = mg.tensor([0.2, 0.3, 0.5])
    mg.manual_seed(7)
    a = mg.multinomial(x, 10, replacement=True)
    mg.manual_seed(7)
    b = x.multinomial(10, True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    c = x.multinomial(10, True, generator=np.random.default_rng(3))
    d = mg.multinomial(x, 10, True, generator=np.random.default_rng(3))
    np.testing.assert_array_equal(c.numpy(), d.numpy())
    assert sorted(mg.multinomial(x, 3).numpy().tolist()) == [0, 1, 2]  # all of them, once each
    assert mg.zeros(0, 3).multinomial(2).shape == (0, 2)


@pytest.mark.parametrize("call, error, message", [
    (lambda: mg.tensor([0.0, 1.0, 2.0, 0.0]).multinomial(3), RuntimeError, "only 2 nonzero"),
    (lambda: mg.ones(3).multinomial(4), RuntimeError, "num_samples=4 > 3 categories"),
    (lambda: mg.tensor([-1.0, 1.0]).multinomial(1), RuntimeError, "inf, nan or an element < 0"),
    (lambda: mg.tensor([np.nan, 1.0]).multinomial(1, True), RuntimeError, "inf, nan or an element < 0"),
    (lambda: mg.tensor([[1.0, 0.0], [0.0, 0.0]]).multinomial(1, True), RuntimeError, "sum of probabilities"),
    (lambda: mg.ones(2, 2, 2).multinomial(1), RuntimeError, "1-d or 2-d"),
    (lambda: mg.tensor(1.0).multinomial(1), RuntimeError, "1-d or 2-d"),
    (lambda: mg.ones(3).multinomial(0), RuntimeError, "num_samples=0 <= 0"),
    (lambda: mg.ones(3).multinomial(1.5), TypeError, "num_samples must be an int"),
    (lambda: mg.tensor(np.array([1, 2])).multinomial(1), RuntimeError, "floating-point"),
], ids=["too-few-nonzero", "too-many", "negative", "nan", "zero-row", "3-d", "0-d", "zero", "float", "int"])
def test_multinomial_errors(call, error, message):
    with pytest.raises(error, match=f"multinomial: .*{message}"):
        call()
