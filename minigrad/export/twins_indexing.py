"""The torch twins of the indexing ops (see ops.py for the contract every twin keeps).

Indices are options (numpy int arrays); torch wants them as int64 tensors. A 0-d input counts
as one element along dim 0, as in minigrad; the twins reshape it to 1-d where torch would not.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from minigrad.autograd import Function
from minigrad.ops import indexing


def _long(index: Any, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(index, dtype=np.int64), device=device)


def _used(src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """src cut to index's shape: minigrad's scatter reads only those elements (torch's
    scatter_add backward needs them to agree)."""
    return src[tuple(slice(0, n) for n in index.shape)] if src.dim() else src


def _gather(x: torch.Tensor, *, dim: int, index: Any) -> torch.Tensor:
    return torch.gather(x, dim, _long(index, x.device))


def _scatter(x: torch.Tensor, src: torch.Tensor, *, dim: int, index: Any) -> torch.Tensor:
    idx = _long(index, x.device)
    return torch.scatter(x, dim, idx, _used(src, idx))


def _scatter_add(x: torch.Tensor, src: torch.Tensor, *, dim: int, index: Any) -> torch.Tensor:
    idx = _long(index, x.device)
    return torch.scatter_add(x, dim, idx, _used(src, idx))


def _scatter_reduce(x: torch.Tensor, src: torch.Tensor, *, dim: int, index: Any, reduce: str,
                    include_self: bool) -> torch.Tensor:
    idx = _long(index, x.device)
    return torch.scatter_reduce(x, dim, idx, _used(src, idx), reduce, include_self=include_self)


def _index_select(x: torch.Tensor, *, dim: int, index: Any) -> torch.Tensor:
    return torch.index_select(x, dim, _long(index, x.device).reshape(-1))


def _index_add(x: torch.Tensor, source: torch.Tensor, *, dim: int, index: Any,
               alpha: float = 1) -> torch.Tensor:
    return torch.index_add(x, dim, _long(index, x.device).reshape(-1), source, alpha=alpha)


def _index_fill(x: torch.Tensor, fill: torch.Tensor | None = None, *, dim: int, index: Any,
                value: float | None = None) -> torch.Tensor:
    """Fill the slices at `index` with `value` (a number) or `fill` (a 0-d tensor, which then
    gets a gradient)."""
    idx = _long(index, x.device).reshape(-1)
    return torch.index_fill(x, dim, idx, value if fill is None else fill)


def _torch_index(part: Any, device: torch.device) -> Any:
    if isinstance(part, tuple):
        return tuple(_torch_index(p, device) for p in part)
    if isinstance(part, np.ndarray):
        return torch.as_tensor(part if part.dtype == np.bool_ else part.astype(np.int64), device=device)
    if isinstance(part, torch.Tensor) and part.dtype != torch.bool:
        return part.long()
    return part


def _index_put(y: torch.Tensor, value: torch.Tensor, *, steps: tuple) -> torch.Tensor:
    """y[index] = value on a copy (the steps in turn, as minigrad's IndexPut), so the twin is a
    function and torch's autograd gives both gradients."""
    out = y.clone()
    view = out
    for step in steps[:-1]:
        view = view[_torch_index(step, y.device)]
    view[_torch_index(steps[-1], y.device)] = value.to(y.dtype)
    return out


def _masked_fill(x: torch.Tensor, mask: torch.Tensor, fill: torch.Tensor | None = None, *,
                 value: float | None = None) -> torch.Tensor:
    """Put `value` (a number) or `fill` (a 0-d tensor, which then gets a gradient) where mask is True."""
    if fill is None:
        return x.masked_fill(mask.bool(), value)
    return torch.where(mask.bool(), fill, x)


INDEXING_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    indexing.Where: lambda cond, a, b: torch.where(cond.bool(), a, b),
    indexing.MaskedFill: _masked_fill,
    indexing.Gather: _gather,
    indexing.Scatter: _scatter,
    indexing.ScatterAdd: _scatter_add,
    indexing.ScatterReduce: _scatter_reduce,
    indexing.IndexSelect: _index_select,
    indexing.IndexAdd: _index_add,
    indexing.IndexFill: _index_fill,
    indexing.IndexPut: _index_put,
}
