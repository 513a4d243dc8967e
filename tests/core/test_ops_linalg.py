"""Matrix products (ops/linalg.py): matmul (@) on 1-D, 2-D and batched operands with broadcast
batch axes, reflected @, outer, mm, bmm and einsum: gradients against finite differences, values
against numpy, and the errors for operands that do not fit."""

import numpy as np
import pytest
from domains import X
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, broadcastable_shapes

# Values are cheap to compare and the gradient tests draw the same inputs: a third of the
# profile's examples (at least 10) keeps the suite fast.
fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))

side = st.integers(1, 3)

# How the operand shapes are built from (batch_a, batch_b, n, k, m); batch shapes broadcast.
LAYOUTS = [
    pytest.param(lambda ba, bb, n, k, m: ((k,), (k,)), id="1d@1d"),
    pytest.param(lambda ba, bb, n, k, m: ((k,), (k, m)), id="1d@2d"),
    pytest.param(lambda ba, bb, n, k, m: ((n, k), (k,)), id="2d@1d"),
    pytest.param(lambda ba, bb, n, k, m: ((n, k), (k, m)), id="2d@2d"),
    pytest.param(lambda ba, bb, n, k, m: ((*ba, n, k), (k, m)), id="batched@2d"),
    pytest.param(lambda ba, bb, n, k, m: ((n, k), (*bb, k, m)), id="2d@batched"),
    pytest.param(lambda ba, bb, n, k, m: ((*ba, n, k), (*bb, k, m)), id="batched@batched-broadcast"),
    pytest.param(lambda ba, bb, n, k, m: ((k,), (*bb, k, m)), id="1d@batched"),
    pytest.param(lambda ba, bb, n, k, m: ((*ba, n, k), (k,)), id="batched@1d"),
]


def draw_operands(data, layout):
    batch_a, batch_b = data.draw(broadcastable_shapes(2, min_dims=1, max_dims=2), label="batch shapes")
    n, k, m = data.draw(side, label="n"), data.draw(side, label="k"), data.draw(side, label="m")
    shape_a, shape_b = layout(batch_a, batch_b, n, k, m)
    return data.draw(arrays(shape_a), label="a"), data.draw(arrays(shape_b), label="b")


@pytest.mark.parametrize("layout", LAYOUTS)
@given(data=st.data())
def test_matmul_gradcheck(layout, data):
    a, b = draw_operands(data, layout)
    assert mg.gradcheck(lambda x, y: x @ y, [a, b])


@pytest.mark.parametrize("layout", LAYOUTS)
@fewer_examples
@given(data=st.data())
def test_matmul_forward_matches_numpy(layout, data):
    a, b = (v.astype(np.float32) for v in draw_operands(data, layout))
    out = mg.tensor(a).matmul(mg.tensor(b))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-6)


def test_matmul_gradient_of_one_operand_only():
    a = mg.tensor(np.arange(6.0).reshape(2, 3))
    b = mg.tensor(np.ones((2, 3, 2)), requires_grad=True)
    (a @ b).backward(np.ones((2, 2, 2)))
    np.testing.assert_array_equal(b.grad, np.broadcast_to(a.numpy().sum(0)[:, None], (2, 3, 2)))
    assert a.grad is None


@pytest.mark.parametrize("shape_a, shape_b", [
    pytest.param((2, 0), (0, 3), id="empty-inner"),
    pytest.param((0, 2), (2, 3), id="empty-rows"),
    pytest.param((2, 0, 2), (2, 3), id="empty-batch-rows"),
])
def test_matmul_with_empty_axes(shape_a, shape_b):
    a, b = mg.ones(*shape_a, requires_grad=True), mg.ones(*shape_b, requires_grad=True)
    out = a @ b
    np.testing.assert_array_equal(out.numpy(), np.ones(shape_a) @ np.ones(shape_b))  # a sum of nothing is 0
    out.backward(np.ones(out.shape))
    assert a.grad.shape == shape_a and b.grad.shape == shape_b
    np.testing.assert_array_equal(b.grad, np.zeros(shape_b))


@pytest.mark.parametrize("expr, shape", [
    pytest.param(lambda x: np.ones((2, 3)) @ x, (2, 4), id="numpy-left"),
    pytest.param(lambda x: x.T @ np.ones((3, 2)), (4, 2), id="numpy-right"),
    pytest.param(lambda x: np.ones(3) @ x, (4,), id="numpy-vector-left"),
])
def test_matmul_with_numpy_operands(expr, shape):
    x = mg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    out = expr(x)
    assert isinstance(out, mg.Tensor) and out.shape == shape
    out.sum().backward()
    assert x.grad.shape == (3, 4)
    np.testing.assert_allclose(x.grad, np.full((3, 4), 2.0 if shape != (4,) else 1.0))


@pytest.mark.parametrize("shape_a, shape_b, match", [
    pytest.param((2, 3), (4, 5), r"matmul: \(2, 3\) @ \(4, 5\): inner dimensions 3 and 4 differ", id="2d"),
    pytest.param((3,), (2,), r"matmul: \(3,\) @ \(2,\): inner dimensions 3 and 2 differ", id="1d"),
    pytest.param((2, 2, 3), (3, 3, 1), r"batch dimensions \(2,\) and \(3,\) do not broadcast", id="batch"),
    pytest.param((), (3,), r"matmul: \(\) @ \(3,\): both operands need at least one dimension", id="0d"),
])
def test_matmul_shape_errors_name_both_shapes(shape_a, shape_b, match):
    with pytest.raises(ValueError, match=match):
        mg.zeros(shape_a) @ mg.zeros(shape_b)


# ----------------------------------------------------------------------------- outer, mm, bmm, einsum


@fewer_examples
@given(n=st.integers(1, 3), m=st.integers(1, 3), k=st.integers(1, 3), b=st.integers(1, 3), data=st.data())
def test_outer_mm_bmm_gradcheck(n, m, k, b, data):
    u, v = data.draw(arrays((n,))), data.draw(arrays((m,)))
    assert mg.gradcheck(mg.outer, [u, v])
    assert mg.gradcheck(mg.mm, [data.draw(arrays((n, k))), data.draw(arrays((k, m)))])
    assert mg.gradcheck(lambda p, q: p.bmm(q), [data.draw(arrays((b, n, k))), data.draw(arrays((b, k, m)))])


# (equation, number of operands); letter sizes are drawn, and '...' takes mutually
# broadcastable shapes
EINSUMS = ["ij,jk->ik", "bij,bjk->bik", "i,j->ij", "ij->ji", "ii->", "ii->i", "ij->", "ij->i",
           "...ij,...jk->...ik", "...ij->...ji", "...ii->...i", "i...->i", "ij,jk", "ba,cb", "iij->j",
           "ij,ij,ij->i", "ii,i->i", "i,i", "bA,Cb", "...i,...i", "->"]


def draw_einsum_operands(data, equation):
    lhs = equation.split("->")[0]
    terms = lhs.split(",")
    sizes = {c: data.draw(st.integers(1, 3), label=c) for c in sorted(set(lhs) - set(".,"))}
    with_dots = [t for t in terms if "..." in t]
    batches = iter(data.draw(broadcastable_shapes(len(with_dots), max_dims=2)) if with_dots else ())
    out = []
    for t in terms:
        lead = next(batches) if "..." in t else ()
        pre, _, post = t.partition("...")
        shape = tuple(sizes[c] for c in pre) + tuple(lead) + tuple(sizes[c] for c in post)
        out.append(data.draw(arrays(shape)))
    return out


@pytest.mark.parametrize("equation", EINSUMS)
@fewer_examples
@given(data=st.data())
def test_einsum_gradcheck(equation, data):
    operands = draw_einsum_operands(data, equation)
    lhs, _, rhs = equation.partition("->")
    numpy_agrees = "A" not in equation and ("..." not in lhs or "..." in rhs or "->" not in equation)
    ref = np.einsum(equation, *operands) if numpy_agrees else None  # numpy sums no '...' axes
    out = mg.einsum(equation, *operands)
    if ref is not None:
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    assert mg.gradcheck(lambda *ts: mg.einsum(equation, *ts), operands)


# ----------------------------------------------------------------------------- errors

# X, a float64 2x3 tensor of ones, is in domains.py.
ERRORS = [
    pytest.param(lambda: mg.outer(mg.ones(2), X), ValueError,
                 "outer: expected 1-D argument vec2, but got 2-D",
                 id="outer"),
    pytest.param(lambda: mg.mm(mg.ones(3), X), ValueError, r"mm: self must be a matrix, not of shape \(3,\)",
                 id="mm-1d"),
    pytest.param(lambda: mg.mm(X, X), ValueError,
                 r"mm: mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)",
                 id="mm-inner"),
    pytest.param(lambda: mg.bmm(X, X), ValueError, "bmm: batch1 must be a 3D tensor", id="bmm-2d"),
    pytest.param(lambda: mg.bmm(mg.ones((2, 2, 3)), mg.ones((1, 3, 1))), ValueError,
                 r"bmm: expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but "
                 r"got: \[1, 3\]",
                 id="bmm-batch"),
    pytest.param(lambda: mg.einsum("ij,jk->ik", X, mg.ones((4, 4))), ValueError,
                 "einsum: subscript j has size 4 for operand 1", id="einsum-sizes"),
    pytest.param(lambda: mg.einsum("ij->k", X), ValueError, "einsum: output subscript k does not appear",
                 id="einsum-output"),
    pytest.param(lambda: mg.einsum("ij->ii", X), ValueError,
                 "einsum: output subscript i appears more than once",
                 id="einsum-repeat"),
    pytest.param(lambda: mg.einsum("ijk->i", X), ValueError,
                 "einsum: operand 0 has 2 dimensions", id="einsum-ndim"),
    pytest.param(lambda: mg.einsum("ii->i", X), ValueError, "einsum: subscript i is repeated for operand 0",
                 id="einsum-diagonal"),
    pytest.param(lambda: mg.einsum("ij,jk", X), ValueError,
                 r"einsum: fewer operands \(1\)", id="einsum-count"),
    pytest.param(lambda: mg.einsum("i1->i", X), ValueError,
                 "einsum: invalid subscript '1'", id="einsum-char"),
    pytest.param(lambda: mg.einsum("ij,jk", X, mg.tensor(np.ones((3, 1), np.int64))), TypeError,
                 "einsum: operands of dtypes float64, int64 mix", id="einsum-dtypes"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_errors_name_the_op_and_the_values(call, error, message):
    with pytest.raises(error, match=message):
        call()
