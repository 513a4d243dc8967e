"""Exercise 11 · positional_encoding: the sinusoidal table, added to the embeddings."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.nn.positional import sinusoidal_table
from minigrad.tensor import Tensor

from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, gradient_checks


def predictions(max_len: int, d: int) -> list[tuple[str, np.ndarray]]:
    """The classic table mistakes: sin and cos in each other's columns; i where 2i belongs."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]
    two_i = np.arange(0, d, 2, dtype=np.float64)
    swapped = np.zeros((max_len, d))
    swapped[:, 0::2] = np.cos(pos / 10000 ** (two_i / d))
    swapped[:, 1::2] = np.sin(pos / 10000 ** (two_i / d))[:, : d // 2]
    half = np.zeros((max_len, d))
    half[:, 0::2] = np.sin(pos / 10000 ** (two_i / 2 / d))
    half[:, 1::2] = np.cos(pos / 10000 ** (two_i / 2 / d))[:, : d // 2]
    return [("sin_cos_swapped", swapped), ("wrong_frequency", half)]


def checks(sub: Any) -> list[Check]:
    def table() -> str:
        for max_len, d in ((10, 8), (6, 7), (1, 2), (50, 16)):
            got = np.asarray(sub.sinusoidal_table(max_len, d), dtype=np.float64)
            want = sinusoidal_table(max_len, d)
            if got.shape != want.shape:
                raise Fail(f"sinusoidal_table({max_len}, {d}) has shape {got.shape}, expected {want.shape}")
            if not close(got, want, rtol=1e-9):
                codes = [c for c, p in predictions(max_len, d) if close(got, p, rtol=1e-9)][:1]
                wrong = int((~np.isclose(got, want)).sum())
                raise Fail(f"sinusoidal_table({max_len}, {d}) differs from the formula at {wrong} of "
                           f"{got.size} entries", diagnosis=codes)
        return "4 sizes, odd d included"

    def properties() -> None:
        pe = np.asarray(sub.sinusoidal_table(64, 8), dtype=np.float64)
        pairs = pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2
        if not np.allclose(pairs, 1.0):
            raise Fail("sin^2 + cos^2 of a column pair is not 1: the pairs do not share one angle")
        if len({tuple(np.round(row, 9)) for row in pe}) != len(pe):
            raise Fail("two positions get the same code")

    rng = np.random.default_rng(11)

    def student(x: Tensor) -> Tensor:
        return sub.add_positions(x, sinusoidal_table(8, x.shape[-1]))

    def reference(x: Tensor) -> Tensor:
        return x + Tensor(sinusoidal_table(8, x.shape[-1])[: x.shape[-2]])

    def added() -> None:
        x = rng.normal(0, 1, (2, 5, 4))
        got = student(Tensor(x))
        if not isinstance(got, Tensor) or not close(got.data, reference(Tensor(x)).data):
            raise Fail("add_positions(x, table) is not x + table[:T] for x of shape (2, 5, 4)")

    worked = Case({"x": rng.normal(0, 1, (3, 4))}, label="x (3, 4)")
    return [("sinusoidal_table matches the formula", table),
            ("every pair is a sine and a cosine of one angle; positions are distinct", properties),
            ("add_positions adds the first T rows", added),
            *gradient_checks(student, reference, worked, [Case({"x": rng.normal(0, 1, (2, 5, 3))})])]


TASK = Task("positional_encoding", "the sinusoidal position table, added to the embeddings",
            ("sinusoidal_table", "add_positions"), checks)
