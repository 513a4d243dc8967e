"""Exercise 10 · multi_head: head split and merge around scaled dot-product attention."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import close
from .grader import Check, Fail
from .gradients import Case, gradient_checks


def _data(x: Any, what: str) -> np.ndarray:
    if not isinstance(x, Tensor):
        raise Fail(f"{what} returned a {type(x).__name__}, not a Tensor")
    return x.data


def checks(sub: Any) -> list[Check]:
    rng = np.random.default_rng(10)
    B, T, H, D = 2, 3, 2, 3
    x = rng.normal(0, 1, (B, T, H * D))

    def split() -> None:
        got = _data(sub.split_heads(Tensor(x), H), "split_heads")
        want = references.split_heads(Tensor(x), H).data
        if got.shape != want.shape:
            raise Fail(f"(B, T, C) = {x.shape} with H = {H} gives {got.shape}, expected (B, H, T, D) = "
                       f"{want.shape}")
        if not close(got, want):
            codes = ["heads_merged_wrong"] if close(got, x.reshape(B, H, T, D)) else []
            raise Fail("the heads hold the wrong features: head h should hold features h*D .. (h+1)*D - 1 of "
                       "every position", diagnosis=codes)

    def merge() -> None:
        heads = rng.normal(0, 1, (B, H, T, D))
        got = _data(sub.merge_heads(Tensor(heads)), "merge_heads")
        want = references.merge_heads(Tensor(heads)).data
        if got.shape != want.shape:
            raise Fail(f"(B, H, T, D) = {heads.shape} gives {got.shape}, expected (B, T, H*D) = {want.shape}")
        if not close(got, want):
            codes = ["heads_merged_wrong"] if close(got, heads.reshape(B, T, H * D)) else []
            raise Fail("position t of the output should be concat(head_1[t], ..., head_H[t])",
                       diagnosis=codes)
        back = _data(sub.split_heads(sub.merge_heads(Tensor(heads)), H), "split_heads")
        if not close(back, heads):
            raise Fail("split_heads(merge_heads(x)) does not give x back")

    def attend() -> str:
        for mask in (None, np.tri(T, dtype=bool)):
            q, k, v = (rng.normal(0, 1, (B, T, H * D)) for _ in range(3))
            m = None if mask is None else Tensor(mask)
            out = sub.multi_head_attention(Tensor(q), Tensor(k), Tensor(v), H, m)
            got = _data(out, "multi_head_attention")
            want = references.multi_head(Tensor(q), Tensor(k), Tensor(v), H, mask).data
            if got.shape != want.shape or not close(got, want):
                split = [references.split_heads(Tensor(t), H) for t in (q, k, v)]
                heads = references.attention(*split, mask=mask)  # (B, H, T, D)
                codes = ["heads_merged_wrong"] if close(got, heads.data.reshape(B, T, H * D)) else []
                raise Fail(f"{'causal mask' if mask is not None else 'no mask'}: the output differs from the "
                           "reference", diagnosis=codes)
        return "with and without a causal mask"

    def independent() -> None:
        q, k, v = (rng.normal(0, 1, (B, T, H * D)) for _ in range(3))
        base = sub.multi_head_attention(Tensor(q), Tensor(k), Tensor(v), H).data
        q2 = q.copy()
        q2[..., :D] += 1.0  # change head 0's queries only
        after = sub.multi_head_attention(Tensor(q2), Tensor(k), Tensor(v), H).data
        if not np.allclose(base[..., D:], after[..., D:]):
            raise Fail("changing head 0's queries changes the output features of other heads: the heads mix",
                       diagnosis=["heads_merged_wrong"])

    def case(t: int) -> Case:
        return Case({n: rng.normal(0, 1, (1, t, 4)) for n in "qkv"}, {"num_heads": 2},
                    f"q, k, v (1, {t}, 4), 2 heads")

    return [("split_heads: (B, T, C) -> (B, H, T, D)", split),
            ("merge_heads: (B, H, T, D) -> (B, T, H*D), the inverse of split_heads", merge),
            ("multi_head_attention matches the reference", attend),
            ("each head sees only its own features", independent),
            *gradient_checks(sub.multi_head_attention, references.multi_head, case(2), [case(3)])]


TASK = Task("multi_head", "head split and merge around the attention",
            ("split_heads", "merge_heads", "multi_head_attention"), checks)
