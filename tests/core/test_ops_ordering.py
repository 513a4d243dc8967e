"""Products, running sums and products, sorting and counting (ops/ordering.py,
tensor_ordering.py): gradients against finite differences (zeros and ties included), values,
indices, dtypes and gradients against PyTorch, the function forms and the errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, distinct, on_grid, shapes

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))


def one_dim(data, shape):
    n = max(len(shape), 1)
    return data.draw(st.integers(-n, n - 1), label="dim")


# ----------------------------------------------------------------------------- gradchecks

# (the op as called with x and a dim, the input domain); zeros are drawn on purpose for prod
# and cumprod, whose gradients must not divide by x.
GRADCHECKS = [
    pytest.param(lambda x, d: x.prod(d), lambda s: on_grid(s, [-1.5, 0.0, 0.5, 2.0]), id="prod-zeros"),
    pytest.param(lambda x, d: mg.prod(x, dim=d, keepdim=True), lambda s: arrays(s), id="prod-keepdim"),
    pytest.param(lambda x, d: x.prod(), lambda s: on_grid(s, [-1.5, 0.0, 0.5, 2.0]), id="prod-all"),
    pytest.param(lambda x, d: x.cumsum(d), lambda s: arrays(s), id="cumsum"),
    pytest.param(lambda x, d: mg.cumprod(x, d), lambda s: on_grid(s, [-1.5, 0.0, 0.5, 2.0]),
                 id="cumprod-zeros"),
    pytest.param(lambda x, d: x.cumprod(d), lambda s: arrays(s), id="cumprod"),
    pytest.param(lambda x, d: mg.logcumsumexp(x, d), lambda s: arrays(s, -30, 30), id="logcumsumexp"),
    pytest.param(lambda x, d: x.cummax(d).values, distinct, id="cummax"),
    pytest.param(lambda x, d: mg.cummin(x, d)[0], distinct, id="cummin"),
    pytest.param(lambda x, d: x.sort(d).values, distinct, id="sort"),
    pytest.param(lambda x, d: mg.sort(x, dim=d, descending=True)[0], distinct, id="sort-descending"),
    pytest.param(lambda x, d: x.topk(1, dim=d).values, distinct, id="topk-1"),
    pytest.param(lambda x, d: mg.topk(x, 1, dim=d, largest=False)[0], distinct, id="topk-smallest"),
]


@pytest.mark.parametrize("fn, domain", GRADCHECKS)
@fewer_examples
@given(data=st.data())
def test_gradcheck(fn, domain, data):
    shape = data.draw(shapes(), label="shape")
    x = mg.Tensor(data.draw(domain(shape), label="x"), requires_grad=True)
    d = one_dim(data, shape)
    assert mg.gradcheck(lambda t: fn(t, d), [x])


@fewer_examples
@given(data=st.data())
def test_topk_gradcheck_every_k(data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    d = one_dim(data, shape)
    k = data.draw(st.integers(0, shape[d]), label="k")
    x = mg.Tensor(data.draw(distinct(shape), label="x"), requires_grad=True)
    assert mg.gradcheck(lambda t: t.topk(k, dim=d).values, [x])


def test_prod_gradient_with_zeros_is_exact():
    x = mg.tensor([[2.0, 0.0, 3.0], [0.0, 4.0, 0.0], [1.0, 2.0, 3.0]], requires_grad=True)
    x.prod(1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 6, 0], [0, 0, 0], [6, 3, 2]])
    y = mg.tensor([0.0, 5.0, 2.0], requires_grad=True)
    mg.cumprod(y, 0).sum().backward()  # z = (0, 0, 0): only x_0 moves it, by 1 + 5 + 10
    np.testing.assert_array_equal(y.grad, [16, 0, 0])


def test_sort_is_stable_with_ties_and_routes_gradients_to_the_picked_elements():
    x = mg.tensor([2.0, 1.0, 2.0, 1.0, 3.0], requires_grad=True)
    v, i = x.sort()
    np.testing.assert_array_equal(i.numpy(), [1, 3, 0, 2, 4])
    v, i = x.sort(descending=True)
    np.testing.assert_array_equal(i.numpy(), [4, 0, 2, 1, 3])
    np.testing.assert_array_equal(v.numpy(), [3, 2, 2, 1, 1])
    (v * mg.tensor([1.0, 10, 100, 1000, 10000])).sum().backward()
    np.testing.assert_array_equal(x.grad, [10, 1000, 100, 10000, 1])
    np.testing.assert_array_equal(mg.argsort(x, descending=True).numpy(), i.numpy())


def test_sort_of_integers_and_bools_never_negates():
    small = np.iinfo(np.int64).min
    x = mg.tensor(np.array([small, 0, 7], dtype=np.int64))
    np.testing.assert_array_equal(x.sort(descending=True).values.numpy(), [7, 0, small])
    b = mg.tensor(np.array([True, False, True]))
    np.testing.assert_array_equal(b.argsort(descending=True).numpy(), [0, 2, 1])


def test_named_tuples_and_dtypes():
    x = mg.tensor([[3.0, 1.0], [0.0, 2.0]])
    s, t = x.sort(0), x.topk(1)
    assert type(s).__name__ == "SortResult" and s.values is s[0] and s.indices is s[1]
    assert type(t).__name__ == "TopKResult" and t.values.shape == (2, 1)
    assert s.indices.dtype == np.int64 and t.indices.dtype == np.int64
    assert x.count_nonzero().item() == 3 and x.count_nonzero(dim=1).numpy().tolist() == [2, 1]
    assert mg.count_nonzero(x, dim=(0, 1)).dtype == np.int64


def test_errors_name_the_op_and_the_fix():
    x = mg.zeros((2, 3))
    with pytest.raises(IndexError, match="sort: dim 2 is out of range"):
        x.sort(dim=2)
    with pytest.raises(ValueError, match=r"topk: k=4 is out of range for dim -1 of size 3.*0 <= k <= 3"):
        x.topk(4)
    with pytest.raises(TypeError, match="cumsum: dim must be an int"):
        x.cumsum((0, 1))
    with pytest.raises(IndexError, match="prod: dim -3"):
        x.prod(-3)


# ----------------------------------------------------------------------------- against PyTorch


def _torch():
    return pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")


CASES = [
    # (name, minigrad call, torch call, returns (values, indices))
    ("prod", lambda x, d: x.prod(d), lambda x, d: x.prod(d), False),
    ("prod-keepdim", lambda x, d: mg.prod(x, d, keepdim=True), lambda x, d: x.prod(d, keepdim=True), False),
    ("prod-all", lambda x, d: mg.prod(x), lambda x, d: x.prod(), False),
    ("cumsum", lambda x, d: mg.cumsum(x, d), lambda x, d: x.cumsum(d), False),
    ("cumprod", lambda x, d: x.cumprod(dim=d), lambda x, d: x.cumprod(dim=d), False),
    ("logcumsumexp", lambda x, d: x.logcumsumexp(d), lambda x, d: x.logcumsumexp(d), False),
    ("cummax", lambda x, d: mg.cummax(x, d), lambda x, d: x.cummax(d), True),
    ("cummin", lambda x, d: x.cummin(dim=d), lambda x, d: x.cummin(dim=d), True),
    ("sort", lambda x, d: x.sort(d), lambda x, d: x.sort(d), True),
    ("sort-descending", lambda x, d: mg.sort(x, d, descending=True, stable=True),
     lambda x, d: x.sort(dim=d, descending=True, stable=True), True),
    ("topk", lambda x, d: mg.topk(x, 1, d), lambda x, d: x.topk(1, d), True),
    ("topk-smallest", lambda x, d: x.topk(1, dim=d, largest=False),
     lambda x, d: x.topk(1, d, largest=False), True),
]


@pytest.mark.parametrize("name, ours, theirs, pair", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@fewer_examples
@given(data=st.data())
def test_against_torch(name, ours, theirs, pair, dtype, data):
    torch = _torch()
    shape = data.draw(shapes(), label="shape")
    # away from 0: cumprod's gradient divides by x where it holds no zero, as PyTorch's does
    a = data.draw(distinct(shape, -2.0, 2.0, gap=1e-2).filter(lambda v: np.all(np.abs(v) >= 0.1)),
                  label="x").astype(dtype)
    d = one_dim(data, shape)
    x = mg.Tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    out, tout = ours(x, d), theirs(t, d)
    if pair:
        np.testing.assert_array_equal(out.indices.numpy(), tout.indices.numpy())
        assert out.indices.dtype == np.int64
        out, tout = out.values, tout.values
    assert out.shape == tuple(tout.shape) and out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    g = np.random.default_rng(0).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
@fewer_examples
@given(data=st.data())
def test_integer_and_bool_dtypes_against_torch(dtype, data):
    torch = _torch()
    shape = data.draw(shapes(), label="shape")
    a = data.draw(on_grid(shape, [0, 1, 2, 3] if dtype != np.bool_ else [False, True], dtype=dtype))
    d = one_dim(data, shape)
    x, t = mg.tensor(a), torch.from_numpy(a.copy())
    for ours, theirs in [(x.prod(d), t.prod(d)), (x.prod(), t.prod()), (x.cumsum(d), t.cumsum(d)),
                         (x.cumprod(d), t.cumprod(d)), (x.count_nonzero(d), t.count_nonzero(d)),
                         (mg.count_nonzero(x), torch.count_nonzero(t))]:
        assert ours.dtype == theirs.numpy().dtype and ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if dtype != np.bool_:  # torch sorts no bool tensors on CPU in every build: ints only
        s, ts = x.sort(d, stable=True), t.sort(dim=d, stable=True)
        np.testing.assert_array_equal(s.values.numpy(), ts.values.numpy())
        np.testing.assert_array_equal(s.indices.numpy(), ts.indices.numpy())
        np.testing.assert_array_equal(x.argsort(d, descending=True, stable=True).numpy(),
                                      t.argsort(dim=d, descending=True, stable=True).numpy())


@fewer_examples
@given(data=st.data())
def test_prod_and_cumprod_gradients_with_zeros_against_torch(data):
    torch = _torch()
    shape = data.draw(shapes(min_dims=1), label="shape")
    a = data.draw(on_grid(shape, [-1.5, 0.0, 0.5, 2.0]), label="x")
    d = one_dim(data, shape)
    for ours, theirs in [(lambda x: x.prod(d), lambda t: t.prod(d)), (lambda x: x.prod(), lambda t: t.prod()),
                         (lambda x: x.cumprod(d), lambda t: t.cumprod(d))]:
        x, t = mg.Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, tout = ours(x), theirs(t)
        g = np.random.default_rng(1).standard_normal(out.shape)
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_count_nonzero_and_argsort_with_tuples_and_negative_dims_against_torch():
    torch = _torch()
    a = np.array([[[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]], [[5.0, -1.0, 0.5], [0.0, 0.0, 0.0]]])
    x, t = mg.tensor(a), torch.from_numpy(a)
    for dim in [None, 0, -1, (0, 2), (-1, -2)]:
        np.testing.assert_array_equal(x.count_nonzero(dim).numpy(), t.count_nonzero(dim=dim).numpy())
    np.testing.assert_array_equal(mg.argsort(x, dim=-2), torch.argsort(t, dim=-2, stable=True))


@fewer_examples
@given(data=st.data())
def test_torch_twins_of_the_ops(data):
    """Each op of ops/ordering.py against its twin in TORCH_OPS (what to_torch runs)."""
    torch = _torch()
    from minigrad.export import TORCH_OPS
    from minigrad.ops import ordering

    shape = data.draw(shapes(), label="shape")
    a = data.draw(distinct(shape).filter(lambda v: np.all(np.abs(v) >= 0.1)), label="x")
    d = one_dim(data, shape)
    idx = mg.tensor(a).sort(d, descending=True).indices.numpy()
    for op, options in [(ordering.Prod, {"dim": d, "keepdim": True}), (ordering.Prod, {}),
                        (ordering.CumSum, {"dim": d}), (ordering.CumProd, {"dim": d}),
                        (ordering.GatherSorted, {"indices": idx, "dim": d})]:
        x, t = mg.Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, tout = op.apply(x, **options), TORCH_OPS[op](t, **options)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), 1e-12, 1e-12, err_msg=op.__name__)
        g = np.random.default_rng(2).standard_normal(out.shape)
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-12, atol=1e-12, err_msg=op.__name__)


def test_logcumsumexp_at_huge_gaps_and_minus_infinity_against_torch():
    torch = _torch()
    for dtype in (np.float32, np.float64):
        big = np.finfo(dtype).max / 4
        a = np.array([[1e4, -1e4, 3.0, 2.0], [-big, big, 0.0, -np.inf], [-np.inf, -np.inf, 0.0, 1.0]], dtype)
        g = np.array([[1.0, -2.0, 3.0, 0.5], [0.25, -1.0, 2.0, 1.0], [1.0, 1.0, -1.0, 2.0]], dtype)
        x, t = mg.Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, tout = x.logcumsumexp(1), t.logcumsumexp(1)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-6)  # to the last bit or so
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-30)  # NaN where torch's
        assert np.isfinite(x.grad.numpy()[:2]).all()  # no overflow at gaps of the dtype's range
    with pytest.raises(TypeError, match="logcumsumexp: expected a floating-point tensor, got int64"):
        mg.tensor([1, 2]).logcumsumexp(0)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_running_extremes_ties_nan_and_integers_against_torch(name):
    torch = _torch()
    for a in (np.array([[1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan], [2.0, 1.0, 1.0, 0.5, 0.5, 9.0, -1.0]]),
              np.array([[1, 3, 2, 3], [0, 0, -1, -1]], np.int64), np.array(2.5)):
        d = 0 if a.ndim == 0 else 1
        ours, theirs = getattr(mg.tensor(a), name)(d), getattr(torch.tensor(a), name)(d)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        assert ours.values.dtype == theirs.values.numpy().dtype and ours.indices.dtype == np.int64
    x = mg.tensor([[1.0, 3.0, 3.0, 2.0]], requires_grad=True)
    getattr(x, name)(1).values.sum().backward()
    want = [1.0, 1.0, 2.0, 0.0] if name == "cummax" else [4.0, 0.0, 0.0, 0.0]  # each to its index
    assert x.grad.tolist() == [want]
    with pytest.raises(IndexError, match=name):
        getattr(x, name)(2)
