"""Dropout, as torch.nn's dropout.py: its kernel DropoutOp (a random mask kept for backward),
`dropout` (inverted dropout) and the module Dropout."""

from __future__ import annotations

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.random import generator

from ._checks import _need_tensor
from .module import Module


class DropoutOp(Function):
    """Inverted dropout: y = x * m / (1 - p), m_i ~ Bernoulli(1 - p)     dx = g * m / (1 - p)

    The mask comes from the global generator (see `minigrad.manual_seed`) and is kept for
    backward. Scaling by 1 / (1 - p) at training time keeps E[y] = x, so evaluation needs
    no rescaling. The mask is a constant of the graph: the backward is linear in g, and its
    second derivative with respect to x is 0.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, x, out):
        """The multipliers m / (1 - p) forward drew, as a constant Tensor (no gradient)."""
        return (Tensor._make(ctx.saved[0], None),)

    @staticmethod
    def forward(ctx, x, *, p=0.5):
        keep = generator().random(x.shape, dtype=np.float32) >= p
        scaled = keep * x.dtype.type(1.0 / (1.0 - p))  # m / (1 - p), in x's dtype
        ctx.save_for_backward(scaled)
        return x * scaled

    @staticmethod
    def backward(ctx, g):
        (scaled,) = ctx.saved
        return g * scaled


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability p and scale the rest by 1 / (1 - p);
    the identity when not training or p == 0. p must lie in [0, 1)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1), not {p}")
    _need_tensor("dropout", "the input", input)
    if not training or p == 0.0:
        return input
    return DropoutOp.apply(input, p=p)


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
