"""The torch twins of the nn ops (see ops.py for the contract every twin keeps)."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as TF

from minigrad.autograd import Function
from minigrad.nn import padding

NN_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}

# padding (F.pad's constant mode; the other modes are indexing, whose twin is GetItem's)
NN_TWINS.update({
    padding.ConstantPad: lambda x, *, pad, value: TF.pad(x, pad, mode="constant", value=value),
})
