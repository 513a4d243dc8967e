"""Copies, moves, repeats and joins (clone, contiguous, tril, triu, flip, roll, movedim,
swapaxes, mT, unflatten, expand_as, narrow, unbind, concat, hstack, vstack, repeat, tile):
compositions of the shape ops, each checked by gradcheck and against PyTorch (values, dtypes
and gradients) over drawn shapes with size-1 axes and negative dims."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, shapes

fewer_examples = settings(max_examples=max(10, settings.default.max_examples // 3))


def _dim(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


def _dims(draw, ndim):
    """Distinct axes, some written negative."""
    axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes)


# Each case draws shapes and arguments and returns (input shapes, minigrad fn, torch fn); the
# two fns take the library's tensors and the torch fn receives the `torch` module first.
@st.composite
def cases(draw, op):
    if op in ("clone", "contiguous", "mT", "swapaxes", "swapdims", "tril", "triu"):
        shape = draw(shapes(min_dims=2 if op in ("mT", "tril", "triu") else 1))
        if op == "clone":
            return [shape], lambda x: mg.clone(x), lambda T, x: T.clone(x)
        if op == "contiguous":  # a transposed view, copied to C order
            return ([shape], lambda x: x.transpose(0, -1).contiguous(),
                    lambda T, x: x.transpose(0, -1).contiguous())
        if op == "mT":
            return [shape], lambda x: x.mT, lambda T, x: x.mT
        if op in ("tril", "triu"):
            k = draw(st.integers(-3, 3))
            return ([shape], lambda x: getattr(mg, op)(x, diagonal=k) if k % 2 else getattr(x, op)(k),
                    lambda T, x: getattr(T, op)(x, diagonal=k))
        a, b = _dim(draw, len(shape)), _dim(draw, len(shape))
        return [shape], lambda x: getattr(x, op)(a, b), lambda T, x: getattr(T, op)(x, a, b)
    shape = draw(shapes(min_dims=1))
    n = len(shape)
    if op == "flip":
        dims = _dims(draw, n)
        return [shape], lambda x: mg.flip(x, dims), lambda T, x: T.flip(x, dims)
    if op == "roll":
        if draw(st.booleans()):
            s = draw(st.integers(-5, 5))
            return [shape], lambda x: x.roll(s), lambda T, x: T.roll(x, s)
        dims = _dims(draw, n) or (0,)
        shifts = tuple(draw(st.integers(-5, 5)) for _ in dims)
        return [shape], lambda x: mg.roll(x, shifts, dims), lambda T, x: T.roll(x, shifts, dims)
    if op == "movedim":
        src = _dims(draw, n)
        dst = tuple(draw(st.permutations(range(n)))[:len(src)])
        if len(src) == 1 and draw(st.booleans()):
            src, dst = src[0], dst[0]
        return [shape], lambda x: mg.movedim(x, src, dst), lambda T, x: T.movedim(x, src, dst)
    if op == "unflatten":
        d = _dim(draw, n)
        side = shape[d]
        a = draw(st.sampled_from([f for f in range(1, side + 1) if side % f == 0]))
        sizes = (a, -1) if draw(st.booleans()) else (a, side // a)
        return [shape], lambda x: x.unflatten(d, sizes), lambda T, x: x.unflatten(d, sizes)
    if op == "expand_as":
        lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
        small = tuple(1 if draw(st.booleans()) else s for s in shape)
        return ([small, lead + shape], lambda x, y: x.expand_as(y) * y,
                lambda T, x, y: x.expand_as(y) * y)
    if op == "narrow":
        d = _dim(draw, n)
        start = draw(st.integers(-shape[d], shape[d] - 1))
        length = draw(st.integers(0, shape[d] - start % shape[d]))
        return ([shape], lambda x: mg.narrow(x, d, start, length),
                lambda T, x: T.narrow(x, d, start, length))
    if op == "unbind":
        d = _dim(draw, n)
        return [shape], lambda x: mg.unbind(x, d), lambda T, x: T.unbind(x, d)
    if op in ("concat", "concatenate", "hstack", "vstack"):
        d = _dim(draw, n) if op in ("concat", "concatenate") else (1 if n > 1 and op == "hstack" else 0)
        sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        parts = [tuple(s if i == d % n else side for i, side in enumerate(shape)) for s in sizes]
        if op == "vstack" and n == 1:
            parts = [shape] * len(sizes)  # 1-d rows of one length
        if op == "concatenate":
            return parts, lambda *xs: mg.concatenate(xs, dim=d), lambda T, *xs: T.concatenate(xs, dim=d)
        if op == "concat":
            return parts, lambda *xs: mg.concat(xs, dim=d), lambda T, *xs: T.concat(xs, dim=d)
        return parts, lambda *xs: getattr(mg, op)(xs), lambda T, *xs: getattr(T, op)(xs)
    if op == "repeat":
        reps = tuple(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n + 2)))
        return [shape], lambda x: x.repeat(*reps), lambda T, x: x.repeat(*reps)
    if op == "tile":
        reps = tuple(draw(st.lists(st.integers(0, 3), max_size=n + 2)))
        return [shape], lambda x: mg.tile(x, reps), lambda T, x: T.tile(x, reps)
    raise AssertionError(op)


OPS = ["clone", "contiguous", "tril", "triu", "flip", "roll", "movedim", "swapaxes", "swapdims",
       "mT", "unflatten", "expand_as", "narrow", "unbind", "concat", "concatenate", "hstack",
       "vstack", "repeat", "tile"]


@pytest.mark.parametrize("op", OPS)
@fewer_examples
@given(data=st.data())
def test_gradcheck(op, data):
    input_shapes, fn, _ = data.draw(cases(op))
    xs = [mg.tensor(data.draw(arrays(s)), requires_grad=True) for s in input_shapes]
    assert mg.gradcheck(fn, xs)


@pytest.mark.parametrize("op", OPS)
@fewer_examples
@given(data=st.data())
def test_against_torch(op, data):
    """Values, dtypes (float32, float64, int64) and gradients as PyTorch gives them."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")
    input_shapes, fn, torch_fn = data.draw(cases(op))
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int64]))
    arrs = [data.draw(arrays(s)).astype(dtype) for s in input_shapes]
    floats = dtype != np.int64
    xs = [mg.tensor(a, requires_grad=floats) for a in arrs]
    ts = [torch.tensor(a, requires_grad=floats) for a in arrs]
    outs, touts = fn(*xs), torch_fn(torch, *ts)
    outs, touts = (outs, touts) if isinstance(outs, tuple) else ((outs,), (touts,))
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert o.shape == tuple(t.shape) and o.dtype == np.dtype(str(t.dtype).split(".")[1])
        np.testing.assert_array_equal(o.numpy(), t.detach().numpy())
    if not floats or not outs or all(o.numpy().size == 0 for o in outs):
        return
    gs = [data.draw(arrays(o.shape)).astype(dtype) for o in outs]
    sum(((o * g).sum() for o, g in zip(outs, gs)), mg.tensor(0.0, dtype=dtype)).backward()
    sum((t * torch.tensor(g)).sum() for t, g in zip(touts, gs)).backward()
    for x, t in zip(xs, ts):
        want = np.zeros(x.shape, dtype) if t.grad is None else t.grad.numpy()
        got = np.zeros(x.shape, dtype) if x.grad is None else x.grad
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_clone_owns_its_storage():
    """An in-place change to a clone leaves the original and its gradient alone."""
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.clone()
    assert y.numpy() is not x.numpy() and not np.shares_memory(y.numpy(), x.numpy())
    z = mg.ones(3)
    z += y.detach()
    (y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_contiguous_is_self_when_already_c_ordered():
    x = mg.ones(2, 3)
    assert x.contiguous() is x and x.T.contiguous().numpy().flags.c_contiguous


@pytest.mark.parametrize("call, message", [
    (lambda x: x[0].tril(), "tril: expected a tensor of at least 2 dimensions"),
    (lambda x: x[0].mT, "mT: expected a tensor of at least 2 dimensions"),
    (lambda x: x.narrow(1, 2, 2), "narrow: start 2 and length 2 do not fit dim 1 of size 3"),
    (lambda x: x.repeat(2), "repeat: 1 repeat counts given for a tensor of 2 dimensions"),
    (lambda x: x.unflatten(1, (2, 2)), "unflatten: sizes (2, 2) do not multiply"),
    (lambda x: x.movedim((0, 1), 0), "movedim: source (0, 1) and destination 0"),
    (lambda x: x.flip(0, -2), "flip: dim (0, -2) repeats an axis"),
    (lambda x: x.roll((1, 2), 0), "roll: shifts (1, 2) and dims (0,) need the same length"),
])
def test_errors_name_the_op_and_the_values(call, message):
    with pytest.raises((ValueError, IndexError), match=message.replace("(", r"\(").replace(")", r"\)")):
        call(mg.ones(2, 3))
