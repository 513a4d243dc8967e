"""The diagnoses of the broadcasting, matmul, reduction, layer-norm, Linear and encoder tasks
(see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
]
