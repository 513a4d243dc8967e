"""The torch twins of the statistics ops (see ops.py for the contract every twin keeps)."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function

STATISTICS_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}
