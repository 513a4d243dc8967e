"""Scaled dot-product attention: the fused `Attention` op with a hand-derived backward, and its
readable twin `attention_reference`, composed from Tensor ops, that the tests compare it with.

The mask rule (True = may attend) is stated in `minigrad.nn.attention`. `_recorders` is
where `nn.record_attention` listens. Long sequences go to `TiledAttention` (tiled_attention.py),
which never stores the (Tq, Tk) weights; `tiled_attention` calls it directly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Function, Tensor
from minigrad.random import generator

from .tiled_attention import BLOCK_K, BLOCK_Q, TiledAttention

# scaled_dot_product_attention takes the tiled kernel from this many scores (B * H * Tq * Tk)
# on, when Tq and Tk are both at least TILED_MIN_LENGTH: below that A fits in cache and the
# one-block kernel is faster. Measured on one thread with D = 32 (forward + backward, tiled /
# untiled time): causal 0.80 at (B, H, T) = (1, 4, 256), 0.86 at (2, 4, 192), 1.03 at (1, 4, 192);
# no mask 0.91 at (1, 4, 256). Within one block (T <= 128) the tiled kernel skips nothing and is
# slower whatever the batch: 1.11 at (4, 4, 128), 1.09 at (16, 4, 64).
TILED_MIN_SCORES = 2**18
TILED_MIN_LENGTH = BLOCK_Q + 1

# The open `record_attention` recorders (see attention_maps.py). Mutated in place, never
# rebound, so modules that import it see the same list; empty unless one is open, so the
# attention functions pay one `if _recorders:` for the feature.
_recorders: list = []


def _record(weights: np.ndarray, source: str) -> None:
    """Hand attention weights to every open recorder (each copies them)."""
    for recorder in _recorders:
        recorder.add(weights, source)


def _T(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


class Attention(Function):
    """O = dropout(softmax(Q K^T * scale + bias, masked)) V, with a hand-written backward.

    Inputs are q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) and an optional float `bias`
    broadcasting to the scores (an additive mask; it gets a gradient, so it may be learned).
    Options: `allowed` (bool, broadcasting to (..., Tq, Tk), True = may attend), `scale`,
    `dropout_p`, and `weights_out` (a list that receives a copy of A, for need_weights).

    Forward, with a row-wise softmax over the keys (last axis):
        S = Q K^T * scale (+ bias);  S_ij = -inf where allowed_ij is False
        A = softmax(S)                 A_ij = exp(S_ij - m_i) / sum_j' exp(S_ij' - m_i),
                                       m_i = max_j S_ij (0 when the whole row is -inf)
        P = A * keep                   keep = [u >= p] / (1 - p), u ~ U[0, 1)  (P = A if p = 0)
        O = P V

    Backward, g = dL/dO (..., Tq, dv), going through the four lines in reverse:
        1. O = P V is a matmul:        dV = P^T g,   dP = g V^T
        2. P = A * keep, elementwise:  dA = dP * keep
        3. A = softmax(S), per row i:  dA_ij/dS_ik = A_ij ([j = k] - A_ik), so
                                       dS_ik = sum_j dA_ij A_ij ([j = k] - A_ik)
                                             = A_ik (dA_ik - sum_j dA_ij A_ij)
           i.e. dS = A * (dA - rowsum(dA * A)).
           The row sum needs no (Tq, Tk) temporary: dA_ij A_ij = (g_i . v_j) keep_ij A_ij =
           (g_i . v_j) P_ij, and sum_j P_ij v_j = O_i, so rowsum(dA * A) = rowsum(g * O)
           (the trick FlashAttention uses), computed on (Tq, dv) arrays.
        4. S = Q K^T * scale (+ bias): dQ = dS K * scale,   dK = dS^T Q * scale,   dbias = dS
    Where S was -inf, A is exactly 0, so dS is 0 there: masked scores get no gradient, and a row
    with no allowed key (A = 0 everywhere) gives output 0 and gradient 0, not NaN. Subtracting
    m_i keeps exp from overflowing for logits of any size. The engine sums dQ, dK, dV and dbias
    back over leading axes that were broadcast.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias=None, *, allowed=None, scale, dropout_p=0.0, weights_out=None):
        s = (q * q.dtype.type(scale)) @ _T(k)  # scale the (Tq, d) side, not the (Tq, Tk) one
        if bias is not None:
            s = s + bias.astype(s.dtype, copy=False)
        if allowed is not None:
            if np.broadcast_shapes(allowed.shape, s.shape) == s.shape:
                np.copyto(s, -np.inf, where=~allowed)
            else:
                s = np.where(allowed, s, -np.inf).astype(s.dtype, copy=False)
        # softmax in place on s: s becomes A
        m = s.max(axis=-1, keepdims=True)
        m[~np.isfinite(m)] = 0  # a row that is all -inf: exp(-inf - 0) = 0, no NaN
        s -= m
        np.exp(s, out=s)
        total = s.sum(axis=-1, keepdims=True)
        total[total == 0] = 1
        s /= total
        a = s
        if weights_out is not None:
            weights_out.append(a.copy())
        keep = _dropout_keep(a.shape, dropout_p, a.dtype) if dropout_p > 0 else None
        p = a if keep is None else a * keep
        out = p @ v
        ctx.save_for_backward(q, k, v, a, keep, out)
        ctx.scale, ctx.masked, ctx.dropout_p = scale, allowed is not None, dropout_p
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, a, keep, out = ctx.saved
        need_q, need_k, need_v = ctx.needs_input_grad[:3]
        need_bias = len(ctx.needs_input_grad) > 3 and ctx.needs_input_grad[3]
        dq = dk = dv = ds = None
        if need_v:
            dv = _T(a if keep is None else a * keep) @ g  # 1. dV = P^T g
        if need_q or need_k or need_bias:
            da = g @ _T(v)  # 1. dP = g V^T
            if keep is not None:
                da *= keep  # 2. dA = dP * keep
            rowsum = (g * out).sum(axis=-1, keepdims=True)  # = rowsum(dA * A), see 3.
            da -= rowsum  # 3. dS = A * (dA - rowsum(dA * A)), in place
            da *= a
            ds = da
            if need_q:
                dq = ds @ k  # 4. dQ = dS K * scale
                dq *= dq.dtype.type(ctx.scale)
            if need_k:
                dk = _T(ds) @ q  # 4. dK = dS^T Q * scale
                dk *= dk.dtype.type(ctx.scale)
        if len(ctx.needs_input_grad) > 3:
            return dq, dk, dv, (ds if need_bias else None)
        return dq, dk, dv


def _dropout_keep(shape: tuple[int, ...], p: float, dtype: Any) -> np.ndarray:
    """Inverted-dropout multipliers: 1/(1-p) with probability 1-p, else 0 (global generator).

    Both attention paths draw through here, so after the same `manual_seed` they drop the
    same weights and can be compared with dropout on.
    """
    if p >= 1:
        return np.zeros(shape, dtype=dtype)
    keep = generator().random(shape, dtype=np.float32) >= p  # as kernels.Dropout draws
    return keep * np.dtype(dtype).type(1.0 / (1.0 - p))


def _score_count(q: Any, k: Any) -> int:
    """About the number of scores, (batch size) * Tq * Tk (exact unless both q and k broadcast
    against each other); 0 for input `_prepare` will reject. Plain Python: small calls pay ~1 us."""
    qs, ks = getattr(q, "shape", ()), getattr(k, "shape", ())
    if len(qs) < 2 or len(ks) < 2:
        return 0
    return max(math.prod(qs[:-2]), math.prod(ks[:-2])) * qs[-2] * ks[-2]


def _causal(tq: int, tk: int) -> np.ndarray:
    """(Tq, Tk) bool, True where key j <= query i (top-left aligned, like torch.tril)."""
    return np.tri(tq, tk, dtype=bool)


def _prepare(name: str, q: Tensor, k: Tensor, v: Tensor, mask: Any, is_causal: bool,
             dropout_p: float) -> tuple[Tensor | None, np.ndarray | None]:
    """Check shapes and split the mask into an additive float bias and a bool `allowed`."""
    for label, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {label} must be a Tensor, not {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{name}: {label} needs shape (..., T, features), got {t.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{name}: q {q.shape} and k {k.shape} differ in the feature size "
            f"({q.shape[-1]} vs {k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{name}: k {k.shape} and v {v.shape} differ in the number of keys "
            f"({k.shape[-2]} vs {v.shape[-2]})"
        )
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{name}: the leading (batch) axes of q {q.shape}, k {k.shape} and v {v.shape} "
            "do not broadcast"
        ) from None
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{name}: dropout_p must be in [0, 1], got {dropout_p}")
    scores = lead + (q.shape[-2], k.shape[-2])
    bias = allowed = None
    if mask is not None:
        m = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
        try:
            np.broadcast_shapes(m.shape, scores)
        except ValueError:
            raise ValueError(
                f"{name}: mask of shape {m.shape} does not broadcast to the scores' shape "
                f"{scores} (..., Tq, Tk)"
            ) from None
        if m.dtype == np.bool_:
            allowed = m.data
        elif m.dtype.kind == "f":
            bias = m
        else:
            raise TypeError(f"{name}: the mask must be bool (True = may attend) or float, not {m.dtype}")
    if is_causal:
        causal = _causal(q.shape[-2], k.shape[-2])
        allowed = causal if allowed is None else allowed & causal
    return bias, allowed


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | np.ndarray | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    need_weights: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """softmax(q k^T * scale + mask) v, through the fused `Attention` op.

    From TILED_MIN_SCORES scores (batch * Tq * Tk) on, with Tq and Tk from TILED_MIN_LENGTH on,
    when nothing needs the weights themselves (no dropout, no `need_weights`, no open
    `nn.record_attention`), it runs the tiled kernel
    instead (`tiled_attention`): the same results, without storing the (Tq, Tk) weights.

    Args:
        q: queries (..., Tq, d).
        k: keys (..., Tk, d).
        v: values (..., Tk, dv). Leading axes of q, k and v broadcast.
        mask: bool (True = may attend) or float (added to the scores, and differentiable),
            broadcasting to (..., Tq, Tk). See `minigrad.nn.attention` for the rule.
        is_causal: also forbid key j for query i when j > i. The mask is aligned top-left
            (tril(ones(Tq, Tk)), as in PyTorch); with `mask` too, a key must pass both.
        dropout_p: probability of zeroing an attention weight (inverted dropout, drawn from the
            global generator). Pass 0 in evaluation.
        scale: multiplies the scores; defaults to 1 / sqrt(d).
        need_weights: also return the attention weights A.

    Returns:
        out (..., Tq, dv), or (out, weights) with weights (..., Tq, Tk): the softmax output
        before dropout, a copy detached from the graph (no gradient flows through it; use
        `attention_reference` to differentiate through the weights).
    """
    if dropout_p == 0 and not need_weights and not _recorders and _score_count(q, k) >= TILED_MIN_SCORES \
            and min(q.shape[-2], k.shape[-2]) >= TILED_MIN_LENGTH:
        return tiled_attention(q, k, v, mask, is_causal, scale)
    bias, allowed = _prepare("scaled_dot_product_attention", q, k, v, mask, is_causal, dropout_p)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    # A recorder needs the weights too: ask the kernel for its copy only while one is open.
    sink: list[np.ndarray] | None = [] if need_weights or _recorders else None
    inputs = (q, k, v) if bias is None else (q, k, v, bias)
    out = Attention.apply(*inputs, allowed=allowed, scale=scale, dropout_p=dropout_p, weights_out=sink)
    if _recorders:
        _record(sink[0], "scaled_dot_product_attention")
    if need_weights:
        return out, Tensor(sink[0])
    return out


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
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    inputs = (q, k, v) if bias is None else (q, k, v, bias)
    return TiledAttention.apply(*inputs, allowed=allowed, causal_offset=0 if is_causal else None,
                                scale=scale, block_q=int(block_size[0]), block_k=int(block_size[1]))


def _scale_name(scale: float, d: int) -> str:
    """`1/sqrt(d_k)` when the scale is the usual one, else its value."""
    return "1/sqrt(d_k)" if math.isclose(scale, 1.0 / math.sqrt(d)) else f"scale {scale:.4g}"


def attention_pipeline(node: Function) -> list[tuple]:
    """The steps a fused attention node computes, as `draw_graph(expand_fused=True)` draws
    them: (op, inputs, result, result shape) each; an input is the index of one of the node's
    inputs (q 0, k 1, v 2, bias 3) or the name of an earlier result."""
    q, k, v = (t.shape for t in node.inputs[:3])
    lead = np.broadcast_shapes(q[:-2], k[:-2], v[:-2])
    scores = lead + (q[-2], k[-2])
    steps = [("MatMul q @ k^T", [0, 1], "q k^T", scores),
             (f"Mul by {_scale_name(node.scale, q[-1])}", ["q k^T"], "scores", scores)]
    last = "scores"
    if len(node.inputs) > 3:
        steps.append(("Add bias", [last, 3], "scores + bias", scores))
        last = "scores + bias"
    if getattr(node, "masked", False):
        steps.append(("MaskedFill -inf where not allowed", [last], "masked scores", scores))
        last = "masked scores"
    steps.append(("Softmax over keys", [last], "weights", scores))
    last = "weights"
    if getattr(node, "dropout_p", 0.0):
        steps.append(("Dropout", [last], "dropped weights", scores))
        last = "dropped weights"
    steps.append(("MatMul weights @ v", [last, 2], "attention output", lead + (q[-2], v[-1])))
    return steps


Attention.pipeline = TiledAttention.pipeline = staticmethod(attention_pipeline)


def attention_reference(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | np.ndarray | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    need_weights: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The same attention composed from Tensor ops: read this one first.

    Same arguments and results as `scaled_dot_product_attention`, except that the returned
    weights stay in the graph (they are the softmax output).
    """
    bias, allowed = _prepare("attention_reference", q, k, v, mask, is_causal, dropout_p)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
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
        _record(weights.data, "attention_reference")
    return (out, weights) if need_weights else out
