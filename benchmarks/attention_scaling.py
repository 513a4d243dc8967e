"""Attention forward + backward as the sequence grows: minigrad's tiled kernel, its untiled kernel
(which stores the (T, T) weights) and, when installed, PyTorch's scaled_dot_product_attention.

    python benchmarks/attention_scaling.py                        # T = 64 ... 4096, causal
    python benchmarks/attention_scaling.py --max-T 8192 --plot scaling.png
    python benchmarks/attention_scaling.py --no-causal --threads 2

Shapes (B, H, T, D) = (1, 4, T, 32), float32, the same inputs and upstream gradient for all.
Time: the best of --reps runs (the kernels take turns, so that a busy spell of the machine
slows them alike), in milliseconds. Memory: each (kernel, T) runs in a fresh process, once to
warm up (thread pools, lazy initialization), then once measured: the peak resident memory
over that run (Linux VmHWM, reset just before it; ru_maxrss elsewhere) minus the memory held
before it. "Extra peak" counts everything the call allocates (scores, output, gradients), not
the inputs. At each T the kernels are first checked to agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

B, H, D = 1, 4, 32
KERNELS = ("tiled", "untiled", "torch")


def inputs(T: int) -> list[np.ndarray]:
    """q, k, v and the upstream gradient, (B, H, T, D) float32."""
    rng = np.random.default_rng(T)
    return [rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4)]


def step(kernel: str, T: int, causal: bool, arrays: list[np.ndarray]):
    """A function running forward + backward once, and one returning (out, dq, dk, dv)."""
    q, k, v, g = arrays
    if kernel == "torch":
        import torch

        tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
        tg = torch.tensor(g)

        def run():
            tq.grad = tk.grad = tv.grad = None
            out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
            out.backward(tg)
            return [x.detach().numpy() for x in (out, tq.grad, tk.grad, tv.grad)]
        return run
    import minigrad as mg
    from minigrad.nn.attention.helpers import _causal
    from minigrad.nn.attention.one_block import Attention
    from minigrad.nn.functional import tiled_attention

    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]  # made once, as torch's are

    def run():
        for t in ts:
            t.grad = None
        if kernel == "tiled":
            out = tiled_attention(*ts, is_causal=causal)
        else:
            out = Attention.apply(*ts, allowed=_causal(T, T) if causal else None, scale=D ** -0.5)
        out.backward(g)
        return [out._data] + [t._grad for t in ts]
    return run


def set_threads(n: int, with_torch: bool) -> None:
    import minigrad as mg

    mg.set_num_threads(n)
    if with_torch:
        import torch

        torch.set_num_threads(n)


def _resident_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _release_free_memory() -> None:
    """Hand memory that malloc keeps after frees back to the system (glibc's malloc_trim), so
    that the measured run cannot reuse the warm-up's blocks unseen."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def measure_memory(kernel: str, T: int, causal: bool, threads: int) -> float:
    """Run in a fresh process: extra peak resident memory (MiB) of one forward + backward."""
    set_threads(threads, kernel == "torch")
    run = step(kernel, T, causal, inputs(T))
    run()  # first calls allocate for good (thread pools, lazy initialization): not the kernel's
    _release_free_memory()
    reset = False
    try:  # Linux: writing 5 resets the peak (VmHWM) to the current resident size
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = _resident_kib("VmHWM") is not None
    except OSError:
        pass
    before = _resident_kib("VmRSS") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run()
    after = _resident_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin" and not reset:
        return (after - before) / 2**20  # bytes there
    return (after - before) / 2**10


def memory_in_subprocess(kernel: str, T: int, causal: bool, threads: int) -> float | None:
    args = [sys.executable, __file__, "--_memory", kernel, str(T), str(int(causal)), str(threads)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        print(f"  ({kernel}, T={T}: the memory run failed: {done.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(done.stdout)["mib"]


def best_ms(runs: dict, reps: int) -> dict[str, float]:
    """Best time of each run in milliseconds, the runs taking turns in alternating order."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(reps):
        for name in (list(runs) if rep % 2 == 0 else list(reversed(runs))):
            start = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - start)
    return {name: 1000 * min(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-T", type=int, default=4096, help="the longest sequence (powers of 2 from 64)")
    parser.add_argument("--no-causal", dest="causal", action="store_false", help="no causal mask")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=0, help="timed runs per T (default: by size)")
    parser.add_argument("--untiled-max-T", type=int, default=4096,
                        help="skip the untiled kernel above this T (it needs ~4 x B*H*T*T*4 bytes)")
    parser.add_argument("--no-memory", dest="memory", action="store_false", help="skip the memory runs")
    parser.add_argument("--plot", help="also draw time and memory against T into this PNG (matplotlib)")
    parser.add_argument("--_memory", nargs=4, help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a._memory:
        kernel, T, causal, threads = a._memory
        print(json.dumps({"mib": measure_memory(kernel, int(T), causal == "1", int(threads))}))
        return

    have_torch = importlib.util.find_spec("torch") is not None
    kernels = [k for k in KERNELS if k != "torch" or have_torch]
    set_threads(a.threads, have_torch)
    Ts = [T for T in (2 ** i for i in range(6, 15)) if T <= a.max_T]
    print(f"attention forward + backward, (B, H, T, D) = ({B}, {H}, T, {D}), float32, "
          f"{'causal' if a.causal else 'no mask'}, {a.threads} thread(s); best of the runs, ms")
    if not have_torch:
        print("(PyTorch is not installed: its columns are left out; pip install -e '.[torch]')")
    rows = []
    for T in Ts:
        arrays = inputs(T)
        names = [k for k in kernels if k != "untiled" or T <= a.untiled_max_T]
        runs = {k: step(k, T, a.causal, arrays) for k in names}
        results = {k: run() for k, run in runs.items()}  # warm up, and check they agree
        first = results[names[0]]
        for k in names[1:]:
            for x, y in zip(first, results[k]):
                np.testing.assert_allclose(x, y, rtol=2e-3, atol=2e-4, err_msg=f"{names[0]} vs {k}, T={T}")
        del results, first
        reps = a.reps or max(3, min(30, 2 ** 16 // T))
        ms = best_ms(runs, reps)
        mib = {k: memory_in_subprocess(k, T, a.causal, a.threads) if a.memory else None for k in names}
        rows.append((T, ms, mib))
        print_row(T, ms, mib, have_torch, header=len(rows) == 1)
    if a.plot:
        plot(rows, a.plot)


def print_row(T: int, ms: dict, mib: dict, have_torch: bool, header: bool) -> None:
    def f(x, fmt):
        return "-" if x is None else fmt.format(x)

    if header:
        cols = ["T", "tiled ms", "untiled ms"] + (["torch ms", "tiled/torch"] if have_torch else [])
        cols += ["tiled MiB", "untiled MiB"] + (["torch MiB", "tiled/torch MiB"] if have_torch else [])
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    cells = [str(T), f(ms.get("tiled"), "{:.1f}"), f(ms.get("untiled"), "{:.1f}")]
    if have_torch:
        cells += [f(ms.get("torch"), "{:.1f}"), f(ms["tiled"] / ms["torch"], "{:.2f}x")]
    cells += [f(mib.get("tiled"), "{:.1f}"), f(mib.get("untiled"), "{:.1f}")]
    if have_torch:
        ratio = mib["tiled"] / mib["torch"] if mib.get("tiled") and mib.get("torch") else None
        cells += [f(mib.get("torch"), "{:.1f}"), f(ratio, "{:.2f}x")]
    print("| " + " | ".join(cells) + " |", flush=True)


def plot(rows: list, path: str) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        print("--plot needs matplotlib: pip install -e '.[plot]'")
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for kernel in KERNELS:
        pts = [(T, ms[kernel], mib.get(kernel)) for T, ms, mib in rows if kernel in ms]
        if pts:
            left.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=kernel)
            mem = [(p[0], p[2]) for p in pts if p[2] is not None]
            right.plot([m[0] for m in mem], [max(m[1], 0.1) for m in mem], "o-", label=kernel)
    for ax, label in ((left, "forward + backward, ms"), (right, "extra peak memory, MiB")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length T")
        ax.set_ylabel(label)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
