"""Every in-place variant against torch's: `y = x * 1; y.op_(...)` gives torch's values, and
backward through it torch's gradients (comparisons and logic: gradient 0, as in torch)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")

import minigrad as mg  # noqa: E402
from minigrad.ops import table  # noqa: E402

X = np.random.default_rng(0).uniform(0.1, 0.9, (3, 4))  # in every op's domain (acos, log, ...)
MASK = X > 0.5
INDEX = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])

# The arguments after self, for the in-place variants that take any (Tensors are made for each
# library from these arrays); every other variant takes none.
ARGS = {
    "add": (0.5,), "sub": (X[0],), "subtract": (0.25,), "mul": (X[1],), "multiply": (3.0,),
    "div": (X[2] + 1,),
    "divide": (2.0,), "true_divide": (4.0,), "floor_divide": (0.3,), "fmod": (0.3,), "remainder": (0.3,),
    "pow": (2.0,), "atan2": (X[0],), "arctan2": (X[2],), "hypot": (X[1],), "xlogy": (X[1],),
    "copysign": (X[2],),
    "lerp": (X[1], 0.25),
    "clamp": (0.3, 0.6), "clip": (None, 0.5), "clamp_min": (0.4,), "clamp_max": (0.6,),
    "eq": (X[0],), "ne": (0.5,), "lt": (0.5,), "le": (X[1],), "gt": (0.5,), "ge": (X[2],),
    "logical_and": (X[0] > 0.5,), "logical_or": (MASK,), "logical_xor": (X[1] > 0.3,),
    "cumsum": (1,), "cumprod": (0,), "masked_fill": (MASK, -1.5),
    "scatter": (1, INDEX, X[:2] * 10), "scatter_add": (1, INDEX, X[:2] * 10),
    "scatter_reduce": (1, INDEX, X[:2] * 10, "amax"),
    "index_add": (1, INDEX[0], X[:, :4]), "index_fill": (1, INDEX[1], -2.5),
}
INTEGER_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"}
# torch has no derivative of floor_divide (minigrad's is 0, as for every rounding op); its logical
# ops have none either, and their in-place forms keep the tensor's old history, where minigrad's
# gradient is 0 (docs/api_notes.md): for these the values are compared, and minigrad's zeros.
VALUES_ONLY = {"floor_divide", "logical_and", "logical_or", "logical_xor", "logical_not"}


def _arg(a, lib):
    if isinstance(a, np.ndarray):
        return mg.tensor(a) if lib is mg else torch.from_numpy(a.copy())
    return a


def _names():
    return sorted({alias for e in table.entries() if e.inplace is not None for alias in (e.name,)})


@pytest.mark.parametrize("name", _names())
def test_in_place_values_and_gradients_are_torchs(name):
    args = ARGS.get(name, ())
    if name in INTEGER_ONLY:
        a = np.array([[5, 3], [12, 7]])
        x, t = mg.tensor(a.copy()), torch.from_numpy(a.copy())
        getattr(x, name + "_")(*([mg.tensor(a[0])] if name != "bitwise_not" else []))
        getattr(t, name + "_")(*([torch.from_numpy(a[0].copy())] if name != "bitwise_not" else []))
        np.testing.assert_array_equal(x.numpy(), t.numpy())
        return
    w = np.random.default_rng(1).normal(size=X.shape)
    x, tx = mg.tensor(X.copy(), requires_grad=True), torch.tensor(X.copy(), requires_grad=True)
    y, ty = x * 1.0, tx * 1.0
    getattr(y, name + "_")(*[_arg(a, mg) for a in args])
    getattr(ty, name + "_")(*[_arg(a, torch) for a in args])
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-15, err_msg=name)
    (y * mg.tensor(w)).sum().backward()
    if name in VALUES_ONLY:
        assert (x.grad == 0).all()
        return
    (ty * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-12, atol=1e-15, err_msg=name)


def test_the_table_covers_every_in_place_variant():
    names = _names()
    assert len(names) > 60
    assert all(hasattr(torch.Tensor, n + "_") for n in names)  # each is one of torch's


@pytest.mark.parametrize("fill", ["fill_", "zero_", "copy_"])
def test_fills_inside_a_forward_get_torchs_gradients(fill):
    """fill_ with a 0-d tensor value, zero_, and copy_ from a broadcast source, between ops."""
    w = np.random.default_rng(2).normal(size=X.shape)
    grads = []
    for lib in (mg, torch):
        x = lib.tensor(X.copy(), requires_grad=True)
        v = lib.tensor(0.3, dtype=lib.float64, requires_grad=True)
        src = lib.tensor(X[0].copy() * 2, requires_grad=True)
        y = x * 2.0
        if fill == "fill_":
            y.fill_(v)
        elif fill == "zero_":
            y.zero_()
        else:
            y.copy_(src)
        (y * x * lib.tensor(w)).sum().backward()
        grads.append([np.asarray(t.grad) if t.grad is not None else None for t in (x, v, src)])
    for ours, theirs in zip(*grads):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
