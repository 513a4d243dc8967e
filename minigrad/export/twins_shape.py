"""The torch twins of the shape ops (ops/shape.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Any, Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import shape


def _index(index: Any, device: torch.device) -> Any:
    """minigrad's GetItem index (numpy's rules) as torch reads it. Integer arrays become int64;
    with an index array present, numpy broadcasts an integer with the arrays while torch
    selects it first, so such integers go in as one-element arrays; negative steps refused."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = any(isinstance(p, torch.Tensor) and p.dim() for p in parts)
    out = []
    for p in parts:
        if isinstance(p, torch.Tensor) and p.dtype != torch.bool:
            p = p.long()
        elif isinstance(p, int) and not isinstance(p, bool) and arrays:
            p = torch.tensor([p], device=device)
        elif isinstance(p, slice) and p.step is not None and p.step < 0:
            raise ValueError(f"getitem: torch has no negative slice steps ({p}); use flip in the model")
        out.append(p)
    return tuple(out) if isinstance(index, tuple) else out[0]


def _put_at(g: torch.Tensor, *, index: Any, shape: Any) -> torch.Tensor:
    """Zeros with g added at index: the adjoint of x[index], as torch's own backward of it
    computes it (so repeated indices accumulate), differentiable in g."""
    with torch.enable_grad():
        z = torch.zeros(tuple(shape), dtype=g.dtype, device=g.device, requires_grad=True)
        return torch.autograd.grad(z[_index(index, g.device)], z, g, create_graph=True)[0]


SHAPE_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    shape.Reshape: lambda x, *, shape: x.reshape(shape),
    shape.Permute: lambda x, *, dims: torch.permute(x, tuple(dims)),
    shape.Expand: lambda x, *, shape: torch.broadcast_to(x, tuple(shape)),
    shape.GetItem: lambda x, *, index: x[_index(index, x.device)],
    shape.PutAt: _put_at,
    shape.Cat: lambda *xs, dim=0: torch.cat(xs, dim),
    shape.Stack: lambda *xs, dim=0: torch.stack(xs, dim),
}
