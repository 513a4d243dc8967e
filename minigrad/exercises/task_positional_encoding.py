"""Exercise 12 · positional_encoding: the sinusoidal table, added to the embeddings."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.nn.positional import sinusoidal_table
from minigrad.tensor import Tensor

from .catalogue import Task
from .diagnose import close
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks
from .transcript import Fail, run_student


def _interleaved(sin_angle: np.ndarray, cos_angle: np.ndarray, swap: bool = False) -> np.ndarray:
    """A table with sin(sin_angle) in the even columns and cos(cos_angle) in the odd ones (swap:
    the other way round); the angles are (max_len, ceil(d / 2)) and (max_len, floor(d / 2))."""
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    pe = np.zeros((sin_angle.shape[0], sin_angle.shape[1] + cos_angle.shape[1]))
    pe[:, 0::2], pe[:, 1::2] = first(sin_angle), second(cos_angle)
    return pe


def predictions(max_len: int, d: int) -> list[tuple[str, np.ndarray]]:
    """The classic table mistakes: sin and cos in each other's columns; i where 2i belongs; the
    column index j in the exponent (odd columns get another frequency than their pair's); the
    sines and cosines in two halves [sin | cos]."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]
    two_i, j = np.arange(0, d, 2, dtype=np.float64), np.arange(d, dtype=np.float64)
    angle = pos / 10000 ** (two_i / d)  # (max_len, ceil(d / 2)): the pairs' angles
    half_angle = pos / 10000 ** (two_i / 2 / d)
    by_column = pos / 10000 ** (j / d)  # (max_len, d): each column's own exponent
    halves = np.concatenate([np.sin(angle), np.cos(angle[:, : d // 2])], axis=1)
    return [("sin_cos_swapped", _interleaved(angle, angle[:, : d // 2], swap=True)),
            ("wrong_frequency", _interleaved(half_angle, half_angle[:, : d // 2])),
            ("frequency_from_column", _interleaved(by_column[:, 0::2], by_column[:, 1::2])),
            ("sin_cos_halves", halves)]


def checks(sub: Any) -> list[Check]:
    def table_of(max_len: int, d: int) -> np.ndarray:  # (inside run_student() only)
        return np.asarray(sub.sinusoidal_table(max_len, d), dtype=np.float64)

    def table() -> str:
        for max_len, d in ((3, 4), (10, 8), (6, 7), (1, 2), (50, 16)):  # the first small enough to print
            got = run_student("sinusoidal_table", lambda max_len=max_len, d=d: table_of(max_len, d))
            want = sinusoidal_table(max_len, d)
            if got.shape != want.shape:
                raise Fail(f"sinusoidal_table({max_len}, {d}) has shape {got.shape}, expected {want.shape}")
            if not close(got, want, rtol=1e-9):
                codes = [c for c, p in predictions(max_len, d) if close(got, p, rtol=1e-9)][:1]
                wrong = int((~np.isclose(got, want)).sum())
                raise Fail(f"sinusoidal_table({max_len}, {d}) differs from the formula at {wrong} of "
                           f"{got.size} entries",
                           forward_detail(f"sinusoidal_table({max_len}, {d})", {}, got, want), codes)
        return "5 sizes, odd d included"

    def properties() -> None:
        pe = run_student("sinusoidal_table", lambda: table_of(64, 8))
        pairs = pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2
        if not np.allclose(pairs, 1.0):
            raise Fail("sin^2 + cos^2 of a column pair is not 1: the pairs do not share one angle")
        if len({tuple(np.round(row, 9)) for row in pe}) != len(pe):
            raise Fail("two positions get the same code")

    rng = np.random.default_rng(11)

    def student(x: Tensor) -> Tensor:  # (inside run_student() only)
        return sub.add_positions(x, sinusoidal_table(8, x.shape[-1]))

    def reference(x: Tensor) -> Tensor:
        return x + Tensor(sinusoidal_table(8, x.shape[-1])[: x.shape[-2]])

    def added_to(x: np.ndarray) -> tuple[str, np.ndarray | None]:
        got = student(Tensor(x.copy()))
        return type(got).__name__, np.asarray(got._data) if isinstance(got, Tensor) else None

    def added() -> None:
        for shape in ((1, 3, 4), (2, 5, 4)):  # the first small enough to print
            x = rng.normal(0, 1, shape)
            kind, got = run_student("add_positions", lambda x=x: added_to(x))
            want = reference(Tensor(x))._data
            if got is None:
                raise Fail(f"add_positions returned a {kind}, not a Tensor")
            if not close(got, want):
                raise Fail(f"add_positions(x, table) is not x + table[:T] for x of shape {shape}",
                           forward_detail(f"x {shape}, table (8, {shape[-1]})", {"x": x}, got, want))

    def graph_of(x: np.ndarray) -> tuple[np.ndarray, bool]:
        t = Tensor(x.copy(), requires_grad=True)
        out = student(t)
        return np.asarray(t._data), bool(out.requires_grad)

    def in_graph() -> None:
        x = rng.normal(0, 1, (2, 3, 4))
        after, connected = run_student("add_positions", lambda: graph_of(x))
        if np.shape(after) != x.shape or not np.array_equal(after, x):
            raise Fail("add_positions changes its input x (x.data) instead of returning a new Tensor")
        if not connected:
            raise Fail("the result of add_positions is not connected to x in the graph: no gradient "
                       "reaches x (the embeddings)", diagnosis=["graph_cut_through_data"])

    worked = Case({"x": rng.normal(0, 1, (3, 4))}, label="x (3, 4)")
    return [("sinusoidal_table matches the formula", table),
            ("every pair is a sine and a cosine of one angle; positions are distinct", properties),
            ("add_positions adds the first T rows", added),
            ("add_positions keeps x in the graph (the gradient reaches it)", in_graph),
            *gradient_checks(student, reference, worked, [Case({"x": rng.normal(0, 1, (2, 5, 3))})])]


TASK = Task("positional_encoding", "the sinusoidal position table, added to the embeddings",
            ("sinusoidal_table", "add_positions"), checks,
            library=("sinusoidal_table", "SinusoidalPositionalEncoding"))
