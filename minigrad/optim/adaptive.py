"""RMSprop and Adagrad: optimizers that divide each step by a running measure of the gradient's
size, per element. Both follow PyTorch's rules exactly, in place, in the parameter's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, Params
from .optimizers import _check_common, _require


class RMSprop(Optimizer):
    """RMSprop (Hinton, lecture 6e), with optional momentum, centering and weight decay.

    With g the gradient (negated when maximize=True), per step:
        g   = g + weight_decay * p                           (L2 penalty, if weight_decay)
        v   = alpha * v + (1 - alpha) * g^2                  (running mean of g^2)
        m   = alpha * m + (1 - alpha) * g                    (running mean of g, if centered)
        den = sqrt(v - m^2) + eps   if centered   else   sqrt(v) + eps
        buf = momentum * buf + g / den;  p = p - lr * buf    (if momentum > 0)
        p   = p - lr * g / den                               (otherwise)

    Centering divides by an estimate of the gradient's standard deviation instead of its root
    mean square. There is no bias correction: v starts at zero, so early steps are large.

    Args:
        params: tensors or parameter groups (dicts) to optimize.
        lr: learning rate.
        alpha: decay rate of the running averages, in [0, 1].
        eps: added to the denominator so that it is never zero.
        weight_decay: L2 penalty coefficient.
        momentum: momentum factor (0 turns momentum off).
        centered: divide by the gradient's estimated standard deviation.
        maximize: ascend the objective instead of descending it.

    State per parameter: "step", "square_avg" (v), "grad_avg" (m, if centered),
    "momentum_buffer" (if momentum > 0).
    """

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, *,
                 maximize: bool = False):
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                        centered=centered, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_common("RMSprop", group)
        for key in ("alpha", "eps", "momentum"):
            group[key] = float(group[key])
            _require(group[key] >= 0, f"RMSprop: invalid {key} {group[key]} (must be >= 0)")
        _require(group["alpha"] <= 1, f"RMSprop: invalid alpha {group['alpha']} (must be <= 1)")
        group["centered"] = bool(group["centered"])

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(p)
        if momentum > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = np.zeros_like(p)
        if group["centered"] and "grad_avg" not in state:
            state["grad_avg"] = np.zeros_like(p)
        state["step"] += 1

        g = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p  # a new array: p.grad stays as backward left it
        v = state["square_avg"]
        v *= alpha
        v += (1 - alpha) * (g * g)
        if group["centered"]:
            m = state["grad_avg"]
            m += (1 - alpha) * (g - m)  # torch's lerp: m moves towards g by (1 - alpha)
            den = np.sqrt(v - m * m)
        else:
            den = np.sqrt(v)
        den += eps
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf *= momentum
            buf += g / den
            p -= lr * buf
        else:
            p -= lr * (g / den)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): each element's step shrinks with its summed squared gradients.

    With g the gradient (negated when maximize=True) and t the parameter's step count:
        g   = g + weight_decay * p                    (L2 penalty, if weight_decay)
        clr = lr / (1 + (t - 1) * lr_decay)
        s   = s + g^2                                 (s starts at initial_accumulator_value)
        p   = p - clr * g / (sqrt(s) + eps)

    Args:
        params: tensors or parameter groups (dicts) to optimize.
        lr: learning rate.
        lr_decay: the learning rate falls as lr / (1 + (t - 1) * lr_decay).
        weight_decay: L2 penalty coefficient.
        initial_accumulator_value: the starting value of every element of s.
        eps: added to the denominator so that it is never zero.
        maximize: ascend the objective instead of descending it.

    State per parameter: "step", "sum" (s). PyTorch fills the state when the optimizer is
    built; here it appears at a parameter's first update, with the same values.
    """

    def __init__(self, params: Params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, *, maximize: bool = False):
        defaults = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_common("Adagrad", group)
        for key in ("lr_decay", "initial_accumulator_value", "eps"):
            group[key] = float(group[key])
            _require(group[key] >= 0, f"Adagrad: invalid {key} {group[key]} (must be >= 0)")

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        if not state:
            state["step"] = 0
            state["sum"] = np.full_like(p, group["initial_accumulator_value"])
        state["step"] += 1
        g = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p  # a new array: p.grad stays as backward left it
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        s = state["sum"]
        s += g * g
        den = np.sqrt(s)
        den += group["eps"]
        p -= clr * (g / den)
