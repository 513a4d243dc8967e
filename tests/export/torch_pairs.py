"""(minigrad, torch) pairs of an op's output and of every input's gradient, for the tests
that compare the convolutions with torch's."""

import numpy as np

import minigrad as mg


def both(mg_fn, torch_fn, arrays, seed=0):
    """(minigrad, torch) pairs: the outputs, then the gradient of every input, for one random
    upstream gradient."""
    import torch

    mins = [mg.tensor(a, requires_grad=True) for a in arrays]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = mg_fn(*mins), torch_fn(*tins)
    g = np.random.default_rng(seed).standard_normal(y.shape).astype(arrays[0].dtype)
    y.backward(g)
    ty.backward(torch.from_numpy(g))
    return [(y.numpy(), ty.detach().numpy())] + [(m.grad.numpy(), t.grad.numpy()) for m, t in zip(mins, tins)]


def assert_pairs(pairs, tol):
    for mine, theirs in pairs:
        assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)
