"""Exercise 7 · linear_layer: Linear as a Module (parameters found by walking, PyTorch's init)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import minigrad as mg
from minigrad.nn import Parameter
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, gradient_checks


def checks(sub: Any) -> list[Check]:
    def build(*args: Any, **kwargs: Any) -> Any:
        return sub.Linear(*args, **kwargs)

    def parameters() -> None:
        layer = build(3, 4)
        named = dict(layer.named_parameters())
        if set(named) != {"weight", "bias"}:
            raise Fail(f"parameters() finds {sorted(named)}, expected weight and bias (assign Parameters "
                       "to self.weight and self.bias)")
        for name, shape in (("weight", (4, 3)), ("bias", (4,))):
            if not isinstance(named[name], Parameter) or named[name].shape != shape:
                raise Fail(f"{name}: expected a Parameter of shape {shape}, got {type(named[name]).__name__} "
                           f"{getattr(named[name], 'shape', '')}")
        no_bias = build(3, 4, bias=False)
        if no_bias.bias is not None or [n for n, _ in no_bias.named_parameters()] != ["weight"]:
            raise Fail("with bias=False, self.bias should be None and weight the only parameter")

    def init() -> str:
        fan_in = 64
        layer = build(fan_in, 256)
        bound = 1 / math.sqrt(fan_in)
        for name in ("weight", "bias"):
            w = getattr(layer, name).data
            if np.abs(w).max() > bound + 1e-6:
                raise Fail(f"{name}: values up to {np.abs(w).max():.3g}, outside +-1/sqrt(in) = "
                           f"+-{bound:.3g}")
            if np.unique(w).size < w.size // 2:
                raise Fail(f"{name}: the values repeat (all equal?): every unit would learn the same thing")
        w = layer.weight.data
        if abs(w.std() - bound / math.sqrt(3)) > 0.1 * bound / math.sqrt(3) or abs(w.mean()) > 0.1 * bound:
            raise Fail(f"weight: mean {w.mean():.3g}, std {w.std():.3g}; uniform in +-{bound:.3g} has "
                       f"mean 0, std {bound / math.sqrt(3):.3g}")
        mg.manual_seed(123)
        first = build(5, 7).weight.data.copy()
        mg.manual_seed(123)
        if not np.array_equal(first, build(5, 7).weight.data):
            raise Fail("after the same mg.manual_seed the weights differ: draw with mg.rand, not np.random")
        return f"uniform in +-1/sqrt({fan_in}), reproducible"

    def forward() -> str:
        rng = np.random.default_rng(7)
        for shape, bias in (((2, 3), True), ((2, 4, 3), True), ((5, 3), False)):
            layer = build(3, 4, bias=bias)
            x = Tensor(rng.normal(0, 1, shape))
            got = layer(x)
            want = references.linear(x, layer.weight, layer.bias)
            if not isinstance(got, Tensor) or got.shape != want.shape or not close(got.data, want.data):
                raise Fail(f"on x {shape} (bias={bias}) the output differs from x W^T + b")
        return "2-D and 3-D inputs, with and without bias"

    def student(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
        layer = build(x.shape[-1], weight.shape[0])
        layer.weight, layer.bias = weight, bias  # our leaves, so the gradients reach them
        return layer(x)

    rng = np.random.default_rng(8)

    def case(shape: tuple[int, ...], out: int) -> Case:
        return Case({"x": rng.normal(0, 1, shape), "weight": rng.normal(0, 1, (out, shape[-1])),
                     "bias": rng.normal(0, 1, (out,))})

    return [("weight and bias are Parameters of the right shapes", parameters),
            ("initialisation: uniform in +-1/sqrt(in_features), from mg's generator", init),
            ("forward: x W^T + b", forward),
            *gradient_checks(student, references.linear, case((2, 3), 3),
                             [case((4, 3), 2), case((2, 1, 3), 1)])]


TASK = Task("linear_layer", "Linear as a Module: parameters and their initialisation", ("Linear",), checks)
