"""Flatten and Unflatten, as torch.nn's flatten.py: modules that reshape a range of
dimensions."""

from __future__ import annotations

import math
from typing import Sequence

from minigrad import Tensor
from minigrad.errors import ShapeError

from .module import Module


class Flatten(Module):
    """Merge the axes start_dim..end_dim into one (by default all but the batch axis).

    Shape:
        - Input: (*, S_start, ..., S_end, *)
        - Output: (*, S_start * ... * S_end, *)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis `dim` into `unflattened_size` (one entry may be -1), Flatten's inverse.

    Shape:
        - Input: (*, S_dim, *), S_dim the product of unflattened_size
        - Output: (*, U_1, ..., U_n, *)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]):
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        d, sizes = (self.dim + input.ndim if self.dim < 0 else self.dim), self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        if not 0 <= d < input.ndim or sizes.count(-1) > 1 or (
                input.shape[d] != known if -1 not in sizes else known == 0 or input.shape[d] % known):
            raise ShapeError(f"Unflatten: cannot split axis {self.dim} of an input of shape {input.shape} "
                             f"into {sizes} (their product must equal that axis' size; at most one -1)")
        return input.reshape(input.shape[:d] + sizes + input.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
