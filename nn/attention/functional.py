"""Attention as functions: `attention_reference` (the lecture's three lines, composed from
Tensor ops: read it first), then the same computed by the kernels, `scaled_dot_product_attention`,
`tiled_attention` and `packed_self_attention`, all re-exported by `minigrad.nn.functional`.

    scores = q @ k^T * scale (+ mask)      weights = softmax(scores)      out = weights @ v

The mask rule (True = may attend) is stated in `minigrad.nn.attention`. The kernels, each a
Function over plain numpy forward and backward functions: `Attention` (one_block.py),
`TiledAttention` (tiled.py, for long sequences; `use_tiled`, dispatch.py, decides) and
`PackedAttention` (packed.py, q, k and v in one array, with the KV cache of generation, cache.py).
An open `nn.record_attention` gets the weights of each call (maps.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Function, Tensor, is_grad_enabled
from minigrad.errors import ShapeError

from .cache import KVCache
from .dispatch import use_tiled
from .helpers import _causal, _default_scale, _dropout_keep, _scale_name
from .maps import _record, _recorders
from .masks import check_float_mask, mask_dtype_error
from .one_block import Attention
from .packed import PackedAttention
from .tiled import BLOCK_K, BLOCK_Q, TiledAttention


def attention_reference(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | np.ndarray | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    need_weights: bool = False,
    mask: Tensor | np.ndarray | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Attention composed from Tensor ops, the lecture's three lines: read this one first.

    Same arguments, in the same order, and results as `scaled_dot_product_attention`, except
    that the returned weights stay in the graph (they are the softmax output); every op is its
    own node, so `draw_graph` shows the pipeline and a gradient check can go through each step.
    """
    q, k, v = query, key, value
    mask = _one_mask("attention_reference", attn_mask, mask)
    _check_flags("attention_reference", dropout_p, is_causal)
    bias, allowed = _prepare("attention_reference", q, k, v, mask, is_causal, dropout_p)
    scale = _default_scale(q.shape[-1]) if scale is None else float(scale)
    # Each intermediate carries a name, so that draw_graph shows the lecture's pipeline.
    raw = q @ k.transpose(-2, -1)  # (..., Tq, Tk)
    raw.name = "q k^T"
    factor = Tensor(np.asarray(scale, dtype=raw.dtype), name=_scale_name(scale, q.shape[-1]))
    scores = raw * factor
    scores.name = "scores"
    if bias is not None:
        scores = scores + bias
        scores.name = "scores + bias"
    if allowed is not None:
        shape = np.broadcast_shapes(scores.shape, allowed.shape)
        if shape != scores.shape:  # a mask with more leading axes than q and k
            scores = scores.expand(shape)
        scores = scores.masked_fill(Tensor(~allowed, name="not allowed"), -math.inf)
        scores.name = "masked scores"
    weights = scores.softmax(dim=-1)  # rows sum to 1; a fully masked row is all 0
    weights.name = "weights"
    p = weights
    if dropout_p > 0:
        p = weights * Tensor(_dropout_keep(weights.shape, dropout_p, weights.dtype))
        p.name = "dropped weights"
    out = p @ v  # (..., Tq, dv)
    out.name = "attention output"
    if _recorders:
        _record(weights._data, "attention_reference")
    return (out, weights) if need_weights else out


def _grouped_heads(q: Tensor, kv: Tensor) -> Tensor:
    """kv with its heads (dim -3) repeated so each serves q's heads in groups: enable_gqa."""
    if q.ndim < 3 or kv.ndim < 3:
        raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs a heads dimension (-3); "
                         f"got query {q.shape} and key/value {kv.shape}")
    hq, hkv = q.shape[-3], kv.shape[-3]
    if hkv == 0 or hq % hkv:
        raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs the query's {hq} heads to be "
                         f"a multiple of the key/value's {hkv} (query {q.shape}, key/value {kv.shape})")
    return kv if hq == hkv else kv.repeat_interleave(hq // hkv, dim=-3)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | np.ndarray | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
    need_weights: bool = False,
    mask: Tensor | np.ndarray | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """softmax(q k^T * scale + mask) v, through the fused `Attention` op.

    PyTorch's parameters in PyTorch's order: query, key, value, attn_mask, dropout_p, is_causal
    by position or keyword, scale and enable_gqa by keyword only (as PyTorch's builtin takes
    them, whatever its docstring's first line shows); need_weights is minigrad's, keyword only,
    and `mask=` is accepted as another name for attn_mask.

    From TILED_MIN_SCORES scores (batch * Tq * Tk) on, with Tq and Tk from TILED_MIN_LENGTH on,
    when nothing needs the weights themselves (no dropout, no `need_weights`, no open
    `nn.record_attention`), it runs the tiled kernel
    instead (`tiled_attention`): the same results, without storing the (Tq, Tk) weights.

    Args:
        query: queries q (..., Tq, d).
        key: keys k (..., Tk, d).
        value: values v (..., Tk, dv). Leading axes of q, k and v broadcast.
        attn_mask: bool (True = may attend) or float (added to the scores, and differentiable),
            broadcasting to (..., Tq, Tk). See `minigrad.nn.attention` for the rule.
        dropout_p: probability of zeroing an attention weight (inverted dropout, drawn from the
            global generator). Pass 0 in evaluation.
        is_causal: also forbid key j for query i when j > i. The mask is aligned top-left
            (tril(ones(Tq, Tk)), as in PyTorch); with `attn_mask` too, a key must pass both.
        scale: multiplies the scores; defaults to 1 / sqrt(d).
        enable_gqa: grouped-query attention, as in PyTorch: key and value may have fewer heads
            (dim -3) than query, a divisor of its count; each key/value head then serves that
            many query heads in a row (repeat_interleave along the heads).
        need_weights: also return the attention weights A.
        mask: the same as attn_mask (give one of the two).

    Returns:
        out (..., Tq, dv), or (out, weights) with weights (..., Tq, Tk): the softmax output
        before dropout, a copy detached from the graph (no gradient flows through it; use
        `attention_reference` to differentiate through the weights).
    """
    q, k, v = query, key, value
    if enable_gqa:
        k, v = _grouped_heads(q, k), _grouped_heads(q, v)
    mask = _one_mask("scaled_dot_product_attention", attn_mask, mask)
    _check_flags("scaled_dot_product_attention", dropout_p, is_causal)
    scores = _score_count(q, k)  # 0 for input that _prepare rejects below
    if scores and use_tiled(scores, q.shape[-2], k.shape[-2], dropout_p, need_weights or bool(_recorders)):
        return tiled_attention(q, k, v, mask, is_causal, scale)
    bias, allowed = _prepare("scaled_dot_product_attention", q, k, v, mask, is_causal, dropout_p)
    scale = _default_scale(q.shape[-1]) if scale is None else float(scale)
    inputs = (q, k, v) if bias is None else (q, k, v, bias)
    return _apply_and_record(Attention, inputs, "scaled_dot_product_attention", need_weights,
                             allowed=allowed, scale=scale, dropout_p=dropout_p)


def _apply_and_record(kernel: type[Function], inputs: tuple, source: str, need_weights: bool,
                      **options: Any) -> Tensor | tuple[Tensor, Tensor]:
    """kernel.apply(*inputs, **options), asking it for a copy of the weights when they are
    returned (need_weights) or an open `nn.record_attention` wants them, and only then."""
    sink: list[np.ndarray] | None = [] if need_weights or _recorders else None
    out = kernel.apply(*inputs, weights_out=sink, **options)
    if _recorders:
        _record(sink[0], source)
    return (out, Tensor(sink[0])) if need_weights else out


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | np.ndarray | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: tuple[int, int] = (BLOCK_Q, BLOCK_K),
) -> Tensor:
    """softmax(q k^T * scale + mask) v through `TiledAttention`, whatever the size.

    Arguments as in `scaled_dot_product_attention` (no dropout, no weights: the tiled kernel
    never holds them), plus `block_size` = (query rows, key columns) of one tile; small blocks
    exercise the tiling on small inputs. `scaled_dot_product_attention` calls this for long
    sequences. `is_causal` is passed to the kernel as a diagonal, so no (Tq, Tk) mask is built.
    """
    bias, allowed = _prepare("tiled_attention", q, k, v, mask, False, 0.0)
    scale = _default_scale(q.shape[-1]) if scale is None else float(scale)
    inputs = (q, k, v) if bias is None else (q, k, v, bias)
    return TiledAttention.apply(*inputs, allowed=allowed, causal_offset=0 if is_causal else None,
                                scale=scale, block_q=int(block_size[0]), block_k=int(block_size[1]))


def packed_self_attention(
    qkv: Tensor,
    num_heads: int,
    mask: Tensor | np.ndarray | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    need_weights: bool = False,
    cache: KVCache | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Multi-head self-attention from packed projections, through the `PackedAttention` op.

    The same as splitting qkv into q, k and v, each into `num_heads` heads, then
    `scaled_dot_product_attention` and merging the heads (see `PackedAttention`): what
    `MultiheadAttention` (and so GPT's blocks) does for self-attention, in fewer, bigger steps.

    Args:
        qkv: (B, T, 3E): [x W_q^T + b_q, x W_k^T + b_k, x W_v^T + b_v], one Linear's output.
        num_heads: H, dividing E.
        mask, is_causal, dropout_p, scale, need_weights: as in `scaled_dot_product_attention`,
            the mask broadcasting to (B, H, T, S), S = T (+ the cached length).
        cache: a `KVCache` for generation: the T new keys and values are written after the
            cached ones, and the queries attend to all of them; with is_causal, query i sees
            the cached keys and the new ones up to its own position. No gradient flows through
            a cache (it is written in place): run cached steps under `mg.no_grad()`.

    Returns:
        out (B, T, E), the heads side by side; with need_weights also the weights (B, H, T, S).
    """
    name = "packed_self_attention"
    if not isinstance(qkv, Tensor):
        raise TypeError(f"{name}: qkv must be a Tensor, not {type(qkv).__name__}")
    if qkv.ndim != 3 or qkv.shape[-1] % (3 * num_heads):
        raise ShapeError(f"{name}: qkv must have shape (B, T, 3 * E) with E divisible by "
                         f"num_heads {num_heads}, got {qkv.shape}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{name}: dropout_p must be in [0, 1], got {dropout_p}")
    B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    S, options = T, {}
    if cache is not None:
        if is_grad_enabled() and qkv.requires_grad:
            raise RuntimeError(f"{name}: the KV cache is for generation (it is written in place, so no "
                               "gradient can flow through it); run cached steps under mg.no_grad()")
        S, options = cache.length + T, {"cache": cache}
    bias, allowed = _split_mask(name, mask, (B, num_heads, T, S), False)  # causal: the kernel's own
    scale = _default_scale(E // num_heads) if scale is None else float(scale)
    inputs = (qkv,) if bias is None else (qkv, bias)
    return _apply_and_record(PackedAttention, inputs, name, need_weights, heads=num_heads, allowed=allowed,
                             causal=is_causal, scale=scale, dropout_p=dropout_p, **options)


# ----------------------------------------------------------------------------- checks and masks


def _score_count(q: Any, k: Any) -> int:
    """About the number of scores, (batch size) * Tq * Tk (exact unless both q and k broadcast
    against each other); 0 for input `_prepare` will reject. Plain Python: small calls pay ~1 us."""
    qs, ks = getattr(q, "shape", ()), getattr(k, "shape", ())
    if len(qs) < 2 or len(ks) < 2:
        return 0
    return max(math.prod(qs[:-2]), math.prod(ks[:-2])) * qs[-2] * ks[-2]


def _one_mask(name: str, attn_mask: Any, mask: Any) -> Any:
    """The mask given as attn_mask (PyTorch's name) or mask (minigrad's older name), not both."""
    if mask is None:
        return attn_mask
    if attn_mask is not None:
        raise TypeError(f"{name}: got both attn_mask and mask, which name the same argument; give one")
    return mask


def _check_flags(name: str, dropout_p: Any, is_causal: Any) -> None:
    """dropout_p a probability and is_causal a bool, so that arguments given by position in
    another order than PyTorch's (attn_mask, dropout_p, is_causal) are refused."""
    if isinstance(dropout_p, (bool, np.bool_)) or not isinstance(dropout_p, (int, float, np.number)):
        raise TypeError(f"{name}: dropout_p must be a probability (a float in [0, 1]), not {dropout_p!r}; "
                        "PyTorch's order is (query, key, value, attn_mask, dropout_p, is_causal)")
    if not isinstance(is_causal, (bool, np.bool_)):
        raise TypeError(f"{name}: is_causal must be a bool, not {is_causal!r}; PyTorch's order is "
                        "(query, key, value, attn_mask, dropout_p, is_causal)")


def _prepare(name: str, q: Tensor, k: Tensor, v: Tensor, mask: Any, is_causal: bool,
             dropout_p: float) -> tuple[Tensor | None, np.ndarray | None]:
    """Check shapes and split the mask into an additive float bias and a bool `allowed`."""
    for label, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {label} must be a Tensor, not {type(t).__name__}")
        if t.ndim < 2:
            raise ShapeError(f"{name}: {label} needs shape (..., T, features), got {t.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(
            f"{name}: q {q.shape} and k {k.shape} differ in the feature size "
            f"({q.shape[-1]} vs {k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"{name}: k {k.shape} and v {v.shape} differ in the number of keys "
            f"({k.shape[-2]} vs {v.shape[-2]})"
        )
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"{name}: the leading (batch) axes of q {q.shape}, k {k.shape} and v {v.shape} "
            "do not broadcast"
        ) from None
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{name}: dropout_p must be in [0, 1], got {dropout_p}")
    return _split_mask(name, mask, lead + (q.shape[-2], k.shape[-2]), is_causal)


def _split_mask(name: str, mask: Any, scores: tuple[int, ...],
                is_causal: bool) -> tuple[Tensor | None, np.ndarray | None]:
    """The mask (checked to broadcast to the scores' shape) as an additive float bias or a
    bool `allowed`, with the causal mask folded into `allowed` when is_causal."""
    bias = allowed = None
    if mask is not None:
        m = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
        try:
            np.broadcast_shapes(m.shape, scores)
        except ValueError:
            raise ShapeError(
                f"{name}: mask of shape {m.shape} does not broadcast to the scores' shape "
                f"{scores} (..., Tq, Tk)"
            ) from None
        if m.dtype == np.bool_:
            allowed = m._data
        elif m.dtype.kind == "f":
            check_float_mask(name, m)
            bias = m
        else:
            raise TypeError(mask_dtype_error(name, m.dtype))
    if is_causal:
        causal = _causal(scores[-2], scores[-1])
        allowed = causal if allowed is None else allowed & causal
    return bias, allowed
