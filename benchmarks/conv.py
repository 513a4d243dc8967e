"""Forward + backward time of nn.Conv2d against torch.nn.Conv2d, both on one thread.

    python benchmarks/conv.py                   # the three sizes below, 30 alternating runs each
    python benchmarks/conv.py --reps 100 --json conv.json
    python benchmarks/conv.py --cpu-time         # CPU time of the process: steadier when shared

Sizes: an MNIST batch (32, 1, 28, 28) into 16 3x3 filters, the second layer of a small CNN
(32, 16, 14, 14) into 32, and a batch of 8x8 digits (64, 1, 8, 8) into 16; padding 1 in all.
Each step is zero_grad, forward, and backward of a fixed random upstream gradient, with the
input requiring grad (so dx is computed too, as in any layer but the first). Both layers hold
the same weights and are checked to give the same output and gradients. The runs alternate
(minigrad, torch, torch, minigrad, ...) and the medians are reported, so a slow spell of the
machine affects both alike.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy and torch load their thread pools

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402

SIZES = [  # (name, input shape, out_channels)
    ("mnist (32, 1, 28, 28) -> 16", (32, 1, 28, 28), 16),
    ("cnn layer 2 (32, 16, 14, 14) -> 32", (32, 16, 14, 14), 32),
    ("digits (64, 1, 8, 8) -> 16", (64, 1, 8, 8), 16),
]


CLOCK: Callable[[], float] = time.perf_counter


def median_ms(steps: dict[str, Callable[[], None]], reps: int, warmup: int) -> dict[str, float]:
    """Median time of each step in milliseconds; the steps take turns (in alternating order)."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for rep in range(reps):
        for name in (list(steps) if rep % 2 == 0 else list(reversed(steps))):
            start = CLOCK()
            steps[name]()
            times[name].append(CLOCK() - start)
    return {name: 1000 * statistics.median(ts) for name, ts in times.items()}


def pair(shape: tuple[int, ...], out_channels: int, seed: int = 0):
    """(minigrad step, torch step) for one size, after checking that both compute the same."""
    rng = np.random.default_rng(seed)
    layer = nn.Conv2d(shape[1], out_channels, 3, padding=1)
    twin = torch.nn.Conv2d(shape[1], out_channels, 3, padding=1)
    with torch.no_grad():
        twin.weight.copy_(torch.from_numpy(layer.weight._data))
        twin.bias.copy_(torch.from_numpy(layer.bias._data))
    x_np = rng.standard_normal(shape).astype(np.float32)
    x, tx = mg.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    g_np = rng.standard_normal((shape[0], out_channels) + shape[2:]).astype(np.float32)
    tg = torch.from_numpy(g_np)

    def ours() -> None:
        layer.zero_grad()
        x.grad = None
        layer(x).backward(g_np)

    def theirs() -> None:
        twin.zero_grad()
        tx.grad = None
        twin(tx).backward(tg)

    ours()
    theirs()
    for mine, ref in ((layer.weight._grad, twin.weight.grad), (layer.bias._grad, twin.bias.grad),
                      (x._grad, tx.grad)):
        np.testing.assert_allclose(mine, ref.numpy(), rtol=1e-3, atol=1e-3)
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this file")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with the process's CPU clock (steadier on a shared machine)")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.cpu_time else time.perf_counter
    torch.set_num_threads(1)
    mg.set_num_threads(1)
    rows = []
    print(f"{'size':38s} {'minigrad ms':>12s} {'torch ms':>9s} {'ratio':>6s}")
    for name, shape, out in SIZES:
        ours, theirs = pair(shape, out)
        ms = median_ms({"minigrad": ours, "torch": theirs}, args.reps, args.warmup)
        ratio = ms["minigrad"] / ms["torch"]
        rows.append({"size": name, "input": list(shape), "out_channels": out, "minigrad_ms": ms["minigrad"],
                     "torch_ms": ms["torch"], "ratio": ratio})
        print(f"{name:38s} {ms['minigrad']:12.3f} {ms['torch']:9.3f} {ratio:6.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reps": args.reps, "threads": 1, "clock": "cpu" if args.cpu_time else "wall",
                       "results": rows}, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
