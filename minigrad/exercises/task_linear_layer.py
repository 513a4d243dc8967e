"""Exercise 8 · linear_layer: Linear as a Module (parameters found by walking, PyTorch's init)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import minigrad as mg
from minigrad.nn import Parameter
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake, close
from .grader import Check
from .gradients import Case, agreeing, forward_detail, gradient_checks
from .transcript import Fail, run_student

# The statistics are taken on a wide layer (16,384 draws for the bias, a million for the weight),
# so the tolerances below sit many standard errors away from what a right draw gives.
FAN_IN, FAN_OUT = 64, 16384
MEAN_TOL, STD_TOL, SHAPE_TOL = 0.03, 0.03, 0.05  # of the bound, of the std, of std * sqrt(3) / max


def uniform_fail(name: str, w: np.ndarray, bound: float) -> Fail | None:
    """Why `w` does not look uniform in +-bound (None when it does), with the code that fits."""
    if np.unique(w).size < w.size // 2:
        return Fail(f"{name}: the values repeat (all equal?): every unit would learn the same thing")
    mean, std, top, low = float(w.mean()), float(w.std()), float(np.abs(w).max()), float(w.min())
    want = bound / math.sqrt(3)
    spread = f"mean {mean:.3g}, std {std:.3g}, values in [{low:.3g}, {float(w.max()):.3g}]"
    if abs(mean) > MEAN_TOL * bound:
        one_side = low >= -MEAN_TOL * bound or float(w.max()) <= MEAN_TOL * bound
        return Fail(f"{name}: {spread}; uniform in +-{bound:.3g} has mean 0",
                    diagnosis=["linear_init_not_centred"] if one_side else [])
    if top > bound + 1e-6 or abs(std - want) > STD_TOL * want:
        uniform = abs(std * math.sqrt(3) / top - 1) < SHAPE_TOL  # a uniform's std is its bound / sqrt(3)
        return Fail(f"{name}: {spread}; uniform in +-1/sqrt(in) = +-{bound:.3g} has std {want:.3g}"
                    + (f" (yours looks uniform in +-{top:.3g})" if uniform else ""),
                    diagnosis=["linear_init_scale"] if uniform else [])
    return None


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """y = x W + b with our W of shape (out, in) (square in the worked case): the (in, out) layout."""
    x, w = case.inputs["x"], case.inputs["weight"]
    if w.shape[0] != w.shape[1]:
        return []
    xs, gs = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
    return [Mistake("linear_weight_layout", {"x": g @ w.T, "weight": xs.T @ gs}, note="those of y = x W + b")]


def describe(p: Any) -> dict:
    """What the checks read of a parameter (in the student's process): its type and shape."""
    shape = getattr(p, "shape", None)
    return {"type": type(p).__name__, "parameter": isinstance(p, Parameter),
            "shape": tuple(int(n) for n in shape) if isinstance(shape, tuple) else None}


def checks(sub: Any) -> list[Check]:
    def build(*args: Any, **kwargs: Any) -> Any:  # (inside run_student() only)
        return sub.Linear(*args, **kwargs)

    def parameters() -> None:
        named = run_student("parameters", lambda: {str(n): describe(p)
                                                   for n, p in build(3, 4).named_parameters()})
        if set(named) != {"weight", "bias"}:
            missing = ["linear_bias_missing"] if set(named) == {"weight"} else []
            raise Fail(f"parameters() finds {sorted(named)}, expected weight and bias (assign Parameters "
                       "to self.weight and self.bias)", diagnosis=missing)
        for name, shape in (("weight", (4, 3)), ("bias", (4,))):
            p = named[name]
            if not p["parameter"] or p["shape"] != shape:
                layout = ["linear_weight_layout"] if name == "weight" and p["shape"] == (3, 4) else []
                raise Fail(f"{name}: expected a Parameter of shape {shape}, got {p['type']} "
                           f"{'' if p['shape'] is None else p['shape']}", diagnosis=layout)

        def without_bias() -> tuple[bool, list[str]]:
            layer = build(3, 4, bias=False)
            return layer.bias is None, [str(n) for n, _ in layer.named_parameters()]

        bias_is_none, names = run_student("parameters, bias=False", without_bias)
        if not bias_is_none or names != ["weight"]:
            raise Fail("with bias=False, self.bias should be None and weight the only parameter")

    wide: dict[str, Any] = {}  # the wide layer's draws (plain arrays), for the two checks

    def draw_wide() -> dict[str, np.ndarray | None]:
        mg.manual_seed(0)  # the same numbers every run
        layer = build(FAN_IN, FAN_OUT)
        return {name: None if getattr(layer, name, None) is None else np.asarray(getattr(layer, name)._data)
                for name in ("weight", "bias")}

    def init_of(name: str) -> Callable[[], str]:
        def check() -> str:
            if "draws" not in wide:
                wide["draws"] = run_student("init", draw_wide)
            w = wide["draws"][name]
            if w is None:
                raise Fail(f"Linear({FAN_IN}, {FAN_OUT}) has no {name}", diagnosis=["linear_bias_missing"]
                           if name == "bias" else [])
            fail = uniform_fail(name, w, 1 / math.sqrt(FAN_IN))
            if fail is not None:
                raise fail
            return f"Linear({FAN_IN}, {FAN_OUT}): mean 0 and std 1/sqrt(3 in), within +-1/sqrt(in)"
        return check

    def three_draws() -> list[np.ndarray]:
        draws = []
        for seed in (123, 123, 124):
            mg.manual_seed(seed)
            draws.append(np.array(build(5, 7).weight._data))
        return draws

    def generator() -> str:
        draws = run_student("generator", three_draws)
        if not np.array_equal(draws[0], draws[1]):
            raise Fail("after the same mg.manual_seed the weights differ: draw with mg.rand, not np.random",
                       diagnosis=["linear_init_not_mg_generator"])
        if np.unique(draws[0]).size > 1 and np.array_equal(draws[0], draws[2]):
            raise Fail("after different mg.manual_seed seeds the weights are the same: they do not come from "
                       "mg's generator", diagnosis=["linear_init_not_mg_generator"])
        return "the same seed, the same layer; another seed, another layer"

    def forward_of(x: np.ndarray, bias: bool) -> dict:
        layer = build(3, 4, bias=bias)
        got = layer(Tensor(x.copy()))
        w, b = layer.weight, layer.bias
        return {"weight": np.asarray(w._data), "bias": None if b is None else np.asarray(b._data),
                "type": type(got).__name__, "out": np.asarray(got._data) if isinstance(got, Tensor) else None}

    def forward() -> str:
        rng = np.random.default_rng(7)
        for shape, bias in (((2, 3), True), ((2, 4, 3), True), ((5, 3), False)):
            x = rng.normal(0, 1, shape)
            r = run_student("forward", lambda x=x, bias=bias: forward_of(x, bias))
            w, b = Tensor(r["weight"]), None if r["bias"] is None else Tensor(r["bias"])
            if tuple(w.shape) == (3, 4):
                raise Fail("the weight has shape (in_features, out_features) = (3, 4), where x W^T + b "
                           "reads it as (out_features, in_features)", diagnosis=["linear_weight_layout"])
            want = references.linear(Tensor(x), w, b)
            if r["out"] is None:
                raise Fail(f"on x {shape} forward returned a {r['type']}, not a Tensor")
            got = r["out"]
            if got.shape != want.shape or not close(got, want._data):
                no_bias = b is not None and close(got, references.linear(Tensor(x), w)._data)
                shown = {"x": x, "weight": w._data, **({"bias": b._data} if b is not None else {})}
                raise Fail(f"on x {shape} (bias={bias}) the output differs from x W^T + b"
                           + (": it is x W^T, without b" if no_bias else ""),
                           detail=forward_detail(f"Linear(3, 4), x {shape}", shown, got, want._data),
                           diagnosis=["linear_bias_missing"] if no_bias else [])
        return "2-D and 3-D inputs, with and without bias"

    def student(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:  # (inside run_student() only)
        layer = build(x.shape[-1], weight.shape[0])
        layer.weight, layer.bias = weight, bias  # our leaves, so the gradients reach them
        return layer(x)

    rng = np.random.default_rng(8)

    def case(shape: tuple[int, ...], out: int) -> Case:
        return Case({"x": rng.normal(0, 1, shape), "weight": rng.normal(0, 1, (out, shape[-1])),
                     "bias": rng.normal(0, 1, (out,))})

    shapes = "weight and bias are Parameters of the right shapes"
    return agreeing([(shapes, parameters),
            ("initialisation: uniform in +-1/sqrt(in_features): the weight", init_of("weight")),
            ("initialisation: uniform in +-1/sqrt(in_features): the bias", init_of("bias")),
            ("initialisation: from mg's generator (mg.manual_seed reproduces it)", generator),
            ("forward: x W^T + b", forward),
            *gradient_checks(student, references.linear, case((2, 3), 3),
                             [case((4, 3), 2), case((2, 1, 3), 1)], mistakes=mistakes)],
                    {shapes: ("linear_weight_layout",)})  # its shape passed: it is (out, in)


TASK = Task("linear_layer", "Linear as a Module: parameters and their initialisation", ("Linear",), checks,
            library=("Linear", "linear", "kaiming_uniform_"))
