"""The gradients a drawing shows on intermediate tensors after backward, which the engine
frees as it goes: small ones are kept on small graphs without asking, norms inside
`keep_grads()`. Both are observers of minigrad.hooks: the engine knows nothing of drawings.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from .. import hooks
from ..autograd import Function
from ._names import norm

# On graphs of at most KEEP_GRAD_NODES nodes, each output gradient of at most KEEP_GRAD
# elements is kept on its node (`grad_out`), so that a drawing after backward shows it, as
# micrograd's do; a large graph skips this bookkeeping (see hooks.observe_every_backward).
KEEP_GRAD, KEEP_GRAD_NODES = 64, 256


def _keep_small_grad(node: Function, g: np.ndarray, grads: Any) -> None:
    if g.size <= KEEP_GRAD:
        node.grad_out = g.copy()  # a copy: g may be the caller's array, changed later


hooks.observe_every_backward(_keep_small_grad, max_nodes=KEEP_GRAD_NODES)


def _keep_norm(node: Function, g: np.ndarray, grads: Any) -> None:
    node.grad_norm = norm(g)


def keep_grads() -> contextlib.AbstractContextManager:
    """Keep, on every node that a backward pass inside the block goes through (in this
    thread), the norm of the gradient of its output (`node.grad_norm`), so that `draw_graph`
    shows `|grad|` on every intermediate tensor of a large graph too. (Gradients of up to 64
    elements are kept without it, on graphs of up to 256 ops.) Costs one pass over each
    gradient.

    Example:
        >>> with keep_grads():
        ...     loss.backward()
        >>> draw_graph(loss, model=model)
    """
    return hooks.observe_backward(_keep_norm)
