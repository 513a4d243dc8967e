"""The torch twins of the rounding ops (ops/rounding.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import rounding

ROUNDING_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    rounding.Sign: torch.sign,
    rounding.Floor: torch.floor,
    rounding.Ceil: torch.ceil,
    rounding.Round: lambda x, *, decimals=0: torch.round(x, decimals=decimals),
    rounding.Trunc: torch.trunc,
    rounding.Remainder: torch.remainder,
    rounding.Fmod: torch.fmod,
    rounding.RoundedDivide: lambda a, b, *, mode="floor": torch.div(a, b, rounding_mode=mode),
}
