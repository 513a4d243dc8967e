"""The indexing ops, einsum, the matrix-product forms and `y[index] = value` against PyTorch
over drawn shapes and indices: values, dtypes and the gradients of every float input for one
random upstream gradient; and each new Function against its twin in TORCH_OPS."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, broadcastable_shapes, on_grid, shape_and_broadcastable, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

from minigrad.export import TORCH_OPS  # noqa: E402  (needs torch)
from minigrad.ops import indexing, linalg  # noqa: E402

fewer = settings(max_examples=max(10, settings.default.max_examples // 3))


def compare(ours, theirs, inputs, dtype, tol=None):
    """ours(*minigrad tensors) vs theirs(*torch tensors): shape, dtype, values, gradients."""
    inputs = [a.astype(dtype) for a in inputs]
    ms = [mg.Tensor(a.copy(), requires_grad=True) for a in inputs]
    ts = [torch.tensor(a.copy(), requires_grad=True) for a in inputs]
    out, tout = ours(*ms), theirs(*ts)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == tout.detach().numpy().dtype
    tol = tol or (1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    if not out.numpy().size:
        return
    g = np.random.default_rng(0).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    for i, (m, t) in enumerate(zip(ms, ts)):
        expected = np.zeros_like(inputs[i]) if t.grad is None else t.grad.numpy()
        got = np.zeros_like(inputs[i]) if m.grad is None else m.grad
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=f"gradient of input {i}")


@st.composite
def along(draw, distinct=False, min_dims=0):
    """(shape of x, dim, int64 index) as gather and scatter take them (see test_ops_indexing)."""
    shape = draw(shapes(min_dims=min_dims))
    n = max(len(shape), 1)
    dim = draw(st.integers(-n, n - 1))
    axis, x1 = dim % n, shape or (1,)
    ishape = [draw(st.integers(1, s)) for s in x1]
    size = x1[axis]
    k = draw(st.integers(0, size if distinct else 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if distinct:
        keys = rng.random(ishape[:axis] + [size] + ishape[axis + 1:])
        idx = np.take(np.argsort(keys, axis=axis), np.arange(k), axis=axis)
    else:
        idx = rng.integers(0, size, ishape[:axis] + [k] + ishape[axis + 1:])
    return shape, dim, idx.astype(np.int64)


dtypes = pytest.mark.parametrize("dtype", [np.float32, np.float64])


# ----------------------------------------------------------------------------- gather and scatter


@dtypes
@fewer
@given(case=along(), data=st.data())
def test_gather_and_scatter_add_with_repeated_indices(dtype, case, data):
    shape, dim, idx = case
    x, src = data.draw(arrays(shape)), data.draw(arrays(idx.shape))
    ti = torch.from_numpy(idx)
    compare(lambda a: a.gather(dim, mg.tensor(idx)), lambda a: torch.gather(a, dim, ti), [x], dtype)
    compare(lambda a, s: mg.scatter_add(a, dim, idx, s), lambda a, s: a.scatter_add(dim, ti, s),
            [x, src], dtype)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@dtypes
@fewer
@given(case=along(), data=st.data())
def test_scatter_reduce_with_repeated_indices(reduce, include_self, dtype, case, data):
    """On a grid of values with zeros and ties (prod's and amax's hard cases). torch's amax /
    amin gradient counts a tie with self even when include_self=False excludes self (so its
    gradients there do not add up to g); those draws are left out (docs/api_notes.md)."""
    shape, dim, idx = case
    grid = [0.0, 0.5, -2.0, 3.0]
    x, src = data.draw(on_grid(shape, grid)), data.draw(on_grid(idx.shape, grid))
    ti = torch.from_numpy(idx)
    if reduce in ("amax", "amin") and not include_self:
        z = torch.tensor(x).scatter_reduce(dim, ti, torch.tensor(src), reduce, include_self=False).numpy()
        named = torch.zeros(np.shape(x), dtype=torch.bool).scatter(dim, ti, True).numpy()
        assume(not np.any(named & (x == z)))
    compare(lambda a, s: a.scatter_reduce(dim, idx, s, reduce, include_self=include_self),
            lambda a, s: a.scatter_reduce(dim, ti, s, reduce, include_self=include_self), [x, src], dtype)


@dtypes
@fewer
@given(case=along(distinct=True), data=st.data())
def test_scatter_of_a_tensor_and_of_a_value(dtype, case, data):
    shape, dim, idx = case
    x, src = data.draw(arrays(shape)), data.draw(arrays(idx.shape))
    ti = torch.from_numpy(idx)
    compare(lambda a, s: a.scatter(dim, idx, s), lambda a, s: torch.scatter(a, dim, ti, s), [x, src], dtype)
    compare(lambda a: mg.scatter(a, dim, idx, value=-2.0), lambda a: a.scatter(dim, ti, -2.0), [x], dtype)


@dtypes
@fewer
@given(data=st.data())
def test_index_select_and_index_add(dtype, data):
    shape = data.draw(shapes())
    n = max(len(shape), 1)
    dim = data.draw(st.integers(-n, n - 1))
    size = (shape or (1,))[dim % n]
    k = data.draw(st.integers(0, 4)) if shape else 1
    idx = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, size, k).astype(np.int64)
    if data.draw(st.booleans()) and k == 1:
        idx = idx.reshape(())
    x = data.draw(arrays(shape))
    ti = torch.from_numpy(idx)
    compare(lambda a: a.index_select(dim, idx), lambda a: torch.index_select(a, dim, ti), [x], dtype)
    src_shape = shape[:dim % n] + (idx.size,) + shape[dim % n + 1:] if shape else ()
    src = data.draw(arrays(src_shape))
    alpha = data.draw(st.sampled_from([1, 2.5]))
    compare(lambda a, s: mg.index_add(a, dim, mg.tensor(idx), s, alpha=alpha),
            lambda a, s: a.index_add(dim, ti, s, alpha=alpha), [x, src], dtype)


@dtypes
@fewer
@given(data=st.data())
def test_index_fill_with_a_number_and_a_0d_tensor(dtype, data):
    shape = data.draw(shapes())
    n = max(len(shape), 1)
    dim = data.draw(st.integers(-n, n - 1))
    size = (shape or (1,))[dim % n]
    k = data.draw(st.integers(0, 4)) if shape else 1
    idx = np.random.default_rng(data.draw(st.integers(0, 99))).integers(-size, size, k).astype(np.int64)
    if data.draw(st.booleans()) and k == 1:
        idx = idx.reshape(())
    x, v = data.draw(arrays(shape)), data.draw(arrays(()))
    ti = torch.from_numpy(idx)
    compare(lambda a: a.index_fill(dim, idx, -3.5), lambda a: a.index_fill(dim, ti, -3.5), [x], dtype)
    idx %= size  # torch's backward for a tensor value fails on negative entries (index_select's range)
    ti = torch.from_numpy(idx)
    compare(lambda a, s: mg.index_fill(a, dim, mg.tensor(idx), s),
            lambda a, s: torch.index_fill(a, dim, ti, s), [x, v], dtype)


@dtypes
@fewer
@given(data=st.data())
def test_take_along_dim_broadcasting_negative_indices_and_flattened(dtype, data):
    shape = data.draw(shapes(min_dims=1))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    axis = dim % len(shape)
    ishape = tuple(data.draw(st.integers(0, 3)) if d == axis else data.draw(st.sampled_from([1, s]))
                   for d, s in enumerate(shape))
    xshape = tuple(1 if d != axis and data.draw(st.booleans()) else s for d, s in enumerate(shape))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    idx = rng.integers(-shape[axis], shape[axis], ishape)
    x = data.draw(arrays(xshape))
    ti = torch.from_numpy(idx)
    compare(lambda a: a.take_along_dim(idx, dim), lambda a: torch.take_along_dim(a, ti, dim), [x], dtype)
    flat = rng.integers(0, x.size, ishape)
    compare(lambda a: mg.take_along_dim(a, flat), lambda a: torch.take_along_dim(a, torch.from_numpy(flat)),
            [x], dtype)


# ----------------------------------------------------------------------------- masks, diagonals, repeats


@dtypes
@fewer
@given(shapes=shape_and_broadcastable(), data=st.data())
def test_masked_select_and_broadcast_to(dtype, shapes, data):
    big, small = shapes
    mask = np.asarray(data.draw(arrays(small)) > 0)
    full = np.broadcast_to(mask, big).copy()
    compare(lambda a: a.masked_select(mask), lambda a: torch.masked_select(a, torch.from_numpy(mask)),
            [data.draw(arrays(big))], dtype)
    compare(lambda a: mg.masked_select(a, full), lambda a: torch.masked_select(a, torch.from_numpy(full)),
            [data.draw(arrays(small))], dtype)
    compare(lambda a: mg.broadcast_to(a, big), lambda a: torch.broadcast_to(a, big),
            [data.draw(arrays(small))], dtype)


@dtypes
@fewer
@given(data=st.data())
def test_diagonal_and_repeat_interleave(dtype, data):
    shape = data.draw(shapes(min_dims=2, max_dims=4))
    n = len(shape)
    d1, d2 = data.draw(st.lists(st.integers(-n, n - 1), min_size=2, max_size=2, unique_by=lambda d: d % n))
    offset = data.draw(st.integers(-3, 3))
    x = data.draw(arrays(shape))
    compare(lambda a: a.diagonal(offset, d1, d2), lambda a: torch.diagonal(a, offset, d1, d2), [x], dtype)
    dim = data.draw(st.one_of(st.none(), st.integers(-n, n - 1)))
    count = x.size if dim is None else shape[dim]
    per_slice = st.lists(st.integers(0, 3), min_size=count, max_size=count)
    reps = data.draw(st.one_of(st.integers(0, 3), per_slice))
    r_mg = reps if isinstance(reps, int) else mg.tensor(np.array(reps, dtype=np.int64))
    r_t = reps if isinstance(reps, int) else torch.tensor(reps, dtype=torch.int64)
    compare(lambda a: a.repeat_interleave(r_mg, dim), lambda a: torch.repeat_interleave(a, r_t, dim),
            [x], dtype)


def test_nonzero_and_integer_inputs_keep_their_dtype():
    a = np.array([[0, 3, 0], [5, 0, -1]], dtype=np.int64)
    x, t = mg.tensor(a), torch.from_numpy(a)
    scalar = mg.nonzero(mg.tensor(np.array(2.0))), torch.nonzero(torch.tensor(2.0))
    for ours, theirs in [(x.nonzero(), t.nonzero()), scalar,
                         (x.gather(1, np.array([[2], [0]])), t.gather(1, torch.tensor([[2], [0]]))),
                         (x.index_select(0, np.array([1, 1])), t.index_select(0, torch.tensor([1, 1]))),
                         (x.diagonal(), t.diagonal()), (mg.einsum("ij->j", x), torch.einsum("ij->j", t)),
                         (x.repeat_interleave(2), t.repeat_interleave(2)),
                         (mg.repeat_interleave(mg.tensor(np.array([2, 0, 1]))),
                          torch.repeat_interleave(torch.tensor([2, 0, 1])))]:
        assert ours.dtype == theirs.numpy().dtype and ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for ours, theirs in zip(x.nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ----------------------------------------------------------------------------- products and einsum


@dtypes
@fewer
@given(n=st.integers(1, 3), m=st.integers(1, 3), k=st.integers(1, 3), b=st.integers(1, 3), data=st.data())
def test_outer_mm_bmm(dtype, n, m, k, b, data):
    compare(mg.outer, torch.outer, [data.draw(arrays((n,))), data.draw(arrays((m,)))], dtype)
    compare(lambda p, q: p.mm(q), torch.mm, [data.draw(arrays((n, k))), data.draw(arrays((k, m)))], dtype)
    compare(mg.bmm, torch.bmm, [data.draw(arrays((b, n, k))), data.draw(arrays((b, k, m)))], dtype)


EINSUMS = ["ij,jk->ik", "bij,bjk->bik", "i,j->ij", "ij->ji", "ii->", "ii->i", "ij->", "ij->i",
           "...ij,...jk->...ik", "...ij->ij", "...ii->...i", "i...->i", "ij,jk", "ba,cb", "iij->j",
           "ij,ij,ij->i", "ii,i->i", "i,i", "bA,Cb", "...i,...i", "->", "ab,bc,cd->ad"]


@pytest.mark.parametrize("equation", EINSUMS)
@dtypes
@fewer
@given(data=st.data())
def test_einsum(equation, dtype, data):
    lhs = equation.split("->")[0]
    terms = lhs.split(",")
    sizes = {c: data.draw(st.integers(1, 3)) for c in sorted(set(lhs) - set(".,"))}
    dotted = sum("..." in t for t in terms)
    batches = iter(data.draw(broadcastable_shapes(dotted, max_dims=2)) if dotted else ())
    operands = []
    for t in terms:
        pre, _, post = t.partition("...")
        lead = tuple(next(batches)) if "..." in t else ()
        shape = tuple(sizes[c] for c in pre) + lead + tuple(sizes[c] for c in post)
        # a letter of size 1 in one operand broadcasts against the others, as in torch
        if len(terms) > 1 and shape and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(shape) - 1))
            letters = pre + "." * len(lead) + post
            if letters[i] != "." and letters.count(letters[i]) == 1:
                shape = shape[:i] + (1,) + shape[i + 1:]
        operands.append(data.draw(arrays(shape)))
    compare(lambda *a: mg.einsum(equation, *a), lambda *a: torch.einsum(equation, *a), operands, dtype)


# ----------------------------------------------------------------------------- assignment

SETITEMS = [1, -1, (slice(None), slice(1, 3)), (Ellipsis, 0), (None, 0, slice(None, None, 2)),
            [2, 0], ([0, 2], slice(None), [1, 0]), (0, slice(None), [1, 0]),
            "mask0", "mask2d", ()]


def _index(spec, lib):
    a = np.zeros((3, 4, 2))
    if spec == "mask0":
        spec = np.array([True, False, True])
    elif spec == "mask2d":
        spec = a[..., 0] == 0
    parts = spec if isinstance(spec, tuple) else (spec,)
    def one(p):
        if isinstance(p, np.ndarray) and p.dtype == np.bool_:
            return lib(p.copy())
        return lib(np.asarray(p, dtype=np.int64)) if isinstance(p, list) else p

    conv = tuple(one(p) for p in parts)
    return conv if isinstance(spec, tuple) else conv[0]


@pytest.mark.parametrize("spec", SETITEMS, ids=[str(s) for s in SETITEMS])
@dtypes
@fewer
@given(data=st.data())
def test_setitem_as_torch(spec, dtype, data):
    mi, ti = _index(spec, mg.tensor), _index(spec, torch.from_numpy)
    target = tuple(torch.zeros(3, 4, 2)[ti].shape)
    kept = [s if data.draw(st.booleans()) else 1 for s in target]
    vshape = tuple(kept[data.draw(st.integers(0, len(target))):])
    x, v = data.draw(arrays((3, 4, 2))), data.draw(arrays(vshape))

    def ours(a, b):
        y = a * 1.0
        y[mi] = b
        return y

    def theirs(a, b):
        y = a * 1.0
        y[ti] = b
        return y

    compare(ours, theirs, [x, v], dtype)


# ----------------------------------------------------------------------------- the twins


@fewer
@given(case=along(distinct=True), data=st.data())
def test_torch_twins_of_the_functions(case, data):
    """Each Function of ops/indexing.py and ops/linalg.py's Einsum against its TORCH_OPS twin."""
    shape, dim, idx = case
    x = data.draw(arrays(shape))
    src = data.draw(arrays(idx.shape))
    n = max(len(shape), 1)
    size = (shape or (1,))[dim % n]
    vec = np.arange(size, dtype=np.int64)[::-1].copy()
    source_shape = shape[:dim % n] + (size,) + shape[dim % n + 1:] if shape else ()
    cases = [
        (indexing.Gather, [x], {"dim": dim, "index": idx}),
        (indexing.Scatter, [x, src], {"dim": dim, "index": idx}),
        (indexing.ScatterAdd, [x, src], {"dim": dim, "index": idx}),
        (indexing.ScatterReduce, [x, src], {"dim": dim, "index": idx, "reduce": "mean",
                                            "include_self": False}),
        (indexing.IndexSelect, [x], {"dim": dim, "index": vec}),
        (indexing.IndexAdd, [x, data.draw(arrays(source_shape))], {"dim": dim, "index": vec, "alpha": 2}),
        (indexing.IndexFill, [x, data.draw(arrays(()))], {"dim": dim, "index": vec[:2]}),
        (indexing.IndexFill, [x], {"dim": dim, "index": vec[:1], "value": 0.5}),
        (linalg.Einsum, [x, x], {"equation": "...,...->..."}),
    ]
    if shape:
        cases.append((indexing.IndexPut, [x, data.draw(arrays(shape[1:]))], {"steps": (0,)}))
    if len(shape) >= 2:  # an int beside an index array: two steps, as PyTorch reads x[0, [0]]
        steps = ((0, slice(None)), (np.array([0]),))
        cases.append((indexing.IndexPut, [x, data.draw(arrays(()))], {"steps": steps}))
    for op, inputs, options in cases:
        ms = [mg.Tensor(a.copy(), requires_grad=True) for a in inputs]
        ts = [torch.tensor(a.copy(), requires_grad=True) for a in inputs]
        out, tout = op.apply(*ms, **options), TORCH_OPS[op](*ts, **options)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), 1e-12, 1e-12, err_msg=op.__name__)
        g = np.random.default_rng(3).standard_normal(out.shape)
        out.backward(g)
        tout.backward(torch.from_numpy(g))
        for m, t in zip(ms, ts):
            np.testing.assert_allclose(m.grad, t.grad.numpy(), 1e-12, 1e-12, err_msg=op.__name__)
