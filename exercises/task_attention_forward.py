"""Exercise 8 · attention_forward: scaled dot-product attention with a boolean mask."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, gradient_checks
from .training import attention_from, train_check


def _softmax(s: np.ndarray) -> np.ndarray:
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def predictions(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                mask: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """What each classic forward mistake outputs on these inputs."""
    s = q @ k.swapaxes(-1, -2)
    d = q.shape[-1]

    def masked(x: np.ndarray) -> np.ndarray:
        return x if mask is None else np.where(mask, x, -np.inf)

    out = [("missing_scale", _softmax(masked(s)) @ v), ("wrong_scale", _softmax(masked(s / d)) @ v)]
    if mask is not None:
        a = _softmax(s / math.sqrt(d))
        out += [("mask_after_softmax", np.where(mask, a, 0.0) @ v),
                ("mask_not_minus_inf", _softmax(np.where(mask, s / math.sqrt(d), 0.0)) @ v)]
    return out


def _t(x: Any) -> Tensor | None:
    return None if x is None else Tensor(np.asarray(x))


def checks(sub: Any) -> list[Check]:
    rng = np.random.default_rng(8)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 1, shape)

    def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        out = sub.attention(Tensor(q), Tensor(k), Tensor(v), _t(mask))
        if not isinstance(out, Tensor):
            raise Fail(f"attention returned a {type(out).__name__}, not a Tensor")
        return out.data

    def against_reference(q, k, v, mask=None, what=""):
        got = run(q, k, v, mask)
        want = references.attention(Tensor(q), Tensor(k), Tensor(v), mask).data
        if got.shape != want.shape:
            raise Fail(f"{what}: output of shape {got.shape}, expected {want.shape} (..., Tq, dv)")
        if not close(got, want, rtol=1e-9):
            codes = [code for code, p in predictions(q, k, v, mask) if close(got, p, rtol=1e-9)][:1]
            if not codes and mask is not None and close(run(q, k, v), references.attention(
                    Tensor(q), Tensor(k), Tensor(v)).data, rtol=1e-9):
                # Right without the mask, wrong with it: the masking is wrong. Do the weights of
                # each row still sum to 1 (v = 1 gives those sums)? Then masked keys keep weight.
                sums = run(q, k, np.ones(v.shape[:-1] + (1,)), mask)
                codes = ["mask_not_minus_inf" if np.allclose(sums, 1.0) else "mask_after_softmax"]
            raise Fail(f"{what}: the output differs from the reference", diagnosis=codes)

    def unmasked() -> str:
        against_reference(r(3, 3), r(3, 3), r(3, 3), what="q, k, v (3, 3)")
        against_reference(r(2, 3, 4), r(2, 5, 4), r(2, 5, 2), what="q (2, 3, 4), k (2, 5, 4), v (2, 5, 2)")
        return "2 cases, Tq != Tk, d != dv"

    def masked() -> str:
        causal = np.tri(4, dtype=bool)
        pad = np.array([[True, True, True, False, False], [True] * 5])[:, None, :]  # (2, 1, 5)
        against_reference(r(4, 3), r(4, 3), r(4, 2), causal, "causal mask (4, 4)")
        against_reference(r(2, 3, 4), r(2, 5, 4), r(2, 5, 2), pad, "padding mask (2, 1, 5)")
        return "causal and padding masks"

    def rows_sum_to_one() -> None:
        mask = np.tri(4, dtype=bool)
        sums = run(r(4, 3), r(4, 3), np.ones((4, 1)), mask)[..., 0]  # with v = 1, O_i = sum_j A_ij
        if not np.allclose(sums, 1.0):
            got = np.array2string(sums, precision=3)
            raise Fail(f"with v = 1 the output is each row's sum of weights: {got}, not 1",
                       diagnosis=["mask_after_softmax"])

    def causal_no_leak() -> None:
        q, k, v = r(5, 3), r(5, 3), r(5, 2)
        mask = np.tri(5, dtype=bool)
        before = run(q, k, v, mask)
        k2, v2 = k.copy(), v.copy()
        k2[3:], v2[3:] = r(2, 3) * 3, r(2, 2) * 3  # change tokens 3 and 4
        after = run(q, k2, v2, mask)
        if not np.allclose(before[:3], after[:3], rtol=0, atol=1e-12):
            leak = np.abs(before[:3] - after[:3]).max()
            summed = run(q, k, np.ones((5, 1)), mask)[..., 0]
            code = "mask_not_minus_inf" if np.allclose(summed, 1.0) else "mask_after_softmax"
            raise Fail(f"changing tokens 3 and 4 changes the outputs of tokens 0..2 (by up to {leak:.3g})",
                       diagnosis=[code])

    def fully_masked_row() -> None:
        mask = np.tri(3, 4, dtype=bool)
        mask[1] = False
        out = run(r(3, 2), r(4, 2), r(4, 2), mask)
        if not np.all(np.isfinite(out)) or not np.allclose(out[1], 0.0):
            got = np.array2string(out[1], precision=3)
            raise Fail(f"a query with no allowed key should give 0, got {got}")

    def equivariance() -> None:
        q, k, v = r(4, 3), r(5, 3), r(5, 2)
        base = run(q, k, v)
        pk, pq = np.random.default_rng(1).permutation(5), np.random.default_rng(2).permutation(4)
        if not np.allclose(run(q, k[pk], v[pk]), base):
            raise Fail("reordering the keys together with their values changes the output")
        if not np.allclose(run(q[pq], k, v), base[pq]):
            raise Fail("reordering the queries does not reorder the outputs the same way")

    worked = Case({"q": r(3, 3), "k": r(3, 3), "v": r(3, 3)}, {"mask": _t(np.tri(3, dtype=bool))},
                  "q, k, v (3, 3), causal mask")
    cases = [Case({"q": r(2, 3, 2), "k": r(1, 4, 2), "v": r(4, 3)}, label="batch axes that broadcast"),
             Case({"q": r(4, 3), "k": r(4, 3), "v": r(4, 2)}, {"mask": _t(np.tri(4, dtype=bool))}, "causal")]
    return [("forward without a mask matches the reference", unmasked),
            ("forward with masks matches the reference", masked),
            ("the weights of each row sum to 1 (masked keys included)", rows_sum_to_one),
            ("causal mask: no output depends on a later token", causal_no_leak),
            ("a query with no allowed key gives 0, not nan", fully_masked_row),
            ("permutation equivariance without a mask", equivariance),
            *gradient_checks(sub.attention, references.attention, worked, cases)]


def train(sub: Any) -> Check:
    return train_check(attention_from(lambda q, k, v, allowed: sub.attention(q, k, v, _t(allowed))))


TASK = Task("attention_forward", "scaled dot-product attention, masked before the softmax",
            ("attention",), checks, train)
