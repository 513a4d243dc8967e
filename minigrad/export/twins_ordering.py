"""The torch twins of the ordering ops (ops/ordering.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Any, Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import ordering


def _gather_sorted(x: torch.Tensor, *, indices: Any, dim: int) -> torch.Tensor:
    """The values of sort / topk; a 0-d input is one element along dim 0, as in minigrad."""
    idx = torch.as_tensor(indices, device=x.device)
    if x.ndim == 0:
        return x.reshape(1)[idx.reshape(-1)].reshape(idx.shape)
    return torch.take_along_dim(x, idx, dim)


ORDERING_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    ordering.Prod: lambda x, *, dim=None, keepdim=False: (
        torch.prod(x) if dim is None else torch.prod(x, dim, keepdim=keepdim)),
    ordering.CumSum: lambda x, *, dim: torch.cumsum(x, dim),
    ordering.CumProd: lambda x, *, dim: torch.cumprod(x, dim),
    ordering.LogCumSumExp: lambda x, *, dim: torch.logcumsumexp(x, dim),
    ordering.GatherSorted: _gather_sorted,
}
