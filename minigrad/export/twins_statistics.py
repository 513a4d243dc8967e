"""The torch twins of the statistics ops (see ops.py for the contract every twin keeps)."""

from __future__ import annotations

from typing import Any, Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import statistics


def _median(x: torch.Tensor) -> torch.Tensor:
    """torch.median of all elements: the lower median, NaN if any; ties share the gradient."""
    return torch.median(x)


def _vector_norm(x: torch.Tensor, *, ord: float = 2, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    """torch.linalg.vector_norm; an empty tuple of dims means every axis in both libraries."""
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else dim
    return torch.linalg.vector_norm(x, ord, None if dim == () else dim, keepdim)


STATISTICS_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    statistics.Median: _median,
    statistics.VectorNorm: _vector_norm,
}
