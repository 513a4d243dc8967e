"""The torch twins of the arithmetic ops (ops/arithmetic.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import arithmetic

ARITHMETIC_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    arithmetic.Add: lambda a, b: a + b,
    arithmetic.Sub: lambda a, b: a - b,
    arithmetic.Mul: lambda a, b: a * b,
    arithmetic.Div: lambda a, b: a / b,
    arithmetic.Neg: lambda x: -x,
    arithmetic.Pow: lambda a, b: torch.pow(a, b),
}
