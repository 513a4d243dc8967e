"""Dropout, as torch.nn's dropout.py: `dropout` (inverted dropout) and the module Dropout."""

from __future__ import annotations

from minigrad import Tensor

from . import kernels
from ._checks import _need_tensor
from .module import Module


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability p and scale the rest by 1 / (1 - p);
    the identity when not training or p == 0. p must lie in [0, 1)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1), not {p}")
    _need_tensor("dropout", "the input", input)
    if not training or p == 0.0:
        return input
    return kernels.Dropout.apply(input, p=p)


class Dropout(Module):
    """Inverted dropout in training (zero with probability p, scale the rest by 1 / (1 - p));
    the identity in evaluation (`model.eval()`).

    Args:
        p: probability of zeroing an element, in [0, 1).

    Shape:
        - Input: any shape (*)
        - Output: the same shape as the input
    """

    def __init__(self, p: float = 0.5):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must lie in [0, 1), not {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
