"""Scaled dot-product attention: the fused `Attention` op with a hand-derived backward, and its
readable twin `attention_reference`, composed from Tensor ops, that the tests compare it with.

The mask rule (True = may attend) is stated in `minigrad.nn.attention`. `_recorders` is
where `nn.record_attention` listens. Long sequences go to `TiledAttention` (tiled_attention.py),
which never stores the (Tq, Tk) weights; `tiled_attention` calls it directly. `PackedAttention`
(`packed_self_attention`) runs either kernel on q, k and v packed in one array, splitting and
merging the heads itself, for self-attention layers.
"""

from __future__ import annotations

import math
import threading
import warnings
from typing import Any

import numpy as np

from minigrad import Function, Tensor
from minigrad.random import generator

from .tiled_attention import _LOG2E, BLOCK_K, BLOCK_Q, TiledAttention, _with_column

# scaled_dot_product_attention takes the tiled kernel from this many scores (B * H * Tq * Tk)
# on, when Tq and Tk are both at least TILED_MIN_LENGTH: below that A fits in cache and the
# one-block kernel is faster. Measured on one thread with D = 32 (forward + backward, tiled /
# untiled time): causal 0.80 at (B, H, T) = (1, 4, 256), 0.86 at (2, 4, 192), 1.03 at (1, 4, 192);
# no mask 0.91 at (1, 4, 256). Within one block (T <= 128) the tiled kernel skips nothing and is
# slower whatever the batch: 1.11 at (4, 4, 128), 1.09 at (16, 4, 64).
TILED_MIN_SCORES = 2**18
TILED_MIN_LENGTH = BLOCK_Q + 1

class _Recorders(threading.local):
    """The open `record_attention` recorders of the running thread (see attention_maps.py): one
    list per thread, as grad mode is, so a recorder open in one thread never collects the
    attention of a model running in another. Never rebound, so modules that import it see the
    same object; empty unless one is open, so the attention functions pay one `if _recorders:`."""

    def __init__(self) -> None:
        self.open: list = []  # a new thread starts with none

    def __bool__(self) -> bool:
        return bool(self.open)

    def __iter__(self):
        return iter(self.open)

    def __len__(self) -> int:
        return len(self.open)

    def __eq__(self, other: object) -> bool:
        return self.open == other

    def __repr__(self) -> str:
        return repr(self.open)


_recorders = _Recorders()


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

    The code computes exactly this, with two rearrangements that save passes over (Tq, Tk):
      - The weights are kept unnormalised, E_ij = exp(S_ij - r_i) with row sums l_i, so that
        A = E / l. The softmax is the same for any reference r_i (the exp(-r_i) cancels), and
        without bias or dropout `_first_key_weights` takes r_i = S_i0, the row's first score:
        no pass to find each row's max. The division by l is done on (Tq, dv) arrays instead:
        O = (E V) / l, and in backward, since every line above is linear in A through g,
        A and g may be replaced by E and g / l. Otherwise r = m and l = 1 (E = A).
        E is never trusted: every E_ij <= l_i (E_ij is one term of l_i), so `_first_key_weights`
        checks l <= `_max_total` and E V finite, and otherwise starts again with r = m. With l
        bounded, E and E V exceed the row-max path's A and A V by at most the factor l, and in
        backward g / l falls below g by at most that factor, while its products with E
        (dV = E^T (g / l), dS = E (dA - D) / l) are no larger than the row-max path's A^T g and
        A (dA - D): nothing overflows that would not there, and underflow comes no nearer than
        a quarter of the exponent range. With no keys at all (Tk = 0) every row is empty: O = 0.
      - A subtraction is folded into a matmul by one more column: [X, -c] [Y, 1]^T = X Y^T - c.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias=None, *, allowed=None, scale, dropout_p=0.0, weights_out=None):
        fast = _first_key_weights(q, k, v, allowed, scale) if bias is None and dropout_p == 0 else None
        if fast is not None:
            e, out, total = fast
            keep = None
        else:
            e, total = _max_weights(q, k, bias, allowed, scale), None  # e = A
            keep = _dropout_keep(e.shape, dropout_p, e.dtype) if dropout_p > 0 else None
            out = (e if keep is None else e * keep) @ v
        if weights_out is not None:
            weights_out.append(e.copy() if total is None else e * (1 / total))
        ctx.save_for_backward(q, k, v, e, keep, out, total)
        ctx.scale, ctx.masked, ctx.dropout_p = scale, allowed is not None, dropout_p
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, e, keep, out, total = ctx.saved
        need_q, need_k, need_v = ctx.needs_input_grad[:3]
        need_bias = len(ctx.needs_input_grad) > 3 and ctx.needs_input_grad[3]
        if total is not None:
            g = g * (1 / total)  # A = E / l: see the end of the docstring
        dq = dk = dv = ds = None
        if need_v:
            dv = _T(e if keep is None else e * keep) @ g  # 1. dV = P^T g
        if need_q or need_k or need_bias:
            # = rowsum(dA * A), see 3.; a matmul with ones sums short rows ~6x faster than .sum
            rowsum = (g * out) @ np.ones((out.shape[-1], 1), out.dtype)
            if keep is None:
                ds = _with_column(g, -rowsum) @ _with_column_t(v, 1)  # 1. and 3.: dA - rowsum
            else:
                ds = g @ _with_column_t(v, None)  # 1. dP = g V^T
                ds *= keep  # 2. dA = dP * keep
                ds -= rowsum
            ds *= e  # 3. dS = A * (dA - rowsum(dA * A)), in place
            if need_q:
                dq = ds @ k  # 4. dQ = dS K * scale
                dq *= dq.dtype.type(ctx.scale)
            if need_k:
                dk = _T(ds) @ q  # 4. dK = dS^T Q * scale
                dk *= dk.dtype.type(ctx.scale)
        if len(ctx.needs_input_grad) > 3:
            return dq, dk, dv, (ds if need_bias else None)
        return dq, dk, dv


def _max_weights(q, k, bias, allowed, scale) -> np.ndarray:
    """A = softmax(S) with the row max as reference: the forward's first two lines as written."""
    s = (q * q.dtype.type(scale)) @ _with_column_t(k, None)  # scale the (Tq, d) side, not (Tq, Tk)
    if bias is not None:
        s = s + bias.astype(s.dtype, copy=False)
    if allowed is not None:
        if np.broadcast_shapes(allowed.shape, s.shape) == s.shape:
            np.copyto(s, -np.inf, where=~allowed)
        else:
            s = np.where(allowed, s, -np.inf).astype(s.dtype, copy=False)
    if s.shape[-1] == 0:  # no keys: nothing to attend to, so O = A V = 0 (and no gradient)
        return s
    # softmax in place on s: s becomes A
    m = s.max(axis=-1, keepdims=True)
    m[~np.isfinite(m)] = 0  # a row that is all -inf: exp(-inf - 0) = 0, no NaN
    s -= m
    np.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    total[total == 0] = 1
    s /= total
    return s


def _first_key_weights(q, k, v, allowed, scale):
    """(E, O, l) with E_ij = exp(S_ij - S_i0), l = rowsum(E), O = E V / l; None when this
    reference does not apply (key 0 not allowed for some row) or failed (an overflow).

    Key 0 is then allowed for every row, so E_i0 = 1 and l_i >= 1: no row can vanish. A score
    far above S_i0 makes E_ij huge: past ~88 (float32; ~709 in float64) exp overflows and l is
    inf, and well before that E V may overflow (E_ij v_j) or g / l in backward lose its digits.
    So both are checked: l <= `_max_total` (then every E_ij <= l is bounded too) and E V finite;
    otherwise the caller starts again with the row max. Masked scores may overflow as well;
    they are multiplied by 0 (inf * 0 = NaN, caught the same way). Per (Tq, Tk) element this leaves one
    matmul, one exp, one mask multiply and one matmul: the pass for the max, the subtraction,
    the row sums (a column of ones after V) and the division by l are gone. exp(x) is taken as
    2**(x log2(e)), which numpy computes faster (see `_Tiles.exp_scores`).
    """
    tk = k.shape[-2]
    if tk == 0 or not (q.dtype == k.dtype == v.dtype) or q.dtype.kind != "f":
        return None
    if allowed is not None and not allowed[..., 0].all():
        return None
    qc = q * q.dtype.type(scale * _LOG2E)  # S log2(e) = qc K^T
    # One query (a generated token against a KV cache): copying K and V with their extra
    # columns would cost more than the products it speeds up, so multiply by views instead
    # (one thread, (B, H, D) = (1, 4, 32), against 64 / 1024 keys: 13 / 41 us, copies 33 / 228).
    one_query = q.shape[-2] == 1
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below
        if one_query:
            e = qc @ _T(k)
            e -= e[..., :1]  # (S - S_i0) log2(e)
        else:
            first = qc @ _T(k[..., :1, :])  # (..., Tq, 1): S_i0 log2(e)
            e = _with_column(qc, -first) @ _with_column_t(k, 1)  # (S - S_i0) log2(e)
        np.exp2(e, out=e)
        if allowed is not None:
            if np.broadcast_shapes(allowed.shape, e.shape) == e.shape:
                np.multiply(e, allowed, out=e)
            else:
                e = e * allowed
        if one_query:
            out, total = e @ v, e.sum(axis=-1, keepdims=True)
        else:
            acc = e @ _with_column(v, 1)  # [E V, l]
            out, total = acc[..., :-1], acc[..., -1:]
    # (total <= bound) is False for NaN too; the checks read (Tq, dv) arrays, not (Tq, Tk).
    if not (total <= _max_total(total.dtype)).all() or not np.isfinite(out).all():
        return None
    return e, out * (1 / total), total


def _max_total(dtype: np.dtype) -> float:
    """The largest row sum l the first-key reference accepts: 2**(maxexp / 4), 2**32 in float32
    and 2**256 in float64. E <= l then takes at most a quarter of the exponent range above the
    row-max path's A <= 1, and g / l at most a quarter below g: what the dtype leaves either side
    of ordinary values is still there."""
    return 2.0 ** (np.finfo(dtype).maxexp // 4)


def _with_column_t(x: np.ndarray, column) -> np.ndarray:
    """[x, column]^T (or x^T for column None) as a contiguous (..., f (+ 1), T) array: numpy
    multiplies batches of small matrices about 2x faster from it than from a transposed view."""
    out = np.empty(x.shape[:-2] + (x.shape[-1] + (column is not None), x.shape[-2]), x.dtype)
    out[..., :x.shape[-1], :] = _T(x)
    if column is not None:
        out[..., -1, :] = column
    return out


class PackedAttention(Function):
    """Multi-head attention on packed projections: qkv (B, T, 3E) -> (B, T, E).

    qkv holds q, k and v side by side, as one Linear with the three projection weights stacked
    computes them; each is E = H * D features, H heads of D. The op is exactly
        q, k, v = split(qkv, 3, dim=-1)               each (B, T, E)
        q_h = q.reshape(B, T, H, D).transpose(1, 2)   the same for k and v: (B, H, T, D)
        o = Attention(q_h, k_h, v_h)                  (B, H, T, D), TiledAttention when long
        out = o.transpose(1, 2).reshape(B, T, E)      the heads side by side again
    and its backward is the kernel's, with the reshapes undone: dqkv packs dq, dk and dv the
    way qkv held them. One node instead of eight reshape and transpose nodes around one, and
    with it one projection matmul instead of three (`packed_self_attention`).
    Options as in `Attention`, plus `heads` and `causal` (is_causal, passed to the tiled
    kernel as its diagonal); a float mask is the optional second input.
    """

    @staticmethod
    def forward(ctx, qkv, bias=None, *, heads, allowed=None, causal=False, scale, dropout_p=0.0,
                weights_out=None):
        B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
        q, k, v = qkv.reshape(B, T, 3, heads, E // heads).transpose(2, 0, 3, 1, 4)  # (B, H, T, D) views
        if _use_tiled(B * heads * T * T, T, T, dropout_p, weights_out is not None):
            inner = TiledAttention()
            o = TiledAttention.forward(inner, q, k, v, bias, allowed=allowed, scale=scale,
                                       causal_offset=0 if causal else None)
        else:
            inner = Attention()
            if causal:
                allowed = _causal(T, T) if allowed is None else allowed & _causal(T, T)
            o = Attention.forward(inner, q, k, v, bias, allowed=allowed, scale=scale,
                                  dropout_p=dropout_p, weights_out=weights_out)
        ctx.save_for_backward(*inner.saved)  # kept here, so that the engine frees them
        inner.saved = None
        ctx.inner, ctx.heads, ctx.scale = inner, heads, scale
        ctx.masked, ctx.dropout_p = allowed is not None or causal, dropout_p  # (for drawings)
        return o.transpose(0, 2, 1, 3).reshape(B, T, E)

    @staticmethod
    def backward(ctx, g):
        inner, (B, T, E) = ctx.inner, g.shape
        inner.saved = ctx.saved
        inner.needs_input_grad = (ctx.needs_input_grad[0],) * 3 + ctx.needs_input_grad[1:]
        inner.inputs = (None, None, None) + ctx.inputs[1:]
        g_heads = g.reshape(B, T, ctx.heads, E // ctx.heads).transpose(0, 2, 1, 3)  # (B, H, T, D)
        grads = type(inner).backward(inner, g_heads)
        inner.saved = None
        dqkv = None
        if ctx.needs_input_grad[0]:
            dqkv = np.empty((B, T, 3, ctx.heads, E // ctx.heads), grads[0].dtype)
            for i in range(3):
                dqkv[:, :, i] = grads[i].transpose(0, 2, 1, 3)
            dqkv = dqkv.reshape(B, T, 3 * E)
        return (dqkv,) + tuple(grads[3:])


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


def _use_tiled(scores: int, tq: int, tk: int, dropout_p: float, need_weights: bool) -> bool:
    """Whether to take the tiled kernel: long enough, and nothing needs the weights themselves
    (dropout, need_weights, an open `nn.record_attention`)."""
    return (scores >= TILED_MIN_SCORES and min(tq, tk) >= TILED_MIN_LENGTH and dropout_p == 0
            and not need_weights and not _recorders)


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
            raise ValueError(
                f"{name}: mask of shape {m.shape} does not broadcast to the scores' shape "
                f"{scores} (..., Tq, Tk)"
            ) from None
        if m.dtype == np.bool_:
            allowed = m.data
        elif m.dtype.kind == "f":
            check_float_mask(name, m)
            bias = m
        else:
            raise TypeError(mask_dtype_error(name, m.dtype))
    if is_causal:
        causal = _causal(scores[-2], scores[-1])
        allowed = causal if allowed is None else allowed & causal
    return bias, allowed


_MASK_ADVICE = ("use a bool mask (True = may attend, e.g. mask == 1) or a float mask with -inf where "
                "attending is forbidden and 0 elsewhere")


def mask_dtype_error(name: str, dtype: Any) -> str:
    """The error for a mask that is neither bool nor float (an int 0/1 mask, say)."""
    return (f"{name}: the mask must be bool (True = may attend) or float (added to the scores), "
            f"not {dtype}; {_MASK_ADVICE}")


def check_float_mask(name: str, mask: Tensor) -> None:
    """Warn (once per process, by the default warning filter) when a float mask holds only 0s
    and 1s: it is added to the scores, so it forbids nothing (a causal model then sees the
    future); it was almost surely meant as a bool mask. A learnable bias is not checked. Two
    passes over the mask (min and max) settle almost every mask; only one within [0, 1] costs
    a third."""
    if mask.requires_grad or mask.size == 0:
        return
    d = mask.data
    if d.max() == 1 and d.min() >= 0 and ((d == 0) | (d == 1)).all():
        warnings.warn(f"{name}: the float mask holds only 0s and 1s; it is added to the scores, so "
                      f"it masks nothing: {_MASK_ADVICE}", UserWarning, stacklevel=2)


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
    scores = _score_count(q, k)  # 0 for input that _prepare rejects below
    if scores and _use_tiled(scores, q.shape[-2], k.shape[-2], dropout_p, need_weights):
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
) -> Tensor | tuple[Tensor, Tensor]:
    """Multi-head self-attention from packed projections, through the `PackedAttention` op.

    The same as splitting qkv into q, k and v, each into `num_heads` heads, then
    `scaled_dot_product_attention` and merging the heads (see `PackedAttention`): what
    `MultiheadAttention` and GPT's attention do for self-attention, in fewer, bigger steps.

    Args:
        qkv: (B, T, 3E): [x W_q^T + b_q, x W_k^T + b_k, x W_v^T + b_v], one Linear's output.
        num_heads: H, dividing E.
        mask, is_causal, dropout_p, scale, need_weights: as in `scaled_dot_product_attention`,
            the mask broadcasting to (B, H, T, T).

    Returns:
        out (B, T, E), the heads side by side; with need_weights also the weights (B, H, T, T).
    """
    name = "packed_self_attention"
    if not isinstance(qkv, Tensor):
        raise TypeError(f"{name}: qkv must be a Tensor, not {type(qkv).__name__}")
    if qkv.ndim != 3 or qkv.shape[-1] % (3 * num_heads):
        raise ValueError(f"{name}: qkv must have shape (B, T, 3 * E) with E divisible by "
                         f"num_heads {num_heads}, got {qkv.shape}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{name}: dropout_p must be in [0, 1], got {dropout_p}")
    B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    bias, allowed = _split_mask(name, mask, (B, num_heads, T, T), False)  # causal: the kernel's own
    scale = _default_scale(E // num_heads) if scale is None else float(scale)
    inputs = (qkv,) if bias is None else (qkv, bias)
    return _apply_and_record(PackedAttention, inputs, name, need_weights, heads=num_heads, allowed=allowed,
                             causal=is_causal, scale=scale, dropout_p=dropout_p)


def _default_scale(d: int) -> float:
    """1 / sqrt(d); 1 for d = 0, where every score is an empty sum, 0, whatever the scale (the
    softmax is then uniform and the output the mean of the values, as in PyTorch)."""
    return 1.0 / math.sqrt(d) if d > 0 else 1.0


def _scale_name(scale: float, d: int) -> str:
    """`1/sqrt(d_k)` when the scale is the usual one, else its value."""
    return "1/sqrt(d_k)" if d > 0 and math.isclose(scale, _default_scale(d)) else f"scale {scale:.4g}"


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


Attention.pipeline = TiledAttention.pipeline = staticmethod(attention_pipeline)
PackedAttention.pipeline = staticmethod(packed_attention_pipeline)


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
        _record(weights.data, "attention_reference")
    return (out, weights) if need_weights else out
