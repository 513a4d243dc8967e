"""F.interpolate and the upsampling layers against torch, in float32 and float64, over drawn
configurations (every mode, sizes and scale factors, non-integer ones among them, recomputed
or not, align_corners, downsampling, size-1 dimensions): the output's shape and dtype, its
values (the nearest modes to the bit), the input's gradient, the op's torch twin, the layers'
repr, and the kind of error each bad call raises.

The gradient is compared with J^T g, J the Jacobian of torch's forward (torch's output for
each unit input), and with torch's backward except where torch's backward takes a shortcut its
forward does not: nearest copies an axis whose output size is the input's (or takes j // 2 at
twice it) whatever the scale factor, and bicubic copies when every axis keeps its size, while
the forwards read with the given scale (`F.interpolate(x, scale_factor=1.2)` of 3 elements
gives x[0], x[0], x[1]). minigrad's backward is the gradient of the forward in every case."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
TF = torch.nn.functional
from minigrad.export import to_torch  # noqa: E402  (needs torch)

RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
MODES = ["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"]
SCALES = [0.5, 0.7, 1.0, 1.1, 1.2, 1.5, 2.0, 2.1, 2.5, 3.0, 1 / 3, 0.75]
TOL = {np.float64: 1e-12, np.float32: 2e-5}


@st.composite
def cases(draw):
    """(input shape, interpolate's keywords) that torch accepts, sides 1 to 5."""
    mode = draw(st.sampled_from(MODES))
    rank = RANK.get(mode) or draw(st.sampled_from([3, 4, 5]))
    k = rank - 2
    spatial = tuple(draw(st.integers(1, 3 if rank == 5 else 5)) for _ in range(k))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + spatial
    kw = {"mode": mode}
    if mode in RANK:
        kw["align_corners"] = draw(st.sampled_from([None, False, True]))
    if draw(st.booleans()):
        sizes = tuple(draw(st.integers(1, 8)) for _ in range(k))
        kw["size"] = sizes[0] if len(set(sizes)) == 1 and draw(st.booleans()) else sizes
    else:
        factors = tuple(draw(st.one_of(st.sampled_from(SCALES), st.floats(0.2, 3.5))) for _ in range(k))
        assume(all(int(n * f) >= 1 for n, f in zip(spatial, factors)))
        kw["scale_factor"] = factors[0] if len(set(factors)) == 1 and draw(st.booleans()) else factors
        kw["recompute_scale_factor"] = draw(st.sampled_from([None, False, True]))
    return shape, kw


def _given_scales(shape, kw):
    """The scale of each axis torch's kernel receives, or None (a size, or recomputed)."""
    if "scale_factor" not in kw or kw.get("recompute_scale_factor"):
        return None
    f = kw["scale_factor"]
    return tuple(f) if isinstance(f, tuple) else (f,) * (len(shape) - 2)


def torch_backward_is_its_forwards(shape, out_shape, kw):
    """False where torch's backward takes the shortcuts its forward does not (see the top)."""
    scales = _given_scales(shape, kw)
    if scales is None:
        return True
    axes = list(zip(shape[2:], out_shape[2:], scales))
    if kw["mode"] == "nearest":
        return not any((m == n and s != 1.0) or (m == 2 * n and s != 2.0) for n, m, s in axes)
    if kw["mode"] == "bicubic":
        return not (all(m == n for n, m, _ in axes) and any(s != 1.0 for *_, s in axes))
    return True


def torch_vjp(shape, dtype, kw, g):
    """J^T g, J the Jacobian of torch's forward over one (n, c) plane: torch's output for each
    unit input, in the input's dtype, contracted with g in float64."""
    spatial = shape[2:]
    size = int(np.prod(spatial))
    basis = torch.eye(size, dtype=torch.float64 if dtype == np.float64 else torch.float32)
    jac = TF.interpolate(basis.reshape((size, 1) + spatial), **kw).reshape(size, -1).double().numpy()
    planes = g.reshape(shape[0] * shape[1], -1).astype(np.float64)
    return (planes @ jac.T).reshape(shape)


@settings(max_examples=min(settings.default.max_examples, 40))
@given(case=cases(), dtype=st.sampled_from([np.float64, np.float32]), seed=st.integers(0, 50))
def test_interpolate_matches_torch(case, dtype, seed):
    shape, kw = case
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    x, t = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = F.interpolate(x, **kw), TF.interpolate(t, **kw)
    assert out.shape == tuple(tout.shape) and str(tout.dtype) == f"torch.{out.dtype}"
    if kw["mode"].startswith("nearest"):
        np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    else:
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    g = rng.standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    tol = 10 * TOL[dtype]
    np.testing.assert_allclose(x.grad.numpy(), torch_vjp(shape, dtype, kw, g), rtol=tol, atol=tol)
    if torch_backward_is_its_forwards(shape, out.shape, kw):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("n, scale, mode", [(3, 1.2, "nearest"), (5, 2.1, "nearest"), (4, 1.1, "bicubic")])
def test_where_torchs_backward_takes_a_shortcut_ours_is_its_forwards_gradient(n, scale, mode):
    """The cases at the top: the output size is the input's (or twice it) but the given scale is
    not 1 (or 2). minigrad's gradient is J^T g of torch's own forward."""
    shape = (1, 1, n) if mode == "nearest" else (1, 1, n, 1)
    kw = dict(mode=mode, scale_factor=scale if mode == "nearest" else (scale, 1.0))
    a = np.random.default_rng(0).standard_normal(shape)
    x = Tensor(a, requires_grad=True)
    out = F.interpolate(x, **kw)
    np.testing.assert_allclose(out.numpy(), TF.interpolate(torch.tensor(a), **kw).numpy(), rtol=1e-12, atol=0)
    assert not torch_backward_is_its_forwards(shape, out.shape, kw)
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), torch_vjp(shape, np.float64, kw, g), rtol=1e-12, atol=1e-12)


@settings(max_examples=min(settings.default.max_examples, 15))
@given(case=cases(), dtype=st.sampled_from([np.float64, np.float32]))
def test_an_exported_upsample_layer_is_the_same_function(case, dtype):
    """to_torch replays the recorded op with its torch twin (the node's own options): the same
    output, and the same gradient wherever torch's backward is its forward's."""
    shape, kw = case
    layer = nn.Upsample(kw.get("size"), kw.get("scale_factor"), kw["mode"], kw.get("align_corners"),
                        kw.get("recompute_scale_factor"))
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    x = Tensor(a, requires_grad=True)
    out = layer(x)
    exported = to_torch(layer, Tensor(a))
    t = torch.tensor(a, requires_grad=True)
    tout = exported(t)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    if torch_backward_is_its_forwards(shape, out.shape, kw):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


# ----------------------------------------------------------------------------- layers and errors


@pytest.mark.parametrize("make", [
    lambda m: m.Upsample(scale_factor=2),
    lambda m: m.Upsample(scale_factor=1.5, mode="linear", align_corners=True),
    lambda m: m.Upsample(size=(3, 5), mode="bicubic", recompute_scale_factor=None),
    lambda m: m.Upsample(scale_factor=(0.7, 2), mode="bilinear", recompute_scale_factor=True),
    lambda m: m.UpsamplingNearest2d(size=5),
    lambda m: m.UpsamplingNearest2d(scale_factor=(2, 3)),
    lambda m: m.UpsamplingBilinear2d(scale_factor=1.7),
    lambda m: m.UpsamplingBilinear2d(size=(4, 2)),
])
def test_layers_match_torch(make):
    mine, theirs = make(nn), make(torch.nn)
    assert repr(mine) == repr(theirs)
    for name in ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "name"):
        assert getattr(mine, name) == getattr(theirs, name), name
    shape = (2, 3, 4) if mine.mode == "linear" else (2, 3, 4, 3)
    a = np.random.default_rng(0).standard_normal(shape)
    np.testing.assert_allclose(mine(Tensor(a)).numpy(), theirs(torch.tensor(a)).numpy(), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("shape, kw", [
    ((1, 2, 4), dict(size=3, mode="bilinear")),
    ((1, 2, 4, 4), dict(size=3, mode="linear")),
    ((1, 2, 4, 4), dict(size=3, mode="trilinear")),
    ((1, 2, 4, 4, 4), dict(size=3, mode="bicubic")),
    ((2, 4), dict(size=3)),
    ((1, 1, 4), dict(size=3, scale_factor=2)),
    ((1, 1, 4), dict()),
    ((1, 1, 4), dict(size=0)),
    ((1, 1, 4, 4), dict(size=(3, -2))),
    ((1, 1, 4, 4), dict(scale_factor=-1.5)),
    ((1, 1, 3), dict(scale_factor=0.3, mode="linear")),
    ((1, 1, 0), dict(scale_factor=2)),
    ((1, 1, 4, 4), dict(size=(3, 3, 3))),
    ((1, 1, 4, 4), dict(scale_factor=(2.0,))),
    ((1, 1, 4), dict(size=2.5)),
    ((1, 1, 4), dict(size=3, align_corners=True)),
    ((1, 1, 4), dict(size=3, mode="nearest-exact", align_corners=False)),
    ((1, 1, 4), dict(size=3, recompute_scale_factor=True)),
    ((1, 1, 4), dict(size=3, antialias=True)),
], ids=lambda v: str(v))
def test_bad_calls_raise_torchs_kind_of_error(shape, kw):
    with pytest.raises(Exception) as theirs:
        TF.interpolate(torch.zeros(shape), **kw)
    with pytest.raises(Exception) as mine:
        F.interpolate(mg.zeros(*shape), **kw)
    assert isinstance(mine.value, theirs.type), (mine.value, theirs.value)  # a ShapeError is both
    assert str(mine.value).startswith("interpolate: ")


def test_signatures_are_torchs():
    import inspect

    for mine, theirs in [(F.interpolate, TF.interpolate), (nn.Upsample, torch.nn.Upsample),
                         (nn.UpsamplingNearest2d, torch.nn.UpsamplingNearest2d),
                         (nn.UpsamplingBilinear2d, torch.nn.UpsamplingBilinear2d)]:
        ours, torchs = inspect.signature(mine).parameters, inspect.signature(theirs).parameters
        assert [(p.name, p.kind, p.default) for p in ours.values()] == \
            [(p.name, p.kind, p.default) for p in torchs.values()]
