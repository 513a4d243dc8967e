"""How `draw_graph(expand_fused=True)` draws the attention kernels: as the steps of
`attention_reference` they fuse (q k^T, the scale, the mask, the softmax, dropout, @ v), so the
drawing of a fused model reads like the lecture's pipeline. `register_attention_drawings`
hands them to viz.
"""

from __future__ import annotations

import numpy as np

from minigrad import Function
from minigrad.memory import KEEP_VALUES
from minigrad.viz import register_pipeline

from .helpers import _scale_name
from .one_block import Attention
from .packed import PackedAttention
from .tiled import TiledAttention


def attention_pipeline(node: Function) -> list[tuple]:
    """The steps a fused attention node computes, as `draw_graph(expand_fused=True)` draws
    them: (op, inputs, result, result shape, result values) each; an input is the index of one
    of the node's inputs (q 0, k 1, v 2, bias 3) or the name of an earlier result."""
    q, k, v = (t.shape for t in node.inputs[:3])
    steps = _attention_steps(node, q, k, v, 0, 1, 2, 3 if len(node.inputs) > 3 else None)
    values = {}
    if _small_inputs(node):
        values = _attention_values(node, node.inputs[0]._data, node.inputs[1]._data,
                                   node.inputs[3]._data if len(node.inputs) > 3 else None)
    return [step + (values.get(step[2]),) for step in steps]


def _small_inputs(node: Function) -> bool:
    """Whether the graph still holds the node's inputs: small ones are kept after backward
    (see `Released`), and only they are worth printing."""
    return all(getattr(t, "values_kept", True) and t._data.size <= KEEP_VALUES for t in node.inputs)


def _attention_values(node: Function, q: np.ndarray, k: np.ndarray, bias) -> dict[str, np.ndarray]:
    """The values of the steps' results, recomputed from q and k (the kernel keeps none of them
    once backward has run), for `show_values`: q k^T, the scores (plus bias) and, without
    dropout, the weights: masked with the node's small mask or its causal flag (a mask of more
    than SMALL_MASK entries is not kept: then the weights are left out), each row a softmax over
    the keys (0 where every key is masked, as the kernel gives)."""
    values = {"q k^T": q @ np.swapaxes(k, -1, -2)}
    values["scores"] = scores = values["q k^T"] * node.scale
    if bias is not None:
        values["scores + bias"] = scores = scores + bias
    drawn = node.drawing
    allowed = drawn.small_mask
    if allowed is None and drawn.causal:
        allowed = np.tri(scores.shape[-2], scores.shape[-1], dtype=bool)
    if drawn.dropout_p or (drawn.masked and allowed is None):
        return values
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    if not (np.isnan(scores).any() or np.isposinf(scores).any()):
        m = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(m), m, 0))
        total = e.sum(axis=-1, keepdims=True)
        values["weights"] = e / np.where(total == 0, 1, total)
    return values


def packed_attention_pipeline(node: Function) -> list[tuple]:
    """`attention_pipeline` for `PackedAttention`: q, k and v are cut from qkv (input 0) and
    split into heads first, and the heads are merged at the end; bias, if any, is input 1."""
    B, T, E3 = node.inputs[0].shape
    E, H = E3 // 3, node.heads
    heads = (B, H, T, E // H)
    steps = [(f"Take {x}, split into {H} heads", [0], x, heads) for x in ("q", "k", "v")]
    steps += _attention_steps(node, heads, heads, heads, "q", "k", "v", 1 if len(node.inputs) > 1 else None)
    steps.append(("Merge heads", ["attention output"], "merged", (B, T, E)))
    values = {}
    if _small_inputs(node):
        q, k, v = node.inputs[0]._data.reshape(B, T, 3, H, E // H).transpose(2, 0, 3, 1, 4)  # (B, H, T, D)
        values = _attention_values(node, q, k, node.inputs[1]._data if len(node.inputs) > 1 else None)
        values.update(q=q, k=k, v=v)
    return [step + (values.get(step[2]),) for step in steps]


def _attention_steps(node: Function, q: tuple, k: tuple, v: tuple, q_in, k_in, v_in, bias_in) -> list[tuple]:
    lead = np.broadcast_shapes(q[:-2], k[:-2], v[:-2])
    scores = lead + (q[-2], k[-2])
    steps = [("MatMul q @ k^T", [q_in, k_in], "q k^T", scores),
             (f"Mul by {_scale_name(node.scale, q[-1])}", ["q k^T"], "scores", scores)]
    last = "scores"
    if bias_in is not None:
        steps.append(("Add bias", [last, bias_in], "scores + bias", scores))
        last = "scores + bias"
    if node.drawing.masked:
        steps.append(("MaskedFill -inf where not allowed", [last], "masked scores", scores))
        last = "masked scores"
    steps.append(("Softmax over keys", [last], "weights", scores))
    last = "weights"
    if node.drawing.dropout_p:
        steps.append(("Dropout", [last], "dropped weights", scores))
        last = "dropped weights"
    steps.append(("MatMul weights @ v", [last, v_in], "attention output", lead + (q[-2], v[-1])))
    return steps


def register_attention_drawings() -> None:
    """Tell viz how to draw the three attention kernels (`minigrad.nn.attention` calls this once,
    on import)."""
    register_pipeline(Attention, attention_pipeline)
    register_pipeline(TiledAttention, attention_pipeline)
    register_pipeline(PackedAttention, packed_attention_pipeline)
