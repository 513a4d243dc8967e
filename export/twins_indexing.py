"""The torch twins of the indexing ops (see ops.py for the contract every twin keeps)."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function

INDEXING_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {}
