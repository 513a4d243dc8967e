"""Framework overhead: a chain of elementwise ops in minigrad against the same math in numpy.

    python benchmarks/overhead.py                     # 1,000 ops on 4x4 and on 512x512
    python benchmarks/overhead.py --reps 9 --clock wall
    python benchmarks/overhead.py --profile           # where minigrad's time goes, on 4x4

The chain cycles through h = h * w, h = h + b, h = tanh(h), with x, w and b all needing
gradients. minigrad runs the forward and a backward through its graph; numpy runs the same
forward, keeping what the backward needs, then a hand-written backward. On 4x4 arrays the
arithmetic costs almost nothing, so minigrad's time per op is its overhead (making nodes,
ordering and visiting them); on 512x512 arrays the arithmetic dominates, and the ratio shows
what the framework adds to it. Aims: under 15 us per op on 4x4, within 1.3x of numpy on
512x512.

The default clock is this process's CPU time, so that other programs on the machine do not
inflate the figures (numpy's elementwise kernels run on one thread); `--clock wall` uses
wall time. Each figure is the median over the repeats, minigrad and numpy taking turns.

The "sys ms" columns are the part of the CPU time spent in the kernel, mostly page faults.
On large arrays this is where minigrad and numpy differ: the graph holds every intermediate
array until the step ends, then frees them all at once, so the C allocator may hand that
memory back to the operating system and the next step faults fresh pages in. The
hand-written numpy backward frees as it goes and keeps its memory. "user ratio" compares the
time outside the kernel, the work the framework itself adds.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from typing import Callable

try:
    import resource  # system (kernel) time of this process; Unix only
except ImportError:
    resource = None

import numpy as np

import minigrad as mg

AIM_US_PER_OP = 15.0
AIM_RATIO = 1.3


def minigrad_chain(x: mg.Tensor, w: mg.Tensor, b: mg.Tensor, ops: int,
                   g: np.ndarray) -> Callable[[], None]:
    """One forward + backward of the chain through minigrad's graph."""

    def step() -> None:
        x.grad = w.grad = b.grad = None
        h = x
        for i in range(ops):
            kind = i % 3
            if kind == 0:
                h = h * w
            elif kind == 1:
                h = h + b
            else:
                h = h.tanh()
        h.backward(g)

    return step


def numpy_chain(x: np.ndarray, w: np.ndarray, b: np.ndarray, ops: int,
                g: np.ndarray) -> Callable[[], tuple[np.ndarray, ...]]:
    """The same chain in plain numpy with a hand-written backward; returns dx, dw, db."""

    def step() -> tuple[np.ndarray, ...]:
        saved = []  # per op, what its backward needs: a product's input, a tanh's output
        h = x
        for i in range(ops):
            kind = i % 3
            if kind == 0:
                saved.append(h)
                h = h * w
            elif kind == 1:
                saved.append(None)
                h = h + b
            else:
                h = np.tanh(h)
                saved.append(h)
        dh, dw, db = g, np.zeros_like(w), np.zeros_like(b)
        for i in reversed(range(ops)):
            s = saved.pop()
            kind = i % 3
            if kind == 0:
                dw += dh * s
                dh = dh * w
            elif kind == 1:
                db += dh
            else:
                dh = dh * (1 - s * s)
        return dh, dw, db

    return step


def system_seconds() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime if resource is not None else 0.0


def median_seconds(steps: dict[str, Callable[[], object]], reps: int, warmup: int,
                   clock: Callable[[], float]) -> dict[str, tuple[float, float]]:
    """Median (time, system time) of each step; the steps take turns (alternating order), so
    that a slow spell of the machine affects them alike."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    system: dict[str, list[float]] = {name: [] for name in steps}
    for rep in range(reps):
        for name in list(steps) if rep % 2 == 0 else list(reversed(steps)):
            start, start_sys = clock(), system_seconds()
            steps[name]()
            times[name].append(clock() - start)
            system[name].append(system_seconds() - start_sys)
    return {name: (statistics.median(times[name]), statistics.median(system[name])) for name in steps}


def make_case(side: int, ops: int, seed: int):
    """Leaves, upstream gradient and both steps for one array size; checks they agree."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((side, side)).astype(np.float32)
    w0 = rng.uniform(0.5, 1.5, (side, side)).astype(np.float32)
    b0 = (0.1 * rng.standard_normal((side, side))).astype(np.float32)
    g = rng.standard_normal((side, side)).astype(np.float32)
    x, w, b = (mg.tensor(a, requires_grad=True) for a in (x0, w0, b0))
    ours, theirs = minigrad_chain(x, w, b, ops, g), numpy_chain(x0, w0, b0, ops, g)
    ours()
    for mine, ref in zip((x._grad, w._grad, b._grad), theirs()):
        np.testing.assert_allclose(mine, ref, rtol=1e-4, atol=1e-5)  # the same math, really
    return ours, theirs


def profile(step: Callable[[], None], top: int) -> None:
    """Print the functions where one minigrad step spends its time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        step()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=1000, help="ops in the chain (default 1000)")
    parser.add_argument("--sides", type=int, nargs="+", default=[4, 512],
                        help="array sides to time (default 4 512)")
    parser.add_argument("--reps", type=int, default=7, help="timed repeats per size (default 7)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed repeats first (default 2)")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                        help="process CPU time (default) or wall time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true",
                        help="also profile minigrad on the smallest size with cProfile")
    args = parser.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    print(f"chain of {args.ops} elementwise ops (mul, add, tanh), forward + backward, float32, "
          f"median of {args.reps} ({args.clock} time)")
    columns = ["size", "minigrad ms", "numpy ms", "minigrad us/op", "numpy us/op", "ratio",
               "minigrad sys ms", "numpy sys ms", "user ratio"]
    header = " ".join(f"{c:>{max(len(c), 9)}}" for c in columns)
    print(header)
    print("-" * len(header))
    ratios = {}
    for side in args.sides:
        ours, theirs = make_case(side, args.ops, args.seed)
        t = median_seconds({"minigrad": ours, "numpy": theirs}, args.reps, args.warmup, clock)
        (mine, mine_sys), (ref, ref_sys) = t["minigrad"], t["numpy"]
        user_ratio = (mine - mine_sys) / (ref - ref_sys) if args.clock == "cpu" else float("nan")
        ratios[side] = (1e6 * mine / args.ops, mine / ref, user_ratio)
        row = [f"{side}x{side}", f"{1e3 * mine:.2f}", f"{1e3 * ref:.2f}", f"{1e6 * mine / args.ops:.2f}",
               f"{1e6 * ref / args.ops:.2f}", f"{mine / ref:.2f}x", f"{1e3 * mine_sys:.1f}",
               f"{1e3 * ref_sys:.1f}", f"{user_ratio:.2f}x"]
        print(" ".join(f"{v:>{max(len(c), 9)}}" for v, c in zip(row, columns)))
    print()
    small, large = min(args.sides), max(args.sides)
    us = ratios[small][0]
    print(f"(a) {small}x{small}: {us:.2f} us per op; aim < {AIM_US_PER_OP:g} us: "
          f"{'met' if us < AIM_US_PER_OP else 'MISSED'}")
    if large != small:
        ratio, user_ratio = ratios[large][1:]
        print(f"(b) {large}x{large}: {ratio:.2f}x numpy's time ({user_ratio:.2f}x outside the kernel); "
              f"aim <= {AIM_RATIO:g}x: {'met' if ratio <= AIM_RATIO else 'MISSED'}")
    if args.profile:
        print()
        profile(make_case(small, args.ops, args.seed)[0], top=15)


if __name__ == "__main__":
    main()
