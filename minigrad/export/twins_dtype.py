"""The torch twins of the dtype casts (ops/dtype.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from minigrad.autograd import Function
from minigrad.ops import dtype


def torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a numpy dtype (float64 -> torch.float64, ...)."""
    return torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype


DTYPE_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    dtype.Cast: lambda x, *, dtype: x.to(torch_dtype(dtype)),
}
