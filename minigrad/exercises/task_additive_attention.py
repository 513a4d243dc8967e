"""Exercise 13 · additive_attention: Bahdanau's score v . tanh(W_q q + W_k k) for the RNN decoder."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks
from .transcript import Fail, run_student

NAMES = ("query", "keys", "values", "w_q", "w_k", "v")
RTOL = 1e-9  # float64 throughout: a right forward agrees to about 1e-15


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    s = np.swapaxes(s, axis, -1)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.swapaxes(e / np.where(total == 0, 1.0, total), axis, -1)


def scores(x: dict, tanh: bool = True) -> np.ndarray:
    """e_ij = v . tanh(W_q q_i + W_k k_j), (B, Tq, Tk)."""
    pairs = (x["query"] @ x["w_q"].T)[:, :, None, :] + (x["keys"] @ x["w_k"].T)[:, None, :, :]
    return (np.tanh(pairs) if tanh else pairs) @ x["v"]


def fitted_fill(e: np.ndarray, mask: np.ndarray, weights: np.ndarray) -> float | None:
    """The finite c with weights = softmax(where(mask, e, c)), when one c fits every row that has
    both allowed and masked keys: a row's masked keys share the weight n x / (Z + n x), with
    x = exp(c - m), m its largest allowed score and Z the allowed keys' sum of exp(e - m)."""
    mask = np.broadcast_to(mask, e.shape)
    if weights.shape != e.shape or not np.all(np.isfinite(weights)):
        return None
    rows = mask.any(axis=-1) & ~mask.all(axis=-1)
    m = np.where(mask, e, -np.inf).max(axis=-1)
    z = np.where(mask, np.exp(e - np.where(np.isfinite(m), m, 0.0)[..., None]), 0.0).sum(axis=-1)
    n, wf = (~mask).sum(axis=-1), np.where(mask, 0.0, weights).sum(axis=-1)
    if not rows.any() or np.any((wf[rows] <= 0) | (wf[rows] >= 1)):
        return None
    c = np.log(z[rows] * wf[rows] / (n[rows] * (1 - wf[rows]))) + m[rows]
    if np.ptp(c) > 1e-6 * max(1.0, float(np.abs(c).max())):
        return None
    predicted = _softmax(np.where(mask, e, c.mean()))
    same = np.allclose(np.log(weights[~mask]), np.log(predicted[~mask]), rtol=0, atol=1e-6)
    return float(c.mean()) if same and close(weights, predicted) else None


def weight_mistakes(x: dict, mask: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """The weights each classic mistake gives on these inputs."""
    e = scores(x)

    def masked(s: np.ndarray) -> np.ndarray:
        return s if mask is None else np.where(mask, s, -np.inf)

    # q_i + k_i position by position (Tq == Tk): one score per position, normalised over them
    out = [("softmax_over_queries", _softmax(masked(e), axis=-2)),
           ("tanh_missing", _softmax(masked(scores(x, tanh=False))))]
    if x["query"].shape[1] == x["keys"].shape[1]:
        out.append(("pairs_not_broadcast",
                    _softmax(np.tanh(x["query"] @ x["w_q"].T + x["keys"] @ x["w_k"].T) @ x["v"])))
    if mask is not None:
        out += [("mask_after_softmax", np.where(mask, _softmax(e), 0.0)),
                ("mask_inverted", _softmax(np.where(mask, -np.inf, e))),
                ("mask_not_minus_inf", _softmax(np.where(mask, e, 0.0)))]
    return out


def diagnosis(weights: np.ndarray, x: dict, mask: np.ndarray | None) -> list[str]:
    """The first mistake whose weights are the student's (the values in any shape of that size:
    position-by-position scores give (B, T) where (B, Tq, Tk) belongs); none fits: no code."""
    for code, p in weight_mistakes(x, mask):
        if weights.size == p.size and close(weights.reshape(p.shape), p):
            return [code]
    if mask is not None and fitted_fill(scores(x), mask, weights) is not None:
        return ["mask_not_minus_inf"]
    return []


def checks(sub: Any) -> list[Check]:
    rng = np.random.default_rng(12)

    def inputs(B: int, Tq: int, Tk: int, Dq: int = 3, Dk: int = 2, Dv: int = 2, hidden: int = 4) -> dict:
        shapes = {"query": (B, Tq, Dq), "keys": (B, Tk, Dk), "values": (B, Tk, Dv), "w_q": (hidden, Dq),
                  "w_k": (hidden, Dk), "v": (hidden,)}
        return {n: rng.normal(0, 1, s) for n, s in shapes.items()}

    def run(x: dict, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The student's (context, weights) on these arrays, as arrays (in the student's process)."""
        def forward() -> tuple[np.ndarray, np.ndarray]:
            m = None if mask is None else Tensor(mask)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a softmax of yours
                out = sub.additive_attention(*(Tensor(x[n]) for n in NAMES), mask=m)
            if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, Tensor) for t in out)):
                raise Fail("additive_attention should return (context, weights), two Tensors")
            return out[0]._data, out[1]._data

        context, weights = run_student("forward", forward)
        return context, weights

    def against_reference(x: dict, mask: np.ndarray | None, what: str) -> None:
        context, weights = run(x, mask)
        ref = references.additive_attention(*(Tensor(x[n]) for n in NAMES), mask=mask)
        ref_c, ref_w = ref[0]._data, ref[1]._data
        shown = {n: x[n] for n in ("query", "keys")} | ({} if mask is None else {"mask": mask})
        if weights.shape != ref_w.shape or not close(weights, ref_w, rtol=RTOL):
            shapes = "" if weights.shape == ref_w.shape else f" (shape {weights.shape}, not {ref_w.shape})"
            finite = bool(np.all(np.isfinite(weights)))
            shapes += "" if finite else " (nan or inf)"
            raise Fail(f"{what}: the weights differ from the reference{shapes}",
                       forward_detail(f"{what}: weights", shown, weights, ref_w),
                       diagnosis(weights, x, mask) if finite else ["attention_exp_overflows"])
        if context.shape != ref_c.shape or not close(context, ref_c, rtol=RTOL):
            raise Fail(f"{what}: the weights are right but the context differs (context = weights @ values)",
                       forward_detail(f"{what}: context", {}, context, ref_c))

    def forward() -> str:
        pad = np.array([[True, True, True, False], [True, True, True, True]])[:, None, :]  # (2, 1, 4)
        for x, mask, what in ((inputs(1, 3, 3), None, "Tq = Tk = 3"), (inputs(2, 3, 4), None, "no mask"),
                              (inputs(2, 3, 4), pad, "a padding mask"),
                              (inputs(2, 1, 5), None, "one decoder step (Tq = 1)")):
            against_reference(x, mask, what)
        return "Tq = Tk, no mask, padding mask, one decoder step"

    def masked_rows() -> None:
        x = inputs(1, 2, 4)
        mask = np.array([[[True, False, True, False], [True, True, True, True]]])
        _, weights = run(x, mask)
        if weights.shape != (1, 2, 4):
            raise Fail(f"weights of shape {weights.shape}, expected (B, Tq, Tk) = (1, 2, 4)")
        if not close(weights.sum(-1), np.ones((1, 2)), rtol=RTOL):
            raise Fail(f"rows of weights sum to {np.round(weights.sum(-1), 3)}, not 1",
                       diagnosis=diagnosis(weights, x, mask))
        if np.abs(weights[~np.broadcast_to(mask, weights.shape)]).max() > 0:
            raise Fail("masked keys get weight", diagnosis=diagnosis(weights, x, mask))

    def fully_masked_row() -> None:
        x = inputs(1, 2, 3)
        mask = np.array([[[True, False, True], [False, False, False]]])  # query 1 may attend to nothing
        context, weights = run(x, mask)
        if weights.shape != (1, 2, 3) or context.shape != (1, 2, 2):
            raise Fail(f"weights {weights.shape}, context {context.shape}: expected (1, 2, 3) and (1, 2, 2)")
        finite = np.all(np.isfinite(weights)) and np.all(np.isfinite(context))
        if not (finite and np.abs(weights[0, 1]).max() <= 1e-12 and np.abs(context[0, 1]).max() <= 1e-12):
            row = np.array2string(weights[0, 1], precision=3)
            codes = diagnosis(weights, x, mask)
            if not codes and close(weights[0, 1], np.full(3, 1 / 3)):  # a huge finite fill (-1e9)
                codes, row = ["mask_not_minus_inf"], row + ", equal weights"
            elif not codes and np.isnan(weights[0, 1]).all() and np.all(np.isfinite(weights[0, 0])):
                codes = ["masked_row_nan"]  # -inf - (-inf) or 0 / 0 in a softmax of the student's
            raise Fail(f"a query with no allowed key (row 1) should get weights 0 and context 0, got {row}",
                       diagnosis=codes)

    def large_scores() -> str:
        # v of size 300: scores v . tanh(...) of order 1000; exp overflows past 709
        shapes = {"query": (2, 2, 3), "keys": (2, 3, 2), "values": (2, 3, 2), "w_q": (4, 3), "w_k": (4, 2),
                  "v": (4,)}
        fixed = np.random.default_rng(124)  # its own seed: three of the four rows have a score past 900
        x = {n: fixed.normal(0, 300 if n == "v" else 1, s) for n, s in shapes.items()}
        against_reference(x, None, "large scores (v of size 300)")
        return f"scores up to {np.abs(scores(x)).max():.0f}"

    def context(*t: Tensor, mask: Any = None) -> Tensor:
        return sub.additive_attention(*t, mask=mask)[0]

    def ref_context(*t: Tensor, mask: Any = None) -> Tensor:
        return references.additive_attention(*t, mask=mask)[0]

    worked = Case(inputs(1, 2, 3, Dq=2, hidden=2), label="query (1, 2, 2), keys (1, 3, 2), hidden 2")
    cases = [Case(inputs(2, 1, 3)), Case(inputs(1, 2, 3), {"mask": Tensor(np.array([[True, False, True]]))})]
    return [("context and weights match the reference", forward),
            ("weights: rows sum to 1, masked keys get 0", masked_rows),
            ("a query with no allowed key gets weights 0, not nan", fully_masked_row),
            ("large scores (order 1000): the weights stay finite and right", large_scores),
            *gradient_checks(context, ref_context, worked, cases)]


# minigrad's own additive attention, and the masked softmax it normalises the scores with (the
# stub's masked_fill and softmax(dim=-1) are the pieces to write it from).
LIBRARY = ("AdditiveAttention", "masked_softmax")

TASK = Task("additive_attention", "Bahdanau's additive score for the RNN decoder",
            ("additive_attention",), checks, library=LIBRARY)
