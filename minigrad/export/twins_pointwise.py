"""The torch twins of the pointwise ops (ops/pointwise.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import pointwise


def _clamp(x: torch.Tensor, *bounds: torch.Tensor, low: bool = True, high: bool = True) -> torch.Tensor:
    """Clip's twin. x is broadcast first (torch's clamp backward fails when a tensor bound is
    larger than x); the bounds are left as they are, so a 0-d bound does not promote x."""
    x = x.expand(torch.broadcast_shapes(x.shape, *(b.shape for b in bounds)))
    return torch.clamp(x, bounds[0] if low else None, bounds[-1] if high else None)


POINTWISE_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    pointwise.Exp: torch.exp,
    pointwise.Log: torch.log,
    pointwise.Sqrt: torch.sqrt,
    pointwise.Abs: torch.abs,
    pointwise.TanhOp: torch.tanh,
    pointwise.SigmoidOp: torch.sigmoid,
    pointwise.ReLUOp: torch.relu,
    pointwise.Maximum: torch.maximum,  # a tie splits the gradient in halves in both
    pointwise.Minimum: torch.minimum,
    pointwise.Clip: _clamp,
    pointwise.Sin: torch.sin,
    pointwise.Cos: torch.cos,
    pointwise.Tan: torch.tan,
    pointwise.Asin: torch.asin,
    pointwise.Acos: torch.acos,
    pointwise.Atan: torch.atan,
    pointwise.Sinh: torch.sinh,
    pointwise.Cosh: torch.cosh,
    pointwise.Expm1: torch.expm1,
    pointwise.Log1p: torch.log1p,
    pointwise.Log2: torch.log2,
    pointwise.Log10: torch.log10,
    pointwise.Erf: torch.erf,
    pointwise.Atan2: torch.atan2,
    pointwise.Hypot: torch.hypot,
    pointwise.LogAddExp: torch.logaddexp,
    pointwise.XLogY: torch.xlogy,
    pointwise.CopySign: torch.copysign,
}
