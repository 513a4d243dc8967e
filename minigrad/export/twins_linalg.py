"""The torch twins of the matrix products and einsum (ops/linalg.py).

See ops.py for the contract every twin keeps."""

from __future__ import annotations

from typing import Callable

import torch

from minigrad.autograd import Function
from minigrad.ops import linalg

LINALG_TWINS: dict[type[Function], Callable[..., torch.Tensor]] = {
    linalg.MatMul: torch.matmul,
    linalg.Einsum: lambda *xs, equation: torch.einsum(equation, *xs),
}
