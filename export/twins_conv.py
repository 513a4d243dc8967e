"""The torch twins of the convolution, pooling and batch-norm ops (see ops.py for the contract
every twin keeps)."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function

CONV_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}
