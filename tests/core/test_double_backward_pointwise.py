"""Second derivatives of the pointwise ops (ops/pointwise.py), the rounding ops and remainders
(ops/rounding.py), median and the vector norms (ops/statistics.py): gradgradcheck on
hypothesis shapes (broadcast, size 1, 0-d), torch's double backward, and the edges (ties,
zeros, huge values), where a second derivative must not come out NaN or wrong."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import arrays, broadcastable_shapes, dims, shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 3), deadline=None)


def _torch():
    return pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


def _second(L, f, xs, v=None):
    """(the first-order gradients of sum(v * f), the gradient of the sum of their squares),
    both through create_graph, as numpy arrays."""
    ts = [L.tensor(x, requires_grad=True) for x in xs]
    out = f(L, *ts)
    if v is None:
        v = np.cos(np.arange(out.numel()) + 0.5).reshape(tuple(out.shape))
    grads = L.autograd.grad(out, ts, L.tensor(v), create_graph=True)
    s = sum((g * g).sum() for g in grads)
    second = L.autograd.grad(s, ts)
    return ([g.detach().numpy() for g in grads], [t.detach().numpy() for t in second])


def _same_as_torch(f, xs, rtol=1e-10, atol=1e-12, v=None):
    torch = _torch()
    mine, theirs = _second(mg, f, xs, v), _second(torch, f, xs, v)
    for a, b in zip(mine[0] + mine[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return mine


def _whole_plus_quarter(q):
    """An offset that moves q to the nearest integer + 0.25: far from every jump of floor,
    ceil, round, trunc (and from the jumps of remainders, applied to the quotient)."""
    return np.round(q) + 0.25 - q


# ----------------------------------------------------------------------------- one input

# name -> (f(L, x, c), low, high, away_from_zero); c is a constant of the shape of x
UNARY = {
    "tan": (lambda L, x, c: x.tan(), -1.2, 1.2, 0.0),
    "asin": (lambda L, x, c: x.asin(), -0.9, 0.9, 0.0),
    "acos": (lambda L, x, c: x.acos(), -0.9, 0.9, 0.0),
    "atan": (lambda L, x, c: x.atan(), -3.0, 3.0, 0.0),
    "sinh": (lambda L, x, c: x.sinh(), -2.0, 2.0, 0.0),
    "cosh": (lambda L, x, c: x.cosh(), -2.0, 2.0, 0.0),
    "expm1": (lambda L, x, c: x.expm1(), -2.0, 2.0, 0.0),
    "log1p": (lambda L, x, c: x.log1p(), -0.8, 2.0, 0.0),
    "log2": (lambda L, x, c: x.log2(), 0.2, 3.0, 0.0),
    "log10": (lambda L, x, c: x.log10(), 0.2, 3.0, 0.0),
    "sign": (lambda L, x, c: x.sign() * x * x, -2.0, 2.0, 0.05),
    "floor": (lambda L, x, c: (x + L.tensor(c)).floor() * x * x, -3.0, 3.0, 0.0),
    "ceil": (lambda L, x, c: (x + L.tensor(c)).ceil() * x * x, -3.0, 3.0, 0.0),
    "round": (lambda L, x, c: (x + L.tensor(c)).round() * x * x, -3.0, 3.0, 0.0),
    "trunc": (lambda L, x, c: (x + L.tensor(c)).trunc() * x * x, -3.0, 3.0, 0.0),
}


@pytest.mark.parametrize("name", list(UNARY))
@fewer
@given(shape=shapes(), data=st.data())
def test_unary_second_derivatives_pass_gradgradcheck(name, shape, data):
    f, low, high, away = UNARY[name]
    x = data.draw(arrays(shape, low, high, away_from_zero=away))
    c = _whole_plus_quarter(x)
    assert mg.gradgradcheck(lambda t: f(mg, t, c), [mg.tensor(x, requires_grad=True)], atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_second_derivatives_equal_torchs(name):
    f, low, high, away = UNARY[name]
    x = np.random.default_rng(0).uniform(low, high, (3, 4))
    x = np.where(np.abs(x) < max(away, 1e-3), 0.5, x)
    c = _whole_plus_quarter(x)
    _same_as_torch(lambda L, t: f(L, t, c), [x])


# ----------------------------------------------------------------------------- two inputs


def _apart(a, b):
    """An offset for b: where a and b are within 0.1, b moves up 0.3 (no ties for max/min)."""
    return np.where(np.abs(a - b) < 0.1, 0.3, 0.0)


def _quotient_offset(a, b):
    """An offset for a: a + c is b * (an integer + 0.25), far from the remainders' jumps."""
    return b * (np.round(a / b) + 0.25) - a


# name -> (f(L, a, b, c), c(a, b), a's (low, high, away), b's (low, high, away))
BINARY = {
    "maximum": (lambda L, a, b, c: L.maximum(a, b + L.tensor(c)) * a * b, _apart,
                (-2, 2, 0), (-2, 2, 0)),
    "minimum": (lambda L, a, b, c: L.minimum(a, b + L.tensor(c)) * a * b, _apart,
                (-2, 2, 0), (-2, 2, 0)),
    "atan2": (lambda L, a, b, c: L.atan2(a, b), None, (-2, 2, 0.1), (-2, 2, 0.1)),
    "hypot": (lambda L, a, b, c: L.hypot(a, b), None, (-2, 2, 0.1), (-2, 2, 0.1)),
    "logaddexp": (lambda L, a, b, c: L.logaddexp(a, b), None, (-3, 3, 0), (-3, 3, 0)),
    "xlogy": (lambda L, a, b, c: L.xlogy(a, b), None, (-2, 2, 0), (0.2, 2, 0)),
    "copysign": (lambda L, a, b, c: L.copysign(a, b) * a * b, None, (-2, 2, 0.1), (-2, 2, 0.1)),
    "remainder": (lambda L, a, b, c: L.remainder(a + L.tensor(c), b) * a * b, _quotient_offset,
                  (-3, 3, 0), (-2, 2, 0.5)),
    "fmod": (lambda L, a, b, c: L.fmod(a + L.tensor(c), b) * a * b, _quotient_offset,
             (-3, 3, 0), (-2, 2, 0.5)),
    "div-floor": (lambda L, a, b, c: (a + L.tensor(c)).div(b, rounding_mode="floor") * a * b,
                  _quotient_offset, (-3, 3, 0), (-2, 2, 0.5)),
    "div-trunc": (lambda L, a, b, c: (a + L.tensor(c)).div(b, rounding_mode="trunc") * a * b,
                  _quotient_offset, (-3, 3, 0), (-2, 2, 0.5)),
}


def _binary(name, a, b):
    f, offset, _, _ = BINARY[name]
    c = None if offset is None else offset(a, b)
    return lambda L, x, y: f(L, x, y, c)


@pytest.mark.parametrize("name", list(BINARY))
@fewer
@given(shapes_=broadcastable_shapes(2), data=st.data())
def test_binary_second_derivatives_pass_gradgradcheck(name, shapes_, data):
    _, _, (la, ha, wa), (lb, hb, wb) = BINARY[name]
    a = data.draw(arrays(shapes_[0], la, ha, away_from_zero=wa))
    b = data.draw(arrays(shapes_[1], lb, hb, away_from_zero=wb))
    f = _binary(name, a, b)
    inputs = [mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)]
    assert mg.gradgradcheck(lambda x, y: f(mg, x, y), inputs, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_second_derivatives_equal_torchs(name):
    _, _, (la, ha, wa), (lb, hb, wb) = BINARY[name]
    rng = np.random.default_rng(1)
    a, b = rng.uniform(la, ha, (3, 4)), rng.uniform(lb, hb, (4,))
    a = np.where(np.abs(a) < max(wa, 1e-3), 0.7, a)
    b = np.where(np.abs(b) < max(wb, 1e-3), 0.7, b)
    _same_as_torch(_binary(name, a, b), [a, b])


def _off_bounds(x, *bounds):
    """An offset c (of the broadcast shape) with x + c at least 0.1 from every bound; the
    bounds, given in increasing order, must be at least 0.5 apart."""
    c = np.zeros(np.broadcast_shapes(np.shape(x), *(np.shape(b) for b in bounds)))
    for b in bounds:
        c = c + np.where(np.abs(x + c - b) < 0.1, 0.2, 0.0)
    return c


def _clip_case(x, lo, hi):
    """clip(x + c, lo, hi) * x * lo * hi with x + c at least 0.1 from both bounds."""
    c = _off_bounds(x, lo, hi)
    return lambda L, t, l_, h_: L.clamp(t + L.tensor(c), l_, h_) * t * l_ * h_


def _one_bound_case(x, hi):
    c = _off_bounds(x, hi)
    return lambda L, t, h: (t + L.tensor(c)).clamp(max=h) * t * h


def _number_bounds_case(x):
    c = _off_bounds(x, -0.25, 0.25, 0.8)
    return lambda L, t: ((t + L.tensor(c)).clamp(-0.25, 0.25) + (t + L.tensor(c)).clamp(min=0.8)) * t


@fewer
@given(shapes_=broadcastable_shapes(3), data=st.data())
def test_clip_second_derivatives_pass_gradgradcheck(shapes_, data):
    x = data.draw(arrays(shapes_[0], -2, 2))
    lo = data.draw(arrays(shapes_[1], -1.5, -0.5))
    hi = data.draw(arrays(shapes_[2], 0.5, 1.5))
    f = _clip_case(x, lo, hi)
    inputs = [mg.tensor(a, requires_grad=True) for a in (x, lo, hi)]
    assert mg.gradgradcheck(lambda *ts: f(mg, *ts), inputs, atol=1e-5, rtol=1e-3)
    f = _one_bound_case(x, hi)
    one_bound = [mg.tensor(x, requires_grad=True), mg.tensor(hi, requires_grad=True)]
    assert mg.gradgradcheck(lambda t, h: f(mg, t, h), one_bound, atol=1e-5, rtol=1e-3)
    f = _number_bounds_case(x)
    assert mg.gradgradcheck(lambda t: f(mg, t), one_bound[:1], atol=1e-5, rtol=1e-3)


def test_clip_second_derivatives_equal_torchs():
    rng = np.random.default_rng(2)
    x, lo, hi = rng.uniform(-2, 2, (3, 4)), rng.uniform(-1.5, -0.5, (4,)), rng.uniform(0.5, 1.5, (3, 1))
    _same_as_torch(_clip_case(x, lo, hi), [x, lo, hi])
    _same_as_torch(_one_bound_case(x, hi), [x, hi])
    _same_as_torch(_number_bounds_case(x), [x])


def test_clip_on_its_bounds_and_with_crossed_bounds_follows_torch():
    """A value exactly on a bound keeps its gradient; where lo > hi every z is hi."""
    x = np.array([[-1.0, 0.0, 1.0, 2.0], [0.5, -0.5, 1.5, -2.0]])
    lo, hi = np.array([-1.0, 0.5, 1.0, 3.0]), np.array([1.0, 0.0, 1.0, 1.0])
    grads, second = _same_as_torch(lambda L, t, l_, h_: L.clamp(t, l_, h_) * t * l_ * h_, [x, lo, hi])
    assert all(np.isfinite(s).all() for s in second)


# ----------------------------------------------------------------------------- median, norms


def _spread(x, gap=1e-2):
    """x with its values (or its magnitudes, kept away from 0) at least `gap` apart."""
    flat = x.reshape(-1).copy()
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    for i in range(1, s.size):
        s[i] = max(s[i], s[i - 1] + gap)
    flat[order] = s
    return flat.reshape(x.shape)


@fewer
@given(shape=shapes(), data=st.data())
def test_median_second_derivatives_pass_gradgradcheck(shape, data):
    x = _spread(data.draw(arrays(shape, -2, 2)))
    assert mg.gradgradcheck(lambda t: t.median() * t * t, [mg.tensor(x, requires_grad=True)],
                            atol=1e-5, rtol=1e-3)


def test_median_second_derivatives_equal_torchs_with_ties_too():
    x = np.random.default_rng(3).uniform(-2, 2, (3, 5))
    _same_as_torch(lambda L, t: t.median() * t * t, [x])
    tied = np.array([[0.5, 1.0, 0.5], [0.5, -1.0, 2.0]])  # the median 0.5, three times
    mine = _same_as_torch(lambda L, t: t.median() * t * t, [tied])
    assert np.isfinite(mine[1][0]).all()


ORDERS = [2, 1, math.inf, -math.inf, 3, 1.5, 0.5, -1.5, 0]


def _norm_case(ord, dim, keepdim):
    def f(L, t):
        n = L.linalg.vector_norm(t, ord, dim, keepdim)
        return n * n + n * (t * t).sum()
    return f


def _norm_input(x):
    """Magnitudes in [0.3, 2] at least 1e-2 apart (no ties for the inf norms), either sign."""
    signs = np.where(x < 0, -1.0, 1.0)
    return signs * _spread(np.clip(np.abs(x), 0.3, 2.0))


@pytest.mark.parametrize("ord", ORDERS)
@fewer
@given(shape=shapes(), keepdim=st.booleans(), data=st.data())
def test_vector_norm_second_derivatives_pass_gradgradcheck(ord, shape, keepdim, data):
    x = _norm_input(data.draw(arrays(shape, -2, 2)))
    dim = data.draw(dims(len(shape)))
    f = _norm_case(ord, dim, keepdim)
    if ord == 0:  # the count of nonzeros: no gradient, in first order or beyond
        t = mg.tensor(x, requires_grad=True)
        (g,) = mg.autograd.grad(f(mg, t).sum(), t, create_graph=True, allow_unused=True,
                                materialize_grads=True)
        np.testing.assert_array_equal(g.numpy(), 2 * (mg.linalg.vector_norm(t, 0, dim, keepdim).sum()
                                                       * t).detach().numpy())
        return
    assert mg.gradgradcheck(lambda t: f(mg, t), [mg.tensor(x, requires_grad=True)], atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("ord", ORDERS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm_second_derivatives_equal_torchs(ord, dim, keepdim):
    x = _norm_input(np.random.default_rng(4).uniform(-2, 2, (2, 3, 4)))
    _same_as_torch(_norm_case(ord, dim, keepdim), [x])


def test_vector_norm_second_derivatives_in_float32_follow_float64():
    x = _norm_input(np.random.default_rng(5).uniform(-2, 2, (3, 4)))
    for ord in (2, 3, math.inf, 0.5):
        found = []
        for dtype in (mg.float64, mg.float32):
            t = mg.tensor(x, dtype=dtype, requires_grad=True)
            (g,) = mg.autograd.grad(_norm_case(ord, 1, False)(mg, t).sum(), t, create_graph=True)
            (h,) = mg.autograd.grad((g * g).sum(), t)
            assert h.dtype == dtype
            found.append(h.numpy())
        np.testing.assert_allclose(found[1], found[0], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- edges


def test_maximum_and_minimum_at_ties_split_as_torch():
    """At a == b each side gets half of g, and the second derivatives follow that rule."""
    a = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 0.0]])
    b = np.array([0.5, 1.0, 2.0])
    for f in (lambda L, x, y: L.maximum(x, y) * x * y, lambda L, x, y: L.minimum(x, y) * (x + y) ** 2):
        grads, second = _same_as_torch(f, [a, b])
        assert all(np.isfinite(s).all() for s in second)


def test_atan2_at_the_origin_has_zero_second_derivatives_not_nan():
    f = lambda L, a, b: L.atan2(a, b) * (a + 2)  # noqa: E731
    grads, second = _second(mg, f, [np.zeros(3), np.array([0.0, 1.0, -1.0])])
    np.testing.assert_array_equal(grads[0][0], 0.0)  # the origin: the gradient is the constant 0
    for s in second:
        assert np.isfinite(s).all()
    # away from the origin (elements 1, 2) torch agrees
    _same_as_torch(f, [np.array([0.3, 0.0, 0.5]), np.array([0.4, 1.0, -1.0])])


def test_logaddexp_far_apart_has_finite_second_derivatives():
    """d2/da2 logaddexp(a, b) = s (1 - s), s = sigmoid(a - b): tiny, never inf / inf = NaN."""
    for gap in (30.0, 800.0, 1e300):
        a = mg.tensor([0.0, gap], dtype=mg.float64, requires_grad=True)
        b = mg.tensor([gap, 0.0], dtype=mg.float64, requires_grad=True)
        (da,) = mg.autograd.grad(mg.logaddexp(a, b).sum(), a, create_graph=True)
        (h,) = mg.autograd.grad(da.sum(), a)
        s = math.exp(-min(gap, 1000.0)) / (1 + math.exp(-min(gap, 1000.0)))
        np.testing.assert_allclose(da.numpy(), [s, 1 - s], rtol=1e-12)
        np.testing.assert_allclose(h.numpy(), [s * (1 - s)] * 2, rtol=1e-10, atol=1e-300)


def test_xlogy_at_x_zero_follows_torch():
    """dx = xlogy(g, y), 0 where x = 0 and y <= 0; its derivative in g is log(y) even at g = 0."""
    torch = _torch()
    x, y = np.array([0.0, 0.0, 0.0, 1.5]), np.array([0.0, 2.0, -1.0, 3.0])
    v = np.array([1.0, 0.0, 2.0, 0.5])
    found = []
    for L in (mg, torch):
        xt, vt = L.tensor(x, requires_grad=True), L.tensor(v, requires_grad=True)
        (dx,) = L.autograd.grad(L.xlogy(xt, L.tensor(y)), xt, vt, create_graph=True)
        (dv,) = L.autograd.grad((dx * L.tensor([1.0, 2.0, 3.0, 4.0])).sum(), vt)
        found.append((dx.detach().numpy(), dv.detach().numpy()))
    np.testing.assert_allclose(found[0][0], found[1][0], rtol=1e-14)
    np.testing.assert_allclose(found[0][1], found[1][1], rtol=1e-14)
    np.testing.assert_allclose(found[0][1], [0.0, 2 * math.log(2.0), 0.0, 4 * math.log(3.0)], rtol=1e-14)


def test_copysign_and_rounding_at_their_jumps_have_zero_second_derivatives():
    x = np.array([0.0, -0.0, 1.0, -2.5, 0.5])
    grads, second = _same_as_torch(
        lambda L, t: t.floor() * t * t + t.round() * t + t.sign() * t * t + t.ceil() * t + t.trunc() * t, [x])
    assert np.isfinite(second[0]).all()
    # copysign(t, t - 1) * t is -|t| t near 0 and t**2 past 1: d(sum (v f')**2)/dt = 8 v**2 t, also
    # at t = 0, where the gradient is the constant 0 (torch's double backward gives 0 / 0 there)
    t, v = np.array([0.0, -0.0, 0.25, -0.5, 1.5]), np.array([1.0, -2.0, 0.5, 3.0, 1.5])
    grads, second = _second(mg, lambda L, t: L.copysign(t, t - 1) * t, [t], v=v)
    np.testing.assert_allclose(second[0], 8 * v * v * t, rtol=1e-14, atol=0)
    a, b = np.array([3.0, -3.0, 0.0]), np.array([1.5, 1.5, -1.0])  # a / b whole: on the jumps
    for f in (lambda L, p, q: L.remainder(p, q) * p * q, lambda L, p, q: L.fmod(p, q) * p * q,
              lambda L, p, q: p.div(q, rounding_mode="floor") * p * q):
        grads, second = _same_as_torch(f, [a, b])
        assert all(np.isfinite(s).all() for s in second)


def test_vector_norms_at_zeros_have_finite_second_derivatives():
    """A zero norm, or a zero element for p < 1, has gradient 0 there (a constant), so its
    derivatives are 0 there too; the other elements' are those of the norm without it."""
    for ord in (2, 3, 1.5, 0.5, -1.5):
        (g,), (h,) = _second(mg, lambda L, t, p=ord: L.linalg.vector_norm(t, p), [np.zeros(3)])
        np.testing.assert_array_equal(g, 0.0)
        np.testing.assert_array_equal(h, 0.0)
    for ord in (0.5, 0.25):
        def f(L, t, p=ord):
            return L.linalg.vector_norm(t, p) ** 2
        with_zero = _second(mg, f, [np.array([0.0, 1.0, -2.0])], v=np.array(1.0))
        without = _second(mg, f, [np.array([1.0, -2.0])], v=np.array(1.0))
        np.testing.assert_allclose(with_zero[0][0], [0.0, *without[0][0]], rtol=1e-14)
        np.testing.assert_allclose(with_zero[1][0], [0.0, *without[1][0]], rtol=1e-13)
    (g,), (h,) = _second(mg, lambda L, t: L.linalg.vector_norm(t, -1.5), [np.array([0.0, 1.0, -2.0])])
    np.testing.assert_array_equal(g, 0.0)  # p < 0: one zero makes the norm 0, flat around the others
    np.testing.assert_array_equal(h, 0.0)


def test_huge_values_give_finite_second_derivatives():
    """atan at 1e200: 1 + x**2 overflows to inf, and every derivative is 0, not NaN; hypot of
    huge a, b: d2/da2 = b**2 / z**3, computed without overflow."""
    x = mg.tensor([1e200, -1e200, 3.0], dtype=mg.float64, requires_grad=True)
    (g,) = mg.autograd.grad(x.atan().sum(), x, create_graph=True)
    (h,) = mg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [0.0, 0.0, -2 * 3.0 / 100.0], rtol=1e-14)
    a = mg.tensor([3e150], dtype=mg.float64, requires_grad=True)
    b = mg.tensor([4e150], dtype=mg.float64, requires_grad=True)
    (ga,) = mg.autograd.grad(mg.hypot(a, b).sum(), a, create_graph=True)
    (h,) = mg.autograd.grad(ga.sum(), a)
    np.testing.assert_allclose(ga.numpy(), [0.6], rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), [16.0 / 125.0 / 1e150], rtol=1e-13)


def test_first_order_is_unchanged_by_create_graph():
    """The gradients computed with create_graph have the first-order values (on the edges too)."""
    rng = np.random.default_rng(6)
    a, b = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (4,))
    a[0, :2], b[:2] = 0.0, 0.0
    cases = [lambda L, x, y: L.maximum(x, y), lambda L, x, y: L.atan2(x, y),
             lambda L, x, y: L.logaddexp(x, y),
             lambda L, x, y: L.xlogy(x, y.abs()), lambda L, x, y: L.copysign(x, y),
             lambda L, x, y: L.linalg.vector_norm(x * y, 0.5, 1)]
    for f in cases:
        xs = [mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)]
        plain = mg.autograd.grad(f(mg, *xs), xs, mg.ones(f(mg, *xs).shape, dtype=mg.float64))
        graph = mg.autograd.grad(f(mg, *xs), xs, mg.ones(f(mg, *xs).shape, dtype=mg.float64),
                                 create_graph=True)
        for p, q in zip(plain, graph):
            np.testing.assert_allclose(q.detach().numpy(), p.numpy(), rtol=1e-15, atol=0)


@pytest.mark.parametrize("name", ["maximum", "atan2", "hypot", "logaddexp", "xlogy", "copysign", "remainder"])
def test_mixed_dtypes_follow_torch(name):
    """A float32 operand with a float64 one: the op computes in float64 (the float32 input saved
    cast, and rebuilt as input.to(float64) under create_graph); float32 and float64 gradients."""
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (4,))
    mine = _same_as_torch(_binary(name, a.astype(np.float64), b), [a, b], rtol=1e-6, atol=1e-6)
    assert [g.dtype for g in mine[0]] == [np.float32, np.float64]
    assert [h.dtype for h in mine[1]] == [np.float32, np.float64]
