"""The diagnoses of the attention tasks: attention forward and backward, multi-head, additive attention
(see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
]
