"""Tiled attention (FlashAttention's idea in numpy): softmax(Q K^T * scale + bias) V computed block
by block with an online softmax, so that neither pass ever holds the (Tq, Tk) score matrix.

`tiled_forward` and `tiled_backward` are the kernel, plain numpy functions with their
derivation, under the thin `TiledAttention` op. The block grid they walk is `_Tiles`
(tiles.py). `scaled_dot_product_attention` (functional.py) and `PackedAttention` (packed.py)
pick this kernel for long sequences (`use_tiled`, dispatch.py).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from minigrad import Function
from minigrad.runtime.parallel import run_spans

from .helpers import _LOG2E, Drawing, _causal, _with_column
from .one_block import attention_composed
from .tiles import _Tiles

# Default block sizes (queries, keys), chosen on one thread, D = 32, causal, (B, H) = (1, 4),
# forward + backward: at T = 2048 and 4096, 128 x 128, 128 x 192 and 192 x 128 came within noise
# of each other; 96 x 128 and 128 x 96 were 4-7% slower (more calls per score), 128 x 256,
# 256 x 128 and 192 x 192 about 25% slower (BLAS multiplies the small tiles faster while all the
# heads' tiles, 4 x 64 KiB each, stay in the core's cache).
BLOCK_Q = 128
BLOCK_K = 128


def tiled_forward(q, k, v, bias=None, allowed=None, causal_offset=None, *, scale: float,
                  block_q: int = BLOCK_Q, block_k: int = BLOCK_K) -> tuple[np.ndarray, tuple, _Tiles]:
    """O = softmax(Q K^T * scale + bias, masked) V on arrays, tile by tile; returns (O, saved,
    tiles), saved and tiles being what `tiled_backward` needs. Arguments: `TiledAttention`.

    Write S = Q K^T * scale + bias (-inf where masked), m_i = max_j S_ij, l_i = sum_j exp(S_ij - m_i),
    so that A_ij = exp(S_ij - m_i) / l_i and O_i = sum_j A_ij v_j. Split the keys into blocks
    J_1, J_2, ... and the queries into blocks I_1, I_2, ...; (I, J) is one tile of S.

    Forward, the online softmax, for one block of query rows I:
        1. start with m = -inf, l = 0, acc = 0 (per row: a number, a number, a dv-vector).
        2. for each key block J: S_IJ = Q_I K_J^T * scale (+ bias_IJ), masked;
               m' = max(m, rowmax(S_IJ))               the running max, updated
               P = exp(S_IJ - m')                      (bq, bk): the only big array, one tile
               c = exp(m - m')                         corrects what was summed against the
               l = c * l + rowsum(P)                   old max: exp(s - m) * exp(m - m')
               acc = c * acc + P V_J                   = exp(s - m')
               m = m'
           After the last block, m and l are exactly max_j and sum_j over all keys, and
           acc = sum_j exp(S_ij - m) v_j, so
        3. O_I = acc / l,  and  L_I = m + log(l)  (the row's log-sum-exp; A_ij = exp(S_ij - L_i)).
    Only O and L (Tq numbers per head) are saved, with the inputs. (The code first tries a
    shortcut that skips the search for each tile's max: `_fixed_reference` says why that is
    exact, and when it does not apply, the rows are redone with the steps above. Values within
    a factor Tk of the dtype's largest number are summed divided by a power of two, and O
    multiplied back: `_value_shift`.)
    """
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                               *(m.shape[:-2] for m in (bias, allowed) if m is not None))
    tq, tk, dv = q.shape[-2], k.shape[-2], v.shape[-1]
    dtype = np.result_type(q, k, v)
    qf = _flat(q, lead, dtype)  # (N, Tq, d), scaled one query block at a time (no copy of Q)
    kf, vf = _flat(k, lead, dtype), _flat(v, lead, dtype)  # (N, Tk, d), (N, Tk, dv)
    tiles = _Tiles(lead, tq, tk, bias, allowed, causal_offset, block_q, block_k, dtype)
    acc_l = np.zeros(qf.shape[:2] + (dv + 1,), dtype)  # (N, Tq, dv + 1): [acc, l] per row
    lse = np.zeros(qf.shape[:2] + (1,), dtype)  # (N, Tq, 1), L

    _by_heads(_forward_heads, tiles, qf.shape[0], qf, kf, vf, scale, acc_l, lse)
    out = np.ascontiguousarray(acc_l[:, :, :dv])
    tiles.shapes = (q.shape, k.shape, v.shape)  # for the gradients' shapes
    return out.reshape(lead + (tq, dv)), (qf, kf, vf, out, lse), tiles


def _by_heads(body: Callable[..., None], tiles: _Tiles, n: int, *args: Any, split: bool = True) -> None:
    """body(the tiles of heads a..b-1, *args cut to heads a..b-1) over runs of the N = B*H heads,
    one run per thread (minigrad.runtime.parallel), when `split` and the masks are the same for
    every head; else body(tiles, *args) once, over all N. Each run's tile buffers are dropped
    after it.

    The one partition of the tiled kernel: every step of both passes is per head (each head's
    rows are its own), so the results do not depend on how the heads are grouped. Array
    arguments are cut along their first axis, the heads; the others (the scale, None) pass."""
    def run(a: int, b: int) -> None:
        if (a, b) == (0, n):
            body(tiles, *args)
            tiles.release()
            return
        part = tiles.heads(a, b)
        body(part, *(x[a:b] if isinstance(x, np.ndarray) else x for x in args))
        part.release()

    if split and tiles.splits_heads():
        run_spans(run, [tiles.tq * tiles.tk] * n)
    else:
        run(0, n)


def _forward_heads(tiles: _Tiles, qf, kf, vf, scale: float, acc_l: np.ndarray, lse: np.ndarray) -> None:
    """The loop of `tiled_forward`'s docstring over some heads: fills their [acc, l] and L."""
    dtype, dv = qf.dtype, vf.shape[-1]
    # A column of ones after V makes P [V, 1] = [P V, rowsum(P)]: the sum l rides along in
    # the matmul instead of costing a pass over P. And [Q*scale, -m] [K, 1]^T = S - m: the
    # shortcut below gets S - m straight from the matmul (with 0 for -m, plain S).
    k1t, v1 = _append_t(kf, 1, tiles.bk), _with_column(vf, 1)  # blocks of [K, 1]^T, (N, Tk, dv + 1)
    shift = _value_shift(vf)  # V near the dtype's max: sum V 2^-k, scale O back by 2^k
    if shift is not None:
        v1[:, :, :dv] = np.ldexp(vf, -shift)
    for i0, i1 in tiles.query_blocks():
        acc = acc_l[:, i0:i1]
        qi = qf[:, i0:i1] * dtype.type(scale)  # Q_I * scale
        m = tiles.first_scores(qi, kf, i0, i1)  # (N, bq, 1): -inf, or S_i0 (below)
        ok = _fixed_reference(tiles, acc, m, qi, k1t, v1, i0, i1)  # per head
        if not ok.all():  # redo the heads the shortcut failed, with the steps of the docstring
            acc_r, m_r = np.zeros_like(acc), np.full_like(m, -np.inf)  # 1.
            q_0 = _with_column(qi, 0)  # [Q_I * scale, 0] [K_J, 1]^T = S_IJ
            for j0, j1 in tiles.key_blocks(i0, i1):
                s = tiles.scores(q_0, tiles.key_tile(k1t, j0, j1), i0, i1, j0, j1)
                if s is None:
                    continue  # every score of the tile is masked
                m_new = np.maximum(m_r, s.max(axis=-1, keepdims=True))  # 2. the running max
                m_safe = np.where(np.isfinite(m_new), m_new, 0)  # a row all -inf so far: 0, no NaN
                s -= m_safe
                np.exp(s, out=s)  # P
                acc_r *= np.exp(m_r - m_safe)  # the correction c; exp(-inf) = 0 when nothing came before
                acc_r += s @ v1[:, j0:j1]  # acc = c acc + P V,  l = c l + rowsum(P)
                m_r[...] = m_new
            acc[~ok], m[~ok] = acc_r[~ok], m_r[~ok]
        total = acc[:, :, dv:].copy()
        empty = total == 0  # a row with nothing allowed: O = 0, L = 0 (never used)
        total[empty] = 1
        acc[:, :, :dv] /= total  # 3.
        if shift is not None:
            acc[:, :, :dv] = np.ldexp(acc[:, :, :dv], shift)
        lse[:, i0:i1] = np.where(empty, 0, m + np.log(total))


def _value_shift(vf: np.ndarray) -> np.ndarray | None:
    """Per head and value column (N, 1, dv), the power of two 2^k that V is divided by in the
    forward's sums, or None when every k is 0 (the usual case).

    Against the running max every weight exp(S_ij - m) is at most 1, so a row's running sum
    acc = sum_j exp(S_ij - m) v_j stays within Tk max_j |v_j| (and the shortcut's, which may
    be larger, is checked for overflow and redone). Values within a factor Tk of the dtype's
    largest number could make acc overflow though O = acc / l, a weighted mean of the values,
    is finite: V 2^-k keeps Tk max |v| 2^-k <= 2^(maxexp - 1), and O is multiplied back by
    2^k. Powers of two are exact (up to values that the division takes below the normal
    range, next to values 2^maxexp / Tk larger in their column)."""
    tk = vf.shape[1]
    if tk == 0:
        return None
    top = np.abs(vf).max(axis=1, keepdims=True)  # (N, 1, dv)
    top[~np.isfinite(top)] = 0  # inf and NaN pass through as they are
    exponent = np.frexp(top)[1]  # top < 2**exponent
    shift = exponent + math.ceil(math.log2(tk)) - (np.finfo(vf.dtype).maxexp - 1)
    if shift.max() <= 0:
        return None
    return np.maximum(shift, 0)


def tiled_backward(g: np.ndarray, saved: tuple, tiles: _Tiles, scale: float, needs: tuple) -> tuple:
    """The gradients of `tiled_forward` for the inputs flagged in `needs` (q, k, v and, when
    there was one, bias), None for the others.

    Backward, g = dL/dO; the rules of `attention_backward` (dropout off), one tile at a time:
        A = softmax(S) was never stored, but A_IJ = exp(S_IJ - L_I) recomputes any tile of it
        exactly from Q_I, K_J and the saved L_I. With D_i = rowsum(g_i * O_i) (computed on
        (block_q, dv) arrays: `attention_backward`'s step 3 shows D_i = sum_j dA_ij A_ij), for
        every tile:
            A_IJ = exp(Q_I K_J^T * scale (+ bias_IJ) - L_I)   (masked entries: exp(-inf) = 0)
            dV_J += A_IJ^T g_I                               1. O = A V
            dA_IJ = g_I V_J^T                                1.
            dS_IJ = A_IJ * (dA_IJ - D_I)                     3. softmax, as there
            dQ_I += dS_IJ K_J * scale,  dK_J += dS_IJ^T Q_I * scale,  dbias_IJ = dS_IJ   4.
        Each sum over tiles is a sum over j (for dQ) or over i (for dK, dV) split in pieces.
        The loop takes key blocks outside and query blocks inside (FlashAttention-2's order):
        dK_J and dV_J then sum in two small arrays that stay in cache and are written once,
        and only dQ_I is read and written again per tile. (At T = 1024 ... 4096, one thread,
        this order took 2-6% less time than query blocks outside.)
    The backward and the forward's shortcut take exp(x) as 2**(x log2(e)), which numpy computes
    faster (`_Tiles.exp_scores`).
    """
    qf, kf, vf, out, lse = saved
    lead, (q_shape, k_shape, v_shape) = tiles.lead, tiles.shapes
    need_q, need_k, need_v = needs[:3]
    need_bias = len(needs) > 3 and needs[3]
    g = np.ascontiguousarray(g.reshape(out.shape), dtype=out.dtype)  # (N, Tq, dv)
    dq = np.zeros_like(qf) if need_q else None
    dk = np.zeros_like(kf) if need_k else None  # keys no query sees keep 0
    dv = np.zeros_like(vf) if need_v else None
    dbias = np.zeros(tiles.bias.shape, out.dtype) if need_bias else None
    # the heads share dbias: with one, all at once
    _by_heads(_backward_heads, tiles, qf.shape[0], g, qf, kf, vf, out, lse, scale, dq, dk, dv, dbias,
              split=not need_bias)
    tiles.release()
    for x in (dq, dk):
        if x is not None:
            x *= x.dtype.type(scale)
    grads = tuple(None if x is None else x.reshape(lead + shape[-2:])
                  for x, shape in ((dq, q_shape), (dk, k_shape), (dv, v_shape)))
    if len(needs) > 3:
        return grads + (None if dbias is None else dbias.reshape(tiles.bias_shape),)
    return grads


def _backward_heads(tiles: _Tiles, g, qf, kf, vf, out, lse, scale: float, dq, dk, dv, dbias) -> None:
    """The loop of `tiled_backward`'s docstring over some heads: adds their gradients into dq,
    dk, dv (and dbias), those not None (dq and dk without the factor scale)."""
    need_ds = dq is not None or dk is not None or dbias is not None
    # Two more columns fold the subtractions into the matmuls: [Q*scale, -L] [K, 1]^T = S - L
    # and [g, -D] [V, 1]^T = dA - D, so no pass over a tile is spent on them.
    d_row = np.einsum("nik,nik->ni", g, out)[..., None]  # D = rowsum(g * O), (N, Tq, 1)
    q_l = _with_column(qf * out.dtype.type(scale), -lse)  # (N, Tq, d + 1)
    q_l *= _LOG2E  # for `exp_scores`
    g_d = _with_column(g, -d_row)  # (N, Tq, dv + 1)
    k1t, v1t = _append_t(kf, 1, tiles.bk), _append_t(vf, 1, tiles.bk)  # blocks of [K, 1]^T, [V, 1]^T
    # Key blocks outside, query blocks inside: see the docstring.
    with np.errstate(over="ignore"):  # only masked scores can overflow in exp, and are then set to 0
        for j0, j1 in tiles.key_blocks(0, tiles.tq):
            dk_j = np.zeros((kf.shape[0], j1 - j0, kf.shape[2]), kf.dtype) if dk is not None else None
            dv_j = np.zeros((vf.shape[0], j1 - j0, vf.shape[2]), vf.dtype) if dv is not None else None
            for i0, i1 in tiles.query_blocks_seeing(j0):
                a = tiles.exp_scores(q_l[:, i0:i1], tiles.key_tile(k1t, j0, j1), i0, i1, j0, j1)
                if a is None:
                    continue  # A_IJ = exp(S_IJ - L_I), recomputed; None: every score masked
                if dv is not None:
                    dv_j += a.transpose(0, 2, 1) @ g[:, i0:i1]  # 1. dV_J += A_IJ^T g_I
                if not need_ds:
                    continue
                ds = tiles.buffer(1, a.shape)
                np.matmul(g_d[:, i0:i1], tiles.key_tile(v1t, j0, j1), out=ds)  # 1. dA_IJ - D_I
                ds *= a  # 3. dS = A * (dA - D)
                if dbias is not None:
                    tiles.add_bias_grad(dbias, ds, i0, i1, j0, j1)
                if dq is not None:
                    dq[:, i0:i1] += ds @ kf[:, j0:j1]  # 4. dQ_I += dS K_J (* scale, below)
                if dk is not None:
                    dk_j += ds.transpose(0, 2, 1) @ qf[:, i0:i1]  # 4. dK_J += dS^T Q_I (* scale)
            if dk is not None:
                dk[:, j0:j1] = dk_j
            if dv is not None:
                dv[:, j0:j1] = dv_j


class TiledAttention(Function):
    """O = softmax(Q K^T * scale + bias, masked) V, computed in (block_q, block_k) tiles.

    Inputs and options as in `Attention` (q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), an
    optional float `bias`, a bool `allowed`, `scale`), plus `causal_offset`: when not None, key
    j is allowed for query i only if j <= i + causal_offset (0 is `is_causal`, aligned top-left;
    Tk - Tq puts the last query on the last key, as with a KV cache). No dropout, no weights out:
    the point is that A is never stored.

    The kernel is `tiled_forward` and `tiled_backward` above, each with its derivation.

    Causal masking: a tile whose every key is after every query (j > i + offset) contributes
    exp(-inf) = 0 everywhere, so both passes skip it (about half the tiles); only tiles that
    the diagonal crosses need the mask at all. The same holds for any bool mask: a tile it
    masks entirely is skipped, a tile it allows entirely is not masked.

    Memory: besides inputs, O and the gradients, one or two (B*H, block_q, block_k) tiles,
    copies of K and V with one more column, and O(Tq) numbers per head, instead of A's
    (B*H, Tq, Tk). A row with nothing allowed keeps
    l = 0: it gives O = 0 and gradient 0, as in `Attention`. Subtracting the running max keeps
    exp from overflowing; exp(m - m') <= 1.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias=None, *, allowed=None, causal_offset=None, scale,
                block_q=BLOCK_Q, block_k=BLOCK_K):
        out, saved, tiles = tiled_forward(q, k, v, bias, allowed, causal_offset, scale=scale,
                                          block_q=block_q, block_k=block_k)
        ctx.save_for_backward(*saved)
        ctx.tiles, ctx.scale = tiles, scale
        ctx.allowed, ctx.causal_offset = allowed, causal_offset
        ctx.drawing = Drawing(masked=allowed is not None or causal_offset is not None, kernel=TiledAttention)
        return out

    @staticmethod
    def reference(ctx, q, k, v, bias=None):
        """The composition this kernel computes, for backward(create_graph=True): the one-block
        math (`attention_composed`) with the causal diagonal as a mask. It holds the (Tq, Tk)
        weights the kernel avoids: a second derivative of long sequences costs their memory."""
        allowed = ctx.allowed
        if ctx.causal_offset is not None:
            causal = _causal(q.shape[-2], k.shape[-2], ctx.causal_offset)
            allowed = causal if allowed is None else allowed & causal
        return attention_composed(q, k, v, bias, allowed, scale=ctx.scale)

    @staticmethod
    def backward(ctx, g):
        return tiled_backward(g, ctx.saved, ctx.tiles, ctx.scale, ctx.needs_input_grad)


def _fixed_reference(tiles, acc, m, q_blk, k1t, v1, i0, i1) -> np.ndarray:
    """[acc, l] of query rows I over all their key blocks against a fixed m, without the pass
    over each tile that finds its max; returns, per head (N,), whether that was safe: where it
    was not (an overflow, or no reference), the caller starts the head's rows again with the
    steps of `tiled_forward`'s docstring.

    Any reference works in place of the max as long as exp neither overflows nor loses the row:
    l and acc are both taken against m, and O = acc / l does not depend on it. Here m is S_i0,
    one of the row's own scores (`_Tiles.first_scores`, when key 0 is allowed for every row), so
    l >= 1 and exp(S - m) can only lose terms negligible next to l. If some score rises so far
    above m that exp overflows, acc or l comes out inf or NaN, and the check at the end sees it.
    Per tile this leaves one matmul, one exp and one matmul, without a pass for the max. The
    check is per head, so that a head's result never depends on the heads computed beside it.
    """
    ok = np.isfinite(m).all(axis=(1, 2))  # a head with no reference score fails
    if not ok.any():
        return ok
    q_m = _with_column(q_blk, -m)  # [Q_I * scale, -m] [K_J, 1]^T = S_IJ - m, from the matmul itself
    q_m *= _LOG2E  # for `exp_scores`
    part = None
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught just below
        for j0, j1 in tiles.key_blocks(i0, i1):
            p = tiles.exp_scores(q_m, tiles.key_tile(k1t, j0, j1), i0, i1, j0, j1)  # exp(S_IJ - m)
            if p is None:
                continue  # all masked: nothing to add
            part = np.matmul(p, v1[:, j0:j1], out=part)  # [P V, rowsum(P)]; one buffer for the rows
            acc += part
        return ok & np.isfinite(acc).all(axis=(1, 2))


def _flat(x: np.ndarray, lead: tuple[int, ...], dtype) -> np.ndarray:
    """x (..., T, f) broadcast to lead + (T, f) as one contiguous (N, T, f) array.

    The copy pays for itself: reading q, k and v in place as strided views into `PackedAttention`'s
    packed (B, T, 3E) array (rows 3E apart), and writing O and the gradients straight into packed
    arrays, made forward + backward at (B, H, T, D) = (2, 4, 1024, 32), one thread, 3-24% slower
    (four runs)."""
    full = np.broadcast_to(x, lead + x.shape[-2:])
    # (math.prod(lead), not -1: reshape cannot infer -1 for an empty array)
    return np.ascontiguousarray(full, dtype=dtype).reshape((math.prod(lead),) + x.shape[-2:])


def _append_t(x: np.ndarray, column, width: int) -> list[np.ndarray]:
    """[x, column]^T cut into blocks of `width` rows of x, each one contiguous (N, f + 1, width)
    array (`_with_column`, transposed): BLAS multiplies such a block about 1.6x faster than the
    same columns sliced out of one (N, f + 1, T) array (measured at 128 keys, D = 32), and faster
    than a transposed view."""
    return [_with_column(x[:, j0:j0 + width], column, transposed=True) for j0 in range(0, x.shape[1], width)]
