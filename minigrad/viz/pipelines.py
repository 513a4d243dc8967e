"""How `draw_graph(expand_fused=True)` draws a fused kernel: as the steps it fuses, which the
layer that defines the kernel registers here (`register_pipeline`), so viz names no kernel.

A pipeline is a function of the node, returning its steps: (op, inputs, result name, result
shape) each, where an input is the index of one of the node's inputs or the name of an earlier
step's result; the last step's result is the node's own output. A step may add a fifth item, the
result's values (an array, or None when they cannot be known), which `show_values` prints.
"""

from __future__ import annotations

from typing import Callable

from minigrad.autograd import Function

Pipeline = Callable[[Function], list]

_PIPELINES: dict[type[Function], Pipeline] = {}


def register_pipeline(op: type[Function], pipeline: Pipeline) -> None:
    """Draw nodes of `op` (a Function subclass) as the steps `pipeline(node)` returns, when
    `draw_graph(..., expand_fused=True)` is asked to. Registering again replaces the pipeline."""
    if not (isinstance(op, type) and issubclass(op, Function)):
        raise TypeError(f"register_pipeline: op must be a Function subclass, not {op!r}")
    if not callable(pipeline):
        raise TypeError(f"register_pipeline: pipeline must be callable (node -> steps), not {pipeline!r}")
    _PIPELINES[op] = pipeline


def pipeline_of(op: type[Function]) -> Pipeline | None:
    """The pipeline registered for `op`, or None (the node is drawn as one op)."""
    return _PIPELINES.get(op)
