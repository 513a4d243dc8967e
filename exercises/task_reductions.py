"""Exercise 3 · reductions: sum, mean and max over one axis (ties split as the library does)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .grader import Check, Fail
from .gradients import Case, gradient_checks, random_shapes


def _cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for shape in random_shapes(5, seed=seed):
        dim = int(rng.integers(-len(shape), len(shape)))
        # distinct values: no accidental ties, where a max is not differentiable
        x = rng.permutation(np.linspace(-2, 2, int(np.prod(shape)))).reshape(shape)
        out.append(Case({"x": x}, {"dim": dim, "keepdim": bool(rng.integers(0, 2))},
                        f"x {shape}, dim {dim}"))
    return out


def checks(sub: Any) -> list[Check]:
    ops = {"Sum": (sub.Sum, references.reduce_sum, np.sum),
           "Mean": (sub.Mean, references.reduce_mean, np.mean),
           "Max": (sub.Max, references.reduce_max, np.max)}
    rng = np.random.default_rng(3)

    def forward() -> str:
        x = rng.normal(0, 1, (2, 3, 4))
        for name, (op, _, fn) in ops.items():
            for dim in (0, -1):
                for keepdim in (False, True):
                    got = op.apply(Tensor(x), dim=dim, keepdim=keepdim).data
                    if not np.allclose(got, fn(x, axis=dim, keepdims=keepdim)):
                        raise Fail(f"{name}: the forward differs from numpy's (it is given: restore it)")
        return "3 ops, 2 axes, keepdim both ways"

    tied = np.array([[0.5, 2.0, 2.0, -1.0], [1.0, -3.0, 0.0, 0.25], [3.0, 1.5, -2.0, 3.0]])
    worked = {"Sum": Case({"x": rng.normal(0, 1, (3, 4))}, {"dim": 1}, "x (3, 4), dim 1"),
              "Mean": Case({"x": rng.normal(0, 1, (3, 4))}, {"dim": 0, "keepdim": True},
                           "x (3, 4), dim 0, keepdim"),
              "Max": Case({"x": tied}, {"dim": -1}, "x (3, 4), dim -1, two rows with a tie")}
    out: list[Check] = [("forward matches numpy", forward)]
    for i, (name, (op, ref, _)) in enumerate(ops.items()):
        out += gradient_checks(lambda x, _op=op, **o: _op.apply(x, **o), ref, worked[name], _cases(i),
                               op, None, must_reduce=True, prefix=f"{name}: ")
    return out


TASK = Task("reductions", "sum, mean and max backward (ties share the gradient)",
            ("Sum", "Mean", "Max"), checks)
