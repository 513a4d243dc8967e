"""Indexing ops (ops/indexing.py): gather, scatter, scatter_add, index_select, index_add,
index_fill, take_along_dim, masked_select, masked_fill, where and nonzero: gradients against finite
differences over drawn shapes and indices (repeated indices, negative dims, 0-d inputs), the
accumulation of repeated indices, values and dtypes, and the errors. Also diagonal,
repeat_interleave and broadcast_to (ops/shape.py), and a few lines on einsum, mm and outer
(ops/linalg.py) inside the tests that mix them with the indexing ops."""

import numpy as np
import pytest
from domains import X
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_checks import edge_exact

import minigrad as mg
from minigrad.ops import indexing, linalg
from minigrad.testing import arrays, broadcastable_shapes, distinct, shape_and_broadcastable, shapes

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))


# ----------------------------------------------------------------------------- drawing indices


@st.composite
def along(draw, distinct=False):
    """(shape of x, dim, index) for gather / scatter: index no larger than x apart from dim,
    entries in range; repeated entries unless `distinct` (then distinct along dim)."""
    shape = draw(shapes(), label="shape")
    n = max(len(shape), 1)
    dim = draw(st.integers(-n, n - 1), label="dim")
    axis, x1 = dim % n, shape or (1,)
    ishape = [draw(st.integers(1, s)) for s in x1]
    size = x1[axis]
    k = draw(st.integers(0, size if distinct else 4), label="k")
    rng = np.random.default_rng(draw(st.integers(0, 2**16), label="seed"))
    if distinct:
        keys = rng.random(ishape[:axis] + [size] + ishape[axis + 1:])
        idx = np.take(np.argsort(keys, axis=axis), np.arange(k), axis=axis)
    else:
        idx = rng.integers(0, size, ishape[:axis] + [k] + ishape[axis + 1:])
    if not shape and k == 1 and draw(st.booleans()):
        idx = idx.reshape(())  # a 0-d x takes a 0-d index too
    return shape, dim, idx.astype(np.int64)


def bigger(data, shape):
    """A shape no smaller than `shape` on every side (src of scatter reads only its corner)."""
    return tuple(s + data.draw(st.integers(0, 1)) for s in shape)


def one_dim(data, shape):
    n = max(len(shape), 1)
    return data.draw(st.integers(-n, n - 1), label="dim")


def vector_index(data, size, repeat=True):
    if data.draw(st.booleans(), label="0-d index"):
        return np.array(data.draw(st.integers(0, size - 1)), dtype=np.int64)
    k = data.draw(st.integers(0, 4 if repeat else size))
    return np.array(data.draw(st.lists(st.integers(0, size - 1), min_size=k, max_size=k)), dtype=np.int64)


# ----------------------------------------------------------------------------- gradchecks


@fewer_examples
@given(case=along(), data=st.data())
def test_gather_gradcheck_with_repeated_indices(case, data):
    shape, dim, idx = case
    x = data.draw(arrays(shape), label="x")
    assert mg.gradcheck(lambda t: t.gather(dim, idx), [x])
    assert mg.gradcheck(lambda t: mg.gather(t, dim, mg.tensor(idx)), [x])


@fewer_examples
@given(case=along(distinct=True), data=st.data())
def test_scatter_gradcheck(case, data):
    shape, dim, idx = case
    x = data.draw(arrays(shape), label="x")
    src = data.draw(arrays(bigger(data, idx.shape)), label="src")
    assert mg.gradcheck(lambda t, s: t.scatter(dim, idx, s), [x, src])
    assert mg.gradcheck(lambda t: mg.scatter(t, dim, idx, value=1.5), [x])


@fewer_examples
@given(case=along(), data=st.data())
def test_scatter_add_gradcheck_with_repeated_indices(case, data):
    shape, dim, idx = case
    x = data.draw(arrays(shape), label="x")
    src = data.draw(arrays(bigger(data, idx.shape)), label="src")
    assert mg.gradcheck(lambda t, s: mg.scatter_add(t, dim, idx, s), [x, src])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@fewer_examples
@given(case=along(), data=st.data())
def test_scatter_reduce_gradcheck_with_repeated_indices(reduce, include_self, case, data):
    shape, dim, idx = case
    src_shape = bigger(data, idx.shape)
    n, m = int(np.prod(shape)), int(np.prod(src_shape))
    both = data.draw(distinct((n + m,), gap=1e-2), label="x and src")  # no ties for amax / amin
    x, src = both[:n].reshape(shape), both[n:].reshape(src_shape)
    assert mg.gradcheck(lambda t, s: t.scatter_reduce(dim, idx, s, reduce, include_self=include_self),
                        [x, src])


def test_scatter_reduce_at_zeros_ties_and_integers():
    # prod with zeros: at a place with one zero only the zero's value has a gradient (the
    # product of the others: 2 * 3 at place 0, 5 * 4 at place 1)
    x = mg.tensor([2.0, 5.0, 1.0], requires_grad=True)
    src = mg.tensor([0.0, 3.0, 0.0, 4.0], requires_grad=True)
    z = x.scatter_reduce(0, mg.tensor([0, 0, 1, 1]), src, "prod")
    assert z.tolist() == [0.0, 0.0, 1.0]
    z.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0] and src.grad.tolist() == [6.0, 0.0, 20.0, 0.0]
    # amax ties share the gradient evenly, self included
    x = mg.tensor([3.0, 0.0], requires_grad=True)
    src = mg.tensor([3.0, 3.0, 1.0], requires_grad=True)
    x.scatter_reduce(0, mg.tensor([0, 0, 1]), src, "amax").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3, 0.0])
    np.testing.assert_allclose(src.grad.numpy(), [1 / 3, 1 / 3, 1.0])
    # integers: the mean floor-divides, as torch; amin without self starts from the largest int
    ints = mg.zeros(3, dtype=mg.long)
    assert ints.scatter_reduce(0, mg.tensor([0, 0, 1]), mg.tensor([1, 2, 3]), "mean").tolist() == [1, 1, 0]
    low = ints.scatter_reduce(0, mg.tensor([2]), mg.tensor([-7]), "amin", include_self=False)
    assert low.tolist() == [0, 0, -7]
    y = mg.ones(2, 3)
    assert y.scatter_reduce_(1, mg.tensor([[0, 0]]), mg.tensor([[2.0, 3.0]]), "sum") is y
    assert y.tolist() == [[6.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    # scatter's reduce= (torch's deprecated form) is scatter_reduce with self included
    got = mg.ones(2, 3).scatter(1, mg.tensor([[0, 0, 2], [1, 1, 1]]), 2.0, reduce="multiply")
    assert got.tolist() == [[4.0, 1.0, 2.0], [1.0, 8.0, 1.0]]


@fewer_examples
@given(data=st.data())
def test_index_select_and_index_add_gradcheck(data):
    shape = data.draw(shapes(), label="shape")
    dim = one_dim(data, shape)
    x1 = shape or (1,)
    axis = dim % len(x1)
    idx = vector_index(data, x1[axis])
    if not shape:
        idx = idx.reshape(()) if idx.size == 1 else np.zeros((), np.int64)
    x = data.draw(arrays(shape), label="x")
    assert mg.gradcheck(lambda t: t.index_select(dim, idx), [x])
    src_shape = () if not shape else shape[:axis] + (idx.size,) + shape[axis + 1:]
    src = data.draw(arrays(src_shape), label="source")
    alpha = data.draw(st.sampled_from([1, -0.5]), label="alpha")
    assert mg.gradcheck(lambda t, s: mg.index_add(t, dim, idx, s, alpha=alpha), [x, src])


@fewer_examples
@given(data=st.data())
def test_index_fill_gradcheck_with_repeated_and_negative_indices(data):
    shape = data.draw(shapes(), label="shape")
    dim = one_dim(data, shape)
    size = (shape or (1,))[dim % max(len(shape), 1)]
    idx = vector_index(data, size)
    if data.draw(st.booleans(), label="negative"):
        idx = idx - size  # counted from the end, as PyTorch allows
    x = data.draw(arrays(shape), label="x")
    assert mg.gradcheck(lambda t: t.index_fill(dim, idx, -1.5), [x])
    v = data.draw(arrays(()), label="value")
    assert mg.gradcheck(lambda t, s: mg.index_fill(t, dim, mg.tensor(idx), s), [x, v])


@fewer_examples
@given(data=st.data())
def test_take_along_dim_gradcheck_broadcasting_and_negative_indices(data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = one_dim(data, shape)
    axis = dim % len(shape)
    ishape = tuple(data.draw(st.integers(0, 3)) if d == axis else data.draw(st.sampled_from([1, s]))
                   for d, s in enumerate(shape))
    xshape = tuple(1 if d != axis and data.draw(st.booleans()) else s for d, s in enumerate(shape))
    n = shape[axis]
    idx = np.random.default_rng(data.draw(st.integers(0, 99))).integers(-n, n, ishape)
    x = data.draw(arrays(xshape), label="x")
    assert mg.gradcheck(lambda t: t.take_along_dim(idx, dim), [x])
    flat = np.random.default_rng(0).integers(0, int(np.prod(xshape)), ishape)
    assert mg.gradcheck(lambda t: mg.take_along_dim(t, flat), [x])


@fewer_examples
@given(shapes=shape_and_broadcastable(), data=st.data())
def test_masked_select_gradcheck_both_ways_of_broadcasting(shapes, data):
    big, small = shapes
    mask = data.draw(arrays(small), label="mask") > 0
    x_small = data.draw(arrays(small), label="x_small")
    x_big = data.draw(arrays(big), label="x_big")
    assert mg.gradcheck(lambda t: t.masked_select(mg.tensor(np.broadcast_to(mask, big))), [x_big])
    assert mg.gradcheck(lambda t: mg.masked_select(t, mg.tensor(np.ones(big, bool))), [x_small])


@fewer_examples
@given(data=st.data())
def test_diagonal_gradcheck(data):
    shape = data.draw(shapes(min_dims=2, max_dims=4), label="shape")
    n = len(shape)
    d1, d2 = data.draw(st.lists(st.integers(-n, n - 1), min_size=2, max_size=2,
                                unique_by=lambda d: d % n), label="dims")
    offset = data.draw(st.integers(-3, 3), label="offset")
    x = data.draw(arrays(shape), label="x")
    out = mg.diagonal(mg.tensor(x), offset, d1, d2)
    np.testing.assert_array_equal(out.numpy(), np.diagonal(x, offset, d1, d2))
    if out.numpy().size:
        assert mg.gradcheck(lambda t: t.diagonal(offset=offset, dim1=d1, dim2=d2), [x])


@fewer_examples
@given(data=st.data())
def test_repeat_interleave_gradcheck(data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    dim = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)), label="dim")
    n = int(np.prod(shape)) if dim is None else shape[dim]
    repeats = data.draw(st.one_of(st.integers(1, 3), st.lists(st.integers(0, 3), min_size=n, max_size=n)
                                  .map(lambda r: mg.tensor(np.array(r, dtype=np.int64)))), label="repeats")
    x = data.draw(arrays(shape), label="x")
    out = mg.repeat_interleave(mg.tensor(x), repeats, dim)
    ref = np.repeat(x, getattr(repeats, "data", repeats), axis=dim)
    np.testing.assert_array_equal(out.numpy(), ref)
    if out.numpy().size:
        assert mg.gradcheck(lambda t: t.repeat_interleave(repeats, dim=dim), [x])


@fewer_examples
@given(shapes=shape_and_broadcastable(), data=st.data())
def test_broadcast_to_gradcheck(shapes, data):
    big, small = shapes
    x = data.draw(arrays(small), label="x")
    assert mg.gradcheck(lambda t: t.broadcast_to(big), [x])
    assert mg.gradcheck(lambda t: mg.broadcast_to(t, (2,) + big), [x])


@given(data=st.data())
def test_where_gradcheck_with_broadcasting(data):
    shape_c, shape_a, shape_b = data.draw(broadcastable_shapes(3), label="shapes")
    cond = data.draw(hnp.arrays(np.bool_, shape_c), label="cond")
    a, b = data.draw(arrays(shape_a), label="a"), data.draw(arrays(shape_b), label="b")
    assert mg.gradcheck(lambda x, y: mg.where(mg.tensor(cond), x, y), [a, b])


@given(data=st.data())
def test_masked_fill_gradcheck(data):
    shape, mask_shape = data.draw(shape_and_broadcastable(), label="shapes")
    x = data.draw(arrays(shape), label="x")
    mask = data.draw(hnp.arrays(np.bool_, mask_shape), label="mask")
    assert mg.gradcheck(lambda t: t.masked_fill(mg.tensor(mask), -5.0), [x])


# ----------------------------------------------------------------------------- where and masked_fill


@fewer_examples
@given(data=st.data())
def test_where_and_masked_fill_forward(data):
    shape, mask_shape = data.draw(shape_and_broadcastable(), label="shapes")
    x = data.draw(arrays(shape), label="x")
    mask = data.draw(hnp.arrays(np.bool_, mask_shape), label="mask")
    np.testing.assert_array_equal(mg.tensor(x).masked_fill(mg.tensor(mask), 7.0), np.where(mask, 7.0, x))
    np.testing.assert_array_equal(mg.where(mg.tensor(mask), mg.tensor(x), 0.0), np.where(mask, x, 0.0))


# (op, input, expected value, expected gradient of the sum), float32, 0-d.
EDGES = [
    pytest.param(lambda x: x.masked_fill(mg.tensor(True), -np.inf), 3.0, -np.inf, 0.0, id="masked_fill"),
]


@pytest.mark.parametrize("fn, x, value, grad", EDGES)
def test_edge_values_and_gradients(fn, x, value, grad):
    edge_exact(fn, x, value, grad)


def test_where_gradient_goes_to_the_chosen_side_only():
    a = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = mg.tensor([4.0], requires_grad=True)  # broadcast: its gradient is summed
    mg.where(mg.tensor([True, False, False]), a, b).backward(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(a.grad, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(b.grad, [5.0])


# ----------------------------------------------------------------------------- repeated indices


def test_repeated_indices_accumulate_in_gather_index_select_and_take_along_dim():
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    g = np.array([[1.0, 10.0, 100.0]])
    x.gather(1, np.array([[2, 2, 0]])).backward(g)
    np.testing.assert_array_equal(x.grad, [[100, 0, 11], [0, 0, 0]])
    x.grad = None
    x.index_select(0, mg.tensor(np.array([1, 1, 1]))).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 0, 0], [3, 3, 3]])
    x.grad = None
    x.take_along_dim(np.array([[-1, 2]]), dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 0, 2], [0, 0, 2]])
    x.grad = None
    x.repeat_interleave(mg.tensor(np.array([0, 3, 1])), dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 3, 1], [0, 3, 1]])


def test_scatter_overwritten_places_get_zero_and_every_src_copy_its_place():
    x = mg.tensor(np.zeros((2, 3)), requires_grad=True)
    src = mg.tensor(np.ones((2, 3)), requires_grad=True)
    g = np.arange(6.0).reshape(2, 3)
    x.scatter(1, np.array([[2, 2], [0, 1]]), src).backward(g)
    np.testing.assert_array_equal(x.grad, [[0, 1, 0], [0, 0, 5]])
    np.testing.assert_array_equal(src.grad, [[2, 2, 0], [3, 4, 0]])  # both copies of place 2 get g there
    y = mg.tensor(np.ones(3))
    added = y.scatter_add(0, np.array([1, 1, 1]), mg.tensor(np.ones(3)))
    np.testing.assert_array_equal(added.numpy(), [1, 4, 1])
    np.testing.assert_array_equal(y.index_add(0, np.array([2, 2]), mg.tensor(np.ones(2)), alpha=3).numpy(),
                                  [1, 1, 7])


def test_index_fill_fills_each_slice_once_and_casts_the_value():
    x = mg.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    v = mg.tensor(np.array(2.0), requires_grad=True)
    y = x.index_fill(0, np.array([1, 1, -1]), v)  # rows 1 and 2; row 1 named twice
    np.testing.assert_array_equal(y.numpy(), [[0, 1], [2, 2], [2, 2]])
    y.backward(np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(x.grad, [[0, 1], [0, 0], [0, 0]])
    assert v.grad == 2 + 3 + 4 + 5  # each filled place once, however often the index names it
    n = mg.tensor(np.zeros(3, np.int64))
    assert n.index_fill(0, np.array([1]), 2.7).numpy().tolist() == [0, 2, 0]  # cast as in PyTorch
    assert n.index_fill(0, np.array([1]), 2.7).dtype == np.int64
    assert x.index_fill(1, np.zeros(0, np.int64), 9.0).numpy().tolist() == x.numpy().tolist()
    s = mg.tensor(np.array(5.0))
    assert s.index_fill(0, np.array(0), float("nan")).isnan().item()
    z = mg.tensor(np.ones((2, 3)))
    assert z.index_fill_(1, np.array([0, 2]), float("inf")) is z
    assert z.numpy().tolist() == [[np.inf, 1, np.inf], [np.inf, 1, np.inf]]


def test_zero_dim_inputs_and_empty_indices():
    s = mg.tensor(np.array(5.0), requires_grad=True)
    out = s.gather(0, np.array([0, 0]))
    np.testing.assert_array_equal(out.numpy(), [5, 5])
    out.sum().backward()
    assert s.grad.shape == () and s.grad == 2
    assert s.index_select(0, np.array(0)).shape == ()
    assert s.index_add(0, np.array(0), mg.tensor(np.array(2.0))).item() == 7
    assert s.scatter(0, np.array(0), mg.tensor(np.array(1.0))).item() == 1
    assert s.masked_select(np.array([[True, False, True]])).shape == (2,)
    assert mg.einsum("->", s).item() == 5
    x = mg.tensor(np.ones((3, 2)))
    assert x.gather(0, np.zeros((0, 2), np.int64)).shape == (0, 2)
    assert x.index_select(1, []).shape == (3, 0)
    assert x.diagonal(5).shape == (0,) and x.diagonal(-1).shape == (2,)


def test_nonzero_values_shapes_and_dtypes():
    x = mg.tensor([[1.0, 0.0], [0.0, 2.0]])
    idx = mg.nonzero(x)
    assert idx.dtype == np.int64 and idx.numpy().tolist() == [[0, 0], [1, 1]]
    rows, cols = x.nonzero(as_tuple=True)
    assert rows.numpy().tolist() == [0, 1] and cols.dtype == np.int64
    assert mg.tensor(np.array(3.0)).nonzero().shape == (1, 0)
    assert mg.tensor(np.array(0.0)).nonzero().shape == (0, 0)
    (only,) = mg.tensor(np.array(3.0)).nonzero(as_tuple=True)
    assert only.numpy().tolist() == [0]
    assert not idx.requires_grad and mg.tensor(np.zeros((2, 0))).nonzero().shape == (0, 2)


def test_function_forms_and_dtypes():
    x = mg.tensor(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert x.gather(1, np.array([[0], [2]], dtype=np.int32)).numpy().tolist() == [[0], [5]]
    assert mg.scatter(x, 0, np.array([[1, 0, 1]]), 9).numpy().tolist() == [[0, 9, 2], [9, 4, 9]]
    assert mg.scatter(x, 0, np.array([[1]]), 9).dtype == np.int64
    assert mg.repeat_interleave(mg.tensor(np.array([1, 0, 2]))).numpy().tolist() == [0, 2, 2]
    assert mg.einsum("ij->j", x).dtype == np.int64
    assert mg.einsum("ij,jk", [mg.ones((2, 3)), mg.ones((3, 1))]).shape == (2, 1)
    a32 = mg.tensor(np.ones((2, 2), np.float32))
    assert mg.mm(a32, a32).dtype == np.float32 and mg.outer(mg.ones(2), mg.ones(3)).shape == (2, 3)
    names = {"gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_fill",
             "take_along_dim", "masked_select", "nonzero", "diagonal", "repeat_interleave", "broadcast_to",
             "outer", "mm", "bmm", "einsum"}
    assert names <= set(mg.__all__)


def test_backward_computes_only_the_gradients_asked_for():
    """The needs_input_grad rule of minigrad/ops/__init__.py for the ops with two inputs."""
    rng = np.random.default_rng(0)
    x, idx = rng.standard_normal((2, 3)), np.array([[2, 0]])
    cases = [(indexing.Scatter, [x, rng.standard_normal((1, 2))], {"dim": 1, "index": idx}),
             (indexing.ScatterAdd, [x, rng.standard_normal((1, 2))], {"dim": 1, "index": idx}),
             (indexing.ScatterReduce, [x, rng.standard_normal((1, 2))],
              {"dim": 1, "index": idx, "reduce": "prod", "include_self": True}),
             (indexing.IndexAdd, [x, rng.standard_normal((2, 2))], {"dim": 1, "index": idx[0]}),
             (indexing.IndexFill, [x, rng.standard_normal(())], {"dim": 1, "index": idx[0]}),
             (indexing.IndexPut, [x.copy(), rng.standard_normal(3)], {"steps": (0,)}),
             (linalg.Einsum, [x, rng.standard_normal((3, 4))], {"equation": "ij,jk->ik"})]
    for op, inputs, options in cases:
        for wanted in (0, 1):
            ctx = op()
            out = op.forward(ctx, *[a.copy() for a in inputs], **options)
            ctx.needs_input_grad = (wanted == 0, wanted == 1)
            g = rng.standard_normal(out.shape)
            grads = op.backward(ctx, g)
            other = grads[1 - wanted]
            assert grads[wanted] is not None, op.__name__
            assert other is None or np.shares_memory(other, g), f"{op.__name__}: input {1 - wanted}"


# ----------------------------------------------------------------------------- errors

# X, a float64 2x3 tensor of ones, is in domains.py.
ERRORS = [
    pytest.param(lambda: X.gather(1, np.array([[0, 3]])), IndexError,
                 "gather: index 3 is out of bounds for dimension 1 with size 3", id="gather-range"),
    pytest.param(lambda: X.gather(1, np.array([[-1]])), IndexError, "gather: index -1", id="gather-negative"),
    pytest.param(lambda: X.gather(1, mg.tensor(np.array([[0.0]]))), TypeError,
                 "gather: index must be an integer tensor, not float64", id="gather-float"),
    pytest.param(lambda: X.gather(1, np.array([[True]])), TypeError, "gather: index must be an integer",
                 id="gather-bool"),
    pytest.param(lambda: X.gather(1, np.array([0])), ValueError, r"gather: index must have as many "
                 r"dimensions as the input \(input \(2, 3\), index \(1,\)\)", id="gather-ndim"),
    pytest.param(lambda: X.gather(1, np.zeros((3, 1), np.int64)), ValueError,
                 r"gather: index of shape \(3, 1\) must be no larger than the input \(2, 3\) apart "
                 "from dim 1",
                 id="gather-shape"),
    pytest.param(lambda: X.gather(-3, np.zeros((1, 1), np.int64)), IndexError,
                 "gather: dim -3 is out of range",
                 id="gather-dim"),
    pytest.param(lambda: X.scatter(1, np.array([[0, 1]]), mg.tensor(np.ones((1, 1)))), ValueError,
                 r"no larger than src \(1, 1\)", id="scatter-src-shape"),
    pytest.param(lambda: X.scatter(1, np.array([[0]]), mg.tensor(np.ones((1, 1), np.float32))), TypeError,
                 "scatter: src is float32 but the input is float64", id="scatter-dtype"),
    pytest.param(lambda: X.scatter(1, np.array([[0]]), X[:1, :1], reduce="max"), ValueError,
                 "scatter: reduce must be 'add' or 'multiply', not 'max'", id="scatter-reduce"),
    pytest.param(lambda: X.scatter_reduce(1, np.array([[0]]), X, "max"), ValueError,
                 "scatter_reduce: reduce must be one of sum, prod, mean, amax, amin, not 'max'",
                 id="scatter_reduce-name"),
    pytest.param(lambda: X.scatter_reduce(0, np.array([[2]]), X, "sum"), IndexError,
                 "scatter_reduce: index 2 is out of bounds for dimension 0 with size 2",
                 id="scatter_reduce-range"),
    pytest.param(lambda: X.scatter_add(0, np.array([[2]]), X), IndexError,
                 "scatter_add: index 2 is out of bounds for dimension 0 with size 2", id="scatter_add-range"),
    pytest.param(lambda: X.index_select(1, np.array([0, 3])), IndexError,
                 "index_select: index 3 is out of bounds for dimension 1 with size 3",
                 id="index_select-range"),
    pytest.param(lambda: X.index_select(1, np.array([[0]])), IndexError,
                 "index_select: index must be 0-d or 1-d",
                 id="index_select-2d"),
    pytest.param(lambda: X.index_select(0, np.array([0.0])), TypeError,
                 "index_select: index must be an integer",
                 id="index_select-float"),
    pytest.param(lambda: X.index_add(1, np.array([0, 0]), X), ValueError,
                 r"index_add: source of shape \(2, 3\) must have the input's shape", id="index_add-shape"),
    pytest.param(lambda: X.index_fill(1, np.array([0, 3]), 0.0), IndexError,
                 "index_fill: index 3 is out of bounds for dimension 1 with size 3", id="index_fill-range"),
    pytest.param(lambda: X.index_fill(1, np.array([-4]), 0.0), IndexError,
                 "index_fill: index -4 is out of bounds for dimension 1 with size 3",
                 id="index_fill-negative"),
    pytest.param(lambda: X.index_fill(0, np.array([[0]]), 0.0), IndexError,
                 r"index_fill: index must be 0-d or 1-d, not of shape \(1, 1\)", id="index_fill-2d"),
    pytest.param(lambda: X.index_fill(0, np.array([0.0]), 0.0), TypeError,
                 "index_fill: index must be an integer", id="index_fill-float"),
    pytest.param(lambda: X.index_fill(0, np.array([0]), mg.ones(1)), ValueError,
                 r"index_fill: a tensor value must be 0-d, not of shape \(1,\)", id="index_fill-value"),
    pytest.param(lambda: X.index_fill(2, np.array([0]), 0.0), IndexError,
                 "index_fill: dim 2 is out of range", id="index_fill-dim"),
    pytest.param(lambda: X.take_along_dim(np.array([[3]]), 1), IndexError,
                 "take_along_dim: index 3 is out of bounds for dimension 1 with size 3",
                 id="take_along_dim-range"),
    pytest.param(lambda: X.take_along_dim(np.zeros((3, 1), np.int64), 1), ValueError,
                 "take_along_dim: .* do not broadcast apart from dim 1", id="take_along_dim-shape"),
    pytest.param(lambda: X.masked_select(np.array([1, 0, 1])), TypeError,
                 "masked_select: the mask must be boolean",
                 id="masked_select-dtype"),
    pytest.param(lambda: X.masked_select(np.array([True, False])), ValueError,
                 r"masked_select: input of shape \(2, 3\) and mask of shape \(2,\) do not broadcast",
                 id="masked_select-shape"),
    pytest.param(lambda: X.diagonal(0, 1, -1), ValueError, "diagonal: dim1 and dim2 cannot be identical",
                 id="diagonal-same"),
    pytest.param(lambda: mg.ones(3).diagonal(), IndexError, "diagonal: needs a tensor of at least 2",
                 id="diagonal-1d"),
    pytest.param(lambda: X.repeat_interleave(np.array([1, 2]), 1), ValueError,
                 "repeat_interleave: 2 repeats for 3 slices", id="repeat_interleave-count"),
    pytest.param(lambda: X.repeat_interleave(-1), ValueError, "repeat_interleave: repeats must be >= 0",
                 id="repeat_interleave-negative"),
    pytest.param(lambda: X.repeat_interleave(np.array([1.5])), TypeError,
                 "repeat_interleave: repeats must be an integer",
                 id="repeat_interleave-float"),
    pytest.param(lambda: X.broadcast_to((3, 3)), ValueError,
                 r"broadcast_to: shape \(2, 3\) cannot be broadcast",
                 id="broadcast_to"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_errors_name_the_op_and_the_values(call, error, message):
    with pytest.raises(error, match=message):
        call()
