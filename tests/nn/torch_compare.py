"""A function on minigrad tensors against the same function on torch tensors: the output, its
dtype and every input's gradient for one fixed random upstream gradient (the activation tests
share it)."""

import numpy as np

import minigrad as mg


def run(fn, arrays_, lib):
    """fn on tensors of `arrays_` (all require grad), backward with a fixed random upstream
    gradient; (output, dtype name, input gradients)."""
    if lib == "mg":
        ins = [mg.tensor(a, requires_grad=True) for a in arrays_]
    else:
        import torch

        ins = [torch.tensor(a, requires_grad=True) for a in arrays_]
    out = fn(*ins)
    g = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(arrays_[0].dtype)
    if lib == "mg":
        out.backward(mg.tensor(g))
        return out.numpy(), str(out.dtype), [t.grad for t in ins]
    out.backward(torch.from_numpy(g))
    return out.detach().numpy(), str(out.dtype).removeprefix("torch."), [t.grad.numpy() for t in ins]


def same_as_torch(mine, theirs, arrays_, tol, grad_tol=None):
    """mine and theirs agree in output, dtype and gradients to tol (gradients to grad_tol, if
    given, relatively)."""
    (a, da, ga), (b, db, gb) = run(mine, arrays_, "mg"), run(theirs, arrays_, "torch")
    assert da == db and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    for x, y in zip(ga, gb):
        np.testing.assert_allclose(x, y, rtol=grad_tol or tol, atol=tol)
