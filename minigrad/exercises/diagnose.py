"""Recognise a student's mistake from numbers alone, and say what to look at.

Every diagnosis is found the same way: from the reference's numbers on a fixed case, compute
what each known mistake would produce (a gradient without the row-sum term, the transpose of
the right one, the reference for an upstream gradient of ones, ...) and compare the student's
numbers with each prediction. The student's source is never read. A task lists its own
mistakes (`Mistake` objects) first; `generic_mistakes` adds the ones every gradient can make.
The codes and their hints are in the catalogue, diagnoses.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Mistake:
    """A known mistake: its code and what it predicts for each output (gradient) by name.

    `predict` holds only the outputs the mistake changes; the others are the reference's.
    """

    code: str
    predict: dict[str, np.ndarray]
    note: str = ""


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5) -> bool:
    """Same shape and equal to a relative tolerance measured on the larger array's scale."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return bool(np.array_equal(a, b, equal_nan=True))
    scale = max(float(np.abs(a).max(initial=0)), float(np.abs(b).max(initial=0)), 1e-12)
    return bool(np.abs(a - b).max(initial=0) <= rtol * scale + 1e-12)


def fitted_factor(student: np.ndarray, reference: np.ndarray) -> float | None:
    """c with student = c * reference (least squares), when that holds and c is not 1."""
    s, r = np.asarray(student, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if s.shape != r.shape or not np.all(np.isfinite(s)):
        return None
    rr = float((r * r).sum())
    if rr < 1e-20:
        return None
    c = float((s * r).sum()) / rr
    if abs(c - 1) < 1e-3 or abs(c) < 1e-6 or not close(s, c * r):
        return None
    return c


def generic_mistakes(reference: dict[str, np.ndarray], with_ones: dict[str, np.ndarray] | None,
                     student: dict[str, np.ndarray]) -> list[Mistake]:
    """The mistakes any backward can make, predicted from the reference gradients.

    `with_ones` is the reference for an upstream gradient of ones (None when the task has no
    upstream gradient to ignore). Transposes only make sense for gradients of 2 axes or more;
    a swap of two gradients only when both have the same shape.
    """
    out: list[Mistake] = []
    names = list(reference)
    if with_ones is not None:
        out.append(Mistake("ignores_upstream_grad", dict(with_ones)))
        out += [Mistake("ignores_upstream_grad", {n: with_ones[n]}) for n in names]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if reference[a].shape == reference[b].shape:
                out.append(Mistake("swapped_grads", {a: reference[b], b: reference[a]}))
    for n in names:
        if reference[n].ndim >= 2:
            out.append(Mistake("transposed_grad", {n: reference[n].swapaxes(-1, -2)}))
    out.append(Mistake("sign_error", {n: -reference[n] for n in names}))
    out += [Mistake("sign_error", {n: -reference[n]}) for n in names]
    # Each gradient tested for its own constant ratio, alone and together (dq and dk both d times
    # too big; layer norm's dw and db both divided by the number of rows).
    factors = {n: c for n in names
               if (c := fitted_factor(student.get(n, np.empty(0)), reference[n])) is not None}
    for n, c in factors.items():
        if abs(c + 1) > 1e-3:
            out.append(Mistake("factor_error", {n: c * reference[n]}, note=f"{n}: factor {c:.4g}"))
    if len(factors) >= 2 and any(abs(c + 1) > 1e-3 for c in factors.values()):
        out.append(Mistake("factor_error", {n: c * reference[n] for n, c in factors.items()},
                           note=", ".join(f"{n}: factor {c:.4g}" for n, c in factors.items())))
    return out


def match(student: dict[str, np.ndarray], reference: dict[str, np.ndarray],
          mistakes: list[Mistake]) -> Mistake | None:
    """The first mistake whose prediction reproduces all of the student's numbers."""
    for m in mistakes:
        predicted = {**reference, **m.predict}
        if all(n in student and close(student[n], predicted[n]) for n in predicted):
            return m
    return None


def _matmul_fails(sa: tuple[int, ...], sb: tuple[int, ...]) -> bool:
    """Whether numpy's matmul rejects operands of these shapes (decided from the shapes alone)."""
    if not sa or not sb or sa[-1] != (sb[0] if len(sb) == 1 else sb[-2]):
        return True
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        return True
    return False


def _same_error(message: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> bool:
    """Whether operands of shapes sa, sb give exactly `message`: numpy's own words (tried on
    zero-strided arrays, which fail before any arithmetic), or minigrad's, which name both shapes."""
    if f"{sa} @ {sb}" in message:
        return True
    try:
        np.matmul(np.broadcast_to(np.float64(0), sa), np.broadcast_to(np.float64(0), sb))
    except ValueError as e:
        return str(e) == message
    return False


def dot_t_on_batched(exc: BaseException, frames: list[dict]) -> bool:
    """Whether a matmul error is explained by `.T` on an array of 3 or more axes.

    `frames` are the local variables of the student's frames the exception passed through. The
    error is put down to `.T` when, for arrays x (3 axes or more) and y among them, x with every
    axis reversed (what .T gives) against y reproduces the error's exact words, while x with only
    its last two axes swapped would have multiplied: a reversed batched shape, read from numbers.
    minigrad's error names both shapes; numpy's core-dimension error names only the two sizes,
    so there the match is by sizes (the hint says the error fits .T, and where to look).
    """
    message = str(exc)
    if not isinstance(exc, ValueError) or "matmul" not in message and "remapped shapes" not in message:
        return False
    for local in frames:
        arrays = [v._data if hasattr(v, "requires_grad") else v for v in local.values()]  # Tensors too
        shapes = [a.shape for a in arrays if isinstance(a, np.ndarray)]
        for i, x in enumerate(shapes):
            if len(x) < 3:
                continue
            reversed_x, swapped = x[::-1], x[:-2] + x[-2:][::-1]
            for y in shapes[:i] + shapes[i + 1:]:  # another array: x @ x.T is rare, and often misleads
                for left, right, fixed in ((reversed_x, y, (swapped, y)), (y, reversed_x, (y, swapped))):
                    if _matmul_fails(left, right) and not _matmul_fails(*fixed) and _same_error(
                            message, left, right):
                        return True
    return False
