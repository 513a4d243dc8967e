"""Thread scaling: the GPT step of gpt_step.py at 1 and 2 threads (minigrad and PyTorch, taking
turns), the same step beside a process that keeps one core busy (minigrad's way, BLAS on one
thread, against also giving BLAS two threads, whose idle threads spin), and `minigrad train gpt`
with `--threads auto` (the default) against `--threads 1`.

    python benchmarks/threads.py                    # scaling and sharing, standard and long step
    python benchmarks/threads.py --train            # and the wall clock of `minigrad train gpt`

From the 1- and 2-thread times of minigrad's step it states the parallel fraction p (Amdahl:
T(n) = T(1) * ((1 - p) + p / n)) and what that predicts at 4 and 8 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEP = os.path.join(HERE, "gpt_step.py")
BUSY = "import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\n"


def step_ms(name: str, threads: int, config: str, steps: int, blas_threads: int | None = None) -> float:
    cmd = [sys.executable, STEP, "--only", name, "--threads", str(threads), "--steps", str(steps),
           "--config", config] + ([] if blas_threads is None else ["--blas-threads", str(blas_threads)])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])["ms"]


def best_of(rounds: int, runs: dict) -> dict[str, list[float]]:
    """Each run (name -> thunk) once per round, in turn; every time kept."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for k, run in runs.items():
            times[k].append(run())
    return times


def scaling(config: str, rounds: int, steps: int) -> None:
    runs = {(fw, n): (lambda fw=fw, n=n: step_ms(fw, n, config, steps))
            for n in (1, 2) for fw in ("minigrad", "torch")}
    times = best_of(rounds, runs)
    print(f"\n{config} step, ms (best of {rounds} rounds; each round's minigrad / torch ratio)")
    print(f"{'threads':>8} {'torch':>8} {'minigrad':>9} {'ratio':>6}  rounds")
    for n in (1, 2):
        t, m = min(times[("torch", n)]), min(times[("minigrad", n)])
        per = " ".join(f"{a / b:.2f}" for a, b in zip(times[("minigrad", n)], times[("torch", n)]))
        print(f"{n:8d} {t:8.1f} {m:9.1f} {m / t:6.2f}  {per}")
    for fw in ("minigrad", "torch"):
        t1, t2 = min(times[(fw, 1)]), min(times[(fw, 2)])
        p = max(0.0, min(1.0, 2 * (1 - t2 / t1)))  # T2 / T1 = (1 - p) + p / 2
        at = {n: 1 / ((1 - p) + p / n) for n in (4, 8)}
        print(f"{fw}: 2 threads {t1 / t2:.2f}x faster than 1; parallel fraction p = {p:.2f}, so at most "
              f"{at[4]:.2f}x at 4 cores and {at[8]:.2f}x at 8")


def sharing(config: str, rounds: int, steps: int) -> None:
    """minigrad's step at 2 threads and at 1 while another process keeps a core busy."""
    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=3600)])
    try:
        time.sleep(0.5)
        runs = {"2 threads": lambda: step_ms("minigrad", 2, config, steps),
                "2 threads, and 2 BLAS threads": lambda: step_ms("minigrad", 2, config, steps, 2),
                "1 thread": lambda: step_ms("minigrad", 1, config, steps)}
        times = best_of(rounds, runs)
    finally:
        busy.kill()
    print(f"\n{config} step beside a busy process, minigrad ms per step (each round)")
    for k, ts in times.items():
        print(f"  {k:42} " + " ".join(f"{t:6.1f}" for t in ts))


def train_wall(rounds: int) -> None:
    """`minigrad train gpt` (quick preset) with the default --threads auto and with --threads 1."""
    import tempfile

    def run(extra: list[str]) -> float:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "minigrad", *extra, "train", "gpt", "--out", out],
                           check=True, capture_output=True)
            return time.perf_counter() - t0

    times = best_of(rounds, {"--threads auto (default)": lambda: run([]),
                             "--threads 1": lambda: run(["--threads", "1"])})
    print("\nminigrad train gpt (quick preset), seconds of wall clock (each round)")
    for k, ts in times.items():
        print(f"  {k:26} " + " ".join(f"{t:6.1f}" for t in ts))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--configs", nargs="*", default=["standard", "long"],
                   help="the steps to time (none: only --train)")
    p.add_argument("--no-sharing", action="store_true", help="skip the busy-neighbour runs")
    p.add_argument("--train", action="store_true", help="also time `minigrad train gpt` (minutes)")
    args = p.parse_args()
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    for config in args.configs:
        scaling(config, args.rounds, args.steps)
        if not args.no_sharing:
            sharing(config, args.rounds, args.steps)
    if args.train:
        train_wall(args.rounds)


if __name__ == "__main__":
    main()
