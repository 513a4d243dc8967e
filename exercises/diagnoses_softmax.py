"""The diagnoses of the softmax, cross-entropy and positional-encoding tasks
(see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
]
