"""The one-block attention kernel: `attention_forward` and `attention_backward`, plain numpy
functions with their derivation, under the `Attention` op.

Read `attention_reference` (functional.py, the lecture's three lines as Tensor ops) first: this
kernel computes exactly that, with a hand-derived backward. The mask rule (True = may attend) is
stated in `minigrad.nn.attention`. Long sequences go to the tiled kernel (tiled.py), which never
stores the (Tq, Tk) weights; `use_tiled` (dispatch.py) decides. `PackedAttention` (packed.py) runs
either kernel on q, k and v packed in one array.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from minigrad import Function, Tensor, where
from minigrad.runtime.parallel import run_spans

from .helpers import _LOG2E, _T, Drawing, _dropout_keep, _with_column

# ----------------------------------------------------------------------------- the kernel


def attention_forward(q, k, v, bias=None, allowed=None, *, scale: float, dropout_p: float = 0.0,
                      weights_out: list | None = None) -> tuple[np.ndarray, tuple]:
    """O = dropout(softmax(Q K^T * scale + bias, masked)) V on arrays; returns (O, saved), saved
    being what `attention_backward` needs.

    q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv); `bias` an optional float array broadcasting
    to the scores (an additive mask); `allowed` bool, broadcasting to (..., Tq, Tk), True = may
    attend; `weights_out` a list that receives a copy of A (for need_weights and recorders).

    Forward, with a row-wise softmax over the keys (last axis):
        S = Q K^T * scale (+ bias);  S_ij = -inf where allowed_ij is False
        A = softmax(S)                 A_ij = exp(S_ij - m_i) / sum_j' exp(S_ij' - m_i),
                                       m_i = max_j S_ij (0 when the whole row is -inf)
        P = A * keep                   keep = [u >= p] / (1 - p), u ~ U[0, 1)  (P = A if p = 0)
        O = P V
    Subtracting m_i keeps exp from overflowing for logits of any size.

    The code computes exactly this, with two rearrangements that save passes over (Tq, Tk):
      - The weights are kept unnormalised, E_ij = exp(S_ij - r_i) with row sums l_i, so that
        A = E / l. The softmax is the same for any reference r_i (the exp(-r_i) cancels), and
        without bias or dropout `_first_key_weights` takes r_i = S_i0, the row's first score:
        no pass to find each row's max. The division by l is done on (Tq, dv) arrays instead:
        O = (E V) / l, and in backward, since every line of `attention_backward` is linear in A
        through g, A and g may be replaced by E and g / l. Otherwise r = m and l = 1 (E = A).
        E is never trusted: every E_ij <= l_i (E_ij is one term of l_i), so `_first_key_weights`
        checks l <= `_max_total` and E V finite, and otherwise starts again with r = m. With l
        bounded, E and E V exceed the row-max path's A and A V by at most the factor l, and in
        backward g / l falls below g by at most that factor, while its products with E
        (dV = E^T (g / l), dS = E (dA - D) / l) are no larger than the row-max path's A^T g and
        A (dA - D): nothing overflows that would not there, and underflow comes no nearer than
        a quarter of the exponent range. With no keys at all (Tk = 0) every row is empty: O = 0.
      - A subtraction is folded into a matmul by one more column: [X, -c] [Y, 1]^T = X Y^T - c.
    """
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
    return out, (q, k, v, e, keep, out, total)


def attention_backward(g: np.ndarray, saved: tuple, scale: float, needs: tuple) -> tuple:
    """The gradients of `attention_forward` for the inputs flagged in `needs` (q, k, v and, when
    there was one, bias), None for the others; g = dL/dO (..., Tq, dv).

    Going through the forward's four lines in reverse:
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
    with no allowed key (A = 0 everywhere) gives output 0 and gradient 0, not NaN. The engine
    sums dQ, dK, dV and dbias back over leading axes that were broadcast.
    """
    q, k, v, e, keep, out, total = saved
    need_q, need_k, need_v = needs[:3]
    need_bias = len(needs) > 3 and needs[3]
    if total is not None:
        g = g * (1 / total)  # A = E / l: see `attention_forward`
    lead, (tq, tk) = np.broadcast_shapes(e.shape[:-2], g.shape[:-2]), e.shape[-2:]
    dtype = np.result_type(e, g)
    # Each gradient over all the lead axes (the engine sums those an input was broadcast along);
    # dS gets an array of its own only when it is returned, the bias's gradient.
    grads = [np.empty(lead + (tq, q.shape[-1]), dtype) if need_q else None,
             np.empty(lead + k.shape[-2:], dtype) if need_k else None,
             np.empty(lead + v.shape[-2:], dtype) if need_v else None,
             np.empty(lead + (tq, tk), dtype) if need_bias else None]

    _by_batch(_backward_rows, lead, tq * tk, g, q, k, v, e, keep, out, scale, *grads)
    dq, dk, dv, ds = grads
    return (dq, dk, dv, ds if need_bias else None)[:len(needs)]


def _backward_rows(g, q, k, v, e, keep, out, scale, dq, dk, dv, ds) -> None:
    """The four steps of `attention_backward`'s docstring, written into dq, dk, dv and ds, those
    not None (dS into a temporary when ds is None and dq or dk needs it)."""
    if dv is not None:
        _matmul_into(_T(e if keep is None else e * keep), g, dv)  # 1. dV = P^T g
    if dq is None and dk is None and ds is None:
        return
    # = rowsum(dA * A), see 3.; a matmul with ones sums short rows ~6x faster than .sum
    rowsum = (g * out) @ np.ones((out.shape[-1], 1), out.dtype)
    if ds is None:
        ds = np.empty(np.broadcast_shapes(e.shape, g.shape[:-1] + (1,)), np.result_type(e, g))
    if keep is None:
        # 1. and 3.: dA - rowsum
        _matmul_into(_with_column(g, -rowsum), _with_column(v, 1, transposed=True), ds)
    else:
        _matmul_into(g, _with_column(v, None, transposed=True), ds)  # 1. dP = g V^T
        ds *= keep  # 2. dA = dP * keep
        ds -= rowsum
    ds *= e  # 3. dS = A * (dA - rowsum(dA * A)), in place
    if dq is not None:
        _matmul_into(ds, k, dq)  # 4. dQ = dS K * scale
        dq *= dq.dtype.type(scale)
    if dk is not None:
        _matmul_into(_T(ds), q, dk)  # 4. dK = dS^T Q * scale
        dk *= dk.dtype.type(scale)


def _by_batch(body: Callable[..., Any], lead: tuple[int, ...], scores: int, *args: Any) -> list:
    """body(*args cut to batch rows a..b-1) over runs of the first batch axis, one run per thread
    (minigrad.runtime.parallel), or body(*args) at once; the values body returns, one per run.

    The one partition of the one-block kernel: every step of its body is per batch row, so the
    results do not depend on how the rows are grouped. Each array argument is cut (`_rows`:
    those without the axis, or broadcasting along it, go whole), the others (the scale) pass as
    they are. Inputs of 2-D arrays (no batch axis) go whole. `scores` is Tq * Tk, the work per
    head."""
    if not lead:
        return [body(*args)]
    results = []

    def run(a: int, b: int) -> None:  # batch rows a..b-1
        results.append(body(*(_rows(x, a, b, len(lead)) for x in args)))

    run_spans(run, [math.prod(lead[1:]) * scores] * lead[0])
    return results


def _rows(x, a: int, b: int, nd: int):
    """Batch rows a..b-1 of x, an array over the lead axes nd (+ its last two): x itself when x
    is not an array (None, the scale), has no such axis (fewer dimensions: it broadcasts from
    the right) or broadcasts along it (size 1)."""
    if not isinstance(x, np.ndarray) or x.ndim < nd + 2 or nd == 0 or x.shape[0] == 1:
        return x
    return x[a:b]


def _matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b, in place when the product has out's shape, else broadcast into it."""
    if np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) == out.shape[:-2]:
        np.matmul(a, b, out=out)
    else:
        out[...] = a @ b


def _max_weights(q, k, bias, allowed, scale) -> np.ndarray:
    """A = softmax(S) with the row max as reference: the forward's first two lines as written."""
    # scale the (Tq, d) side, not (Tq, Tk)
    s = (q * q.dtype.type(scale)) @ _with_column(k, None, transposed=True)
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
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                               *(() if allowed is None else (allowed.shape[:-2],)))
    e = np.empty(lead + (q.shape[-2], tk), q.dtype)
    acc = np.empty(lead + (q.shape[-2], v.shape[-1] + 1), q.dtype)  # [E V, l]
    if not all(_by_batch(_first_key_rows, lead, q.shape[-2] * tk, q, k, v, allowed, scale, e, acc)):
        return None
    total = acc[..., -1:]
    return e, acc[..., :-1] * (1 / total), total


def _first_key_rows(q, k, v, allowed, scale, e: np.ndarray, acc: np.ndarray) -> bool:
    """E and [E V, l] of `_first_key_weights`, written into e and acc; False on an overflow."""
    qc = q * q.dtype.type(scale * _LOG2E)  # S log2(e) = qc K^T
    # One query (a generated token against a KV cache): copying K and V with their extra
    # columns would cost more than the products it speeds up, so multiply by views instead
    # (one thread, (B, H, D) = (1, 4, 32), against 64 / 1024 keys: 13 / 41 us, copies 33 / 228).
    one_query = q.shape[-2] == 1
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below
        if one_query:
            _matmul_into(qc, _T(k), e)
            e -= e[..., :1]  # (S - S_i0) log2(e)
        else:
            first = qc @ _T(k[..., :1, :])  # (..., Tq, 1): S_i0 log2(e)
            # (S - S_i0) log2(e)
            _matmul_into(_with_column(qc, -first), _with_column(k, 1, transposed=True), e)
        np.exp2(e, out=e)
        if allowed is not None:
            np.multiply(e, allowed, out=e)
        if one_query:
            np.matmul(e, v, out=acc[..., :-1])
            np.sum(e, axis=-1, keepdims=True, out=acc[..., -1:])
        else:
            _matmul_into(e, _with_column(v, 1), acc)  # [E V, l]
    # (total <= bound) is False for NaN too; the checks read (Tq, dv) arrays, not (Tq, Tk).
    return bool((acc[..., -1:] <= _max_total(acc.dtype)).all() and np.isfinite(acc[..., :-1]).all())


def _max_total(dtype: np.dtype) -> float:
    """The largest row sum l the first-key reference accepts: 2**(maxexp / 4), 2**32 in float32
    and 2**256 in float64. E <= l then takes at most a quarter of the exponent range above the
    row-max path's A <= 1, and g / l at most a quarter below g: what the dtype leaves either side
    of ordinary values is still there."""
    return 2.0 ** (np.finfo(dtype).maxexp // 4)


# ----------------------------------------------------------------------------- the composition


def attention_composed(q, k, v, bias=None, allowed=None, *, scale: float, keep=None):
    """`attention_forward`'s math as differentiable Tensor ops, the kernels' `reference` for
    backward(create_graph=True): q, k, v (and bias) Tensors, `allowed` and the dropout
    multipliers `keep` (those the forward drew) arrays or None.

    The softmax subtracts the row max as a constant (the softmax does not depend on it) taken
    as 0 in a row with nothing allowed, and divides by a row sum of 1 there: such a row gives
    output 0 and gradients 0 of every order, as in the kernel, not NaN."""
    s = (q @ k.transpose(-2, -1)) * scale
    if bias is not None:
        s = s + (bias if bias.dtype == s.dtype else bias.to(s.dtype))
    if allowed is not None:
        shape = np.broadcast_shapes(s.shape, allowed.shape)
        if shape != s.shape:  # a mask with more leading axes than q and k
            s = s.expand(shape)
        s = s.masked_fill(~allowed, -math.inf)
    if s.shape[-1]:
        m = s._data.max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0).astype(s.dtype, copy=False)
        s = s - Tensor._make(m, None)
    e = s.exp()
    total = e.sum(-1, keepdim=True)
    a = e / where(total._data == 0, 1.0, total)
    if keep is not None:
        a = a * Tensor._make(keep, None)
    return a @ v


# ----------------------------------------------------------------------------- the op


class Attention(Function):
    """O = dropout(softmax(Q K^T * scale + bias, masked)) V, with a hand-written backward.

    Inputs are q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) and an optional float `bias`
    broadcasting to the scores (an additive mask; it gets a gradient, so it may be learned).
    Options: `allowed` (bool, broadcasting to (..., Tq, Tk), True = may attend), `scale`,
    `dropout_p`, and `weights_out` (a list that receives a copy of A, for need_weights).
    The math, forward and backward: `attention_forward` and `attention_backward` above.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias=None, *, allowed=None, scale, dropout_p=0.0, weights_out=None):
        out, saved = attention_forward(q, k, v, bias, allowed, scale=scale, dropout_p=dropout_p,
                                       weights_out=weights_out)
        ctx.save_for_backward(*saved)
        ctx.scale, ctx.allowed = scale, allowed
        ctx.drawing = Drawing.of(allowed, dropout_p=dropout_p, kernel=Attention)
        return out

    @staticmethod
    def reference(ctx, q, k, v, bias=None):
        """The composition this kernel computes, for backward(create_graph=True), with the
        dropout multipliers the forward drew (saved, so the mask is the same)."""
        return attention_composed(q, k, v, bias, ctx.allowed, scale=ctx.scale, keep=ctx.saved[4])

    @staticmethod
    def backward(ctx, g):
        return attention_backward(g, ctx.saved, ctx.scale, ctx.needs_input_grad)
