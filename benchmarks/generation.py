"""Tokens per second of GPT generation with and without the KV cache, at every model preset.

Each preset generates 256 tokens after a 64-token prompt (greedy, batch 1, one BLAS thread),
with `use_cache=True` and `use_cache=False`, taking turns for three rounds (best round each).

    python benchmarks/generation.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import minigrad as mg
from minigrad.models.gpt import GPT, PRESETS, GPTConfig


def tokens_per_second(model: GPT, prompt: np.ndarray, new: int, use_cache: bool) -> float:
    t0 = time.perf_counter()
    model.generate(prompt, new, temperature=0.0, use_cache=use_cache)
    return new / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompt", type=int, default=64, help="prompt tokens (default 64)")
    p.add_argument("--new", type=int, default=256, help="tokens to generate (default 256)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    mg.set_num_threads(1)
    print(f"{args.new} tokens after a {args.prompt}-token prompt, greedy, batch 1, 1 thread")
    print(f"{'preset':8} {'block':>5} {'cache tok/s':>12} {'no cache tok/s':>15} {'speed-up':>9}")
    for name, sizes in PRESETS.items():
        mg.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=96, **sizes))
        prompt = np.random.default_rng(0).integers(0, 96, (1, args.prompt))
        best = {True: 0.0, False: 0.0}
        for _ in range(args.rounds):
            for use_cache in (True, False):
                best[use_cache] = max(best[use_cache], tokens_per_second(model, prompt, args.new, use_cache))
        print(f"{name:8} {model.config.block_size:5d} {best[True]:12.0f} {best[False]:15.0f} "
              f"{best[True] / best[False]:8.2f}x")


if __name__ == "__main__":
    main()
