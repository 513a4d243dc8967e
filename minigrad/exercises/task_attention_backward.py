"""Exercise 10 · attention_backward: dQ, dK, dV of scaled dot-product attention."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from minigrad.autograd import unbroadcast
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks, student_output
from .training import attention_from, train_check
from .transcript import Fail


def _T(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


def forward_parts(case: Case) -> tuple[np.ndarray, ...]:
    """q, k, v, the weights A and the scale c of a case, computed in float64."""
    q, k, v = (case.inputs[n] for n in "qkv")
    c = 1.0 / math.sqrt(q.shape[-1])
    s = q @ _T(k) * c
    mask = case.options.get("mask")
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return q, k, v, e / np.where(total == 0, 1.0, total), c


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """What each classic attention-backward mistake gives on this case."""
    q, k, v, a, c = forward_parts(case)
    shape = {n: x.shape for n, x in case.inputs.items()}
    da = g @ _T(v)
    ds = a * (da - (da * a).sum(axis=-1, keepdims=True))

    def qk(dsx: np.ndarray, scale: float = c, which: str = "qk") -> dict:
        out = {"q": dsx @ k * scale, "k": _T(dsx) @ q * scale}
        return {n: unbroadcast(out[n], shape[n]) for n in which}

    found = [Mistake("missing_rowsum_term", qk(a * da)),
             Mistake("rowsum_wrong_axis", qk(a * (da - (da * a).sum(axis=-2, keepdims=True))))]
    if a.shape[-1] == a.shape[-2]:  # keepdims lost: the row sums broadcast along the columns
        found.append(Mistake("rowsum_wrong_axis", qk(a * (da - (da * a).sum(axis=-1)[..., None, :]))))
        # dS^T in place of dS in both products (square scores: the shapes cannot tell)
        found.append(Mistake("transposed_grad", {"q": unbroadcast(_T(ds) @ k * c, shape["q"]),
                                                 "k": unbroadcast(ds @ q * c, shape["k"])}))
        if q.shape[-1] == a.shape[-1]:  # dK = (dS Q)^T or dQ = (dS^T K)^T: all sides equal
            found.append(Mistake("transposed_grad", {"k": unbroadcast(_T(ds @ q * c), shape["k"])}))
            found.append(Mistake("transposed_grad", {"q": unbroadcast(_T(_T(ds) @ k * c), shape["q"])}))
    others = [n for n in dict.fromkeys((v.shape[-1], k.shape[-2], q.shape[-2])) if n not in (1, q.shape[-1])]
    for which in ("qk", "q", "k"):
        found.append(Mistake("missing_scale", qk(ds, 1.0, which)))
        found.append(Mistake("wrong_scale", qk(ds, c * c, which)))
        # 1/sqrt of another size (dv, Tk or Tq) in place of 1/sqrt(d)
        found += [Mistake("scale_wrong_d", qk(ds, 1.0 / math.sqrt(n), which)) for n in others]
    if len({x.shape for x in (q, k, v)}) == 1:  # the three gradients in a rotated order (dv first, ...)
        found += [Mistake("grads_out_of_order", {"q": ref["k"], "k": ref["v"], "v": ref["q"]}),
                  Mistake("grads_out_of_order", {"q": ref["v"], "k": ref["q"], "v": ref["k"]})]
    return found


def _student_op(sub: Any):
    def student(q: Tensor, k: Tensor, v: Tensor, mask: np.ndarray | None = None) -> Tensor:
        return sub.Attention.apply(q, k, v, mask=mask)

    return student


def cases() -> list[Case]:
    """Random shapes: batch axes that broadcast, Tq != Tk, d != dv, causal and padding masks."""
    rng = np.random.default_rng(9)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 1, shape)

    pad = np.array([[True, True, False, False], [True, True, True, True]])[:, None, :]  # (2, 1, 4)
    no_row = np.tri(3, 4, dtype=bool)
    no_row[0] = False  # query 0 may attend to nothing: its output and gradients are 0
    return [
        Case({"q": r(1, 2), "k": r(1, 2), "v": r(1, 1)}),
        Case({"q": r(2, 3), "k": r(4, 3), "v": r(4, 2)}),
        Case({"q": r(2, 3, 5), "k": r(1, 4, 5), "v": r(4, 3)}, label="batch axes that broadcast"),  # B != d
        Case({"q": r(4, 3), "k": r(4, 3), "v": r(4, 3)}, {"mask": np.tri(4, dtype=bool)}, "causal mask"),
        Case({"q": r(2, 3, 2), "k": r(2, 4, 2), "v": r(2, 4, 2)}, {"mask": pad}, "padding mask (2, 1, 4)"),
        Case({"q": r(3, 2), "k": r(4, 2), "v": r(4, 2)}, {"mask": no_row}, "a fully masked row"),
        # scores q k^T / sqrt(d) of order 1000: exp overflows past 709
        Case({"q": r(2, 2) * 30, "k": r(3, 2) * 30, "v": r(3, 2)}, label="large scores (order 1000)"),
    ]


def checks(sub: Any) -> list[Check]:
    student = _student_op(sub)
    rng = np.random.default_rng(3)
    worked = Case({"q": rng.normal(0, 1, (3, 3)), "k": rng.normal(0, 1, (3, 3)),
                   "v": rng.normal(0, 1, (3, 3))}, label="q, k, v (3, 3)")

    def forward() -> str:
        for case in cases():
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                got = student_output(student, case)
            want = references.attention(*[Tensor(x) for x in case.inputs.values()], **case.options)._data
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-12):
                finite = bool(np.all(np.isfinite(got)))
                raise Fail(f"on {case.describe()} the output differs from the reference"
                           + ("" if finite else " (it holds nan or inf)")
                           + ": the forward is given; restore it from the stub",
                           forward_detail(case.describe(), case.inputs, got, want),
                           ["attention_exp_overflows"] if not finite and np.all(np.isfinite(want)) else [])
        return f"{len(cases())} cases"

    def quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a forward of yours
                return fn()
        return run

    return [("forward matches the reference", forward),
            *((name, quiet(fn)) for name, fn in
              gradient_checks(student, references.attention, worked, cases(), sub.Attention, mistakes))]


def train(sub: Any) -> Check:
    return train_check(attention_from(lambda q, k, v, allowed: sub.Attention.apply(q, k, v, mask=allowed)))


# minigrad's own attention backward: the one-block kernel (nn/attention/one_block.py: Attention, its
# attention_backward and _backward_rows), the tiled and packed kernels and their backwards, and the
# functions that reach them or compute attention with Tensor ops (nn/attention/functional.py). Not
# attention_forward: the stub gives the forward.
TASK = Task("attention_backward", "dQ, dK, dV through the softmax: the heart of the course",
            ("Attention",), checks, train,
            library=("Attention", "attention_backward", "_backward_rows", "TiledAttention", "tiled_backward",
                     "PackedAttention", "packed_backward", "scaled_dot_product_attention", "tiled_attention",
                     "packed_self_attention", "attention_reference"))
