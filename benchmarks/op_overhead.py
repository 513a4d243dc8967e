"""Framework overhead per op: 500 repetitions of `x = x * w + b` on 4x4 float32, then `sum`
and backward. The arrays are tiny, so the time is almost all bookkeeping (making nodes,
the backward walk), not arithmetic. PyTorch's figure is printed beside when it is installed.

    python benchmarks/op_overhead.py
    PYTHONPATH=../other-checkout python benchmarks/op_overhead.py   # times that tree's minigrad

The graph has 1001 nodes, more than viz keeps small gradients for (256), so this is the bare
engine; `--reps 100` (201 nodes) includes that bookkeeping.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def chain_minigrad(reps: int) -> float:
    import minigrad as mg

    w = mg.tensor(np.full((4, 4), 0.999, np.float32), requires_grad=True)
    b = mg.tensor(np.full((4, 4), 0.001, np.float32), requires_grad=True)
    x = mg.tensor(np.ones((4, 4), np.float32), requires_grad=True)
    t0 = time.perf_counter()
    y = x
    for _ in range(reps):
        y = y * w + b
    y.sum().backward()
    return time.perf_counter() - t0


def chain_torch(reps: int) -> float:
    import torch

    w = torch.full((4, 4), 0.999, requires_grad=True)
    b = torch.full((4, 4), 0.001, requires_grad=True)
    x = torch.ones((4, 4), requires_grad=True)
    t0 = time.perf_counter()
    y = x
    for _ in range(reps):
        y = y * w + b
    y.sum().backward()
    return time.perf_counter() - t0


def chain_numpy(reps: int) -> float:
    """The same forward and a hand-written backward in plain numpy: the floor."""
    w = np.full((4, 4), 0.999, np.float32)
    b = np.full((4, 4), 0.001, np.float32)
    t0 = time.perf_counter()
    y = np.ones((4, 4), np.float32)
    ys = []
    for _ in range(reps):
        ys.append(y)
        y = y * w + b
    y.sum()
    g = np.ones((4, 4), np.float32)
    gw = np.zeros_like(w)
    gb = np.zeros_like(b)
    for y_prev in reversed(ys):
        gb += g
        gw += g * y_prev
        g = g * w
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=500)
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    ops = 2 * args.reps + 1  # a mul and an add per repetition, and the sum
    runners = {"minigrad": chain_minigrad, "numpy": chain_numpy}
    try:
        import torch

        torch.set_num_threads(1)
        runners["torch"] = chain_torch
    except ImportError:
        print("(PyTorch is not installed)")
    results = {}
    for name, run in runners.items():
        run(args.reps)  # warm up
        results[name] = 1e6 * float(np.median([run(args.reps) for _ in range(args.repeat)])) / ops
    print(f"x = x * w + b, {args.reps} times on 4x4 float32, then sum and backward "
          f"(median of {args.repeat}); microseconds per op, forward + backward")
    for name, us in results.items():
        print(f"{name:10} {us:6.2f} us/op")
    if "torch" in results:
        print(f"ratio minigrad / torch: {results['minigrad'] / results['torch']:.2f}x")


if __name__ == "__main__":
    main()
