"""Instructions per benchmark GPT step (benchmarks/gpt_step.py's standard step, one thread), as
valgrind's callgrind counts them: a measure of the first-order cost that the machine's noise
does not move (a change to the engine is judged by it, against the same count at another commit).

The count of one step is the difference between a run of 1 + n steps and a run of 1 step,
divided by n, so the start-up (imports, the model, the first step's allocations) cancels.

    python benchmarks/step_instructions.py                 # this checkout
    python benchmarks/step_instructions.py --root /tmp/old # another commit's checkout
Compare two commits by measuring a worktree of the other one (`git worktree add /tmp/old
<commit>`) with `--root`: the same benchmark code runs on that checkout's minigrad.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def inner(steps: int, root: str) -> None:
    """The measured program: the first step, then `steps` more, with the minigrad of `root`."""
    sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), root]
    # an editable install of another checkout would map minigrad.nn to its own folder
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    import gpt_step

    import minigrad as mg

    mg.set_num_threads(1)
    model = gpt_step.minigrad_model()
    opt = mg.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (mg.tensor(a) for a in gpt_step.batch())
    for _ in range(1 + steps):
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def count(steps: int, root: str) -> int:
    """Instructions of a whole run of `inner(steps)` under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                              sys.executable, os.path.abspath(__file__), "--inner", str(steps),
                              "--root", root],
                             capture_output=True, text=True, env=env)
        if run.returncode != 0:
            raise SystemExit(f"valgrind failed:\n{run.stderr[-2000:]}")
        found = re.search(r"Collected : (\d+)", run.stderr)
        if not found:
            raise SystemExit(f"no instruction count in valgrind's output:\n{run.stderr[-2000:]}")
        return int(found.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=3, help="measured steps after the first")
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="the checkout whose minigrad is measured (default: this one)")
    p.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    root = os.path.abspath(args.root)
    if args.inner is not None:
        inner(args.inner, root)
        return
    base, more = count(0, root), count(args.steps, root)
    per_step = (more - base) / args.steps
    if args.json:
        print(json.dumps({"instructions_per_step": per_step, "steps": args.steps}))
    else:
        print(f"{per_step / 1e6:.2f}M instructions per GPT step ({args.steps} steps measured)")


if __name__ == "__main__":
    main()
