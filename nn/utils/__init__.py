"""Gradient clipping where PyTorch keeps it (`torch.nn.utils`): `clip_grad_norm_`, the same
function as `minigrad.optim.clip_grad_norm_`, and `clip_grad_value_`; and `nn.utils.rnn`, the
padding and packing of variable-length sequences."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from minigrad import Tensor
from minigrad.optim import clip_grad_norm_

from . import rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient element, in place, into [-clip_value, clip_value].

        g = min(max(g, -clip_value), clip_value)

    Unlike `clip_grad_norm_`, this changes the direction of the update. NaN stays NaN, and a
    negative clip_value sets every element to clip_value, as in PyTorch. Parameters whose grad
    is None are ignored.

    Args:
        parameters: a tensor or an iterable of tensors (e.g. `model.parameters()`).
        clip_value: the largest absolute value a gradient element keeps.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    clip_value = float(clip_value)
    for p in params:
        if p._grad is not None:
            np.clip(p._grad, -clip_value, clip_value, out=p._grad)
