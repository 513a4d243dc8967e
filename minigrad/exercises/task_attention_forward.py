"""Exercise 9 · attention_forward: scaled dot-product attention with a boolean mask."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks
from .training import attention_from, train_check
from .transcript import Fail, run_student

RTOL = 1e-9  # float64 throughout: a right forward agrees to about 1e-15


def _softmax(s: np.ndarray) -> np.ndarray:
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def fitted_fill(s: np.ndarray, v: np.ndarray, mask: np.ndarray, got: np.ndarray) -> float | None:
    """The finite c with got = softmax(where(mask, s, c)) v, when one c fits every row that has
    both allowed and masked keys (None otherwise). Per row, with x = exp(c - m) and m the row's
    largest allowed score, got (Z + n x) = N + x F is linear in x (Z, N: the allowed keys' sums
    of weights and of weighted values; n, F: the masked keys' count and sum of values)."""
    mask = np.broadcast_to(mask, s.shape)
    if got.shape != s.shape[:-1] + v.shape[-1:] or not np.all(np.isfinite(got)):
        return None
    m = np.where(mask, s, -np.inf).max(axis=-1, keepdims=True)
    e = np.where(mask, np.exp(s - np.where(np.isfinite(m), m, 0.0)), 0.0)
    n = (~mask).sum(axis=-1, keepdims=True)
    num, den = e @ v - e.sum(axis=-1, keepdims=True) * got, n * got - (~mask) @ v
    rows = mask.any(axis=-1) & ~mask.all(axis=-1) & ((den * den).sum(axis=-1) > 1e-20)
    if not rows.any():
        return None
    x = (num * den).sum(axis=-1)[rows] / (den * den).sum(axis=-1)[rows]
    if np.any(x <= 0):
        return None
    c = np.log(x) + m[..., 0][rows]
    return float(c.mean()) if np.ptp(c) <= 1e-6 * max(1.0, float(np.abs(c).max())) else None


def predictions(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
                got: np.ndarray | None = None) -> list[tuple[str, np.ndarray]]:
    """What each classic forward mistake outputs on these inputs (`got`, the student's output,
    lets the finite value a masking fills in be fitted)."""
    s = q @ k.swapaxes(-1, -2)
    d = q.shape[-1]

    def masked(x: np.ndarray) -> np.ndarray:
        return x if mask is None else np.where(mask, x, -np.inf)

    out = [("missing_scale", _softmax(masked(s)) @ v), ("wrong_scale", _softmax(masked(s / d)) @ v)]
    # sqrt of another size: dv, Tk or Tq in place of d
    out += [("scale_wrong_d", _softmax(masked(s / math.sqrt(n))) @ v)
            for n in dict.fromkeys((v.shape[-1], k.shape[-2], q.shape[-2])) if n not in (1, d)]
    if mask is not None:
        scaled = s / math.sqrt(d)
        out += [("mask_after_softmax", np.where(mask, _softmax(scaled), 0.0) @ v),
                ("mask_inverted", _softmax(np.where(mask, -np.inf, scaled)) @ v)]
        fitted = None if got is None else fitted_fill(scaled, v, mask, got)
        fills = [0.0] + ([] if fitted is None else [fitted])
        out += [("mask_not_minus_inf", _softmax(np.where(mask, scaled, c)) @ v) for c in fills]
    return out


def diagnosis(got: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray,
              mask: np.ndarray | None) -> list[str]:
    """The first mistake whose prediction is the student's output (none fits: no code)."""
    return [code for code, p in predictions(q, k, v, mask, got) if close(got, p, rtol=RTOL)][:1]


def _t(x: Any) -> Tensor | None:
    return None if x is None else Tensor(np.asarray(x))


def checks(sub: Any) -> list[Check]:
    rng = np.random.default_rng(8)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 1, shape)

    more = np.random.default_rng(18)

    def wider(x: np.ndarray, n: int) -> np.ndarray:
        """x with n more columns of its own draws (the main stream, and so every other check's
        numbers, stays as it was): a d or dv that differs from every other size."""
        return np.concatenate([x, more.normal(0, 1, x.shape[:-1] + (n,))], axis=-1)

    def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """The student's attention on these arrays: its output's array (in the student's process)."""
        def forward() -> np.ndarray:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a softmax of yours
                out = sub.attention(Tensor(q), Tensor(k), Tensor(v), _t(mask))
            if not isinstance(out, Tensor):
                raise Fail(f"attention returned a {type(out).__name__}, not a Tensor")
            return out._data

        return run_student("forward", forward)

    def reference(q, k, v, mask=None) -> np.ndarray:
        return references.attention(Tensor(q), Tensor(k), Tensor(v), mask)._data

    def shown(what: str, q, k, v, mask, got, want) -> str:
        inputs = {"q": q, "k": k, "v": v, **({} if mask is None else {"mask": mask})}
        return forward_detail(what, inputs, got, want)

    def against_reference(q, k, v, mask=None, what=""):
        got, want = run(q, k, v, mask), reference(q, k, v, mask)
        if got.shape != want.shape:
            raise Fail(f"{what}: output of shape {got.shape}, expected {want.shape} (..., Tq, dv)")
        if not close(got, want, rtol=RTOL):
            raise Fail(f"{what}: the output differs from the reference",
                       shown(what, q, k, v, mask, got, want), diagnosis(got, q, k, v, mask))

    def unmasked() -> str:
        against_reference(r(3, 3), r(3, 3), r(3, 3), what="q, k, v (3, 3)")
        # B, Tq, Tk, d, dv all different: a scale read from any other size fails
        against_reference(r(2, 3, 4), r(2, 5, 4), wider(r(2, 5, 2), 4),
                          what="q (2, 3, 4), k (2, 5, 4), v (2, 5, 6)")
        return "2 cases, B, Tq, Tk, d and dv all different"

    def masked() -> str:
        causal = np.tri(4, dtype=bool)
        pad = np.array([[True, True, True, False, False], [True] * 5])[:, None, :]  # (2, 1, 5)
        against_reference(r(4, 3), r(4, 3), r(4, 2), causal, "causal mask (4, 4)")
        against_reference(r(2, 3, 4), r(2, 5, 4), wider(r(2, 5, 2), 4), pad, "padding mask (2, 1, 5)")
        return "causal and padding masks"

    def rows_sum_to_one() -> None:
        q, k, ones, mask = r(4, 3), r(4, 3), np.ones((4, 1)), np.tri(4, dtype=bool)
        sums = run(q, k, ones, mask)  # with v = 1, O_i = sum_j A_ij
        if sums.shape != (4, 1) or not close(sums, ones, rtol=RTOL):
            raise Fail(f"with v = 1 the output is each row's sum of weights: "
                       f"{np.array2string(sums[..., 0], precision=3)}, not 1",
                       forward_detail("causal mask (4, 4), v = 1", {"mask": mask}, sums, ones),
                       diagnosis(sums, q, k, ones, mask))

    def causal_no_leak() -> None:
        q, k, v = r(5, 3), r(5, 3), r(5, 2)
        mask = np.tri(5, dtype=bool)
        before = run(q, k, v, mask)
        k2, v2 = k.copy(), v.copy()
        k2[3:], v2[3:] = r(2, 3) * 3, r(2, 2) * 3  # change tokens 3 and 4
        after = run(q, k2, v2, mask)
        leak = float(np.abs(before[:3] - after[:3]).max()) if before.shape == after.shape else math.inf
        if not leak <= 1e-12:
            raise Fail(f"changing tokens 3 and 4 changes the outputs of tokens 0..2 (by up to {leak:.3g})",
                       diagnosis=diagnosis(before, q, k, v, mask))

    def fully_masked_row() -> None:
        q, k, v = r(3, 2), r(4, 2), r(4, 2)
        mask = np.tri(3, 4, dtype=bool)
        mask[1] = False
        out, want = run(q, k, v, mask), reference(q, k, v, mask)
        if out.shape != want.shape or not np.all(np.isfinite(out)) or np.abs(out[1]).max() > 1e-12:
            row = np.array2string(out[1], precision=3) if out.shape == want.shape else f"shape {out.shape}"
            codes = diagnosis(out, q, k, v, mask)
            if not codes and out.shape == want.shape and close(out[1], v.mean(axis=0), rtol=1e-6):
                # a huge finite fill (-1e9): the masked scores are all equal, so is each weight
                codes, row = ["mask_not_minus_inf"], row + ", the mean of the values (equal weights)"
            elif (not codes and out.shape == want.shape and np.isnan(out[1]).all()
                  and np.all(np.isfinite(np.delete(out, 1, axis=0)))):
                codes = ["masked_row_nan"]  # -inf - (-inf) or 0 / 0 in a softmax of the student's
            raise Fail(f"a query with no allowed key (row 1) should give 0, got {row}",
                       shown("row 1 masked", q, k, v, mask, out, want), codes)

    def equivariance() -> None:
        q, k, v = r(4, 3), r(5, 3), r(5, 2)
        base = run(q, k, v)
        pk, pq = np.random.default_rng(1).permutation(5), np.random.default_rng(2).permutation(4)
        if not close(run(q, k[pk], v[pk]), base, rtol=RTOL):
            raise Fail("reordering the keys together with their values changes the output")
        if not close(run(q[pq], k, v), base[pq], rtol=RTOL):
            raise Fail("reordering the queries does not reorder the outputs the same way")

    def large_scores() -> str:
        # scores q k^T / sqrt(d) of order 1000: exp overflows past 709, the softmax must not
        fixed = np.random.default_rng(80)  # its own seed: two of the three rows have a score past 709
        q, k, v = fixed.normal(0, 30, (3, 4)), fixed.normal(0, 30, (5, 4)), fixed.normal(0, 1, (5, 2))
        got, want = run(q, k, v), reference(q, k, v)
        if got.shape != want.shape:
            raise Fail(f"output of shape {got.shape}, expected {want.shape} (..., Tq, dv)")
        if not close(got, want, rtol=RTOL):
            finite = bool(np.all(np.isfinite(got)))
            codes = diagnosis(got, q, k, v, None) if finite else ["attention_exp_overflows"]
            raise Fail(f"scores up to {np.abs(q @ k.T / 2).max():.0f}: the output differs from the reference"
                       + ("" if finite else " (it holds nan or inf)"),
                       shown("q, k of size 30, v (5, 2)", q, k, v, None, got, want), codes)
        return "scores of order 1000"

    worked = Case({"q": r(3, 3), "k": r(3, 3), "v": r(3, 3)}, {"mask": _t(np.tri(3, dtype=bool))},
                  "q, k, v (3, 3), causal mask")
    cases = [Case({"q": wider(r(2, 3, 2), 3), "k": wider(r(1, 4, 2), 3), "v": wider(r(4, 3), 3)},
                  label="batch axes that broadcast"),  # B, Tq, Tk, d, dv: 2, 3, 4, 5, 6
             Case({"q": r(4, 3), "k": r(4, 3), "v": r(4, 2)}, {"mask": _t(np.tri(4, dtype=bool))}, "causal")]
    return [("forward without a mask matches the reference", unmasked),
            ("forward with masks matches the reference", masked),
            ("the weights of each row sum to 1 (masked keys included)", rows_sum_to_one),
            ("causal mask: no output depends on a later token", causal_no_leak),
            ("a query with no allowed key gives 0, not nan", fully_masked_row),
            ("permutation equivariance without a mask", equivariance),
            ("large scores (order 1000): the output stays finite and right", large_scores),
            *gradient_checks(sub.attention, references.attention, worked, cases)]


def train(sub: Any) -> Check:
    return train_check(attention_from(lambda q, k, v, allowed: sub.attention(q, k, v, _t(allowed))))


# minigrad's own attention, whole or in kernels (the stub's x.softmax and masked_fill are the
# pieces to write it from), and its masked softmax.
LIBRARY = ("scaled_dot_product_attention", "attention_reference", "tiled_attention", "packed_self_attention",
           "Attention", "TiledAttention", "PackedAttention", "attention_forward", "tiled_forward",
           "packed_forward", "MultiheadAttention", "masked_softmax")

TASK = Task("attention_forward", "scaled dot-product attention, masked before the softmax",
            ("attention",), checks, train, library=LIBRARY)
