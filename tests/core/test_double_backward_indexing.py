"""Second derivatives of the indexing, reduction, ordering and einsum ops (backward with
create_graph=True): gradgradcheck on hypothesis shapes (0-d, size 1, broadcasting where the op
has it), torch's double backward, and the edges (ties, zeros, huge values, constant slices).

gather's backward is a scatter_add and index_select's an index_add, as ops, so the graph goes
on through each other; prod, cumprod, logcumsumexp and scatter_reduce give their composition
(`reference`); max, min, var, std and logsumexp rebuild what they saved (`graph_saved`)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, dims, shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 3), deadline=None)


def _check(fn, *xs):
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    assert mg.gradgradcheck(fn, ts, atol=1e-5, rtol=1e-3)


def _rng(data):
    return np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))


def _axis_case(data, distinct_places=False, max_extent=3):
    """(x shape, dim, index) for gather / scatter: index no larger than x apart from dim, in
    range along it; with distinct_places, no two entries of a line along dim repeat."""
    shape = data.draw(shapes())
    n = max(len(shape), 1)
    dim = data.draw(st.integers(-n, n - 1))
    x1, axis = shape or (1,), dim % n
    rng = _rng(data)
    if distinct_places:
        k = data.draw(st.integers(1, x1[axis]))
        lines = x1[:axis] + x1[axis + 1:]
        order = np.argsort(rng.random(lines + (x1[axis],)), axis=-1)[..., :k]
        index = np.moveaxis(order, -1, axis)
        index = index[tuple(slice(0, data.draw(st.integers(1, s))) if d != axis else slice(None)
                            for d, s in enumerate(x1))]
    else:
        ishape = tuple(data.draw(st.integers(1, max_extent)) if d == axis else data.draw(st.integers(1, s))
                       for d, s in enumerate(x1))
        index = rng.integers(0, x1[axis], ishape)
    if not shape and index.size == 1 and data.draw(st.booleans()):
        index = index.reshape(())
    return shape, dim, np.ascontiguousarray(index)


def _src_shape(data, index, x_shape):
    """A src at least as large as index (0-d beside a 0-d input and a one-entry index)."""
    if not x_shape and index.size == 1 and data.draw(st.booleans()):
        return ()
    return tuple(s + data.draw(st.integers(0, 1)) for s in np.atleast_1d(index).shape)


# ----------------------------------------------------------------------------- indexing


@fewer
@given(data=st.data())
def test_gather_gradgradcheck(data):
    shape, dim, index = _axis_case(data)
    x = data.draw(arrays(shape, -1.5, 1.5))
    _check(lambda t: t.gather(dim, index) * t.gather(dim, index).sin(), x)


@fewer
@given(data=st.data(), add=st.booleans())
def test_scatter_and_scatter_add_gradgradcheck(data, add):
    """scatter writes each place once (distinct places: a repeat's winner is arbitrary)."""
    shape, dim, index = _axis_case(data, distinct_places=not add)
    x = data.draw(arrays(shape, -1.5, 1.5))
    src = data.draw(arrays(_src_shape(data, index, shape), -1.5, 1.5))
    if add:
        _check(lambda a, b: a.scatter_add(dim, index, b * b) ** 2, x, src)
    else:
        _check(lambda a, b: a.scatter(dim, index, b * b) ** 2, x, src)


@fewer
@given(data=st.data(), reduce=st.sampled_from(["sum", "mean", "prod", "amax", "amin"]),
       include_self=st.booleans())
def test_scatter_reduce_gradgradcheck(data, reduce, include_self):
    shape, dim, index = _axis_case(data)
    src_shape = _src_shape(data, index, shape)
    rng = _rng(data)
    nx, ns = int(np.prod(shape)), int(np.prod(src_shape))
    if reduce in ("amax", "amin"):  # distinct values: no ties, where the max has no derivative
        values = rng.permutation(nx + ns) * 0.25 - 0.1 * (nx + ns)
    else:
        values = rng.uniform(-1.5, 1.5, nx + ns)
    x, src = values[:nx].reshape(shape), values[nx:].reshape(src_shape)
    _check(lambda a, b: a.scatter_reduce(dim, index, b, reduce, include_self=include_self) ** 2, x, src)


def _vector_case(data):
    shape = data.draw(shapes())
    n = max(len(shape), 1)
    dim = data.draw(st.integers(-n, n - 1))
    size = (shape or (1,))[dim % n]
    k = 1 if not shape else data.draw(st.integers(1, 4))
    index = _rng(data).integers(0, size, k)
    return shape, dim, index.reshape(()) if k == 1 and data.draw(st.booleans()) else index


@fewer
@given(data=st.data())
def test_index_select_gradgradcheck(data):
    shape, dim, index = _vector_case(data)
    x = data.draw(arrays(shape, -1.5, 1.5))
    _check(lambda t: t.index_select(dim, index) * t.index_select(dim, index).exp(), x)


@fewer
@given(data=st.data(), alpha=st.sampled_from([1, -2.5]))
def test_index_add_gradgradcheck(data, alpha):
    shape, dim, index = _vector_case(data)
    x = data.draw(arrays(shape, -1.5, 1.5))
    x1 = shape or (1,)
    axis = dim % len(x1)
    source_shape = () if not shape else x1[:axis] + (index.size,) + x1[axis + 1:]
    source = data.draw(arrays(source_shape, -1.5, 1.5))
    _check(lambda a, b: a.index_add(dim, index, b * a.sum(), alpha=alpha) ** 2, x, source)


@fewer
@given(data=st.data())
def test_index_fill_gradgradcheck(data):
    shape, dim, index = _vector_case(data)
    x = data.draw(arrays(shape, -1.5, 1.5))
    v = data.draw(arrays((), -1.5, 1.5))
    _check(lambda a, b: a.index_fill(dim, index, b * b) * a, x, v)


INDEX_PUTS = [  # (y shape, index, value shape): basic, int arrays (an int beside them), a mask
    ((3, 4), (slice(None), 1), (3,)),
    ((3, 4), (0, [1, 3]), (2,)),
    ((2, 3, 4), (slice(None), [0, 2], 1), (1, 2)),
    ((3, 4), np.array([[True, False, True, False]] * 3), ()),
    ((3,), (Ellipsis,), (1,)),
]


@pytest.mark.parametrize("shape, index, value_shape", INDEX_PUTS)
@fewer
@given(data=st.data())
def test_index_put_gradgradcheck(shape, index, value_shape, data):
    y = data.draw(arrays(shape, -1.5, 1.5))
    v = data.draw(arrays(value_shape, -1.5, 1.5))

    def fn(a, b):
        out = a * a
        out[index] = b * a.sum()
        return out * out

    _check(fn, y, v)


# ----------------------------------------------------------------------------- reductions


def _distinct_values(data, shape):
    n = int(np.prod(shape))
    return (_rng(data).permutation(n) * 0.3 - 0.1 * n).reshape(shape)


@fewer
@given(data=st.data(), which=st.sampled_from(["amax", "amin", "max", "min"]))
def test_max_and_min_gradgradcheck(data, which):
    shape = data.draw(shapes())
    x = _distinct_values(data, shape)
    if which in ("max", "min"):
        _check(lambda t: getattr(t, which)() * t, x)
    else:
        dim, keepdim = data.draw(dims(len(shape))), data.draw(st.booleans())
        _check(lambda t: getattr(t, which)(dim, keepdim) ** 3, x)


@fewer
@given(data=st.data(), which=st.sampled_from(["var", "std"]), correction=st.sampled_from([0, 1]))
def test_var_and_std_gradgradcheck(data, which, correction):
    shape = data.draw(shapes())
    dim, keepdim = data.draw(dims(len(shape))), data.draw(st.booleans())
    axes = range(len(shape)) if dim in (None, ()) else [dim] if isinstance(dim, int) else dim
    n = int(np.prod([shape[a] for a in axes])) if shape else 1
    correction = min(correction, n - 1)  # n > correction: a finite divisor
    # std: no constant slice of 2 or more (its gradient is defined as 0 there; see the edge test)
    x = _distinct_values(data, shape) if which == "std" else data.draw(arrays(shape, -1.5, 1.5))

    def fn(t):  # r * t.sum(): d's own derivative counts even where r = 0 (one element)
        r = getattr(t, which)(dim, keepdim=keepdim, correction=correction)
        return r ** 2 + r * t.sum()

    _check(fn, x)


@fewer
@given(data=st.data())
def test_logsumexp_gradgradcheck(data):
    shape = data.draw(shapes())
    dim, keepdim = data.draw(dims(len(shape))), data.draw(st.booleans())
    x = data.draw(arrays(shape, -2, 2))
    _check(lambda t: t.logsumexp(dim, keepdim) ** 2, x)


# ----------------------------------------------------------------------------- ordering


@fewer
@given(data=st.data(), which=st.sampled_from(["prod", "prod_all", "cumsum", "cumprod", "logcumsumexp"]))
def test_running_ops_and_prod_gradgradcheck(data, which):
    shape = data.draw(shapes(max_side=4))
    n = max(len(shape), 1)
    dim = data.draw(st.integers(-n, n - 1))
    x = data.draw(arrays(shape, -1.5, 1.5))
    if which == "prod":
        keepdim = data.draw(st.booleans())
        _check(lambda t: t.prod(dim, keepdim) * t.sum(), x)
    elif which == "prod_all":
        _check(lambda t: t.prod() * t, x)
    else:
        _check(lambda t: getattr(t, which)(dim) ** 2, x)


@fewer
@given(data=st.data(), which=st.sampled_from(["sort", "topk"]))
def test_sort_and_topk_gradgradcheck(data, which):
    shape = data.draw(shapes())
    n = max(len(shape), 1)
    dim = data.draw(st.integers(-n, n - 1))
    x = _distinct_values(data, shape)
    if which == "sort":
        _check(lambda t: t.sort(dim, descending=True).values ** 3, x)
    else:
        k = data.draw(st.integers(0, (shape or (1,))[dim % n]))
        _check(lambda t: t.topk(k, dim).values.exp(), x)


# ----------------------------------------------------------------------------- einsum


EINSUMS = [  # equation, shapes (size-1 letters broadcast against their size elsewhere)
    ("ij,jk->ik", [(2, 3), (3, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (1, 3, 2)]),
    ("i,i->", [(3,), (1,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("iij,j->i", [(2, 2, 3), (3,)]),
    ("...ij->...ji", [(2, 1, 3)]),
    ("ij->", [(2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    (",i->i", [(), (3,)]),
]


@pytest.mark.parametrize("equation, shapes_", EINSUMS, ids=[e for e, _ in EINSUMS])
@fewer
@given(data=st.data())
def test_einsum_gradgradcheck(equation, shapes_, data):
    xs = [data.draw(arrays(s, -1.5, 1.5)) for s in shapes_]
    _check(lambda *ts: mg.einsum(equation, *ts) ** 2, *xs)


def test_overwritten_has_zero_higher_derivatives():
    """An in-place op with no gradient (eq_) on a tensor in a graph: dx = 0, then 0 again."""
    x = mg.tensor([0.5, -1.0, 2.0], dtype=mg.float64, requires_grad=True)
    y = x * x
    y.eq_(0.25)
    out = (y * x * x).sum()  # y is a constant now: out = sum(c * x^2)
    (g,) = mg.autograd.grad(out, x, create_graph=True)
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0, 0.0])  # 2 c x, c = [1, 0, 0]
    (h,) = mg.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(h.numpy(), [2.0, 0.0, 0.0])
    assert mg.gradgradcheck(lambda t: (t * t).gt_(0.1) * t * t + t.sin(), [x])


# ----------------------------------------------------------------------------- against torch


IDX = np.array([[0, 2, 1, 2], [1, 1, 0, 2]])
PICK = np.array([0, 2, 2])


def _i(L, a):
    return L.as_tensor(a) if L is not mg else a


# (name, f(L, *xs), shapes)
AGAINST_TORCH = [
    ("gather", lambda L, x: x.gather(1, _i(L, IDX)) * x.gather(1, _i(L, IDX)).exp(), [(2, 3)]),
    ("scatter", lambda L, x, s: x.scatter(1, _i(L, IDX[:, :2]), s) ** 3, [(2, 3), (2, 2)]),
    ("scatter_add", lambda L, x, s: x.scatter_add(1, _i(L, IDX), s) ** 3, [(2, 3), (2, 4)]),
    ("scatter_reduce_sum", lambda L, x, s: x.scatter_reduce(1, _i(L, IDX), s, "sum") ** 3, [(2, 3), (2, 4)]),
    ("scatter_reduce_mean",
     lambda L, x, s: x.scatter_reduce(1, _i(L, IDX), s, "mean", include_self=False) ** 3, [(2, 3), (2, 4)]),
    ("scatter_reduce_prod", lambda L, x, s: x.scatter_reduce(1, _i(L, IDX), s, "prod") * x, [(2, 3), (2, 4)]),
    ("scatter_reduce_prod_no_self",
     lambda L, x, s: x.scatter_reduce(1, _i(L, IDX), s, "prod", include_self=False) ** 2, [(2, 3), (2, 4)]),
    ("scatter_reduce_amax",
     lambda L, x, s: x.scatter_reduce(1, _i(L, IDX), s, "amax") ** 3, [(2, 3), (2, 4)]),
    ("scatter_reduce_amin",
     lambda L, x, s: x.scatter_reduce(1, _i(L, IDX), s, "amin", include_self=False) ** 3, [(2, 3), (2, 4)]),
    ("index_select", lambda L, x: x.index_select(1, _i(L, PICK)) ** 3, [(2, 3)]),
    ("index_add", lambda L, x, s: x.index_add(1, _i(L, PICK), s * x.sum(), alpha=2.0) ** 3, [(2, 3), (2, 3)]),
    ("index_fill", lambda L, x, v: x.index_fill(1, _i(L, PICK), v * v) ** 3, [(2, 3), ()]),
    ("amax_amin",
     lambda L, x: x.amax(1) ** 3 + x.max() * x.sum() + x.amin((0, 1), keepdim=True).exp(), [(2, 3)]),
    ("max_min_dim", lambda L, x: x.max(1).values ** 3 + x.min(0, keepdim=True).values.exp().sum(), [(2, 3)]),
    ("index_fill_number", lambda L, x: x.index_fill(1, _i(L, PICK), 0.5)[:, :2] ** 3 + x.take_along_dim(
        _i(L, IDX[:, :2]), 1) ** 2 * x.cummax(1).values.sum(), [(2, 3)]),
    ("var", lambda L, x: x.var(1) ** 2 + x.var(0, correction=0, keepdim=True).exp().sum(), [(2, 3)]),
    ("std", lambda L, x: x.std(0) ** 3 + x.std() * x, [(2, 3)]),
    ("logsumexp", lambda L, x: x.logsumexp(1) ** 3 + x.logsumexp((0, 1)), [(2, 3)]),
    ("prod", lambda L, x: x.prod(1, keepdim=True) * x.sum() + x.prod() * x, [(2, 3)]),
    ("cumsum", lambda L, x: x.cumsum(1) ** 3, [(2, 3)]),
    ("cumprod", lambda L, x: x.cumprod(1) * x, [(2, 5)]),
    ("logcumsumexp", lambda L, x: x.logcumsumexp(0) ** 3, [(4, 2)]),
    ("sort_topk", lambda L, x: x.sort(1).values ** 3 + x.topk(2, 0).values.exp().sum(), [(3, 3)]),
    ("einsum", lambda L, a, b: L.einsum("bij,jk->bki", a, b) ** 3, [(2, 2, 3), (3, 2)]),
    ("einsum_diagonal", lambda L, a: L.einsum("ii->i", a) ** 3 + L.einsum("ij->", a) ** 2, [(3, 3)]),
]


def _second(L, f, xs):
    """The gradient of sum((d sum(v * f) / d x)^2) over the inputs, through create_graph."""
    ts = [L.tensor(x, requires_grad=True) for x in xs]
    out = f(L, *ts)
    v = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
    grads = L.autograd.grad(out, ts, L.tensor(v), create_graph=True)
    s = sum((g * g).sum() for g in grads)
    return [t.numpy() if L is mg else t.detach().numpy() for t in L.autograd.grad(s, ts)]


def _against_torch(f, xs, rtol=1e-10):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    mine, theirs = _second(mg, f, xs), _second(torch, f, xs)
    assert len(mine) == len(theirs) == len(xs)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("name, f, shapes_", AGAINST_TORCH, ids=[n for n, _, _ in AGAINST_TORCH])
def test_second_derivatives_equal_torchs(name, f, shapes_):
    rng = np.random.default_rng(3)
    _against_torch(f, [rng.uniform(-1.5, 1.5, s) for s in shapes_])


def test_index_put_second_derivatives_equal_torchs():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    rng = np.random.default_rng(4)
    y0, v0 = rng.standard_normal((3, 4)), rng.standard_normal(2)
    found = []
    for L in (mg, torch):
        y, v = L.tensor(y0, requires_grad=True), L.tensor(v0, requires_grad=True)
        out = y * y
        out[0, [1, 3]] = v * y.sum()
        gy, gv = L.autograd.grad((out ** 3).sum(), [y, v], create_graph=True)
        second = L.autograd.grad((gy * gy).sum() + (gv * gv).sum(), [y, v])
        found.append([t.numpy() if L is mg else t.detach().numpy() for t in second])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- edges


def test_ties_share_the_gradient_and_its_derivative_as_torch():
    """Tied maxima (amax, scatter_reduce amax, and sort's equal values): the shares are
    constants, so the second derivative goes through g only."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    _against_torch(lambda L, t: t.amax(1) ** 3 + t.amin() * t.sum() + t.max() ** 2, [x])
    _against_torch(lambda L, t, s: t.scatter_reduce(1, _i(L, IDX), s, "amax") ** 3,
                   [x, np.array([[3.0, 1.0, 3.0, 3.0], [2.0, 2.0, 0.5, 2.0]])])
    t = mg.tensor(x, requires_grad=True)
    (g,) = mg.autograd.grad((t.amax(1) ** 2).sum(), t, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [[0, 3, 3], [4 / 3, 4 / 3, 4 / 3]], rtol=1e-15)


def test_zeros_in_products_as_torch():
    """prod, cumprod and scatter_reduce("prod") with one and two zeros: no division by 0."""
    x = np.array([[0.0, 2.0, -1.5, 0.5], [0.0, 1.2, 0.0, 3.0], [1.1, -0.7, 0.9, 0.0]])
    _against_torch(lambda L, t: (t.prod(1) ** 2).sum() + t.prod() * t.sum() + t.prod(0, keepdim=True).exp(),
                   [x])
    _against_torch(lambda L, t: t.cumprod(1) * t + t.cumprod(0) ** 2, [x])
    _against_torch(lambda L, a, s: a.scatter_reduce(1, _i(L, IDX), s, "prod") * a,
                   [x[:2, :3], np.array([[0.0, 2.0, 0.0, -1.0], [1.5, 0.0, 2.0, 0.5]])])


def test_huge_and_tiny_values_stay_finite_as_torch():
    """logsumexp and logcumsumexp at 1e300 (exp overflows unshifted) and across a gap of 800
    (an unshifted prefix underflows); var and std of values near 1e150 (their squares overflow)."""
    x = np.array([[1e300, 1e300 - 1e285, 1e300], [800.0, 801.5, 799.0]])
    shifted = x - x.max(1, keepdims=True)  # exact (Sterbenz): the same softmax, the same derivatives
    mine, again = (_second(mg, lambda L, t: t.logsumexp(1), [a])[0] for a in (x, shifted))
    assert np.isfinite(mine).all() and np.abs(mine[1]).max() > 0.01
    np.testing.assert_array_equal(mine, again)
    _against_torch(lambda L, t: t.logsumexp(1), [x[1:]])
    _against_torch(lambda L, t: t.logsumexp(1) ** 2, [np.array([[700.0, 701.0, 699.5], [-800.0, 0.0, 1.5]])])
    # across a spread of 1500, against 60-digit arithmetic (mpmath): torch's own double backward
    # of logcumsumexp loses the second element there (-0.0782)
    spread = np.array([[-800.0, 0.0, 1.5, 700.0]])
    np.testing.assert_allclose(_second(mg, lambda L, t: t.logcumsumexp(1) ** 2, [spread])[0],
                               [[-6400.0, -0.636479716043, 1.73222906995, 5488.47680262]], rtol=1e-10)
    moderate = np.array([[-30.0, 0.0, 1.5, 20.0], [3.0, 3.0, 3.0, 3.0]])
    _against_torch(lambda L, t: t.logcumsumexp(1) ** 2, [moderate])
    big = np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]]) * 1e150
    t = mg.tensor(big, requires_grad=True)
    (g,) = mg.autograd.grad(t.std(1).sum() * 1e-150, t, create_graph=True)
    (h,) = mg.autograd.grad((g * g).sum(), t)
    assert np.isfinite(g.numpy()).all() and np.isfinite(h.numpy()).all()
    _against_torch(lambda L, t: t.std(1) * 1e-150, [big], rtol=1e-9)


def test_a_constant_slice_of_std_has_zero_gradient_and_zero_second_derivative():
    """std's gradient is defined as 0 on a constant slice (its sqrt has an infinite slope at 0);
    that definition holds around the first derivative too: 0, not NaN from 0 * inf."""
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    t = mg.tensor(x, requires_grad=True)
    (g,) = mg.autograd.grad((t.std(1) * t.sum(1)).sum(), t, create_graph=True)
    (h,) = mg.autograd.grad((g * g).sum(), t)
    assert np.isfinite(h.numpy()).all()
    np.testing.assert_array_equal(g.numpy()[0], [0.0, 0.0, 0.0])  # std's gradient 0, and std = 0
    np.testing.assert_array_equal(h.numpy()[0], [0.0, 0.0, 0.0])  # (torch: NaN from 0 * inf)
    assert np.abs(h.numpy()[1]).min() > 0.1
    _against_torch(lambda L, t: t.std(1) * t.sum(1), [x[1:]])


def test_first_order_gradients_agree_with_and_without_create_graph():
    """The create_graph pass computes the same first derivatives (from the same backward or
    its reference) as the first-order pass, on float64."""
    rng = np.random.default_rng(5)
    x0, s0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    fs = [lambda x, s: x.scatter_reduce(1, IDX, s, "prod"), lambda x, s: x.gather(1, IDX) * s,
          lambda x, s: x.cumprod(1) * x.logcumsumexp(0) + x.std(1, keepdim=True) + s.sum(),
          lambda x, s: mg.einsum("ij,ik->jk", x, s) + x.var(0).sum() + x.prod().exp()]
    for f in fs:
        found = []
        for create in (False, True):
            x, s = mg.tensor(x0, requires_grad=True), mg.tensor(s0, requires_grad=True)
            gs = mg.autograd.grad(f(x, s).sum(), [x, s], create_graph=create)
            found.append([g.numpy() for g in gs])
        for a, b in zip(*found):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _third(L, f, x):
    t = L.tensor(x, requires_grad=True)
    (g,) = L.autograd.grad(f(L, t).sum(), t, create_graph=True)
    (h,) = L.autograd.grad((g * g).sum(), t, create_graph=True)
    (k,) = L.autograd.grad((h * h).sum(), t)
    return k.numpy() if L is mg else k.detach().numpy()


THIRD = [
    ("logsumexp", lambda L, t: t.logsumexp(1)),
    ("prod", lambda L, t: t.prod(1)),
    ("std", lambda L, t: t.std(1)),
    ("cumprod", lambda L, t: t.cumprod(1)),
    ("gather", lambda L, t: t.gather(1, _i(L, IDX[:, :3] + 1)).exp()),
    ("scatter_reduce_prod", lambda L, t: t.scatter_reduce(1, _i(L, IDX[:, :3]), t[:, :3] * 2, "prod")),
    ("einsum", lambda L, t: L.einsum("ij,kj->ik", t, t.exp())),
]


@pytest.mark.parametrize("name, f", THIRD, ids=[n for n, _ in THIRD])
def test_third_derivatives_equal_torchs(name, f):
    """The gradients' graphs go on: the derivative of the second derivative's graph, too."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    x = np.random.default_rng(6).standard_normal((2, 4))
    np.testing.assert_allclose(_third(mg, f, x), _third(torch, f, x), rtol=1e-9, atol=1e-11)


def test_third_derivative_of_logcumsumexp_against_high_precision():
    """Against 40-digit arithmetic (mpmath); torch's third derivative here is NaN."""
    x = np.array([[0.1257302210933933, -0.1321048632913019, 0.6404226504432821, 0.10490011715303971]])
    np.testing.assert_allclose(_third(mg, lambda L, t: t.logcumsumexp(1), x),
                               [[6.943565382318056, -3.893312973764543, -2.7751286894470595,
                                 -0.27512371910645295]], rtol=1e-9)
