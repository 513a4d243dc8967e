"""Check an op's analytic gradients against central finite differences, in float64."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .autograd import no_grad
from .tensor import Tensor


class GradcheckError(AssertionError):
    """Raised by `gradcheck` with a report naming the input, element and both values."""


def _outputs(out: Any) -> list[Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def gradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    seed: int = 0,
    raise_exception: bool = True,
) -> bool:
    """Compare the gradients of `fn` from backward() with central differences.

    The inputs are copied to float64 (integer and boolean inputs pass through unchanged and
    are not checked). The output(s) are contracted with a random upstream gradient g, so a
    backward that ignores g fails; every element of every floating input is perturbed:
        numeric_i = (L(x + eps e_i) - L(x - eps e_i)) / (2 eps),   L(x) = sum(g * fn(x))
    An element passes when |analytic - numeric| <= atol + rtol * |numeric|.

    Returns True when all match. Otherwise raises GradcheckError (or returns False when
    `raise_exception=False`) with a report of the first element that does not match.
    """
    xs = [_as_float64(x) for x in inputs]
    outs = _outputs(fn(*xs))
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(o.shape) for o in outs]
    for o in outs:
        if not o.requires_grad:
            raise GradcheckError("gradcheck: an output does not depend on any checked input")
    # One backward through all outputs: sum_k <g_k, out_k>.
    total = sum(((o * Tensor(g)).sum() for o, g in zip(outs, gs)), start=Tensor(np.float64(0)))
    total.backward()

    def loss() -> float:
        with no_grad():
            return float(sum((o.data * g).sum() for o, g in zip(_outputs(fn(*xs)), gs)))

    for i, x in enumerate(xs):
        if not x.requires_grad:
            continue
        analytic = x.grad if x.grad is not None else np.zeros_like(x.data)
        flat = x.data.reshape(-1)  # a view: perturbing it perturbs x
        for j in range(flat.size):
            orig = flat[j]
            flat[j] = orig + eps
            up = loss()
            flat[j] = orig - eps
            down = loss()
            flat[j] = orig
            numeric = (up - down) / (2 * eps)
            a = analytic.reshape(-1)[j]
            if not abs(a - numeric) <= atol + rtol * abs(numeric):
                where = np.unravel_index(j, x.shape) if x.ndim else ()
                report = (
                    f"gradcheck failed for input {i} (shape {x.shape}) at element "
                    f"{tuple(int(k) for k in where)}:\n"
                    f"    analytic {a:.8g}, numeric {numeric:.8g}, error {abs(a - numeric):.3g} "
                    f"(allowed {atol + rtol * abs(numeric):.3g} = atol {atol:g} + rtol {rtol:g} * |numeric|)"
                )
                if raise_exception:
                    raise GradcheckError(report)
                return False
    return True


def _as_float64(x: Any) -> Tensor:
    """A float64 leaf copy of x (requiring grad when x is floating), or x unchanged."""
    data = x.data if isinstance(x, Tensor) else np.asarray(x)
    if data.dtype.kind != "f":
        return x if isinstance(x, Tensor) else Tensor(data)
    wants = x.requires_grad if isinstance(x, Tensor) else True
    return Tensor(np.array(data, dtype=np.float64), requires_grad=wants)
