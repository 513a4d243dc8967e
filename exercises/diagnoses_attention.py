"""The diagnoses of the attention tasks (see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
]
