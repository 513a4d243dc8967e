"""The torch twins of the nn ops (see ops.py for the contract every twin keeps)."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function

NN_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}
