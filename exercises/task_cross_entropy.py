"""Exercise 5 · cross_entropy: fused log-softmax + NLL, mean over the batch."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad.nn.functional as F
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, compare, gradient_checks
from .training import train_check


def _case(rng: np.random.Generator, n: int, c: int, scale: float = 2.0, label: str = "") -> Case:
    return Case({"x": rng.normal(0, scale, (n, c))}, {"t": Tensor(rng.integers(0, c, n))}, label)


def checks(sub: Any) -> list[Check]:
    def student(x, t):
        return sub.CrossEntropy.apply(x, t)

    rng = np.random.default_rng(5)
    fixed = [_case(rng, 4, 5), _case(rng, 1, 3), _case(rng, 6, 2)]

    def forward() -> str:
        for case in fixed:
            x, t = Tensor(case.inputs["x"]), case.options["t"]
            got, want = student(x, t).data, references.cross_entropy(x, t).data
            if np.shape(got) != ():
                raise Fail(f"the loss has shape {np.shape(got)}, not () (one number: the mean over the rows)")
            if not close(got, want, rtol=1e-9):
                n = x.shape[0]
                codes = (["factor_error"] if n > 1 and close(got, n * want, rtol=1e-9) else
                         ["sign_error"] if close(got, -want, rtol=1e-9) else [])
                note = " (N times too big: the sum, not the mean)" if codes == ["factor_error"] else ""
                raise Fail(f"on logits {x.shape} the loss is {float(got):.6g}, the reference "
                           f"{float(want):.6g}{note}", diagnosis=codes)
        return f"{len(fixed)} batches"

    huge = Case({"x": np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 999.0]])},
                {"t": Tensor(np.array([1, 2]))}, "logits of size 1000")

    def stable() -> None:
        x, t = Tensor(huge.inputs["x"]), huge.options["t"]
        got = student(x, t).data
        if not np.all(np.isfinite(got)):
            raise Fail("logits of size 1000 give an infinite or nan loss: subtract the row max in logsumexp")
        if not close(got, references.cross_entropy(x, t).data, rtol=1e-9):
            raise Fail("logits of size 1000 give a wrong loss")
        compare(student, references.cross_entropy, huge, sub.CrossEntropy)

    cases = [_case(rng, n, c) for n, c in ((1, 2), (2, 3), (5, 4), (3, 1), (4, 6))]
    worked = _case(np.random.default_rng(0), 3, 4, label="x (3, 4), t (3,)")
    return [("forward matches the reference", forward),
            *gradient_checks(student, references.cross_entropy, worked, cases, sub.CrossEntropy, None),
            ("huge logits: the loss and its gradient stay finite and right", stable)]




def train(sub: Any) -> Check:
    """The GPT's loss through the student's kernel."""
    original = F.cross_entropy

    def cross_entropy(logits: Tensor, target: Any, ignore_index: int = -100, reduction: str = "mean",
                      label_smoothing: float = 0.0) -> Tensor:
        t = np.asarray(getattr(target, "data", target))
        if reduction != "mean" or label_smoothing or (t == ignore_index).any():
            return original(logits, target, ignore_index, reduction, label_smoothing)
        return sub.CrossEntropy.apply(logits.reshape(-1, logits.shape[-1]), Tensor(t.reshape(-1)))

    return train_check({"cross_entropy": cross_entropy})


TASK = Task("cross_entropy", "log-softmax + NLL, fused, mean over the batch", ("CrossEntropy",),
            checks, train)
