"""Shape ops: reshape, transpose, permute, expand, unsqueeze, squeeze, flatten, indexing, cat,
stack, split and chunk. None changes a value, so each gradient only moves g back into place."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.testing import arrays, shapes

# Values are cheap to compare and the gradient tests draw the same inputs: a third of the
# profile's examples (at least 10) keeps the suite fast.
fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))


@st.composite
def reshapes(draw):
    """A shape and another with the same number of elements (sides reordered, 1s added, maybe -1)."""
    shape = draw(shapes())
    target = list(draw(st.permutations(shape)))
    for _ in range(draw(st.integers(0, 2))):
        target.insert(draw(st.integers(0, len(target))), 1)
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return shape, tuple(target)


@st.composite
def permutations_of(draw):
    shape = draw(shapes())
    dims = draw(st.permutations(range(len(shape))))
    return shape, tuple(d - len(shape) if draw(st.booleans()) else d for d in dims)  # negatives too


@st.composite
def transposes(draw):
    shape = draw(shapes(min_dims=1))
    axis = st.integers(-len(shape), len(shape) - 1)
    return shape, (draw(axis), draw(axis))


@st.composite
def expansions(draw):
    """A shape and a shape it broadcasts to, written with -1 for some kept sides."""
    shape = draw(shapes())
    target = list(np.broadcast_shapes(shape, draw(hnp.broadcastable_shapes(shape, max_side=3))))
    lead = len(target) - len(shape)
    for i in range(lead, len(target)):
        if target[i] == shape[i - lead] and draw(st.booleans()):
            target[i] = -1
    return shape, tuple(target)


@st.composite
def unsqueezes(draw):
    shape = draw(shapes())
    return shape, draw(st.integers(-len(shape) - 1, len(shape)))


@st.composite
def squeezes(draw):
    shape = draw(shapes())
    return shape, draw(st.none() | st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))


@st.composite
def flattens(draw):
    shape = draw(shapes(min_dims=1))
    start = draw(st.integers(0, len(shape) - 1))
    end = draw(st.integers(start, len(shape) - 1))
    return shape, (start - len(shape) if draw(st.booleans()) else start, end)


def np_flatten(a, start, end):
    s, e = start % a.ndim, end % a.ndim
    return a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:])


def np_expand(a, sizes):
    lead = len(sizes) - a.ndim
    return np.broadcast_to(a, [a.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)])


def np_squeeze(a, dim):
    if dim is None:
        return np.squeeze(a)
    d = dim % max(a.ndim, 1)
    return np.squeeze(a, d) if a.ndim and a.shape[d] == 1 else a


# (strategy of (shape, argument), op, numpy reference)
SHAPE_OPS = [
    pytest.param(reshapes(), lambda x, s: x.reshape(s), lambda a, s: a.reshape(s), id="reshape"),
    pytest.param(reshapes(), lambda x, s: x.view(*s), lambda a, s: a.reshape(s), id="view-varargs"),
    pytest.param(transposes(), lambda x, d: x.transpose(*d), lambda a, d: np.swapaxes(a, *d), id="transpose"),
    pytest.param(permutations_of(), lambda x, d: x.permute(d), np.transpose, id="permute"),
    pytest.param(shapes().map(lambda s: (s, None)), lambda x, _: x.T, lambda a, _: a.T, id="T"),
    pytest.param(expansions(), lambda x, s: x.expand(*s), np_expand, id="expand"),
    pytest.param(unsqueezes(), lambda x, d: x.unsqueeze(d), np.expand_dims, id="unsqueeze"),
    pytest.param(squeezes(), lambda x, d: x.squeeze(d), np_squeeze, id="squeeze"),
    pytest.param(flattens(), lambda x, d: x.flatten(*d), lambda a, d: np_flatten(a, *d), id="flatten"),
]


@pytest.mark.parametrize("strategy, op, ref", SHAPE_OPS)
@given(data=st.data())
def test_shape_op_gradcheck(strategy, op, ref, data):
    shape, arg = data.draw(strategy, label="case")
    x = data.draw(arrays(shape), label="x")
    assert mg.gradcheck(lambda t: op(t, arg), [x])


@pytest.mark.parametrize("strategy, op, ref", SHAPE_OPS)
@fewer_examples
@given(data=st.data())
def test_shape_op_forward_matches_numpy(strategy, op, ref, data):
    shape, arg = data.draw(strategy, label="case")
    a = data.draw(arrays(shape), label="x").astype(np.float32)
    out = op(mg.tensor(a), arg)
    np.testing.assert_array_equal(out.numpy(), ref(a, arg))
    assert out.dtype == np.float32


# ----------------------------------------------------------------------------- indexing

mask23 = np.array([[True, False, True], [False, False, True]])

# (shape, index)
INDICES = [
    pytest.param((3,), 1, id="int"),
    pytest.param((3,), -1, id="negative-int"),
    pytest.param((3, 3), (slice(0, 2), 1), id="slice-int"),
    pytest.param((3,), slice(None, None, 2), id="step"),
    pytest.param((3,), slice(None, None, -1), id="reversed"),
    pytest.param((2, 3), (None, 0), id="None"),
    pytest.param((2, 2, 3), (Ellipsis, 1), id="Ellipsis"),
    pytest.param((2, 2, 3), (0, Ellipsis, None), id="int-Ellipsis-None"),
    pytest.param((3,), np.array([0, 2]), id="int-array"),
    pytest.param((3,), np.array([0, 0, 2, 0]), id="repeated-int-array"),
    pytest.param((3, 2), (np.array([0, 2, 0]), np.array([1, 1, 1])), id="paired-int-arrays"),
    pytest.param((3, 2), (slice(None), np.array([1, 1])), id="slice-and-int-array"),
    pytest.param((3, 2), np.array([[0, 1], [1, 1]]), id="2d-int-array"),
    pytest.param((3,), [0, 2, 2], id="list"),
    pytest.param((2, 3), mask23, id="bool-mask"),
    pytest.param((3, 2), np.array([True, False, True]), id="bool-mask-first-axis"),
    pytest.param((3,), slice(2, 2), id="empty-slice"),
    pytest.param((3, 2), np.array([], dtype=np.int64), id="empty-int-array"),
    pytest.param((), (), id="0d-empty-tuple"),
    pytest.param((), None, id="0d-None"),
]


@pytest.mark.parametrize("shape, index", INDICES)
def test_getitem_table(shape, index):
    a = np.random.default_rng(0).standard_normal(shape)
    np.testing.assert_array_equal(mg.tensor(a)[index].numpy(), a[index])
    assert mg.gradcheck(lambda t: t[index], [a])


@given(data=st.data())
def test_getitem_basic_indices_gradcheck(data):
    shape = data.draw(shapes(min_side=0), label="shape")
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True), label="index")
    a = data.draw(arrays(shape), label="x")
    out = mg.tensor(a)[index]
    np.testing.assert_array_equal(out.numpy(), a[index])
    assert mg.gradcheck(lambda t: t[index], [a])


@given(data=st.data())
def test_getitem_integer_arrays_gradcheck(data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    index = data.draw(hnp.integer_array_indices(shape, result_shape=shapes(1, 2)), label="index")
    a = data.draw(arrays(shape), label="x")
    np.testing.assert_array_equal(mg.tensor(a)[index].numpy(), a[index])
    assert mg.gradcheck(lambda t: t[index], [a])


@given(data=st.data())
def test_getitem_boolean_mask_gradcheck(data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    mask = data.draw(hnp.arrays(np.bool_, shape), label="mask")
    a = data.draw(arrays(shape), label="x")
    np.testing.assert_array_equal(mg.tensor(a)[mg.tensor(mask)].numpy(), a[mask])
    assert mg.gradcheck(lambda t: t[mask], [a])


def test_repeated_indices_accumulate():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[mg.tensor(np.array([0, 0, 2, 0]))].backward(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    np.testing.assert_array_equal(x.grad, [7.0, 0.0, 3.0])


def test_empty_slice_gives_zero_gradient():
    x = mg.tensor([[1.0, 2.0]], requires_grad=True)
    y = x[:, 1:1]
    assert y.shape == (1, 0)
    (y.sum() + x[0, 0]).backward()
    np.testing.assert_array_equal(x.grad, [[1.0, 0.0]])


# ----------------------------------------------------------------------------- joining, splitting


@st.composite
def cat_case(draw):
    """Pieces whose shapes agree outside dim (sizes along dim may be 0), and dim."""
    base = list(draw(shapes(min_dims=1)))
    dim = draw(st.integers(-len(base), len(base) - 1))
    sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    pieces = []
    for size in sizes:
        base[dim] = size
        pieces.append(tuple(base))
    return pieces, dim


@st.composite
def stack_case(draw):
    shape = draw(shapes())
    return [shape] * draw(st.integers(1, 3)), draw(st.integers(-len(shape) - 1, len(shape)))


@pytest.mark.parametrize("case, join, ref", [
    pytest.param(cat_case(), mg.cat, np.concatenate, id="cat"),
    pytest.param(stack_case(), mg.stack, np.stack, id="stack"),
])
@given(data=st.data())
def test_join_gradcheck_and_forward(case, join, ref, data):
    piece_shapes, dim = data.draw(case, label="case")
    pieces = [data.draw(arrays(s), label="piece") for s in piece_shapes]
    np.testing.assert_array_equal(join([mg.tensor(p) for p in pieces], dim=dim), ref(pieces, axis=dim))
    assert mg.gradcheck(lambda *ts: join(ts, dim=dim), pieces)


@st.composite
def split_case_strategy(draw):
    shape = draw(shapes(min_dims=1))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[dim]
    if draw(st.booleans()):
        return shape, dim, draw(st.integers(1, 4))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=2)))
    edges = [0, *cuts, n]
    return shape, dim, [b - a for a, b in zip(edges, edges[1:])]


@given(data=st.data())
def test_split_gradcheck_and_forward(data):
    shape, dim, sizes = data.draw(split_case_strategy(), label="case")
    a = data.draw(arrays(shape), label="x")
    pieces = mg.tensor(a).split(sizes, dim=dim)
    assert sum(p.shape[dim] for p in pieces) == shape[dim]
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in pieces], axis=dim), a)
    if isinstance(sizes, int):
        assert all(p.shape[dim] == sizes for p in pieces[:-1]) and 1 <= pieces[-1].shape[dim] <= sizes
    else:
        assert [p.shape[dim] for p in pieces] == sizes
    assert mg.gradcheck(lambda t: t.split(sizes, dim=dim), [a])


@pytest.mark.parametrize("n, chunks, sizes", [
    pytest.param(5, 3, [2, 2, 1], id="5-in-3"),
    pytest.param(6, 4, [2, 2, 2], id="6-in-4"),
    pytest.param(2, 3, [1, 1], id="more-chunks-than-elements"),
    pytest.param(3, 1, [3], id="one-chunk"),
])
def test_chunk_sizes_and_gradient(n, chunks, sizes):
    x = mg.tensor(np.arange(2.0 * n).reshape(2, n), requires_grad=True)
    pieces = x.chunk(chunks, dim=-1)
    assert [p.shape[-1] for p in pieces] == sizes
    assert mg.gradcheck(lambda t: t.chunk(chunks, dim=1), [x.numpy()])


def test_shape_ops_share_no_gradient_between_pieces():
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    first, second = x.split([1, 2], dim=1)
    (first * 2).sum().backward()
    np.testing.assert_array_equal(x.grad, [[2, 0, 0], [2, 0, 0]])
    assert second.shape == (2, 2)
