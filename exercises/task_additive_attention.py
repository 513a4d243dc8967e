"""Exercise 12 · additive_attention: Bahdanau's score v . tanh(W_q q + W_k k) for the RNN decoder."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, gradient_checks

NAMES = ("query", "keys", "values", "w_q", "w_k", "v")


def _softmax(s: np.ndarray) -> np.ndarray:
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def mask_mistakes(x: dict, mask: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The weights each masking mistake gives."""
    e = np.tanh((x["query"] @ x["w_q"].T)[:, :, None, :] + (x["keys"] @ x["w_k"].T)[:, None, :, :]) @ x["v"]
    return [("mask_after_softmax", np.where(mask, _softmax(e), 0.0)),
            ("mask_not_minus_inf", _softmax(np.where(mask, e, 0.0)))]


def checks(sub: Any) -> list[Check]:
    rng = np.random.default_rng(12)

    def inputs(B: int, Tq: int, Tk: int, Dq: int = 3, Dk: int = 2, Dv: int = 2, hidden: int = 4) -> dict:
        shapes = {"query": (B, Tq, Dq), "keys": (B, Tk, Dk), "values": (B, Tk, Dv), "w_q": (hidden, Dq),
                  "w_k": (hidden, Dk), "v": (hidden,)}
        return {n: rng.normal(0, 1, s) for n, s in shapes.items()}

    def run(x: dict, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        m = None if mask is None else Tensor(mask)
        out = sub.additive_attention(*(Tensor(x[n]) for n in NAMES), mask=m)
        if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, Tensor) for t in out)):
            raise Fail("additive_attention should return (context, weights), two Tensors")
        return out[0].data, out[1].data

    def forward() -> str:
        pad = np.array([[True, True, True, False], [True, True, True, True]])[:, None, :]  # (2, 1, 4)
        for x, mask, what in ((inputs(2, 3, 4), None, "no mask"), (inputs(2, 3, 4), pad, "a padding mask"),
                              (inputs(2, 1, 5), None, "one decoder step (Tq = 1)")):
            context, weights = run(x, mask)
            ref_c, ref_w = references.additive_attention(*(Tensor(x[n]) for n in NAMES), mask=mask)
            if weights.shape != ref_w.shape or not close(weights, ref_w.data):
                found = [] if mask is None else mask_mistakes(x, mask)
                codes = [c for c, p in found if close(weights, p)][:1]
                same = weights.shape == ref_w.shape
                shapes = "" if same else f" (shape {weights.shape}, not {ref_w.shape})"
                raise Fail(f"{what}: the weights differ from the reference{shapes}", diagnosis=codes)
            if context.shape != ref_c.shape or not close(context, ref_c.data):
                raise Fail(f"{what}: the weights are right but the context differs "
                           "(context = weights @ values)")
        return "no mask, padding mask, one decoder step"

    def masked_rows() -> None:
        x = inputs(1, 2, 4)
        mask = np.array([[[True, False, True, False], [True, True, True, True]]])
        _, weights = run(x, mask)
        if not np.allclose(weights.sum(-1), 1.0):
            raise Fail(f"rows of weights sum to {np.round(weights.sum(-1), 3)}, not 1",
                       diagnosis=["mask_after_softmax"])
        if np.abs(weights[~np.broadcast_to(mask, weights.shape)]).max() > 0:
            raise Fail("masked keys get weight", diagnosis=["mask_not_minus_inf"])

    def context(*t: Tensor, mask: Any = None) -> Tensor:
        return sub.additive_attention(*t, mask=mask)[0]

    def ref_context(*t: Tensor, mask: Any = None) -> Tensor:
        return references.additive_attention(*t, mask=mask)[0]

    worked = Case(inputs(1, 2, 3, Dq=2, hidden=2), label="query (1, 2, 2), keys (1, 3, 2), hidden 2")
    cases = [Case(inputs(2, 1, 3)), Case(inputs(1, 2, 3), {"mask": Tensor(np.array([[True, False, True]]))})]
    return [("context and weights match the reference", forward),
            ("weights: rows sum to 1, masked keys get 0", masked_rows),
            *gradient_checks(context, ref_context, worked, cases)]


TASK = Task("additive_attention", "Bahdanau's additive score for the RNN decoder",
            ("additive_attention",), checks)
