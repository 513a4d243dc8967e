"""Exercise 7 · layer_norm_backward: dx (three terms), dw and db of layer norm."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad.nn.functional as F
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks, random_shapes, student_output
from .training import train_check
from .transcript import Fail


def _parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    return (x - mu) / sigma, sigma


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """dx without one of its two mean terms (the path through mu, or through sigma), and dx
    built from g where gx = g * w belongs."""
    x_hat, sigma = _parts(case.inputs["x"])
    gx = g * case.inputs["w"]
    mean_gx = gx.mean(axis=-1, keepdims=True)
    mean_gxx = (gx * x_hat).mean(axis=-1, keepdims=True)
    no_w = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    return [Mistake("layer_norm_missing_term", {"x": (gx - x_hat * mean_gxx) / sigma}, "no mean(gx) term"),
            Mistake("layer_norm_missing_term", {"x": (gx - mean_gx) / sigma},
                    "no x_hat * mean(gx * x_hat) term"),
            Mistake("layer_norm_no_w", {"x": no_w}, "dx is built from g, not gx = g * w")]


def cases() -> list[Case]:
    rng = np.random.default_rng(6)
    return [Case({"x": rng.normal(0, 2, s), "w": rng.normal(1, 0.5, s[-1:]), "b": rng.normal(0, 1, s[-1:])})
            for s in random_shapes(6, seed=6) if s[-1] > 1]


def checks(sub: Any) -> list[Check]:
    def student(x, w, b):
        return sub.LayerNorm.apply(x, w, b)

    rng = np.random.default_rng(2)
    worked = Case({"x": rng.normal(0, 2, (3, 4)), "w": rng.normal(1, 0.5, (4,)), "b": rng.normal(0, 1, (4,))},
                  label="x (3, 4), w (4,), b (4,)")

    def forward() -> str:
        for case in [worked, *cases()]:
            got = student_output(student, case)
            want = references.layer_norm(*[Tensor(v) for v in case.inputs.values()])._data
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-8, atol=1e-10):
                raise Fail(f"on {case.describe()} the forward differs from the reference (it is given)",
                           detail=forward_detail(case.describe(), case.inputs, got, want))
        constant = Case({"x": np.full((2, 3), 7.0), "w": np.ones(3), "b": np.zeros(3)})
        if not np.all(np.isfinite(student_output(student, constant))):
            raise Fail("a constant row gives inf or nan")
        return "fixed cases and a constant row"

    return [("forward matches the reference", forward),
            *gradient_checks(student, references.layer_norm, worked, cases(), sub.LayerNorm, mistakes,
                             must_reduce=True)]


def train(sub: Any) -> Check:
    """Every LayerNorm of the GPT through the student's kernel."""
    original = F.layer_norm

    def layer_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
                   eps: float = 1e-5) -> Tensor:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if len(shape) != 1 or weight is None or bias is None:
            return original(x, normalized_shape, weight, bias, eps)
        return sub.LayerNorm.apply(x, weight, bias, eps=eps)

    return train_check({"layer_norm": layer_norm})


# minigrad's own layer norm: the functional, the Module and the fused kernel
# (nn.normalization.LayerNormOp) with the helpers that normalize its rows and give their gradient.
TASK = Task("layer_norm_backward", "the three-term backward of layer norm", ("LayerNorm",), checks, train,
            library=("layer_norm", "LayerNorm", "LayerNormOp", "_normalize_rows", "_normalize_rows_scaled",
                     "_normalize_rows_grad"))
