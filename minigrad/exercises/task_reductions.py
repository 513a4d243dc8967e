"""Exercise 4 · reductions: sum, mean and max over one axis (ties split as the library does)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks, random_shapes
from .transcript import Fail, run_student


def _cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    # First a middle axis dropped (keepdim=False): g then lacks that axis, and numpy lines it up
    # with the trailing axes of x (wrong numbers when square, an error otherwise).
    out = [Case({"x": rng.permutation(np.linspace(-2, 2, int(np.prod(s)))).reshape(s)}, {"dim": 1},
                f"x {s}, dim 1 (dropped)") for s in ((3, 3), (2, 3, 4))]
    for shape in random_shapes(5, seed=seed):
        dim = int(rng.integers(-len(shape), len(shape)))
        # distinct values: no accidental ties, where a max is not differentiable
        x = rng.permutation(np.linspace(-2, 2, int(np.prod(shape)))).reshape(shape)
        out.append(Case({"x": x}, {"dim": dim, "keepdim": bool(rng.integers(0, 2))},
                        f"x {shape}, dim {dim}"))
    return out


def mistakes_of(name: str) -> Callable[[Case, np.ndarray, dict], list[Mistake]]:
    """The mistakes of one op's backward, predicted from the inputs and g."""

    def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
        x, dim, keepdim = case.inputs["x"], case.options["dim"], case.options.get("keepdim", False)
        win = x == x.max(axis=dim, keepdims=True)
        count = win.sum(axis=dim, keepdims=True)
        kept = g if keepdim else np.expand_dims(g, dim)
        out = []
        if name == "Max":
            first = np.zeros_like(x)
            np.put_along_axis(first, np.expand_dims(x.argmax(axis=dim), dim), kept, axis=dim)
            out += [Mistake("max_tie_to_first", {"x": first}),
                    Mistake("max_tie_not_split", {"x": kept * win}),
                    Mistake("max_ties_counted_over_array", {"x": kept * win / win.sum()})]
        if not keepdim:
            try:  # g without the reduced axis: numpy aligns it with the trailing axes of x
                flat = np.broadcast_to(g, x.shape)
            except ValueError:
                return out
            wrong = {"Sum": flat, "Mean": flat / x.shape[dim], "Max": flat * win / count}[name]
            out.append(Mistake("reduced_axis_not_restored", {"x": wrong}))
        return out

    return mistakes


def restored_twice_of(name: str) -> Callable[[Case, np.ndarray], list[Mistake]]:
    """What one op's backward returns when it puts the reduced axis back although keepdim=True
    kept it: g gets a second size-1 axis, and broadcasting against x adds an axis to dx."""

    def mistakes(case: Case, g: np.ndarray) -> list[Mistake]:
        x, dim = case.inputs["x"], case.options["dim"]
        if not case.options.get("keepdim", False):
            return []
        twice = np.expand_dims(g, dim)
        try:
            ones = np.ones(np.broadcast_shapes(twice.shape, x.shape))
        except ValueError:
            return []
        win = x == x.max(axis=dim, keepdims=True)
        wrong = {"Sum": twice * ones, "Mean": twice * ones / x.shape[dim],
                 "Max": twice * win / win.sum(axis=dim, keepdims=True) * ones}[name]
        return [Mistake("reduced_axis_restored_twice", {"x": wrong},
                        note=f"with keepdim=True, g {g.shape} already has the reduced axis")]

    return mistakes


def checks(sub: Any) -> list[Check]:
    ops = {"Sum": (sub.Sum, references.reduce_sum, np.sum),
           "Mean": (sub.Mean, references.reduce_mean, np.mean),
           "Max": (sub.Max, references.reduce_max, np.max)}
    rng = np.random.default_rng(3)

    def forward() -> str:
        x = rng.normal(0, 1, (2, 2, 3))
        for name, (op, _, fn) in ops.items():
            for dim in (0, -1):
                for keepdim in (False, True):
                    got = run_student("forward", lambda op=op, dim=dim, keepdim=keepdim:
                                      op.apply(Tensor(x.copy()), dim=dim, keepdim=keepdim)._data)
                    want = fn(x, axis=dim, keepdims=keepdim)
                    if got.shape != want.shape or not np.allclose(got, want):
                        label = f"{name}, x (2, 2, 3), dim {dim}, keepdim={keepdim}"
                        raise Fail(f"{name}: the forward differs from numpy's (it is given: restore it)",
                                   detail=forward_detail(label, {"x": x}, got, want))
        return "3 ops, 2 axes, keepdim both ways"

    tied = np.array([[0.5, 2.0, 2.0, -1.0], [1.0, -3.0, 0.0, 0.25], [3.0, 1.5, -2.0, 3.0]])
    worked = {"Sum": Case({"x": rng.normal(0, 1, (3, 4))}, {"dim": 1}, "x (3, 4), dim 1"),
              "Mean": Case({"x": rng.normal(0, 1, (3, 4))}, {"dim": 0, "keepdim": True},
                           "x (3, 4), dim 0, keepdim"),
              "Max": Case({"x": tied}, {"dim": -1}, "x (3, 4), dim -1, two rows with a tie")}
    out: list[Check] = [("forward matches numpy", forward)]
    for i, (name, (op, ref, _)) in enumerate(ops.items()):
        out += gradient_checks(lambda x, _op=op, **o: _op.apply(x, **o), ref, worked[name], _cases(i),
                               op, mistakes_of(name), must_reduce=True, prefix=f"{name}: ",
                               raw_mistakes=restored_twice_of(name))
    return out


TASK = Task("reductions", "sum, mean and max backward (ties share the gradient)",
            ("Sum", "Mean", "Max"), checks, library=("Sum", "Mean", "Max", "Min"))
