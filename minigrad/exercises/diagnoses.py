"""The diagnoses catalogue: every mistake the grader can name, in one place.

A diagnosis is a code (what the grader returns, in `Report.diagnosis` and the JSON), a one-line
title, the tasks that can give it, and a one-paragraph hint: the symptom, the line of the math to
look at, never the fix. `minigrad exercise list --codes` prints the catalogue, and a check's
`Fail(..., diagnosis=[code])` may only name a code listed here (a test holds the grader to it).
The entries live beside their family of tasks (diagnoses_core.py, diagnoses_attention.py,
diagnoses_softmax.py, diagnoses_layers.py, diagnoses_higher_order.py); this module gathers them.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

# The tasks whose backward runs through gradients.compare, and so can make the generic mistakes
# of diagnose.generic_mistakes (g ignored, a transpose, a swap, a sign, a factor, an in-place write).
GRADIENT_TASKS = (
    "mul_broadcast", "matmul_backward", "reductions", "softmax_backward", "cross_entropy",
    "layer_norm_backward", "linear_layer", "attention_forward", "attention_backward", "multi_head",
    "additive_attention", "encoder_layer", "conv2d_backward", "double_backward",
)


@dataclass(frozen=True)
class Diagnosis:
    code: str
    title: str
    tasks: tuple[str, ...]
    hint: str
    covers: tuple[str, ...] = ()  # more general codes this one names more precisely (not shown beside it)


def _gather() -> dict[str, Diagnosis]:
    from . import (
        diagnoses_attention,
        diagnoses_core,
        diagnoses_higher_order,
        diagnoses_layers,
        diagnoses_softmax,
    )

    out: dict[str, Diagnosis] = {}
    for module in (diagnoses_core, diagnoses_attention, diagnoses_softmax, diagnoses_layers,
                   diagnoses_higher_order):
        for d in module.ENTRIES:
            if d.code in out:
                raise ValueError(f"diagnosis {d.code!r} is listed twice ({module.__name__})")
            out[d.code] = d
    return out


CATALOGUE: dict[str, Diagnosis] = _gather()
HINTS: dict[str, str] = {code: d.hint for code, d in CATALOGUE.items()}


def most_precise(codes: list[str]) -> list[str]:
    """`codes` (each once, in order) without those another of them names more precisely: a dw
    not summed over the batch is also a gradient not summed to its input's shape, and the
    student is told the first."""
    codes = list(dict.fromkeys(codes))
    covered = {c for code in codes for c in CATALOGUE[code].covers}
    return [c for c in codes if c not in covered]


def catalogue_text(width: int = 96) -> str:
    """The catalogue as `minigrad exercise list --codes` prints it: code, title, tasks, hint."""
    from .catalogue import ORDER

    blocks = []
    for d in sorted(CATALOGUE.values(), key=lambda d: (min(ORDER.index(t) for t in d.tasks), d.code)):
        tasks = "tasks: " + ", ".join(sorted(d.tasks, key=ORDER.index))
        blocks.append("\n".join([f"{d.code}: {d.title}"]
                                + textwrap.wrap(tasks, width, initial_indent="  ", subsequent_indent="    ")
                                + textwrap.wrap(d.hint, width, initial_indent="  ", subsequent_indent="  ")))
    return "\n\n".join(blocks)
