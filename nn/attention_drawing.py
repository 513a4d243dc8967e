"""How `draw_graph(expand_fused=True)` draws the attention kernels: as the steps of
`attention_reference` they fuse (q k^T, the scale, the mask, the softmax, dropout, @ v), so the
drawing of a fused model reads like the lecture's pipeline. `register_attention_drawings`
hands them to viz.
"""

from __future__ import annotations

import numpy as np

from minigrad import Function
from minigrad.viz import register_pipeline

from .functional_attention import _scale_name
from .fused_attention import Attention
from .packed_attention import PackedAttention
from .tiled_attention import TiledAttention


def attention_pipeline(node: Function) -> list[tuple]:
    """The steps a fused attention node computes, as `draw_graph(expand_fused=True)` draws
    them: (op, inputs, result, result shape) each; an input is the index of one of the node's
    inputs (q 0, k 1, v 2, bias 3) or the name of an earlier result."""
    q, k, v = (t.shape for t in node.inputs[:3])
    return _attention_steps(node, q, k, v, 0, 1, 2, 3 if len(node.inputs) > 3 else None)


def packed_attention_pipeline(node: Function) -> list[tuple]:
    """`attention_pipeline` for `PackedAttention`: q, k and v are cut from qkv (input 0) and
    split into heads first, and the heads are merged at the end; bias, if any, is input 1."""
    B, T, E3 = node.inputs[0].shape
    E, H = E3 // 3, node.heads
    heads = (B, H, T, E // H)
    steps = [(f"Take {x}, split into {H} heads", [0], x, heads) for x in ("q", "k", "v")]
    steps += _attention_steps(node, heads, heads, heads, "q", "k", "v", 1 if len(node.inputs) > 1 else None)
    steps.append(("Merge heads", ["attention output"], "merged", (B, T, E)))
    return steps


def _attention_steps(node: Function, q: tuple, k: tuple, v: tuple, q_in, k_in, v_in, bias_in) -> list[tuple]:
    lead = np.broadcast_shapes(q[:-2], k[:-2], v[:-2])
    scores = lead + (q[-2], k[-2])
    steps = [("MatMul q @ k^T", [q_in, k_in], "q k^T", scores),
             (f"Mul by {_scale_name(node.scale, q[-1])}", ["q k^T"], "scores", scores)]
    last = "scores"
    if bias_in is not None:
        steps.append(("Add bias", [last, bias_in], "scores + bias", scores))
        last = "scores + bias"
    if getattr(node, "masked", False):
        steps.append(("MaskedFill -inf where not allowed", [last], "masked scores", scores))
        last = "masked scores"
    steps.append(("Softmax over keys", [last], "weights", scores))
    last = "weights"
    if getattr(node, "dropout_p", 0.0):
        steps.append(("Dropout", [last], "dropped weights", scores))
        last = "dropped weights"
    steps.append(("MatMul weights @ v", [last, v_in], "attention output", lead + (q[-2], v[-1])))
    return steps


def register_attention_drawings() -> None:
    """Tell viz how to draw the three attention kernels (`minigrad.nn` calls this once)."""
    register_pipeline(Attention, attention_pipeline)
    register_pipeline(TiledAttention, attention_pipeline)
    register_pipeline(PackedAttention, packed_attention_pipeline)
