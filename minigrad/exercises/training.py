"""`--train`: the tiny GPT trained with the student's op swapped in, against the same run with
the library's kernel (same seed, same batches): the loss curves must agree."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from typing import Any, Callable, Iterator

import numpy as np

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.tensor import Tensor

from .grader import Check
from .transcript import Fail, run_student

STEPS = 200
EVERY = 25
TOLERANCE = 1e-4  # float32: the kernels round differently (measured: under 1e-6 in 200 steps)


@contextlib.contextmanager
def swapped(replacements: dict[str, Callable[..., Tensor]]) -> Iterator[None]:
    """Inside the block, minigrad.nn.functional's functions named in `replacements` are the
    student's versions, in the facade and in the module that defines each (the layers call
    them through their own module, so they pick them up)."""
    homes = [F, *{sys.modules[getattr(F, name).__module__] for name in replacements}]
    originals = [(home, name, vars(home)[name]) for home in homes for name in replacements
                 if name in vars(home)]
    for home, name, _ in originals:
        setattr(home, name, replacements[name])
    try:
        yield
    finally:
        for home, name, fn in originals:
            setattr(home, name, fn)


def attention_from(attend: Callable[..., Tensor]) -> dict[str, Callable[..., Tensor]]:
    """F.scaled_dot_product_attention calling `attend(q, k, v, allowed)` (allowed: bool or None),
    and F.packed_self_attention (what GPT's training step calls) splitting the heads for it."""
    original, original_packed = F.scaled_dot_product_attention, F.packed_self_attention
    inside: list[bool] = []  # a student's op that itself calls F.scaled_dot_product_attention

    def student(q: Tensor, k: Tensor, v: Tensor, mask: Any = None, is_causal: bool = False,
                dropout_p: float = 0.0, scale: float | None = None, need_weights: bool = False) -> Tensor:
        if inside or dropout_p or need_weights or (scale is not None and scale != 1 / np.sqrt(q.shape[-1])):
            return original(q, k, v, mask=mask, is_causal=is_causal, dropout_p=dropout_p,
                            scale=scale, need_weights=need_weights)
        allowed = None if mask is None else np.asarray(getattr(mask, "_data", mask), dtype=bool)
        if is_causal:
            causal = np.tri(q.shape[-2], k.shape[-2], dtype=bool)
            allowed = causal if allowed is None else allowed & causal
        inside.append(True)
        try:
            return attend(q, k, v, allowed)
        finally:
            inside.pop()

    def packed(qkv: Tensor, num_heads: int, mask: Any = None, is_causal: bool = False, dropout_p: float = 0.0,
               scale: float | None = None, need_weights: bool = False) -> Tensor:
        if dropout_p or need_weights or scale is not None:
            return original_packed(qkv, num_heads, mask=mask, is_causal=is_causal, dropout_p=dropout_p,
                                   scale=scale, need_weights=need_weights)
        B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
        q, k, v = qkv.reshape(B, T, 3, num_heads, E // num_heads).permute(2, 0, 3, 1, 4)  # (B, H, T, D)
        out = student(q, k, v, mask=mask, is_causal=is_causal)
        return out.transpose(1, 2).reshape(B, T, E)

    return {"scaled_dot_product_attention": student, "packed_self_attention": packed}


def losses(replacements: dict[str, Callable[..., Tensor]], steps: int = STEPS) -> list[float]:
    """Training losses of the tiny GPT (seed 0, batch 8, AdamW), with `replacements` swapped
    into minigrad.nn.functional (none: the library's kernels)."""
    import minigrad.optim as optim
    from minigrad.models.recipes.lm import GPTRecipe

    mg.manual_seed(0)
    recipe = GPTRecipe("tiny")
    opt = optim.AdamW(recipe.model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    out = []
    with swapped(replacements):
        for _ in range(steps):
            loss = recipe.loss(recipe.batch("train", rng, 8))
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
    return out


@functools.lru_cache(maxsize=1)
def reference_losses() -> list[float]:
    """The library's own run (the same for every student: computed once a process)."""
    return losses({})


def train_check(replacements: dict[str, Callable[..., Tensor]]) -> Check:
    """The check `--train` adds: the tiny GPT trained with the student's functions in place of
    the library's, against the library's own run; both curves, every EVERY steps, must agree."""

    def run() -> str:
        ref = reference_losses()

        def yours() -> tuple[list[float], float]:
            t0 = time.perf_counter()
            return losses(replacements), time.perf_counter() - t0

        mine, seconds = run_student("train", yours)
        diff = np.abs(np.array(ref) - np.array(mine))
        rows = [f"  step   reference   yours     (tiny GPT, {STEPS} steps, {float(seconds):.0f} s)"]
        rows += [f"  {i:4d}   {ref[i]:.5f}     {mine[i]:.5f}" for i in range(0, STEPS, EVERY)]
        rows.append(f"  {STEPS - 1:4d}   {ref[-1]:.5f}     {mine[-1]:.5f}")
        curves = "\n".join(rows)
        worst = float(np.nan_to_num(diff, nan=np.inf).max())
        if not worst <= TOLERANCE:
            raise Fail(f"the loss curves part (largest difference {worst:.3g})", detail=curves)
        return f"the loss curves agree (largest difference {worst:.2g})\n{curves}"

    return (f"--train: the tiny GPT trains with your op as with the reference ({STEPS} steps)", run)
