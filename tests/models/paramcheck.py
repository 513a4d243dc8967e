"""A finite-difference probe of a whole model's parameter gradients, for the model tests."""

from typing import Callable

import numpy as np


def assert_parameter_grads(model, loss: Callable, atol: float, rtol: float = 1e-4, eps: float = 1e-6,
                           entries: int = 2, seed: int = 0) -> None:
    """Backward once through `loss()` (a float64 model), then compare `entries` random entries of
    every parameter's .grad with central differences of loss().item()."""
    model.zero_grad()
    loss().backward()
    rng = np.random.default_rng(seed)
    for name, p in model.named_parameters():
        flat, grad = p.numpy().reshape(-1), p.grad.numpy().reshape(-1)
        for k in rng.choice(flat.size, min(entries, flat.size), replace=False):
            old = flat[k]
            flat[k] = old + eps
            up = loss().item()
            flat[k] = old - eps
            down = loss().item()
            flat[k] = old
            numeric = (up - down) / (2 * eps)
            assert abs(grad[k] - numeric) <= atol + rtol * abs(numeric), (name, k, grad[k], numeric)
