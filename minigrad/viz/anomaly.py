"""`detect_anomaly`: stop at the first op that makes a NaN or an infinity, forward or backward.

While active it checks every op's output after forward and every gradient after backward,
and raises `AnomalyError` naming the op, the phase, the module it ran in and the input shapes.
Outside the block it costs nothing: the engine only tests whether its hook lists are empty
(minigrad.hooks).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import numpy as np

from .. import grad_mode, hooks
from ..autograd import Function
from ._names import Names, shape_text

# Ops whose infinities are asked for: `masked_fill(~mask, -inf)` before a softmax is how
# attention masks, so an inf it writes is not an anomaly (a NaN still is).
INF_ALLOWED = frozenset({"MaskedFill"})


class AnomalyError(FloatingPointError):
    """An op produced NaN or Inf while `detect_anomaly()` was active.

    Attributes:
        op: the op's name (`Log`).
        phase: "forward" or "backward".
        module: the module the op ran in (`blocks.0.mlp (MLP)`), "" outside any module.
        input_shapes: shapes of the op's inputs.
    """

    def __init__(self, message: str, op: str, phase: str, module: str, input_shapes: list):
        super().__init__(message)
        self.op, self.phase, self.module, self.input_shapes = op, phase, module, input_shapes


class detect_anomaly(contextlib.ContextDecorator):
    """Context manager (and decorator) that raises at the first NaN or Inf an op makes.

    Forward: an op is flagged when its output holds a NaN and none of its inputs did, or an
    Inf and none of its inputs held a NaN or Inf, so the error names the op that made the bad
    value, not every op it flowed through. `log(0) = -inf` is flagged; the `-inf` that
    `masked_fill` writes for attention masks is not. Backward: an op is flagged when a
    gradient it returns holds a NaN or Inf; a non-finite gradient arriving at a node (an
    overflow where gradients are summed, or a bad seed) is flagged there.

    Checking costs a pass over every array, so use it to find a bug, not while training.

    Args:
        model: the model, to name modules by path (`blocks.0.attn`); without it paths are
            relative to the outermost module the op ran in.

    Raises:
        AnomalyError: a `FloatingPointError` naming the op, phase, module and input shapes.

    Example:
        >>> with detect_anomaly():
        ...     loss = model(x).log().sum()    # AnomalyError: Log made nan in forward ...
    """

    def __init__(self, model: Any = None):
        self.model = model
        self._entries: list[contextlib.ExitStack] = []  # one per open `with` (it may nest)

    def __enter__(self) -> detect_anomaly:
        names = Names(self.model)
        entry = contextlib.ExitStack()
        entry.enter_context(hooks.observe_forward(functools.partial(_check_forward, names=names)))
        entry.enter_context(hooks.observe_backward(functools.partial(_check_backward, names=names)))
        self._entries.append(entry)
        return self

    def __exit__(self, *exc: object) -> None:
        # Remove exactly the hooks this entry added, even when the block raised.
        self._entries.pop().close()


def _bad(a: np.ndarray) -> tuple[bool, bool]:
    """(has NaN, has Inf) for a float array; (False, False) for any other."""
    if a.dtype.kind not in "fc" or np.isfinite(a).all():
        return False, False
    return bool(np.isnan(a).any()), bool(np.isinf(a).any())


def _check_forward(ctx: Function, inputs: tuple, out: np.ndarray, names: Names) -> None:
    nan, inf = _bad(out)
    if not (nan or inf):
        return
    came_nan = came_inf = False
    for t in inputs:
        n, i = _bad(t._data)
        came_nan, came_inf = came_nan or n, came_inf or i
    new_nan = nan and not came_nan
    new_inf = inf and not (came_nan or came_inf) and ctx.name not in INF_ALLOWED
    if new_nan or new_inf:
        # ctx.scope is set only after the checks run, so ask the engine where we are now.
        _raise(ctx, inputs, out, "forward", grad_mode.current_scope(), names,
               f"made {_what(out)} in its output from inputs that had none")


def _check_backward(node: Function, g: np.ndarray, grads: tuple, names: Names) -> None:
    if any(_bad(g)):
        _raise(node, node.inputs, g, "backward", node.scope, names,
               f"received a gradient with {_what(g)} (from summing the gradients of its uses, "
               "or from the gradient passed to backward)")
    for i, gi in enumerate(grads):
        if gi is not None and any(_bad(gi)):
            _raise(node, node.inputs, gi, "backward", node.scope, names,
                   f"returned {_what(gi)} in the gradient for input {i} from a finite "
                   f"upstream gradient {shape_text(g.shape, g.dtype)}")


def _what(a: np.ndarray) -> str:
    finite = np.isfinite(a)
    kinds = [k for k, present in (("nan", np.isnan(a).any()), ("inf", np.isinf(a).any())) if present]
    return f"{' and '.join(kinds)} ({a.size - int(finite.sum())} of {a.size} elements)"


def _raise(node: Function, inputs: tuple, a: np.ndarray, phase: str, scope: tuple, names: Names,
           what: str) -> None:
    module = names.describe_scope(scope)
    shapes = [t.shape for t in inputs]
    where = f"in module {module}" if module else "outside any module"
    ins = ", ".join(shape_text(t.shape, t.dtype) for t in inputs) or "none"
    raise AnomalyError(
        f"detect_anomaly: {node.name} ({phase}) {what}; {where}; input shapes: {ins}",
        node.name, phase, module, shapes,
    )
