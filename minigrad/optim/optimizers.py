"""SGD (momentum, Nesterov, weight decay), Adam, AdamW, and gradient clipping by norm.

Every update follows PyTorch's rule exactly and works in place on the parameter's array,
in the parameter's dtype: a float32 model stays float32.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from ..runtime import compiled
from ..tensor import Tensor
from .optimizer import Optimizer, Params


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _check_common(name: str, group: dict[str, Any]) -> None:
    """lr and weight_decay, kept as Python floats (np.float64 would promote float32 math)."""
    group["lr"] = float(group["lr"])
    group["weight_decay"] = float(group["weight_decay"])
    _require(group["lr"] >= 0, f"{name}: invalid learning rate {group['lr']} (lr must be >= 0)")
    _require(group["weight_decay"] >= 0,
             f"{name}: invalid weight_decay {group['weight_decay']} (must be >= 0)")
    group["maximize"] = bool(group["maximize"])


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum, Nesterov momentum and weight decay.

    With g the gradient (negated when maximize=True), per step:
        g   = g + weight_decay * p                       (L2 penalty, if weight_decay)
        buf = g                                          (first step)
        buf = momentum * buf + (1 - dampening) * g       (later steps, if momentum)
        d   = g + momentum * buf   if nesterov   else   buf
        p   = p - lr * d

    Args:
        params: tensors or parameter groups (dicts) to optimize.
        lr: learning rate.
        momentum: momentum factor (0 turns momentum off).
        dampening: how much of the new gradient the momentum buffer keeps out.
        weight_decay: L2 penalty coefficient.
        nesterov: use Nesterov momentum (needs momentum > 0 and dampening 0).
        maximize: ascend the objective instead of descending it.

    State per parameter: "momentum_buffer" (only when momentum > 0).
    """

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        _check_common("SGD", group)
        group["momentum"] = float(group["momentum"])
        group["dampening"] = float(group["dampening"])
        group["nesterov"] = bool(group["nesterov"])
        _require(group["momentum"] >= 0, f"SGD: invalid momentum {group['momentum']} (must be >= 0)")
        _require(not group["nesterov"] or (group["momentum"] > 0 and group["dampening"] == 0),
                 "SGD: Nesterov momentum requires a momentum > 0 and zero dampening")

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        momentum, dampening = group["momentum"], group["dampening"]
        d = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            d = d + group["weight_decay"] * p  # a new array: p.grad stays as backward left it
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(d, dtype=p.dtype)  # a copy, not grad
            else:
                buf *= momentum
                buf += d if dampening == 0 else (1 - dampening) * d
            d = d + momentum * buf if group["nesterov"] else buf
        p -= group["lr"] * d


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), with optional AMSGrad and L2 or decoupled weight decay.

    With g the gradient (negated when maximize=True) and t the parameter's step count:
        p = p * (1 - lr * weight_decay)                  (if decoupled_weight_decay: AdamW)
        g = g + weight_decay * p                         (otherwise: L2 penalty)
        m = beta1 * m + (1 - beta1) * g                  (first moment)
        v = beta2 * v + (1 - beta2) * g^2                (second moment)
        v_max = max(v_max, v);  v = v_max                (if amsgrad)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    The factors 1 / (1 - beta^t) undo the bias of m and v towards their zero start.

    Args:
        params: tensors or parameter groups (dicts) to optimize.
        lr: learning rate.
        betas: decay rates (beta1, beta2) of the two moment averages, each in [0, 1).
        eps: added to the denominator so that it is never zero.
        weight_decay: L2 penalty coefficient (decoupled decay rate when
            decoupled_weight_decay=True).
        amsgrad: divide by the largest second moment seen so far (Reddi et al., 2018).
        maximize: ascend the objective instead of descending it.
        decoupled_weight_decay: shrink the weights directly instead of adding an L2 term to
            the gradient (this makes it AdamW).

    State per parameter: "step", "exp_avg" (m), "exp_avg_sq" (v), "max_exp_avg_sq" (amsgrad).
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False, decoupled_weight_decay: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        name = type(self).__name__
        _check_common(name, group)
        betas = tuple(float(b) for b in group["betas"])
        _require(len(betas) == 2, f"{name}: betas should be two numbers, not {group['betas']}")
        for i, beta in enumerate(betas):
            _require(0 <= beta < 1, f"{name}: invalid beta{i + 1} {beta} (must be in [0, 1))")
        group["betas"] = betas
        group["eps"] = float(group["eps"])
        _require(group["eps"] >= 0, f"{name}: invalid eps {group['eps']} (must be >= 0)")
        group["amsgrad"] = bool(group["amsgrad"])
        group["decoupled_weight_decay"] = bool(group["decoupled_weight_decay"])

    def _update(self, p: np.ndarray, grad: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p)
            state["exp_avg_sq"] = np.zeros_like(p)
        if group["amsgrad"] and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = np.zeros_like(p)
        state["step"] += 1
        t = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]

        if not group["amsgrad"] and _compiled_update(p, grad, m, v):
            decay = 1 - lr * weight_decay if group["decoupled_weight_decay"] else 1.0
            l2 = 0.0 if group["decoupled_weight_decay"] else weight_decay
            compiled.over_rows(_adam_loop, p.size, 1, p.reshape(-1), grad.reshape(-1), m.reshape(-1),
                               v.reshape(-1), -1.0 if group["maximize"] else 1.0, decay, l2, beta1, beta2,
                               lr / (1 - beta1**t), math.sqrt(1 - beta2**t), eps)
            return
        g = -grad if group["maximize"] else grad
        if weight_decay != 0 and group["decoupled_weight_decay"]:
            p *= 1 - lr * weight_decay
        elif weight_decay != 0:
            g = g + weight_decay * p  # a new array: p.grad stays as backward left it

        # One scratch array per step, reused for every intermediate below.
        tmp = np.multiply(g, 1 - beta1, out=np.empty_like(p))
        m *= beta1
        m += tmp
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v *= beta2
        v += tmp
        if group["amsgrad"]:
            v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])

        np.sqrt(v, out=tmp)
        tmp /= math.sqrt(1 - beta2**t)
        tmp += eps
        np.divide(m, tmp, out=tmp)
        tmp *= lr / (1 - beta1**t)
        p -= tmp


def _compiled_update(p: np.ndarray, *arrays: np.ndarray) -> bool:
    """Whether Adam's loop form takes this parameter: compiled kernels on (minigrad.runtime.compiled),
    float32 or float64, and the gradient and both moments contiguous in p's dtype."""
    return compiled.takes(p, *arrays) and all(a.dtype == p.dtype for a in arrays)


@compiled.kernel  # (no reordering: beta2 v + (1 - beta2) g^2 reassociated lost 500 ulp of v in float64)
def _adam_loop(p, grad, m, v, sign, decay, l2, beta1, beta2, step, bias2, eps, start, stop):
    """Adam's rule (see `Adam`) on elements start..stop-1 in one pass, where the numpy form makes
    eleven: decay = 1 - lr wd (AdamW, else 1), l2 = wd (Adam's L2 term, else 0), step =
    lr / (1 - beta1^t), bias2 = sqrt(1 - beta2^t)."""
    p, grad, m, v = p[start:stop], grad[start:stop], m[start:stop], v[start:stop]
    for i in range(p.shape[0]):
        w = p[i] * decay
        g = sign * grad[i] + l2 * w
        mi = beta1 * m[i] + (1 - beta1) * g
        vi = beta2 * v[i] + (1 - beta2) * (g * g)
        m[i] = mi
        v[i] = vi
        p[i] = w - step * mi / (np.sqrt(vi) / bias2 + eps)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019).

    The weights shrink directly, p = p * (1 - lr * weight_decay), before the Adam step, instead
    of an L2 term entering the gradient (where Adam's scaling would weaken it for parameters
    with large gradients). See `Adam` for the rest of the rule.

    Args:
        params: tensors or parameter groups (dicts) to optimize.
        lr: learning rate.
        betas: decay rates (beta1, beta2) of the two moment averages, each in [0, 1).
        eps: added to the denominator so that it is never zero.
        weight_decay: decoupled weight decay rate.
        amsgrad: divide by the largest second moment seen so far.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)


# ----------------------------------------------------------------------------- gradient clipping


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale all gradients together, in place, so that their joint norm is at most max_norm.

    The gradients are treated as one long vector:
        total = (sum over all elements of |g|^p)^(1/p)        (max |g| for norm_type=inf)
        g     = g * min(1, max_norm / (total + 1e-6))
    so the direction of the update is kept and only its length is capped. Parameters whose
    grad is None are ignored.

    Args:
        parameters: a tensor or an iterable of tensors (e.g. `model.parameters()`).
        max_norm: the largest norm allowed.
        norm_type: p of the p-norm (> 0), or float("inf") for the largest absolute value.
        error_if_nonfinite: raise when the total norm is nan or inf (otherwise the gradients
            become nan, as in PyTorch).
        foreach: accepted for torch's signature; it changes nothing here.

    Returns:
        The total norm of the gradients before clipping, a 0-d Tensor in the gradients' dtype
        (float32 zero when no parameter has a gradient), as torch's.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p._grad for p in params if p._grad is not None]
    norm_type = float(norm_type)
    _require(norm_type > 0, f"clip_grad_norm_: norm_type must be > 0 or inf, not {norm_type}")
    if not grads:
        return Tensor._make(np.zeros((), dtype=np.float32), None)
    # The norm of the per-tensor norms is the norm of the concatenation, with no copy made;
    # combining them in float64 keeps float32 gradients from overflowing when squared.
    norms = np.array([np.linalg.norm(g.ravel(), norm_type) for g in grads if g.size],
                     dtype=np.float64)
    total = float(np.linalg.norm(norms, norm_type)) if norms.size else 0.0
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of the gradients is {total}; pass "
            "error_if_nonfinite=False to clip anyway"
        )
    scale = max_norm / (total + 1e-6)
    if scale < 1 or math.isnan(scale):
        with np.errstate(invalid="ignore"):  # an inf norm scales by 0: inf * 0 is nan, as in PyTorch
            for g in grads:
                g *= scale
    return Tensor._make(np.array(total, dtype=grads[0].dtype), None)
