"""The torch twins of the reductions and the softmaxes (ops/reduce.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from minigrad.autograd import Function
from minigrad.ops import reduce


def _dims(x: torch.Tensor, dim: Any) -> tuple[int, ...]:
    """minigrad's `dim` (None, int or tuple) as a tuple of axes; None and () mean every axis."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return tuple(range(x.dim()))
    return (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)


def _reduce(fn: Callable) -> Callable:
    """A reduction over minigrad's dims; over the no axes of a 0-d x every reduction but var
    leaves x unchanged."""
    def op(x: torch.Tensor, *, dim: Any = None, keepdim: bool = False, **kw: Any) -> torch.Tensor:
        dims = _dims(x, dim)
        if not dims:  # a 0-d x
            if fn in (torch.var, torch.std):  # squared deviations (0) over n - correction = 1 - c
                zero = x - x
                var = zero * zero / torch.tensor(float(max(1 - kw["correction"], 0)), dtype=x.dtype)
                return var if fn is torch.var else var.sqrt()
            return x + 0  # a new tensor, as the op's output
        return fn(x, dim=dims, keepdim=keepdim, **kw)
    return op


def _softmax(x: torch.Tensor, *, dim: int = -1) -> torch.Tensor:
    """softmax with minigrad's edge rule: a row that is all -inf gives zeros (torch: NaN)."""
    m = x.detach().amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros((), dtype=m.dtype, device=m.device))
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones((), dtype=s.dtype, device=s.device), s)


REDUCE_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    reduce.Sum: _reduce(torch.sum),
    reduce.Mean: _reduce(torch.mean),
    reduce.Max: _reduce(torch.amax),  # tied maxima share the gradient in both
    reduce.Min: _reduce(torch.amin),
    reduce.Var: _reduce(torch.var),
    reduce.Std: _reduce(torch.std),  # gradient 0 on a constant slice in both
    reduce.LogSumExp: _reduce(torch.logsumexp),
    reduce.SoftmaxOp: _softmax,
    reduce.LogSoftmaxOp: lambda x, *, dim=-1: torch.log_softmax(x, dim),
}
