"""Exercise 6 · cross_entropy: fused log-softmax + NLL, mean over the batch."""

from __future__ import annotations

from typing import Any

import numpy as np

import minigrad.nn.functional as F
from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake, close
from .grader import Check
from .gradients import Case, compare, forward_detail, gradient_checks
from .training import train_check
from .transcript import Fail, run_student


def _case(rng: np.random.Generator, n: int, c: int, scale: float = 2.0, label: str = "") -> Case:
    return Case({"x": rng.normal(0, scale, (n, c))}, {"t": Tensor(rng.integers(0, c, n))},
                label or f"x ({n}, {c}), t ({n},)")


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _columns(t: np.ndarray, c: int, counted: bool) -> np.ndarray:
    """What x[:, t] picks, as a 0/1 (or, `counted`, a multiplicity) mask of the columns: every row
    at every target column (`dx[:, t] -= 1` subtracts once per distinct column)."""
    cols = np.bincount(t, minlength=c).astype(np.float64)
    return np.broadcast_to(cols if counted else np.minimum(cols, 1), (t.size, c))


def forward_mistakes(x: np.ndarray, t: np.ndarray) -> list[tuple[str, float]]:
    """The loss each classic forward mistake gives on (x, t): the sum not the mean, a sign, the
    targets picking whole columns (-logp[:, t], an (N, N) block)."""
    logp, n = _log_softmax(x), len(t)
    want = -logp[np.arange(n), t].mean()
    return [("factor_error", n * want), ("sign_error", -want),
            ("one_hot_columns", -logp[:, t].mean()), ("one_hot_columns", -logp[:, t].sum() / n)]


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """The backward's one-hot built by indexing columns: dx[:, t] -= 1 (once per distinct target
    column, as numpy's fancy-indexed -= does, or once per target, as np.subtract.at does)."""
    x, t = case.inputs["x"], np.asarray(case.options["t"]._data)
    p = np.exp(_log_softmax(x))
    return [Mistake("one_hot_columns", {"x": g * (p - _columns(t, x.shape[-1], counted)) / len(t)})
            for counted in (False, True)]


def checks(sub: Any) -> list[Check]:
    def student(x, t):
        return sub.CrossEntropy.apply(x, t)

    rng = np.random.default_rng(5)
    # The first is small enough to print, and its targets differ (x[:, t] would pick other entries).
    fixed = [Case({"x": rng.normal(0, 2, (3, 4))}, {"t": Tensor(np.array([1, 3, 0]))}, "x (3, 4), t (3,)"),
             _case(rng, 4, 5), _case(rng, 1, 3), _case(rng, 6, 2)]

    def loss_of(case: Case) -> tuple[np.ndarray, np.ndarray]:
        x, t = case.inputs["x"], case.options["t"]

        def run() -> np.ndarray:
            with np.errstate(all="ignore"):  # the huge cases: an overflow is reported, not warned about
                return np.asarray(student(Tensor(x.copy()), Tensor(t._data.copy()))._data, dtype=np.float64)

        got = run_student("forward", run)
        with np.errstate(all="ignore"):
            return got, references.cross_entropy(Tensor(x), t)._data

    def detail(case: Case, got: np.ndarray, want: np.ndarray) -> str:
        return forward_detail(case.describe(), {"x": case.inputs["x"], "t": case.options["t"]._data},
                              got, want)

    def forward() -> str:
        for case in fixed:
            (got, want), x = loss_of(case), case.inputs["x"]
            if np.shape(got) != ():
                raise Fail(f"the loss has shape {np.shape(got)}, not () (one number: the mean over the rows)")
            if not close(got, want, rtol=1e-9):
                t = np.asarray(case.options["t"]._data)
                codes = [c for c, p in forward_mistakes(x, t)  # with one row, the sum and x[:, t] are right
                         if (x.shape[0] > 1 or c == "sign_error") and close(got, p, rtol=1e-9)]
                note = " (N times too big: the sum, not the mean)" if codes[:1] == ["factor_error"] else ""
                raise Fail(f"on logits {x.shape} the loss is {float(got):.6g}, the reference "
                           f"{float(want):.6g}{note}", detail(case, got, want), codes[:1])
        return f"{len(fixed)} batches"

    # exp(1000) overflows unless the row max is subtracted; the targets are near their row's max.
    overflow = Case({"x": np.array([[1000.0, 999.0, 998.0], [0.0, 1000.0, 999.0]])},
                    {"t": Tensor(np.array([1, 2]))}, "logits of size 1000")
    # The targets lie 800 and 1000 below their row's max: their softmax underflows to exactly 0,
    # while their log-probabilities (-801.3, -1000.3) are finite.
    underflow = Case({"x": np.array([[0.0, -800.0, 1.0], [1000.0, 0.0, 999.0]])},
                     {"t": Tensor(np.array([1, 1]))}, "targets 800 and 1000 below their row's max")

    def stable() -> None:
        got, want = loss_of(overflow)
        if np.shape(got) != ():
            raise Fail(f"the loss has shape {np.shape(got)}, not () (one number: the mean over the rows)")
        if not np.all(np.isfinite(got)):
            raise Fail("logits of size 1000 give an infinite or nan loss: exp(1000) overflows unless the "
                       "row max m is subtracted first, logsumexp(x) = m + log(sum exp(x - m))",
                       detail(overflow, got, want))
        if not close(got, want, rtol=1e-9):
            raise Fail(f"logits of size 1000 give the loss {float(got):.6g}, the reference {float(want):.6g}",
                       detail(overflow, got, want))
        got, want = loss_of(underflow)
        if not close(got, want, rtol=1e-9):
            x, t = underflow.inputs["x"], np.asarray(underflow.options["t"]._data)
            with np.errstate(all="ignore"):
                log_of_softmax = -np.log(np.exp(_log_softmax(x))[np.arange(len(t)), t]).mean()
            codes = ["log_of_softmax_underflows"] if close(got, log_of_softmax) else []
            raise Fail(f"on {underflow.describe()} the loss is {float(got):.6g}, the reference "
                       f"{float(want):.6g}", detail(underflow, got, want), codes)
        for case in (overflow, underflow):
            with np.errstate(all="ignore"):
                compare(student, references.cross_entropy, case, sub.CrossEntropy, mistakes)

    cases = [_case(rng, n, c) for n, c in ((1, 2), (2, 3), (5, 4), (3, 1), (4, 6))]
    worked = _case(np.random.default_rng(0), 3, 4, label="x (3, 4), t (3,)")
    return [("forward matches the reference", forward),
            *gradient_checks(student, references.cross_entropy, worked, cases, sub.CrossEntropy, mistakes),
            ("huge logits: the loss and its gradient stay finite and right", stable)]


def train(sub: Any) -> Check:
    """The GPT's loss through the student's kernel."""
    original = F.cross_entropy

    def cross_entropy(logits: Tensor, target: Any, ignore_index: int = -100, reduction: str = "mean",
                      label_smoothing: float = 0.0) -> Tensor:
        t = np.asarray(getattr(target, "_data", target))
        if reduction != "mean" or label_smoothing or (t == ignore_index).any():
            return original(logits, target, ignore_index, reduction, label_smoothing)
        return sub.CrossEntropy.apply(logits.reshape(-1, logits.shape[-1]), Tensor(t.reshape(-1)))

    return train_check({"cross_entropy": cross_entropy})


TASK = Task("cross_entropy", "log-softmax + NLL, fused, mean over the batch", ("CrossEntropy",),
            checks, train,
            library=("CrossEntropy", "cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss",
                     "log_softmax", "LogSoftmax", "LogSoftmaxOp", "_log_softmax", "logsumexp", "LogSumExp",
                     "softmax", "Softmax", "SoftmaxOp"))
