"""Exercise 5 · softmax_backward: the backward of the softmax, dS = A * (dA - rowsum(dA * A))."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake, close
from .grader import Check
from .gradients import Case, compare, forward_detail, gradient_checks, random_shapes
from .training import attention_from, train_check
from .transcript import Fail, run_student


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """What the classic softmax-backward mistakes give on this case."""
    a = _softmax(case.inputs["s"])
    out = [Mistake("missing_rowsum_term", {"s": g * a}),
           Mistake("softmax_jacobian_diagonal", {"s": g * a * (1 - a)})]  # the sigmoid's rule
    if a.ndim >= 2:  # the sum over the other axis (queries instead of keys)
        out.append(Mistake("rowsum_wrong_axis", {"s": a * (g - (g * a).sum(axis=-2, keepdims=True))}))
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2]:  # keepdims lost: one sum per row, broadcast along columns
        out.append(Mistake("rowsum_wrong_axis", {"s": a * (g - (g * a).sum(axis=-1)[..., None, :])}))
    return out


def checks(sub: Any) -> list[Check]:
    def student(s):
        return sub.Softmax.apply(s)

    rng = np.random.default_rng(4)
    fixed = [rng.normal(0, 2, (3, 4)), rng.normal(0, 2, (2, 1, 5)), np.array([0.5])]

    def forward() -> str:
        for x in fixed:
            got = run_student("forward", lambda x=x: student(_t(x))._data)
            if got.shape != x.shape or not np.allclose(got, _softmax(x), rtol=1e-10, atol=1e-12):
                raise Fail(f"on an input of shape {x.shape} the output is not the softmax over the last "
                           "axis: the forward is given; restore it from the stub",
                           detail=forward_detail(f"s {x.shape}", {"s": x}, got, _softmax(x)))
        return f"{len(fixed)} fixed inputs"

    def properties() -> None:
        # Row 0 overflows exp without a max subtracted; row 1 underflows to 0 / 0 when one max
        # (1000, row 0's) is subtracted from the whole array instead of each row's own.
        huge = np.array([[1000.0, 0.0, -1000.0], [3.0, 3.0, 3.0]])
        a = np.asarray(run_student("forward", lambda: student(_t(huge))._data), dtype=np.float64)
        if a.shape != huge.shape:
            raise Fail(f"on huge scores of shape {huge.shape} the output has shape {a.shape}")
        bad = [i for i, row in enumerate(a) if not np.all(np.isfinite(row))]
        sums = a.sum(axis=-1)
        if bad or not np.allclose(sums, 1.0):
            why = ("exp(1000) overflows: the row max is not subtracted before exp" if bad == [0] else
                   "row 1, far below the array's max, underflows to 0: the max subtracted is not each "
                   "row's own" if 0 not in bad and (bad == [1] or abs(sums[1]) < 0.5) else "")
            raise Fail(f"on huge scores {huge.tolist()} the rows are not finite and summing to 1 (sums "
                       f"{np.round(sums, 6).tolist()})" + (f": {why}" if why else ""),
                       detail=forward_detail("huge scores", {"s": huge}, a, _softmax(huge)))

    worked = Case({"s": np.random.default_rng(0).normal(0, 1, (3, 3))}, label="s (3, 3)")
    cases = [Case({"s": np.random.default_rng(i).normal(0, 1.5, s)})
             for i, s in enumerate(random_shapes(6, seed=4))]

    def stable() -> None:
        huge = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]])
        with np.errstate(all="ignore"):
            got = run_student("forward", lambda: student(_t(huge))._data)
            if not close(got, _softmax(huge)):  # then no gradient can be judged
                raise Fail("the forward is wrong at these scores (see the check of huge scores), so its "
                           "gradient is too")
            compare(student, references.softmax, Case({"s": huge}), sub.Softmax, mistakes)

    return [("forward matches the reference", forward),
            ("forward: rows sum to 1, huge scores stay finite", properties),
            *gradient_checks(student, references.softmax, worked, cases, sub.Softmax, mistakes),
            ("backward at huge scores (1000) matches the reference", stable)]


def _t(x: np.ndarray) -> Tensor:
    return Tensor(x)


def train(sub: Any) -> Check:
    """The GPT's attention composed from Tensor ops around the student's Softmax."""

    def attend(q: Tensor, k: Tensor, v: Tensor, allowed: np.ndarray | None) -> Tensor:
        scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, T, T)
        if allowed is not None:
            scores = scores.masked_fill(Tensor(~allowed), -math.inf)
        return sub.Softmax.apply(scores) @ v

    return train_check(attention_from(attend))


TASK = Task("softmax_backward", "the softmax backward: dS = A * (dA - rowsum(dA * A))", ("Softmax",),
            checks, train, library=("softmax", "Softmax", "SoftmaxOp", "log_softmax"))
