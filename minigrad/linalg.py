"""`minigrad.linalg`, after `torch.linalg`: for now the vector norms.

    import minigrad as mg
    mg.linalg.vector_norm(mg.tensor([3.0, 4.0]))             # tensor(5.)
    mg.linalg.vector_norm(x, ord=float("inf"), dim=-1)       # the largest |x| of each row
"""

from __future__ import annotations

from typing import Any

from . import autograd  # noqa: F401  (loaded first: tensor.py needs it loaded)
from .ops.statistics import VectorNorm, norm_order
from .tensor import Tensor


def vector_norm(x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """The vector norm (sum_i |x_i|^ord)^(1/ord) over `dim` (None or (): every element), as
    torch.linalg.vector_norm: ord 0 counts the nonzero elements, inf and -inf take the largest
    and smallest |x_i|, other ord (negative ones too) use the formula. `dtype` casts x first.
    The gradients are in `minigrad.ops.statistics.VectorNorm`.
    """
    x = x if isinstance(x, Tensor) else Tensor(x)
    if isinstance(ord, str):
        raise TypeError(f"vector_norm: ord must be a number, not {ord!r} (torch.norm takes 'fro')")
    x = x if dtype is None else x.to(dtype)
    return VectorNorm.apply(x, ord=norm_order(ord, dim, "vector_norm"), dim=dim, keepdim=keepdim)


__all__ = ["vector_norm"]
