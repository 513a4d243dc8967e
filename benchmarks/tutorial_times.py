"""How long the tutorials that state a training time take to train, and on what CPU.

Each tutorial runs as a script in its own Python, in an empty temporary folder, on one thread
(OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1), best of the given rounds; the time is the CPU time
its training prints ("N steps in X s (Y s of CPU)"), which other work on the machine changes
less than the wall time. The texts' "about N seconds" come from this script's output.

    python benchmarks/tutorial_times.py                 # 04_gpt.py and 09_vit.py, 3 rounds
    python benchmarks/tutorial_times.py 09_vit.py --rounds 1
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"
TIMED = ["04_gpt.py", "09_vit.py"]  # the tutorials whose text states a training time
PRINTED = re.compile(r"^\d+ steps in ([\d.]+) s \(([\d.]+) s of CPU\)", re.MULTILINE)


def cpu_model() -> str:
    """The CPU's name as the system reports it, and its core count."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def train_time(name: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the training that tutorial `name` prints."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run([sys.executable, str(TUTORIALS / name)], cwd=cwd, env=env,
                              capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
    found = PRINTED.search(done.stdout)
    if found is None:
        raise SystemExit(f"{name} printed no 'N steps in X s (Y s of CPU)' line")
    return float(found.group(1)), float(found.group(2))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tutorials", nargs="*", default=TIMED, help=f"default: {' '.join(TIMED)}")
    p.add_argument("--rounds", type=int, default=3, help="runs of each, the best kept (default 3)")
    args = p.parse_args(argv)
    print(f"CPU: {cpu_model()}; one thread; best of {args.rounds}")
    print("| tutorial | training, CPU seconds | wall seconds |")
    print("|---|---|---|")
    for name in args.tutorials:
        wall, cpu = min((train_time(name) for _ in range(args.rounds)), key=lambda t: t[1])
        print(f"| `{name}` | {cpu:.1f} | {wall:.1f} |")


if __name__ == "__main__":
    main()
