"""Thread scaling: the GPT step of gpt_step.py at 1 and 2 threads (minigrad and PyTorch, taking
turns; minigrad's 2 threads both ways, its kernels splitting their work and BLAS multiplying on
them, see minigrad.runtime.threads), the same step beside a process that keeps one core busy, and
`minigrad train gpt` with `--threads auto` (the default) against each fixed setting.

    python benchmarks/threads.py                    # scaling and sharing, standard and long step
    python benchmarks/threads.py --train            # and the wall clock of `minigrad train gpt`
    python benchmarks/threads.py --configs --arrives  # the tuner when a busy process arrives

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


def step_ms(name: str, threads: int, config: str, steps: int, way: str = "kernels") -> float:
    cmd = [sys.executable, STEP, "--only", name, "--threads", str(threads), "--steps", str(steps),
           "--config", config, "--way", way]
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
    runs = {("torch", 1): lambda: step_ms("torch", 1, config, steps),
            ("minigrad", 1): lambda: step_ms("minigrad", 1, config, steps),
            ("torch", 2): lambda: step_ms("torch", 2, config, steps),
            ("minigrad", 2): lambda: step_ms("minigrad", 2, config, steps),
            ("minigrad", "blas:2"): lambda: step_ms("minigrad", 2, config, steps, "blas")}
    times = best_of(rounds, runs)
    print(f"\n{config} step, ms (best of {rounds} rounds; each round's minigrad / torch ratio)")
    print(f"{'threads':>8} {'torch':>8} {'minigrad':>9} {'ratio':>6}  rounds")
    for n, torch_n in ((1, 1), (2, 2), ("blas:2", 2)):
        t, m = min(times[("torch", torch_n)]), min(times[("minigrad", n)])
        per = " ".join(f"{a / b:.2f}" for a, b in zip(times[("minigrad", n)], times[("torch", torch_n)]))
        print(f"{n!s:>8} {t:8.1f} {m:9.1f} {m / t:6.2f}  {per}")
    for fw, two in (("minigrad", 2), ("minigrad", "blas:2"), ("torch", 2)):
        t1, t2 = min(times[(fw, 1)]), min(times[(fw, two)])
        p = max(0.0, min(1.0, 2 * (1 - t2 / t1)))  # T2 / T1 = (1 - p) + p / 2
        at = {n: 1 / ((1 - p) + p / n) for n in (4, 8)}
        print(f"{fw} {two}: {t1 / t2:.2f}x faster than 1 thread; parallel fraction p = {p:.2f}, so at most "
              f"{at[4]:.2f}x at 4 cores and {at[8]:.2f}x at 8")


def sharing(config: str, rounds: int, steps: int) -> None:
    """minigrad's step at 2 threads and at 1 while another process keeps a core busy."""
    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=3600)])
    try:
        time.sleep(0.5)
        runs = {"2 threads": lambda: step_ms("minigrad", 2, config, steps),
                "blas:2": lambda: step_ms("minigrad", 2, config, steps, "blas"),
                "1 thread": lambda: step_ms("minigrad", 1, config, steps)}
        times = best_of(rounds, runs)
    finally:
        busy.kill()
    print(f"\n{config} step beside a busy process, minigrad ms per step (each round)")
    for k, ts in times.items():
        print(f"  {k:42} " + " ".join(f"{t:6.1f}" for t in ts))


def neighbour_arrives(config: str, steps: int = 400, at: int = 150) -> None:
    """minigrad's step under the tuner (`minigrad train`'s auto), in this process, with a process
    that keeps one core busy started at step `at`: when the tuner changes its setting."""
    sys.path.insert(0, HERE)
    import gpt_step
    import numpy as np

    import minigrad as mg
    from minigrad.runtime.threads import ThreadTuner

    gpt_step.use_config(config)
    model = gpt_step.minigrad_model()
    opt = mg.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (mg.tensor(a) for a in gpt_step.batch())

    def step() -> None:
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    tuner, log, busy = ThreadTuner(), [], None
    try:
        for i in range(steps):
            if i == at:
                busy = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=3600)])
            t0 = time.perf_counter()
            tuner.run(step)
            log.append((tuner.setting, time.perf_counter() - t0))
    finally:
        if busy is not None:
            busy.kill()
    print(f"\n{config} step under the tuner, a busy process from step {at} on")
    for i, (setting, _) in enumerate(log):
        if i == 0 or setting != log[i - 1][0]:
            print(f"  step {i}: {setting}")
    for a, b in ((at - 50, at), (steps - 100, steps)):
        ms = 1e3 * float(np.median([t for _, t in log[a:b]]))
        print(f"  steps {a}-{b - 1}: median {ms:.1f} ms, at {sorted({str(s) for s, _ in log[a:b]})}")
    print(f"  last trial: {tuner.describe()}")


def train_wall(rounds: int) -> None:
    """`minigrad train gpt` (quick preset) with the default --threads auto and with each fixed
    setting of a 2-core machine; the log's line on the tuner's choice (-v) is printed too."""
    import tempfile

    chose: list[str] = []

    def run(extra: list[str]) -> float:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            command = [sys.executable, "-m", "minigrad", "-v", *extra, "train", "gpt", "--out", out]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            took = time.perf_counter() - t0
        chose.extend(line.strip() for line in done.stdout.splitlines() if "timed per step" in line)
        return took

    fixed = {f"--threads {s}": (lambda s=s: run(["--threads", s])) for s in ("1", "2", "blas:2")}
    times = best_of(rounds, {"--threads auto (default)": lambda: run([]), **fixed})
    print("\nminigrad train gpt (quick preset), seconds of wall clock (each round)")
    for k, ts in times.items():
        print(f"  {k:26} " + " ".join(f"{t:6.1f}" for t in ts))
    for line in chose:
        print(f"  auto: {line}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--configs", nargs="*", default=["standard", "long"],
                   help="the steps to time (none: only --train)")
    p.add_argument("--no-sharing", action="store_true", help="skip the busy-neighbour runs")
    p.add_argument("--train", action="store_true", help="also time `minigrad train gpt` (minutes)")
    p.add_argument("--arrives", action="store_true",
                   help="also run the standard step under the tuner with a busy process from step 150")
    args = p.parse_args()
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    for config in args.configs:
        scaling(config, args.rounds, args.steps)
        if not args.no_sharing:
            sharing(config, args.rounds, args.steps)
    if args.arrives:
        neighbour_arrives("standard")
    if args.train:
        train_wall(args.rounds)


if __name__ == "__main__":
    main()
