"""Differential test of minigrad's ops against PyTorch, through the export's mapping table.

Every Function of the core, nn and models must have a torch twin in TORCH_OPS; each twin is
run on the same hypothesis-drawn inputs as the minigrad op (broadcasting, size-1 and 0-d
shapes, reductions over dims, indexing) and must give the same output and, for a random
upstream gradient, the same gradient for every float input (float64, to 1e-10).
"""

import importlib
import pkgutil

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import minigrad  # noqa: E402
import minigrad.models  # noqa: E402
import minigrad.nn  # noqa: E402
import minigrad.nn.attention.one_block as one_block  # noqa: E402
import minigrad.nn.attention.tiled as tiled  # noqa: E402
from minigrad import Tensor  # noqa: E402
from minigrad.autograd import Function  # noqa: E402
from minigrad.export import TORCH_OPS  # noqa: E402
from minigrad.nn import activation, classification, dropout, linear, normalization, sparse  # noqa: E402
from minigrad.ops import arithmetic, dtype, indexing, linalg, pointwise, reduce, shape  # noqa: E402
from minigrad.testing import arrays, broadcastable_shapes, dims, distinct, shapes, well_conditioned  # noqa: E402

# ----------------------------------------------------------------------------- coverage


def _import_all(package, skip=()):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not any(info.name.startswith(s) for s in skip):
            importlib.import_module(info.name)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_function_has_a_torch_mapping():
    """Lists every op (a Function subclass with a forward of its own) of the core, nn and models
    without a twin in TORCH_OPS; a base class that only shares a backward is not an op."""
    _import_all(minigrad, skip=("minigrad.__main__", "minigrad.exercises", "minigrad.export",
                                "minigrad.nn", "minigrad.models"))
    _import_all(minigrad.nn)
    _import_all(minigrad.models)
    ours = ("minigrad.ops", "minigrad.autograd", "minigrad.nn", "minigrad.models", "minigrad.viz")
    functions = {c for c in _subclasses(Function) if c.__module__.startswith(ours) and "forward" in vars(c)}
    assert len(functions) >= 40  # the discovery itself works
    missing = sorted(f"{c.__module__}.{c.__qualname__}" for c in functions if c not in TORCH_OPS)
    assert missing == []


# ----------------------------------------------------------------------------- the differential test


def _torch(x):
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x.copy())
    if isinstance(x, tuple):
        return tuple(_torch(v) for v in x)
    return x


def check_against_torch(op, inputs, options=None, seed=0, tol=1e-10):
    """op.apply on minigrad Tensors vs TORCH_OPS[op] on torch tensors: output, and the gradient
    of every float input for the same random upstream gradient."""
    options = options or {}
    mins = [Tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    tins = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    out = op.apply(*mins, **options)
    tout = TORCH_OPS[op](*tins, **{k: _torch(v) for k, v in options.items()})
    assert tuple(tout.shape) == out.shape, op.__name__
    np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=tol, atol=tol, err_msg=op.__name__)
    if not out.requires_grad:
        return
    g = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    for i, (m, t) in enumerate(zip(mins, tins)):
        if m.requires_grad:
            np.testing.assert_allclose(t.grad.numpy(), m.grad, rtol=tol, atol=tol,
                                       err_msg=f"{op.__name__}: gradient of input {i}")


fewer = settings(max_examples=max(10, settings.default.max_examples // 2))

BINARY = [
    pytest.param(arithmetic.Add, arrays, arrays, id="Add"),
    pytest.param(arithmetic.Sub, arrays, arrays, id="Sub"),
    pytest.param(arithmetic.Mul, arrays, arrays, id="Mul"),
    pytest.param(arithmetic.Div, arrays, well_conditioned, id="Div"),
    pytest.param(arithmetic.Pow, lambda s: well_conditioned(s, signed=False), arrays, id="Pow"),
    pytest.param(pointwise.Maximum, arrays, arrays, id="Maximum"),
    pytest.param(pointwise.Minimum, arrays, arrays, id="Minimum"),
    pytest.param(linalg.MatMul, None, None, id="MatMul"),
]


@pytest.mark.parametrize("op, left, right", BINARY)
@fewer
@given(data=st.data())
def test_binary_ops_broadcast_as_torch(op, left, right, data):
    if op is linalg.MatMul:
        k = data.draw(st.integers(1, 3))
        batch_a, batch_b = data.draw(broadcastable_shapes(max_dims=2))
        sa = data.draw(st.sampled_from([(k,), batch_a + (data.draw(st.integers(1, 3)), k)]))
        sb = data.draw(st.sampled_from([(k,), batch_b + (k, data.draw(st.integers(1, 3)))]))
        a, b = data.draw(arrays(sa)), data.draw(arrays(sb))
    else:
        sa, sb = data.draw(broadcastable_shapes())
        a, b = data.draw(left(sa)), data.draw(right(sb))
    check_against_torch(op, [a, b])


UNARY = [
    pytest.param(arithmetic.Neg, arrays, id="Neg"),
    pytest.param(pointwise.Exp, arrays, id="Exp"),
    pytest.param(pointwise.Log, lambda s: well_conditioned(s, signed=False), id="Log"),
    pytest.param(pointwise.Sqrt, lambda s: well_conditioned(s, signed=False), id="Sqrt"),
    pytest.param(pointwise.Abs, lambda s: arrays(s, away_from_zero=1e-3), id="Abs"),
    pytest.param(pointwise.TanhOp, arrays, id="Tanh"),
    pytest.param(pointwise.SigmoidOp, arrays, id="Sigmoid"),
    pytest.param(pointwise.ReLUOp, lambda s: arrays(s, away_from_zero=1e-3), id="ReLU"),
    pytest.param(activation.GELUOp, arrays, id="GELU"),
]


@pytest.mark.parametrize("op, values", UNARY)
@fewer
@given(data=st.data())
def test_unary_ops_as_torch(op, values, data):
    x = data.draw(values(shapes()))
    options = {"approximate": data.draw(st.sampled_from(["none", "tanh"]))} if op is activation.GELUOp else {}
    check_against_torch(op, [x], options)


@st.composite
def smaller(draw, shape_):
    """A shape that broadcasts to `shape_`: some axes made 1, some leading ones dropped."""
    out = tuple(1 if draw(st.booleans()) else s for s in shape_)
    return out[draw(st.integers(0, len(out))):]


@fewer
@given(data=st.data())
def test_selection_ops_as_torch(data):
    """Clip (either bound, numbers or tensors that get a gradient), Where and MaskedFill, with
    every operand broadcasting."""
    sx, slo, shi = data.draw(broadcastable_shapes(3))
    x = data.draw(arrays(sx, away_from_zero=1e-3))
    low, high = data.draw(st.sampled_from([(-1.0, 1.0), (None, 0.5), (-0.5, None)]))
    given_bounds = [(b, s) for b, s in ((low, slo), (high, shi)) if b is not None]
    if data.draw(st.booleans(), label="tensor bounds"):
        bounds = [b + data.draw(arrays(s, -0.25, 0.25)) for b, s in given_bounds]
    else:
        bounds = [np.array(b) for b, _ in given_bounds]
    check_against_torch(pointwise.Clip, [x, *bounds], {"low": low is not None, "high": high is not None})
    sc, sa, sb = data.draw(broadcastable_shapes(3))
    cond = data.draw(hnp.arrays(bool, sc))
    check_against_torch(indexing.Where, [cond, data.draw(arrays(sa)), data.draw(arrays(sb))])
    sm = data.draw(smaller(x.shape))
    mask = data.draw(hnp.arrays(bool, sm))
    check_against_torch(indexing.MaskedFill, [x, mask], {"value": -np.inf})
    check_against_torch(indexing.MaskedFill, [x, mask, data.draw(arrays(()))])  # a 0-d fill, with a gradient
    check_against_torch(dtype.Cast, [x], {"dtype": np.float32}, tol=1e-6)


REDUCTIONS = [
    pytest.param(reduce.Sum, arrays, id="Sum"),
    pytest.param(reduce.Mean, arrays, id="Mean"),
    pytest.param(reduce.Max, distinct, id="Max"),
    pytest.param(reduce.Min, distinct, id="Min"),
    pytest.param(reduce.Var, arrays, id="Var"),
    pytest.param(reduce.Std, arrays, id="Std"),
    pytest.param(reduce.LogSumExp, arrays, id="LogSumExp"),
]


@pytest.mark.parametrize("op, values", REDUCTIONS)
@fewer
@given(data=st.data())
def test_reductions_over_dims_as_torch(op, values, data):
    var = op in (reduce.Var, reduce.Std)  # n - 1 > 0 elements per reduction
    x = data.draw(values(shapes(min_dims=int(var), min_side=1 + var)))
    options = {"dim": data.draw(dims(x.ndim)), "keepdim": data.draw(st.booleans())}
    if var:
        options["correction"] = data.draw(st.sampled_from([0, 1]))
    if op is reduce.Std:  # at a constant slice minigrad's gradient is 0, torch's comes from rounding
        axis = None if options["dim"] in (None, ()) else options["dim"]
        assume(np.all(np.ptp(x, axis=axis) > 1e-6 * (1 + np.abs(x).max())))
    check_against_torch(op, [x], options)


@pytest.mark.parametrize("op", [reduce.SoftmaxOp, reduce.LogSoftmaxOp])
@fewer
@given(data=st.data())
def test_softmaxes_as_torch(op, data):
    x = data.draw(arrays(shapes(min_dims=1), low=-30, high=30))
    check_against_torch(op, [x], {"dim": data.draw(st.integers(-x.ndim, x.ndim - 1))})


def test_fully_masked_softmax_row_gives_zeros_as_minigrad():
    x = np.array([[-np.inf, -np.inf], [1.0, 2.0]])
    check_against_torch(reduce.SoftmaxOp, [x], {"dim": -1})


@fewer
@given(data=st.data())
def test_shape_ops_as_torch(data):
    """Reshape, Permute, Expand, Cat and Stack."""
    x = data.draw(arrays(shapes()))
    check_against_torch(shape.Reshape, [x], {"shape": (-1,) + (1,) * data.draw(st.integers(0, 2))})
    check_against_torch(shape.Reshape, [x], {"shape": tuple(reversed(x.shape))})
    check_against_torch(shape.Permute, [x], {"dims": tuple(data.draw(st.permutations(range(x.ndim))))})
    target = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=1, base_shape=x.shape)).result_shape
    check_against_torch(shape.Expand, [x], {"shape": target})
    if x.ndim:
        dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
        other = list(x.shape)
        other[dim] = data.draw(st.integers(1, 3))
        check_against_torch(shape.Cat, [x, data.draw(arrays(tuple(other))), x], {"dim": dim})
    check_against_torch(shape.Stack, [x, data.draw(arrays(x.shape))],
                        {"dim": data.draw(st.integers(-x.ndim - 1, x.ndim))})


@st.composite
def indices(draw, shape_):
    """Index tuples: ints, slices with positive steps, None, an integer array (repeats allowed)
    or a boolean mask."""
    parts = []
    for side in shape_:
        kind = draw(st.sampled_from(["int", "slice", "array", "all"]))
        if kind == "int":
            parts.append(draw(st.integers(-side, side - 1)))
        elif kind == "slice":
            parts.append(slice(draw(st.integers(-side, side)), draw(st.none() | st.integers(-side, side)),
                               draw(st.integers(1, 2))))
        elif kind == "array" and not any(isinstance(p, np.ndarray) for p in parts):
            parts.append(np.asarray(draw(st.lists(st.integers(-side, side - 1), min_size=1, max_size=4))))
        else:
            parts.append(slice(None))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    return tuple(parts)


@fewer
@given(data=st.data())
def test_indexing_as_torch(data):
    x = data.draw(arrays(shapes(min_dims=1)))
    check_against_torch(shape.GetItem, [x], {"index": data.draw(indices(x.shape))})
    mask = data.draw(hnp.arrays(bool, x.shape[:1]))
    check_against_torch(shape.GetItem, [x], {"index": mask})


# ----------------------------------------------------------------------------- nn kernels


@fewer
@given(data=st.data())
def test_nn_kernels_as_torch(data):
    """Linear, LayerNorm, Embedding and Dropout(p=0) on hypothesis shapes."""
    lead = data.draw(shapes(max_dims=2))
    n_in, n_out = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    x = data.draw(arrays(lead + (n_in,)))
    w, b = data.draw(arrays((n_out, n_in))), data.draw(arrays((n_out,)))
    check_against_torch(linear.LinearOp, [x, w, b])
    check_against_torch(linear.LinearOp, [x, w])
    ndim = data.draw(st.integers(1, x.ndim))
    norm = x.shape[x.ndim - ndim:]
    eps = data.draw(st.sampled_from([1e-5, 1e-3]))
    check_against_torch(normalization.LayerNormOp, [x], {"ndim": ndim, "eps": eps})
    check_against_torch(normalization.LayerNormOp, [x, data.draw(arrays(norm)), data.draw(arrays(norm))],
                        {"ndim": ndim, "eps": eps})
    idx = data.draw(hnp.arrays(np.int64, lead, elements=st.integers(0, 4)))
    check_against_torch(sparse.EmbeddingOp, [idx, data.draw(arrays((5, n_in)))],
                        {"padding_idx": data.draw(st.sampled_from([None, 0, 3]))})
    check_against_torch(dropout.DropoutOp, [x], {"p": 0.0})


@fewer
@given(data=st.data())
def test_cross_entropy_as_torch(data):
    lead = data.draw(shapes(max_dims=2))
    C = data.draw(st.integers(1, 4))
    x = data.draw(arrays(lead + (C,), low=-10, high=10))
    t = data.draw(hnp.arrays(np.int64, lead, elements=st.sampled_from(list(range(C)) + [-100])))
    options = {"reduction": data.draw(st.sampled_from(["mean", "sum", "none"])),
               "label_smoothing": data.draw(st.sampled_from([0.0, 0.1]))}
    check_against_torch(classification.CrossEntropy, [x, t], options)


@fewer
@given(data=st.data())
def test_attention_as_torch(data):
    """The fused attention with no mask, a causal mask, a boolean mask that may hide whole
    rows (minigrad gives zeros there) and an additive float bias."""
    B, H = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    Tq, Tk, d = (data.draw(st.integers(1, 4)) for _ in range(3))
    q, k, v = (data.draw(arrays(s)) for s in [(B, H, Tq, d), (B, H, Tk, d), (B, H, Tk, d)])
    scale = data.draw(st.sampled_from([1 / np.sqrt(d), 0.7]))
    kind = data.draw(st.sampled_from(["none", "causal", "bool", "bias"]))
    inputs, options = [q, k, v], {"scale": scale, "dropout_p": 0.0}
    if kind == "causal":
        options["allowed"] = np.tri(Tq, Tk, dtype=bool)
    elif kind == "bool":
        options["allowed"] = data.draw(hnp.arrays(bool, (B, 1, Tq, Tk)))
    elif kind == "bias":
        inputs.append(data.draw(arrays((1, H, Tq, Tk))))
    check_against_torch(one_block.Attention, inputs, options)
    tiled_options = {"allowed": options.get("allowed"), "scale": scale, "block_q": 2, "block_k": 2,
                     "causal_offset": data.draw(st.sampled_from([None, 0, Tk - Tq]))}
    check_against_torch(tiled.TiledAttention, inputs, tiled_options)
