"""Properties at the edges that a planted one-line bug would break: gradients of 0-d tensors,
clip at exactly its bounds, NaN through max, grad-mode nesting, repeated unsigned indices,
the version counter, and clip_grad_norm_ with a non-finite norm. PyTorch is the reference."""

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.optim as optim
from minigrad.testing import arrays, on_grid, shape_and_broadcastable, shapes

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")


def to_torch(a, requires_grad=True):
    return torch.tensor(np.asarray(a), requires_grad=requires_grad)


# ----------------------------------------------------------------------------- 0-d gradients


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [lambda x: x * x, lambda x: (x * 3.0).exp(), lambda x: x.sum() * x,
                                lambda x: mg.maximum(x, 0.5), lambda x: x.reshape(1)[0] ** 2],
                         ids=["mul", "exp", "sum", "maximum", "getitem"])
def test_grad_of_a_0d_leaf_and_retained_intermediate_is_an_array(fn, dtype):
    x = mg.tensor(np.array(1.5, dtype=dtype), requires_grad=True)
    y = fn(x)
    y.retain_grad()
    (y * 2.0).backward()
    for t in (x, y):
        assert isinstance(t.grad, mg.Tensor) and type(t.grad.numpy()) is np.ndarray
        assert t.grad.shape == () and t.grad.dtype == dtype


def test_clip_grad_norm_clips_a_0d_gradient_as_torch():
    w = mg.tensor([3.0, 0.0], requires_grad=True)
    s = mg.tensor(4.0, requires_grad=True)  # a learnable scale
    (w.sum() * s).backward()  # w.grad = [4, 4], s.grad = 3 (0-d times 0-d): norm sqrt(41)
    tw, ts = to_torch(w.numpy()), to_torch(s.numpy())
    (tw.sum() * ts).backward()
    total = optim.clip_grad_norm_([w, s], max_norm=1.0)
    ref = torch.nn.utils.clip_grad_norm_([tw, ts], max_norm=1.0)
    assert total == pytest.approx(ref.item())
    np.testing.assert_allclose(s.grad, ts.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad, tw.grad.numpy(), rtol=1e-6)
    assert math.hypot(*w.grad, s.grad) == pytest.approx(1.0, rel=1e-5)


def test_zero_grad_without_none_zeroes_a_0d_gradient():
    s = mg.tensor(2.0, requires_grad=True)
    opt = optim.SGD([s], lr=0.1)
    (s * 3.0).backward()
    opt.zero_grad(set_to_none=False)
    assert s.grad == 0
    (s * 5.0).backward()  # a fresh gradient, not 5 added to a stale 3
    assert s.grad == 5


def test_assigned_grad_becomes_an_array_of_the_tensor_dtype():
    s = mg.tensor(np.array(1.0), requires_grad=True)
    s.grad = np.float32(2.0)
    assert isinstance(s.grad, mg.Tensor) and type(s.grad.numpy()) is np.ndarray and s.grad.dtype == np.float64
    with pytest.raises(ValueError, match=r"grad: a gradient of shape \(2,\) for a tensor of shape \(\)"):
        s.grad = np.ones(2)


# ----------------------------------------------------------------------------- clip / clamp


@st.composite
def on_and_off_bounds(draw):
    """x of a small shape with values drawn from the bounds themselves and from around them,
    and bounds lo <= hi (or lo > hi, where torch gives every place hi)."""
    lo, hi = draw(st.sampled_from([-1.0, 0.0, 0.5])), draw(st.sampled_from([0.5, 1.0, 2.0, -2.0]))
    shape = draw(shapes(min_dims=1, max_dims=2))
    values = st.sampled_from([lo, hi, lo - 0.25, hi + 0.25, (lo + hi) / 2])
    x = np.array(draw(st.lists(values, min_size=math.prod(shape), max_size=math.prod(shape))))
    return x.reshape(shape), lo, hi


@given(on_and_off_bounds(), st.sampled_from(["both", "min", "max"]))
def test_clip_gradient_exactly_at_the_bounds_matches_torch(case, which):
    x, lo, hi = case
    lo, hi = (lo if which != "max" else None), (hi if which != "min" else None)
    g = np.arange(1.0, x.size + 1).reshape(x.shape)
    t = mg.tensor(x, requires_grad=True)
    t.clip(lo, hi).backward(g)
    tt = to_torch(x)
    tt.clamp(lo, hi).backward(torch.tensor(g))
    np.testing.assert_array_equal(t.grad, tt.grad.numpy())


@given(shape_and_broadcastable(), st.data())
def test_clamp_with_tensor_bounds_matches_torch_values_and_gradients(shape_pair, data):
    # bounds that broadcast to x's shape (torch's backward refuses bounds larger than x)
    sx, slo = shape_pair
    shi = sx[data.draw(st.integers(0, len(sx))):]
    grid = [-1.0, -0.5, 0.0, 0.5, 1.0]  # ties between x and the bounds are common
    x, lo, hi = (data.draw(on_grid(s, grid)) for s in (sx, slo, shi))
    t, tlo, thi = (mg.tensor(a, requires_grad=True) for a in (x, lo, hi))
    r, rlo, rhi = (to_torch(a) for a in (x, lo, hi))
    out, ref = t.clamp(min=tlo, max=thi), torch.clamp(r, min=rlo, max=rhi)
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    g = data.draw(arrays(out.shape))
    out.backward(g)
    ref.backward(torch.tensor(g))
    for mine, theirs in ((t, r), (tlo, rlo), (thi, rhi)):
        np.testing.assert_allclose(mine.grad, theirs.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_clamp_with_only_a_tensor_min_gives_it_the_gradient_below():
    t = mg.tensor([0.0, 0.5, 1.0, -1.0], requires_grad=True)
    lo = mg.tensor(0.5, requires_grad=True)
    t.clamp(min=lo).sum().backward()
    np.testing.assert_array_equal(t.grad, [0, 1, 1, 0])  # x == lo keeps its gradient (torch)
    assert lo.grad == 2


# ----------------------------------------------------------------------------- NaN and empty index


@given(arrays(st.integers(1, 6)), st.data())
def test_max_of_a_row_with_nan_routes_the_gradient_to_the_nans_as_torch(x, data):
    nans = data.draw(st.lists(st.integers(0, x.size - 1), min_size=1, max_size=3))
    x = x.copy()
    x[nans] = np.nan
    t, r = mg.tensor(x, requires_grad=True), to_torch(x)
    t.max().backward()
    r.max().backward()
    np.testing.assert_array_equal(t.grad, r.grad.numpy())  # no NaN in either: 1/k at each NaN


@given(st.data())
def test_maximum_and_minimum_at_nan_and_ties_match_torch(data):
    a, b = (data.draw(on_grid(4, [np.nan, 0.0, 1.0, 2.0])) for _ in range(2))
    for mine, theirs in ((mg.maximum, torch.maximum), (mg.minimum, torch.minimum)):
        ta, tb = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
        ra, rb = to_torch(a), to_torch(b)
        mine(ta, tb).backward(np.arange(1.0, 5.0))
        theirs(ra, rb).backward(torch.arange(1.0, 5.0, dtype=torch.float64))
        np.testing.assert_array_equal(ta.grad, ra.grad.numpy())
        np.testing.assert_array_equal(tb.grad, rb.grad.numpy())


def test_an_empty_list_index_selects_no_rows_as_torch():
    t = mg.zeros(3, 4, requires_grad=True)
    out = t[[]]
    assert out.shape == tuple(torch.zeros(3, 4)[[]].shape) == (0, 4)
    out.sum().backward()
    np.testing.assert_array_equal(t.grad, np.zeros((3, 4)))


# ----------------------------------------------------------------------------- optimizer params


def test_optimizer_given_a_model_or_its_method_names_what_it_got():
    import minigrad.nn as nn

    model = nn.Linear(2, 2)
    for opt in (optim.SGD, optim.Adam):
        with pytest.raises(TypeError, match=rf"{opt.__name__}: params must be an iterable of Tensors "
                                            r"or dicts, got Linear; pass model.parameters\(\)"):
            opt(model, lr=0.1)
        with pytest.raises(TypeError, match="got method"):
            opt(model.parameters, lr=0.1)
    with pytest.raises(TypeError, match="got int"):
        optim.SGD(3, lr=0.1)


# ----------------------------------------------------------------------------- grad mode nesting

MODES = {
    "no_grad": (mg.no_grad, False),
    "enable_grad": (mg.enable_grad, True),
    "set_grad_enabled(False)": (lambda: mg.set_grad_enabled(False), False),
    "set_grad_enabled(True)": (lambda: mg.set_grad_enabled(True), True),
}


@given(st.booleans(), st.lists(st.sampled_from(sorted(MODES)), min_size=1, max_size=5))
def test_leaving_a_grad_mode_block_restores_the_mode_before_it(start, names):
    def nest(i):  # enter names[i], check, recurse, check the mode is back after each exit
        if i == len(names):
            return
        before = mg.is_grad_enabled()
        make, mode = MODES[names[i]]
        with make():
            assert mg.is_grad_enabled() is mode
            x = mg.tensor([1.0], requires_grad=True)
            assert (x * 2).requires_grad is mode
            nest(i + 1)
            assert mg.is_grad_enabled() is mode
        assert mg.is_grad_enabled() is before

    with mg.set_grad_enabled(start):
        nest(0)
        assert mg.is_grad_enabled() is start
    assert mg.is_grad_enabled()


@pytest.mark.parametrize("name", sorted(MODES))
@pytest.mark.parametrize("outer", [True, False])
def test_grad_mode_as_a_decorator_restores_the_callers_mode(name, outer):
    make, mode = MODES[name]
    with mg.set_grad_enabled(outer):
        @make()  # decorating changes nothing where the function is defined
        def inner():
            return mg.is_grad_enabled()

        assert mg.is_grad_enabled() is outer
        assert inner() is mode
        assert mg.is_grad_enabled() is outer
        with contextlib.suppress(ZeroDivisionError):
            make()(lambda: 1 / 0)()
        assert mg.is_grad_enabled() is outer  # also after an exception


def test_set_grad_enabled_as_a_call_takes_effect_at_once():
    try:
        mg.set_grad_enabled(False)
        assert not mg.is_grad_enabled()
        mg.set_grad_enabled(True)
        assert mg.is_grad_enabled()
    finally:
        mg.set_grad_enabled(True)


# ----------------------------------------------------------------------------- repeated indices


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64, np.int32, np.int64])
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.data())
def test_repeated_indices_of_any_integer_dtype_accumulate_their_gradient(dtype, idx, data):
    x = mg.tensor(data.draw(arrays((4, 2))), requires_grad=True)
    index = np.array(idx, dtype=dtype)
    g = data.draw(arrays((len(idx), 2)))
    x[index].backward(g)
    expected = np.zeros((4, 2))
    np.add.at(expected, np.array(idx), g)
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)
    if len(set(idx)) < len(idx):  # a repeat: its rows really sum
        assert x.grad.sum() == pytest.approx(g.sum())


# ----------------------------------------------------------------------------- version counter

IN_PLACE = {
    "+=": lambda t: t.__iadd__(1.0),
    "-=": lambda t: t.__isub__(mg.tensor([0.5, 0.5])),
    "*=": lambda t: t.__imul__(2.0),
    "/=": lambda t: t.__itruediv__(np.array([2.0, 4.0], dtype=np.float32)),
    "sgd": lambda t: _step(optim.SGD, t),
    "adam": lambda t: _step(optim.Adam, t),
}


def _step(make, t):
    t.requires_grad_(True)
    t.grad = np.ones(t.shape, dtype=t.dtype)
    make([t], lr=0.1).step()
    return t


@given(st.lists(st.sampled_from(sorted(IN_PLACE)), max_size=6))
def test_version_counts_each_in_place_change_exactly_once(ops):
    t = mg.tensor([1.0, 2.0])
    view, detached = t.reshape(2, 1), t.detach()  # views and detach() share one counter
    assert t._version == 0
    for n, op in enumerate(ops, start=1):
        with mg.no_grad():
            IN_PLACE[op](t)
        assert t._version == view._version == detached._version == n, op


def test_backward_raises_after_one_in_place_change_of_a_saved_tensor():
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    x = mg.tensor([3.0, 4.0])
    y = (w * x).sum()
    x += 1  # one change: version 1, which Mul did not see
    with pytest.raises(RuntimeError, match="now at version 1, Mul saw version 0"):
        y.backward()


# ----------------------------------------------------------------------------- clip_grad_norm_


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_returns_and_propagates_a_non_finite_norm_as_torch(bad, norm_type):
    grads = [np.array([1.0, bad, 2.0]), np.array(3.0), np.array([[0.5]])]
    params = [mg.tensor(np.zeros_like(g), requires_grad=True) for g in grads]
    ref = [to_torch(np.zeros_like(g)) for g in grads]
    for p, r, g in zip(params, ref, grads):
        p.grad, r.grad = g.copy(), torch.tensor(g)
    total = optim.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type)
    ref_total = torch.nn.utils.clip_grad_norm_(ref, max_norm=1.0, norm_type=norm_type)
    np.testing.assert_array_equal(total, ref_total.item())  # nan == nan here, inf == inf
    assert math.isnan(total) if np.isnan(bad) else total == math.inf
    for p, r in zip(params, ref):
        np.testing.assert_array_equal(p.grad, r.grad.numpy())
    for p in params:
        p.grad = np.array(grads[0] if p.ndim == 1 else p.grad)
    with pytest.raises(RuntimeError, match="total norm of the gradients is"):
        optim.clip_grad_norm_(params, max_norm=1.0, error_if_nonfinite=True)
