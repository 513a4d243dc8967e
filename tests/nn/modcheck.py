"""Gradient check of a whole module: its inputs and every parameter, in float64."""

from __future__ import annotations

from typing import Any

import minigrad as mg
import minigrad.nn as nn


def _set(module: Any, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        module = module[int(part)] if part.isdigit() else getattr(module, part)
    if last.isdigit():
        module[int(last)] = value
    else:
        setattr(module, last, value)


def gradcheck_module(module: Any, *inputs: Any, **kwargs: Any) -> bool:
    """gradcheck of module(*inputs, **kwargs) with respect to the float inputs and all parameters.

    The module is cast to float64; gradcheck perturbs copies of the parameters (Parameters
    still), which are put into the module (by their dotted names) before each call.
    """
    module.double()
    named = list(module.named_parameters())
    n = len(inputs)

    def fn(*xs: Any) -> Any:
        for (name, _), x in zip(named, xs[n:]):
            assert isinstance(x, nn.Parameter), f"{name}: gradcheck handed a {type(x).__name__}"
            _set(module, name, x)
        return module(*xs[:n], **kwargs)

    return mg.gradcheck(fn, list(inputs) + [p for _, p in named])


def draw_affine(data: Any, channels: int, affine: str) -> tuple[Any, Any]:
    """A norm's weight and bias for a gradcheck, as `affine` says ("none", "weight", "bias" or
    "both"): weights in [0.5, 1.5], so no channel is switched off."""
    from minigrad.testing import arrays

    w = data.draw(arrays((channels,), 0.5, 1.5)) if affine in ("weight", "both") else None
    b = data.draw(arrays((channels,))) if affine in ("bias", "both") else None
    return w, b


def affine_of(w: Any, b: Any, params: tuple) -> tuple[Any, Any]:
    """(weight, bias) back from the gradchecked params, which hold only those drawn (w, b order)."""
    it = iter(params)
    return (next(it) if w is not None else None), (next(it) if b is not None else None)

