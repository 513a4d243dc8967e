"""Higher-order gradients of the convolution, pooling, batch norm, upsampling and constant pad
kernels: each names the composition it computes (`reference`), which backward(create_graph=True)
follows. gradgradcheck over drawn geometries, torch's double backward, and the edges (tied and
NaN maxima, windows of padding only, constant and overflowing batch-norm channels, a NaN or
infinite pad value, an empty batch)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.nn.batchnorm_kernel import BatchNorm
from minigrad.nn.conv_kernels import AvgPool2dOp, Conv2dOp, ConvTranspose2dOp, MaxPool2dOp
from minigrad.nn.padding import ConstantPad
from minigrad.nn.upsampling import UpsampleInterpOp, UpsampleNearestOp
from minigrad.testing import arrays, pool_cases, shapes

fewer = settings(max_examples=max(10, settings.default.max_examples // 3), deadline=None)


def _fn(L):
    return F if L is mg else L.nn.functional


def _leaves(*arrays_):
    return [mg.tensor(a, dtype=mg.float64, requires_grad=True) for a in arrays_]


def _spread(shape, seed):
    """Values 0.1 apart in random order (no ties: finite differences see one maximum), centred."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n).reshape(shape) - n / 2) * 0.1


def test_every_op_here_names_its_composition():
    for op in (Conv2dOp, ConvTranspose2dOp, MaxPool2dOp, AvgPool2dOp, BatchNorm, UpsampleNearestOp,
               UpsampleInterpOp, ConstantPad):
        assert callable(getattr(op, "reference", None)), op.__name__


# ----------------------------------------------------------------------------- gradgradcheck


@st.composite
def conv_cases(draw, transposed=False):
    """(x shape, weight shape, bias, stride, padding, dilation, groups[, output_padding]) of a
    small valid 2-d (or, with height 1, 1-d) convolution."""
    groups = draw(st.integers(1, 2))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    one_d = draw(st.booleans())
    kernel = (1,) * one_d + tuple(draw(st.integers(1, 3)) for _ in range(2 - one_d))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(2 - one_d))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(2 - one_d))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(2 - one_d))
    k = kernel[one_d:]
    if transposed:
        extra = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
        spatial = tuple(draw(st.integers(1, 3)) for _ in k)
        assume(all((n - 1) * s - 2 * p + d * (kk - 1) + e + 1 >= 1
                   for n, s, p, d, kk, e in zip(spatial, stride, padding, dilation, k, extra)))
        wshape = (cin, cout // groups) + k
    else:
        extra = None
        spatial = tuple(max(1, d * (kk - 1) + 1 - 2 * p) + draw(st.integers(0, 2))
                        for kk, d, p in zip(k, dilation, padding))
        wshape = (cout, cin // groups) + k
    batch = draw(st.sampled_from([(), (1,), (2,)]))
    return batch + (cin,) + spatial, wshape, draw(st.booleans()), stride, padding, dilation, groups, extra


@fewer
@given(case=conv_cases(), data=st.data())
def test_conv_gradgradcheck(case, data):
    xshape, wshape, with_bias, stride, padding, dilation, groups, _ = case
    conv = F.conv1d if len(wshape) == 3 else F.conv2d
    x = data.draw(arrays(xshape, -1.5, 1.5))
    w = data.draw(arrays(wshape, -1.5, 1.5))
    b = data.draw(arrays((wshape[0],), -1.5, 1.5))
    inputs = _leaves(x, w, b) if with_bias else _leaves(x, w)

    def f(x, w, b=None):
        return conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    assert mg.gradgradcheck(f, inputs, atol=1e-5, rtol=1e-3)


@fewer
@given(case=conv_cases(transposed=True), data=st.data())
def test_conv_transpose_gradgradcheck(case, data):
    xshape, wshape, with_bias, stride, padding, dilation, groups, extra = case
    conv = F.conv_transpose1d if len(wshape) == 3 else F.conv_transpose2d
    x = data.draw(arrays(xshape, -1.5, 1.5))
    w = data.draw(arrays(wshape, -1.5, 1.5))
    b = data.draw(arrays((wshape[1] * groups,), -1.5, 1.5))
    inputs = _leaves(x, w, b) if with_bias else _leaves(x, w)

    def f(x, w, b=None):
        return conv(x, w, b, stride=stride, padding=padding, output_padding=extra, groups=groups,
                    dilation=dilation)

    assert mg.gradgradcheck(f, inputs, atol=1e-5, rtol=1e-3)


@fewer
@given(case=pool_cases(max_extra=2), seed=st.integers(0, 100))
def test_max_pool2d_gradgradcheck(case, seed):
    """Squared after the pool, so the second derivative runs through the pool's route twice."""
    shape, kernel, stride, padding, dilation, ceil_mode = case
    (x,) = _leaves(_spread(shape, seed))
    assume(np.isfinite(F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode).numpy()).all())
    assert mg.gradgradcheck(lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode) ** 2,
                            [x], eps=1e-4)


@fewer
@given(case=pool_cases(dilate=False, max_extra=2), count_include_pad=st.booleans(),
       divisor=st.sampled_from([None, 3]), data=st.data())
def test_avg_pool2d_gradgradcheck(case, count_include_pad, divisor, data):
    shape, kernel, stride, padding, _, ceil_mode = case
    (x,) = _leaves(data.draw(arrays(shape, -1.5, 1.5)))

    def f(x):
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor) ** 2

    assert mg.gradgradcheck(f, [x])


@fewer
@given(shape=shapes(min_dims=2, max_dims=4), affine=st.sampled_from(["none", "weight", "both"]),
       data=st.data())
def test_batch_norm_gradgradcheck(shape, affine, data):
    assume(shape[0] * int(np.prod(shape[2:])) > 1)  # more than one value per channel
    # a drawn array plus a fixed spread: no channel is nearly constant (a tiny variance makes
    # the derivatives huge, 1 / sqrt(eps) and beyond, past what finite differences resolve)
    x = data.draw(arrays(shape, -0.5, 0.5)) + np.sin(np.arange(int(np.prod(shape))) * 2.1).reshape(shape)
    w = data.draw(arrays((shape[1],), -1.5, 1.5))
    b = data.draw(arrays((shape[1],), -1.5, 1.5))
    inputs = _leaves(x) + (_leaves(w) if affine != "none" else []) + (_leaves(b) if affine == "both" else [])
    assert mg.gradgradcheck(lambda x, *p: F.batch_norm(x, None, None, *p, training=True), inputs)


@st.composite
def pad_cases(draw):
    shape = draw(shapes(min_dims=1, max_dims=3))
    k = draw(st.integers(1, len(shape)))
    pad = []
    for i in range(k):
        n = shape[len(shape) - 1 - i]
        before = draw(st.integers(-n, 2))
        pad += [before, draw(st.integers(-(n - max(-before, 0)), 2))]
    return shape, tuple(pad), draw(st.sampled_from([0.0, 1.5, -2.0]))


@fewer
@given(case=pad_cases(), data=st.data())
def test_constant_pad_gradgradcheck(case, data):
    """Size-1 axes, negative pads (crops, down to nothing) and a value; cubed after the pad."""
    shape, pad, value = case
    (x,) = _leaves(data.draw(arrays(shape, -1.5, 1.5)))
    assert mg.gradgradcheck(lambda x: F.pad(x, pad, value=value) ** 3, [x])


MODES = {3: ["nearest", "nearest-exact", "linear"], 4: ["nearest", "nearest-exact", "bilinear", "bicubic"],
         5: ["nearest", "nearest-exact", "trilinear"]}


@fewer
@given(ndim=st.sampled_from([3, 4, 5]), data=st.data())
def test_interpolate_gradgradcheck(ndim, data):
    """Up and down (some inputs unread, some read several times), by size or scale factor."""
    mode = data.draw(st.sampled_from(MODES[ndim]))
    spatial = tuple(data.draw(st.integers(1, 3)) for _ in range(ndim - 2))
    shape = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))) + spatial
    (x,) = _leaves(data.draw(arrays(shape, -1.5, 1.5)))
    options = {}
    if mode not in ("nearest", "nearest-exact"):
        options["align_corners"] = data.draw(st.booleans())
    if data.draw(st.booleans()):
        options["size"] = tuple(data.draw(st.integers(1, 4)) for _ in spatial)
    else:
        options["scale_factor"] = tuple(data.draw(st.sampled_from([0.5, 1.0, 1.5, 2.0])) for _ in spatial)
        assume(all(int(n * s) >= 1 for n, s in zip(spatial, options["scale_factor"])))
    assert mg.gradgradcheck(lambda x: F.interpolate(x, mode=mode, **options) ** 2, [x])


# ----------------------------------------------------------------------------- torch's double backward


def _second(L, f, xs):
    """The gradient of sum((d sum(v * f) / d x)^2 over the inputs), through create_graph, for a
    fixed v."""
    ts = [L.tensor(x, requires_grad=True) for x in xs]
    out = f(L, *ts)
    v = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
    grads = L.autograd.grad(out, ts, L.tensor(v), create_graph=True)
    s = sum((g * g).sum() for g in grads)
    return [t.numpy() if L is mg else t.detach().numpy() for t in L.autograd.grad(s, ts)]


_rng = np.random.default_rng(0)


def _normal(*shape_list):
    return [_rng.standard_normal(s) for s in shape_list]


CASES = [
    ("conv2d", lambda L, x, w, b: _fn(L).conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                                                groups=2).tanh(),
     _normal((2, 4, 6, 7), (6, 2, 3, 2), (6,))),
    ("conv2d-same", lambda L, x, w: _fn(L).conv2d(x, w, padding="same", dilation=(2, 1)).tanh(),
     _normal((1, 2, 5, 4), (3, 2, 2, 3))),
    ("conv1d", lambda L, x, w, b: _fn(L).conv1d(x, w, b, stride=2, padding=1).tanh(),
     _normal((2, 3, 7), (2, 3, 3), (2,))),
    ("conv_transpose2d", lambda L, x, w, b: _fn(L).conv_transpose2d(
        x, w, b, stride=(2, 3), padding=(1, 2), output_padding=(1, 0), dilation=(1, 2), groups=2).tanh(),
     _normal((2, 4, 4, 3), (4, 3, 3, 2), (6,))),
    ("conv_transpose1d", lambda L, x, w: _fn(L).conv_transpose1d(x, w, stride=3, padding=2).tanh(),
     _normal((1, 2, 5), (2, 3, 4))),
    ("max_pool2d", lambda L, x: _fn(L).max_pool2d(x * x, 3, 2, 1, ceil_mode=True) ** 2,
     [_spread((2, 3, 5, 6), 1)]),
    ("max_pool2d-dilated", lambda L, x: _fn(L).max_pool2d(x, (2, 3), (1, 2), (1, 1), (2, 1)).sin(),
     [_spread((1, 2, 5, 6), 2)]),
    ("avg_pool2d", lambda L, x: _fn(L).avg_pool2d(x * x, 3, 2, 1, True, count_include_pad=False) ** 2,
     _normal((2, 3, 5, 6))),
    ("avg_pool2d-divisor", lambda L, x: _fn(L).avg_pool2d(x, (2, 3), 1, (1, 0), divisor_override=5).sin(),
     _normal((1, 2, 4, 5))),
    ("batch_norm", lambda L, x, w, b: _fn(L).batch_norm(x, None, None, w, b, training=True).tanh(),
     _normal((3, 4, 2, 3), (4,), (4,))),
    ("batch_norm-2d", lambda L, x: _fn(L).batch_norm(x, None, None, training=True).sin(),
     _normal((5, 3))),
    ("pad", lambda L, x: _fn(L).pad(x, (1, -1, 2, 0), value=0.5) ** 3, _normal((2, 3, 4))),
    ("nearest", lambda L, x: _fn(L).interpolate(x, scale_factor=(1.7, 0.6), mode="nearest") ** 3,
     _normal((1, 2, 3, 5))),
    ("nearest-exact", lambda L, x: _fn(L).interpolate(x, size=(2, 3, 5), mode="nearest-exact") ** 3,
     _normal((1, 2, 3, 2, 4))),
    ("linear", lambda L, x: _fn(L).interpolate(x, size=7, mode="linear") ** 3, _normal((2, 2, 4))),
    ("linear-copy", lambda L, x: _fn(L).interpolate(x, size=4, mode="linear") ** 3, _normal((2, 2, 4))),
    ("bilinear", lambda L, x: _fn(L).interpolate(x, size=(5, 3), mode="bilinear", align_corners=True) ** 3,
     _normal((1, 2, 3, 4))),
    ("bicubic", lambda L, x: _fn(L).interpolate(x, size=(5, 7), mode="bicubic") ** 3, _normal((1, 2, 3, 4))),
    ("trilinear", lambda L, x: _fn(L).interpolate(x, scale_factor=1.5, mode="trilinear") ** 3,
     _normal((1, 1, 2, 3, 2))),
]


@pytest.mark.parametrize("name, f, xs", CASES, ids=[c[0] for c in CASES])
def test_second_derivatives_equal_torchs(name, f, xs):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    for mine, theirs in zip(_second(mg, f, xs), _second(torch, f, xs), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, f, xs", CASES, ids=[c[0] for c in CASES])
def test_create_graph_gradients_equal_the_kernels(name, f, xs):
    """The first derivative through the composition is the fused kernel's (to rounding)."""
    ts = _leaves(*xs)
    out = f(mg, *ts)
    v = mg.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
    graph = mg.autograd.grad(out, ts, v, create_graph=True)
    plain = mg.autograd.grad(f(mg, *ts), ts, v)
    for a, b in zip(graph, plain, strict=True):
        assert a.grad_fn is not None
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-13)


def _model(L, x, w1, b1, bnw, bnb, w2):
    Fn = _fn(L)
    h = Fn.conv2d(x, w1, b1, padding=1)
    h = Fn.batch_norm(h, None, None, bnw, bnb, training=True).tanh()
    h = Fn.max_pool2d(h, 2) + Fn.avg_pool2d(h, 2)
    h = Fn.interpolate(h, scale_factor=2, mode="bilinear") + Fn.interpolate(h, scale_factor=2)
    h = Fn.conv_transpose2d(Fn.pad(h, (1, 0, 0, 1)), w2, stride=2)
    return (h * h).mean()


def test_a_gradient_penalty_through_a_conv_net_trains_as_torchs():
    """|d loss / d x| as a penalty (WGAN-GP): the parameters' gradients equal torch's."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    rng = np.random.default_rng(4)
    arrays_ = [rng.standard_normal(s) for s in [(2, 2, 6, 6), (3, 2, 3, 3), (3,), (3,), (3,), (3, 2, 2, 2)]]
    found = []
    for L in (mg, torch):
        ts = [L.tensor(a, requires_grad=True) for a in arrays_]
        loss = _model(L, *ts)
        (gx,) = L.autograd.grad(loss, ts[0], create_graph=True)
        penalty = ((gx * gx).sum() - 1) ** 2
        (loss + penalty).backward()
        found.append([t.grad.numpy() for t in ts])
    for a, b in zip(*found, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


# ----------------------------------------------------------------------------- edges


def test_tied_maxima_take_the_kernels_route_at_second_order_too():
    """Ties go to the first maximum of each window (row-major), in the create_graph gradient and
    in its derivative, as in torch: one element per window, never the others of the tie."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    x = np.array([[[[1.0, 1.0, 0.5, 1.0], [1.0, 1.0, 1.0, 0.0], [0.5, 1.0, 1.0, 1.0]]]])
    f = lambda L, x: _fn(L).max_pool2d(x * 1.5, 2, 1, 1) ** 2  # noqa: E731
    for mine, theirs in zip(_second(mg, f, [x]), _second(torch, f, [x]), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    (t,) = _leaves(x)
    (g,) = mg.autograd.grad(F.max_pool2d(t, 2, 1, 1).sum(), t, create_graph=True)
    tt = torch.tensor(x, requires_grad=True)
    (expected,) = torch.autograd.grad(torch.nn.functional.max_pool2d(tt, 2, 1, 1).sum(), tt)
    np.testing.assert_array_equal(g.numpy(), expected.numpy())
    # 20 windows, one element each; the tied top-left corner is first in the four windows over it
    assert g.numpy().sum() == 20 and g.numpy()[0, 0, 0, 0] == 4


def test_a_nan_maximum_and_a_window_of_padding_only():
    """A NaN wins its window (and its gradient); dilated windows wholly in the padding are -inf
    and send nothing back, at either order."""
    x = _spread((1, 1, 3, 4), 3)
    x[0, 0, 1, 2] = np.nan
    (t,) = _leaves(x)
    y = F.max_pool2d(t, 2, 2, 1)
    (g,) = mg.autograd.grad(y, t, mg.ones_like(y), create_graph=True)
    (plain,) = mg.autograd.grad(F.max_pool2d(t, 2, 2, 1), t, mg.ones_like(y))
    np.testing.assert_array_equal(g.numpy(), plain.numpy())
    assert g.numpy()[0, 0, 1, 2] == 1
    (t,) = _leaves(_spread((1, 2, 3, 1), 4))
    pool = dict(kernel_size=(2, 2), stride=1, padding=(1, 1), dilation=(1, 2))  # columns -1 and 1 of 1
    y = F.max_pool2d(t, **pool)
    assert np.isneginf(y.numpy()).all()
    v = mg.tensor(np.arange(1.0, 1 + y.numel()).reshape(tuple(y.shape)), requires_grad=True)
    (g,) = mg.autograd.grad(y, t, v, create_graph=True)
    (plain,) = mg.autograd.grad(F.max_pool2d(t, **pool), t, v)
    np.testing.assert_array_equal(g.numpy(), np.zeros(t.shape))
    np.testing.assert_array_equal(plain.numpy(), np.zeros(t.shape))
    (gv,) = mg.autograd.grad((g * g).sum(), v, allow_unused=True, materialize_grads=True)
    np.testing.assert_array_equal(gv.numpy(), np.zeros(v.shape))


def test_batch_norm_of_a_constant_channel_equals_torchs():
    """x_hat = 0 exactly, rstd = 1 / sqrt(eps): finite second derivatives, as torch's."""
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    x, w, b = _normal((4, 2, 3), (2,), (2,))
    x[:, 1] = 0.0
    f = lambda L, x, w, b: _fn(L).batch_norm(x, None, None, w, b, training=True).tanh()  # noqa: E731
    for mine, theirs in zip(_second(mg, f, [x, w, b]), _second(torch, f, [x, w, b]), strict=True):
        assert np.isfinite(mine).all()
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-10)


def test_batch_norm_whose_squares_overflow_keeps_its_second_derivatives():
    """|x| ~ 1e157 (the squares overflow float64): the composition rescales as the kernel does,
    so the derivatives are those of x / c, scaled: x_hat(c u) = x_hat(u) when eps / c^2 is
    negligible, d/dx = (1 / c) d/du."""
    c = 2.0 ** 522
    u, w, r = _normal((3, 2, 4), (2,), (2,))

    def mixed(x, eps):
        """d/dx of sum(r * d/dw sum(v * bn(x))): a second derivative."""
        xt, wt = _leaves(x, w)
        y = F.batch_norm(xt, None, None, wt, training=True, eps=eps)
        v = mg.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
        gx, gw = mg.autograd.grad(y, [xt, wt], v, create_graph=True)
        (plain,) = mg.autograd.grad(F.batch_norm(xt, None, None, wt, training=True, eps=eps), xt, v)
        np.testing.assert_allclose(gx.numpy(), plain.numpy(), rtol=1e-12)
        return gx.numpy(), mg.autograd.grad((gw * mg.tensor(r)).sum(), xt)[0].numpy()

    big_gx, big = mixed(c * u, 1e-5)
    small_gx, small = mixed(u, 0.0)
    assert np.isfinite(big).all() and np.abs(big).max() > 0
    np.testing.assert_allclose(big_gx * c, small_gx, rtol=1e-12)
    np.testing.assert_allclose(big * c, small, rtol=1e-12)


@pytest.mark.parametrize("value", [np.nan, np.inf, -1e300])
def test_a_nan_or_infinite_pad_value_stays_outside_the_derivatives(value):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    (x,) = _normal((2, 3, 4))
    f = lambda L, x: _fn(L).pad(x, (2, -1, -1, 1), value=value)[..., 1:, 2:] ** 3  # noqa: E731
    for mine, theirs in zip(_second(mg, f, [x]), _second(torch, f, [x]), strict=True):
        assert np.isfinite(mine).all()
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_an_empty_batch_has_zero_second_derivatives():
    x, w = mg.tensor(np.zeros((0, 2, 4, 4)), requires_grad=True), _leaves(_normal((3, 2, 2, 2))[0])[0]
    ops = (lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: F.conv_transpose2d(x, w.permute(1, 0, 2, 3)))
    for op in ops:
        y = op(x, w)
        assert y.shape[0] == 0
        gx, gw = mg.autograd.grad((y * y).sum(), [x, w], create_graph=True, allow_unused=True,
                                  materialize_grads=True)
        assert gx.shape == x.shape and gw.shape == w.shape
        (h,) = mg.autograd.grad((gw * gw).sum() + gx.sum(), w, allow_unused=True, materialize_grads=True)
        np.testing.assert_array_equal(h.numpy(), np.zeros(w.shape))
    x = mg.tensor(np.zeros((0, 2, 3)), requires_grad=True)
    w, b = _leaves(np.ones(2), np.ones(2))
    y = F.batch_norm(x, None, None, w, b, training=True)
    gx, gw, gb = mg.autograd.grad((y * y).sum(), [x, w, b], create_graph=True)
    assert gx.shape == x.shape
    np.testing.assert_array_equal(gw.numpy(), [0, 0])
    np.testing.assert_array_equal(gb.numpy(), [0, 0])
