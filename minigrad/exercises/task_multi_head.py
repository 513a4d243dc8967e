"""Exercise 11 · multi_head: head split and merge around scaled dot-product attention."""

from __future__ import annotations

import math
import re
from itertools import product
from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .diagnoses import HINTS
from .grader import Check
from .gradients import Case, forward_detail, gradient_checks
from .transcript import Fail, StudentRaised, raised_here, run_student

# How a split (B, T, C) -> (B, H, T, D) and a merge (B, H, T, D) -> (B, T, C) can be written, by the
# code of the mistake ("" is right): a reshape alone, or C taken as (D, H) (strided heads).
SPLITS = {
    "": lambda x, H: x.reshape(x.shape[0], x.shape[1], H, -1).transpose(0, 2, 1, 3),
    "heads_merged_wrong": lambda x, H: x.reshape(x.shape[0], H, x.shape[1], -1),
    "heads_strided": lambda x, H: x.reshape(x.shape[0], x.shape[1], -1, H).transpose(0, 3, 1, 2),
}
MERGES = {
    "": lambda y: y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1),
    "heads_merged_wrong": lambda y: y.reshape(y.shape[0], y.shape[2], -1),
    "heads_strided": lambda y: y.transpose(0, 2, 3, 1).reshape(y.shape[0], y.shape[2], -1),
}


def _data(x: Any, what: str) -> np.ndarray:
    if not isinstance(x, Tensor):
        raise Fail(f"{what} returned a {type(x).__name__}, not a Tensor")
    return x._data


def predictions(q: np.ndarray, k: np.ndarray, v: np.ndarray, H: int,
                mask: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """What multi_head_attention outputs under each split, merge or scale mistake."""

    def attend(split, merge, scale=None) -> np.ndarray:
        heads = [Tensor(split(t, H)) for t in (q, k, v)]
        return merge(references.attention(*heads, mask=mask, scale=scale)._data)

    out = [(split_code or merge_code, attend(SPLITS[split_code], MERGES[merge_code]))
           for split_code, merge_code in product(SPLITS, MERGES) if split_code or merge_code]
    # 1/sqrt of another size than D: the width C, the number of heads H, of queries or of keys
    D = q.shape[-1] // H
    return out + [("scale_wrong_d", attend(SPLITS[""], MERGES[""], 1 / math.sqrt(n)))
                  for n in dict.fromkeys((q.shape[-1], H, q.shape[-2], k.shape[-2])) if n not in (1, D)]


def _split_with_query_length(e: ValueError, q: np.ndarray, k: np.ndarray) -> bool:
    """Whether e is numpy's reshape error for an array of k's size into a shape that holds q's
    length Tq (and not k's Tk): k or v split with the queries' length."""
    m = (re.search(r"cannot reshape array of size (\d+) into shape \(([\d, ]+)\)", str(e))  # numpy's
         or re.search(r"\((\d+) elements\) as shape \(([\d, ]+)\)", str(e)))  # Tensor.reshape's
    if m is None or q.shape[1] == k.shape[1]:
        return False
    shape = [int(n) for n in m.group(2).split(",") if n.strip()]
    return int(m.group(1)) == k.size and q.shape[1] in shape and k.shape[1] not in shape


def checks(sub: Any) -> list[Check]:
    rng = np.random.default_rng(10)
    # Every size a student may confuse differs: the batch, the heads, the queries, the keys, the
    # head size and the width (a scale of 1/sqrt(H), or k split with the queries' length, fails).
    B, T, H, D, TK = 2, 5, 3, 4, 6
    x = rng.normal(0, 1, (B, T, H * D))

    def codes_of(got: np.ndarray, fixed: np.ndarray, ways: dict) -> list[str]:
        return [code for code, way in ways.items() if code and close(got, way(*fixed))][:1]

    def split() -> None:
        got = run_student("split_heads", lambda: _data(sub.split_heads(Tensor(x), H), "split_heads"))
        want = references.split_heads(Tensor(x), H)._data
        if got.shape != want.shape:
            raise Fail(f"(B, T, C) = {x.shape} with H = {H} gives {got.shape}, expected (B, H, T, D) = "
                       f"{want.shape}")
        if not close(got, want):
            raise Fail("the heads hold the wrong features: head h should hold features h*D .. (h+1)*D - 1 of "
                       "every position", forward_detail(f"x (B, T, C) = {x.shape}, H = {H}", {}, got, want),
                       codes_of(got, (x, H), SPLITS))

    def merge() -> None:
        heads = rng.normal(0, 1, (B, H, T, D))
        got = run_student("merge_heads", lambda: _data(sub.merge_heads(Tensor(heads)), "merge_heads"))
        want = references.merge_heads(Tensor(heads))._data
        if got.shape != want.shape:
            raise Fail(f"(B, H, T, D) = {heads.shape} gives {got.shape}, expected (B, T, H*D) = {want.shape}")
        if not close(got, want):
            raise Fail("position t of the output should be concat(head_1[t], ..., head_H[t])",
                       forward_detail(f"heads (B, H, T, D) = {heads.shape}", {}, got, want),
                       codes_of(got, (heads,), MERGES))
        back = run_student("split_heads(merge_heads)",
                           lambda: _data(sub.split_heads(sub.merge_heads(Tensor(heads)), H), "split_heads"))
        if not close(back, heads):
            raise Fail("split_heads(merge_heads(x)) does not give x back")

    def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        def attend() -> dict:
            """The output's array, or a ValueError the student's code raised, as data (its words,
            and how run_student would report it): whether it is a reshape with the wrong length
            is decided below, outside the student's process."""
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a softmax of yours
                    out = sub.multi_head_attention(Tensor(q), Tensor(k), Tensor(v), H,
                                                   None if mask is None else Tensor(mask))
            except ValueError as e:
                raised = raised_here(e)
                return {"value_error": str(e), "message": raised.message, "diagnosis": raised.diagnosis}
            return {"out": _data(out, "multi_head_attention")}

        got = run_student("multi_head_attention", attend)
        if "out" in got:
            return got["out"]
        error = str(got.get("value_error"))
        if _split_with_query_length(ValueError(error), q, k):
            raise Fail(f"q {q.shape} and k, v {k.shape}: {error}: k or v is reshaped with the queries' "
                       f"length Tq = {q.shape[1]}, not its own Tk = {k.shape[1]}",
                       diagnosis=["kv_split_with_query_length"])
        raise StudentRaised(str(got.get("message")), [c for c in got.get("diagnosis") or [] if c in HINTS])

    def against_reference(q, k, v, mask, what: str) -> None:
        got, want = run(q, k, v, mask), references.multi_head(Tensor(q), Tensor(k), Tensor(v), H, mask)._data
        if got.shape != want.shape:
            raise Fail(f"{what}: output of shape {got.shape}, expected (B, Tq, C) = {want.shape}")
        if not close(got, want, rtol=1e-9):
            finite = bool(np.all(np.isfinite(got)))
            codes = ([c for c, p in predictions(q, k, v, H, mask) if close(got, p, rtol=1e-9)][:1] if finite
                     else ["attention_exp_overflows"])
            raise Fail(f"{what}: the output differs from the reference" + ("" if finite else " (nan or inf)"),
                       forward_detail(f"{what}, q, k, v {q.shape}, {H} heads", {}, got, want), codes)

    def qkv(scale: tuple[float, float, float] = (1, 1, 1), draw: Any = rng) -> list[np.ndarray]:
        """q (B, T, C), k and v (B, TK, C): Tq != Tk."""
        return [draw.normal(0, c, (B, t, H * D)) for c, t in zip(scale, (T, TK, TK))]

    def attend() -> str:
        for mask in (None, np.tri(T, TK, 1, dtype=bool)):
            q, k, v = qkv()
            against_reference(q, k, v, mask, "no mask" if mask is None else "causal mask")
        return f"with and without a causal mask, Tq = {T}, Tk = {TK}, {H} heads of {D}"

    def independent() -> None:
        q, k, v = qkv()
        base = run(q, k, v)
        q2 = q.copy()
        q2[..., :D] += 1.0  # change head 0's queries only
        after = run(q2, k, v)
        if base.shape != after.shape or not close(base[..., D:], after[..., D:], rtol=1e-9):
            codes = [c for c, p in predictions(q, k, v, H, None) if close(base, p, rtol=1e-9)][:1]
            raise Fail("changing head 0's queries changes the output features of other heads: the heads mix",
                       diagnosis=codes)

    def large_scores() -> str:
        # per-head scores q_h k_h^T / sqrt(D) of order 1000: exp overflows past 709
        fixed = np.random.default_rng(100)  # its own seed: both batches have rows with a score past 709
        q, k, v = qkv((30, 30, 1), fixed)
        against_reference(q, k, v, None, "large scores (order 1000)")
        return "scores of order 1000"

    def case(b: int, tq: int, tk: int, h: int, d: int) -> Case:
        shapes = {"q": (b, tq, h * d), "k": (b, tk, h * d), "v": (b, tk, h * d)}
        return Case({n: rng.normal(0, 1, s) for n, s in shapes.items()}, {"num_heads": h},
                    f"q ({b}, {tq}, {h * d}), k, v ({b}, {tk}, {h * d}), {h} heads")

    return [("split_heads: (B, T, C) -> (B, H, T, D)", split),
            ("merge_heads: (B, H, T, D) -> (B, T, H*D), the inverse of split_heads", merge),
            ("multi_head_attention matches the reference", attend),
            ("each head sees only its own features", independent),
            ("large scores (order 1000): the output stays finite and right", large_scores),
            *gradient_checks(sub.multi_head_attention, references.multi_head, case(1, 3, 4, 2, 5),
                             [case(2, 1, 3, 4, 2), case(1, 4, 2, 3, 1)])]


# minigrad's own multi-head attention, which splits and merges the heads itself (the stub's
# F.scaled_dot_product_attention attends within the heads, and is allowed).
LIBRARY = ("MultiheadAttention", "packed_self_attention", "PackedAttention", "packed_forward")

TASK = Task("multi_head", "head split and merge around the attention",
            ("split_heads", "merge_heads", "multi_head_attention"), checks, library=LIBRARY)
