"""Multi-head self-attention on packed projections (`PackedAttention`), writing the KV cache of
generation (`KVCache`, cache.py) when given one.

`packed_forward` and `packed_backward` are plain numpy functions: they cut q, k and v out of
one (B, T, 3E) array, split the heads, run the one-block kernel (`attention_forward`,
one_block.py) or the tiled one (`tiled_forward`, tiled.py), as `use_tiled` (dispatch.py) says,
and merge the heads again; backward undoes the same reshapes around the kernel's backward.
"""

from __future__ import annotations

import numpy as np

from minigrad import Function

from .cache import KVCache
from .dispatch import use_tiled
from .helpers import Drawing, _causal
from .one_block import Attention, attention_backward, attention_composed, attention_forward
from .tiled import TiledAttention, tiled_backward, tiled_forward


def packed_forward(qkv, bias=None, *, heads: int, allowed=None, causal: bool = False, scale: float,
                   dropout_p: float = 0.0, weights_out: list | None = None,
                   cache: KVCache | None = None) -> tuple[np.ndarray, tuple, object]:
    """Multi-head attention on qkv (B, T, 3E) -> (B, T, E); returns (out, saved, tiles): saved
    is the kernel's, tiles the tiled kernel's grid (None when the one-block kernel ran).

        q, k, v = split(qkv, 3, dim=-1)               each (B, T, E)
        q_h = q.reshape(B, T, H, D).transpose(1, 2)   the same for k and v: (B, H, T, D)
        o = attention(q_h, k_h, v_h)                  (B, H, T, D), tiled when long
        out = o.transpose(1, 2).reshape(B, T, E)      the heads side by side again

    With a cache, k_h and v_h are first written after the cached keys and values, and q_h
    attends to all S = n + T of them; is_causal then allows key j for query i when
    j <= i + n (n = the cached length), the one causal rule for both kernels.
    """
    B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    q, k, v = qkv.reshape(B, T, 3, heads, E // heads).transpose(2, 0, 3, 1, 4)  # (B, H, T, D) views
    offset = 0
    if cache is not None:
        offset = cache.length
        k, v = cache.append(k, v)  # (B, H, S, D)
    S = k.shape[2]
    if use_tiled(B * heads * T * S, T, S, dropout_p, weights_out is not None):
        o, saved, tiles = tiled_forward(q, k, v, bias, allowed, offset if causal else None, scale=scale)
    else:
        if causal and offset < S - 1:  # else every query sees every key: no mask to apply
            allowed = _causal(T, S, offset) if allowed is None else allowed & _causal(T, S, offset)
        o, saved = attention_forward(q, k, v, bias, allowed, scale=scale, dropout_p=dropout_p,
                                     weights_out=weights_out)
        tiles = None
    return o.transpose(0, 2, 1, 3).reshape(B, T, E), saved, tiles


def packed_backward(g: np.ndarray, saved: tuple, tiles: object, heads: int, scale: float,
                    needs: tuple) -> tuple:
    """The gradients of `packed_forward` (without a cache): the kernel's backward with the
    reshapes undone; dqkv packs dq, dk and dv the way qkv held them. `needs` flags qkv (and
    the bias, when there was one)."""
    B, T, E = g.shape
    kernel_needs = (needs[0],) * 3 + tuple(needs[1:])
    g_heads = g.reshape(B, T, heads, E // heads).transpose(0, 2, 1, 3)  # (B, H, T, D)
    if tiles is not None:
        grads = tiled_backward(g_heads, saved, tiles, scale, kernel_needs)
    else:
        grads = attention_backward(g_heads, saved, scale, kernel_needs)
    dqkv = None
    if needs[0]:
        dqkv = np.empty((B, T, 3, heads, E // heads), grads[0].dtype)
        for i in range(3):
            dqkv[:, :, i] = grads[i].transpose(0, 2, 1, 3)
        dqkv = dqkv.reshape(B, T, 3 * E)
    return (dqkv,) + tuple(grads[3:])


class PackedAttention(Function):
    """Multi-head attention on packed projections: qkv (B, T, 3E) -> (B, T, E).

    qkv holds q, k and v side by side, as one Linear with the three projection weights stacked
    computes them; each is E = H * D features, H heads of D. The op is exactly splitting, the
    attention of each head, and merging (`packed_forward`), and its backward is the kernel's
    with the reshapes undone (`packed_backward`). One node instead of eight reshape and
    transpose nodes around one, and with it one projection matmul instead of three
    (`packed_self_attention`). Options as in `Attention`, plus `heads`, `causal` (is_causal,
    passed to the tiled kernel as its diagonal) and, for generation, `cache` (a `KVCache`;
    no gradient then: the cache is written in place). A float mask is the optional second input.
    """

    @staticmethod
    def forward(ctx, qkv, bias=None, *, heads, allowed=None, causal=False, scale, dropout_p=0.0,
                weights_out=None, cache=None):
        out, saved, tiles = packed_forward(qkv, bias, heads=heads, allowed=allowed, causal=causal,
                                           scale=scale, dropout_p=dropout_p, weights_out=weights_out,
                                           cache=cache)
        ctx.save_for_backward(*saved)
        ctx.tiles, ctx.heads, ctx.scale = tiles, heads, scale
        ctx.allowed, ctx.causal, ctx.cached = allowed, causal, cache is not None
        ctx.drawing = Drawing.of(allowed, causal=causal, dropout_p=dropout_p,
                                 kernel=Attention if tiles is None else TiledAttention)
        return out

    @staticmethod
    def reference(ctx, qkv, bias=None):
        """The composition this kernel computes, for backward(create_graph=True): the split into
        heads, the one-block math (`attention_composed`, with the dropout multipliers the forward
        drew) and the merge."""
        if ctx.cached:
            raise RuntimeError("backward(create_graph=True): PackedAttention with a KV cache has no "
                               "higher-order gradients (the cache is written in place, so the keys and "
                               "values it attended to are not inputs of the graph)")
        B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
        parts = qkv.reshape(B, T, 3, ctx.heads, E // ctx.heads).permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
        allowed = ctx.allowed
        if ctx.causal:
            allowed = _causal(T, T) if allowed is None else allowed & _causal(T, T)
        keep = ctx.saved[4] if ctx.tiles is None else None  # the tiled kernel has no dropout
        o = attention_composed(parts[0], parts[1], parts[2], bias, allowed, scale=ctx.scale, keep=keep)
        return o.permute(0, 2, 1, 3).reshape(B, T, E)

    @staticmethod
    def backward(ctx, g):
        return packed_backward(g, ctx.saved, ctx.tiles, ctx.heads, ctx.scale, ctx.needs_input_grad)
