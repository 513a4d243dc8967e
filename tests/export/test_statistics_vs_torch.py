"""Differential test of median, the norms and multinomial against PyTorch.

Two levels: each Function of ops/statistics.py against its twin in TORCH_OPS (float64, to
1e-10, output and the gradient for a random upstream gradient, ties and zeros drawn on
purpose), and the public API (`x.median(dim)`, `x.norm(p, dim)`, `minigrad.linalg.vector_norm`,
`multinomial`) against the same call in torch: values, indices, dtypes and gradients.
"""

import math

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minigrad as mg  # noqa: E402
from minigrad import Tensor  # noqa: E402
from minigrad.export import TORCH_OPS  # noqa: E402
from minigrad.ops import statistics  # noqa: E402
from minigrad.testing import arrays, dims, on_grid, shapes  # noqa: E402

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))
inf = math.inf
ORDS = [2, 1, inf, -inf, 0, 3, 1.5, 0.5, -1.5]
GRID = [-2.0, 0.0, 0.5, 2.0]


def check_op_against_twin(op, x, options=None, seed=0, tol=1e-10):
    """op.apply on a minigrad Tensor vs TORCH_OPS[op] on a torch tensor: output, dtype, and the
    gradient for the same random upstream gradient (None on both sides where there is none)."""
    options = options or {}
    m, t = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = op.apply(m, **options), TORCH_OPS[op](t, **options)
    assert tuple(tout.shape) == out.shape and str(tout.dtype) == f"torch.{out.dtype}", op.__name__
    np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=tol, atol=tol, err_msg=op.__name__)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    assert (m.grad is None) == (t.grad is None), f"{op.__name__} {options}"
    if m.grad is not None:
        np.testing.assert_allclose(t.grad.numpy(), m.grad, rtol=tol, atol=tol,
                                   err_msg=f"{op.__name__} {options}")


# ----------------------------------------------------------------------------- the twins


@fewer
@given(data=st.data())
def test_median_as_its_twin_ties_included(data):
    shape = data.draw(shapes(), label="shape")
    x = data.draw(st.one_of(arrays(shape), on_grid(shape, [-1.0, 0.0, 2.0])), label="x")
    check_op_against_twin(statistics.Median, x)


def test_median_twin_with_nan_and_empty():
    check_op_against_twin(statistics.Median, np.array([1.0, np.nan, 3.0, np.nan]))
    check_op_against_twin(statistics.Median, np.zeros((2, 0)))


@pytest.mark.parametrize("ord", ORDS, ids=str)
@fewer
@given(data=st.data())
def test_vector_norm_as_its_twin(ord, data):
    shape = data.draw(shapes(), label="shape")
    # zeros and ties on the grid: the places where PyTorch's backward has a rule of its own
    x = data.draw(st.one_of(arrays(shape, away_from_zero=0.1), on_grid(shape, GRID)), label="x")
    options = {"ord": ord, "dim": data.draw(dims(len(shape)), label="dim"),
               "keepdim": data.draw(st.booleans(), label="keepdim")}
    check_op_against_twin(statistics.VectorNorm, x, options)


def test_vector_norm_twin_at_the_edges():
    for ord in ORDS:
        check_op_against_twin(statistics.VectorNorm, np.zeros(3), {"ord": ord})
        check_op_against_twin(statistics.VectorNorm, np.array([1.0, np.nan, -2.0]), {"ord": ord})
        check_op_against_twin(statistics.VectorNorm, np.zeros((0, 2)), {"ord": ord, "dim": 1})
    # torch's 2-norm squares unscaled and overflows to inf here; minigrad's scales (right: 1.4e200)
    norm = statistics.VectorNorm.apply(mg.Tensor(np.array([1e200, 1e200]))).item()
    assert norm == pytest.approx(2**0.5 * 1e200)


# ----------------------------------------------------------------------------- the public API


def _pair(a):
    return mg.Tensor(a, requires_grad=a.dtype.kind == "f"), torch.tensor(a, requires_grad=a.dtype.kind == "f")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@fewer
@given(data=st.data())
def test_median_along_a_dim_as_torch_ties_and_nan_included(dtype, data):
    shape = data.draw(shapes(min_dims=1, max_side=5), label="shape")
    grid = [-1.0, 0.0, 2.0, 3.0] + ([np.nan] if dtype != np.int64 else [])
    a = data.draw(on_grid(shape, grid), label="x").astype(dtype)
    n = len(shape)
    d, keepdim = data.draw(st.integers(-n, n - 1), label="dim"), data.draw(st.booleans(), label="keepdim")
    x, t = _pair(a)
    (v, i), (tv, ti) = x.median(d, keepdim), t.median(d, keepdim)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(v.numpy(), tv.detach().numpy())
    assert v.dtype == a.dtype and i.dtype == np.int64 and str(ti.dtype) == "torch.int64"
    whole, twhole = mg.median(x), torch.median(t)
    np.testing.assert_array_equal(whole.numpy(), twhole.detach().numpy())
    if dtype != np.int64:
        g = np.random.default_rng(0).standard_normal(v.shape).astype(dtype)
        (v * mg.tensor(g)).sum().backward()
        (tv * torch.from_numpy(g)).sum().backward()
        np.testing.assert_array_equal(x.grad, t.grad.numpy())


NORM_CALLS = [
    # (id, minigrad call, torch call) with p and dim
    ("norm", lambda x, p, d, k: x.norm(p, d, k), lambda x, p, d, k: x.norm(p, d, k)),
    ("mg.norm", lambda x, p, d, k: mg.norm(x, p=p, dim=d, keepdim=k),
     lambda x, p, d, k: torch.norm(x, p, d, k)),
    ("vector_norm", lambda x, p, d, k: mg.linalg.vector_norm(x, ord=p, dim=d, keepdim=k),
     lambda x, p, d, k: torch.linalg.vector_norm(x, ord=p, dim=d, keepdim=k)),
]


@pytest.mark.parametrize("name, ours, theirs", NORM_CALLS, ids=[c[0] for c in NORM_CALLS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@fewer
@given(data=st.data())
def test_norms_as_torch(name, ours, theirs, dtype, data):
    shape = data.draw(shapes(min_dims=1), label="shape")
    a = data.draw(st.one_of(arrays(shape, away_from_zero=0.1), on_grid(shape, GRID)), label="x").astype(dtype)
    p = data.draw(st.sampled_from(ORDS + (["fro"] if name != "vector_norm" else [])), label="p")
    n = len(shape)
    d = data.draw(st.one_of(st.none(), st.integers(-n, n - 1), st.just(tuple(range(min(n, 2))))), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x, t = _pair(a)
    out, tout = ours(x, p, d, keepdim), theirs(t, p, d, keepdim)
    assert out.shape == tuple(tout.shape) and str(tout.dtype) == f"torch.{out.dtype}"
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    assert (x.grad is None) == (t.grad is None)
    if x.grad is not None:
        assert x.grad.dtype == a.dtype
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=tol, atol=tol)


def test_norm_dtype_argument_as_torch():
    a = np.array([[3.0, 4.0], [1.0, 0.0]], dtype=np.float32)
    out, tout = mg.tensor(a).norm(dim=1, dtype=np.float64), torch.tensor(a).norm(dim=1, dtype=torch.float64)
    assert out.dtype == np.float64 and tout.dtype == torch.float64
    np.testing.assert_allclose(out.numpy(), tout.numpy())
    out = mg.linalg.vector_norm(mg.tensor(a), 3, dtype=np.float64)
    theirs = torch.linalg.vector_norm(torch.tensor(a), 3, dtype=torch.float64)
    np.testing.assert_allclose(out.numpy(), theirs.numpy())


def test_multinomial_shapes_dtypes_and_errors_as_torch():
    w = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]], dtype=np.float32)
    for replacement, n in [(True, 5), (False, 2)]:
        ours = mg.tensor(w).multinomial(n, replacement)
        theirs = torch.multinomial(torch.tensor(w), n, replacement)
        assert ours.shape == tuple(theirs.shape) and str(theirs.dtype) == f"torch.{ours.dtype}"
        assert ours.numpy().min() >= 0 and ours.numpy().max() < 3
        np.testing.assert_array_equal(np.take_along_axis(w, ours.numpy(), 1) > 0, True)
    assert mg.tensor(w[0]).multinomial(1).shape == tuple(torch.multinomial(torch.tensor(w[0]), 1).shape)
    for call in [lambda m: m.ones(3).multinomial(4), lambda m: m.ones(2, 2, 2).multinomial(1),
                 lambda m: m.tensor([-1.0, 1.0]).multinomial(1), lambda m: m.zeros(2).multinomial(1, True),
                 lambda m: m.ones(3).multinomial(0)]:
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(RuntimeError, match="multinomial"):
            call(mg)
