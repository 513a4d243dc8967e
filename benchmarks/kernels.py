"""The fused kernels one by one, forward + backward, in minigrad (numpy form and compiled loop
form) and in PyTorch 2.13 (CPU, eager), at 1 and 2 threads, in one process, taking turns.

    python benchmarks/kernels.py             # every kernel, 1 and 2 threads, 5 rounds
    python benchmarks/kernels.py --threads 1 --rounds 9

Shapes are those of the benchmark GPT step (benchmarks/gpt_step.py) and of a longer one: layer
norm on (1024, 64) and (16384, 128), GELU (tanh) on (16, 64, 256) and (2, 1024, 512), softmax
over the last axis of (64, 64, 64) (attention weights of 16 x 4 heads at T = 64), cross entropy
of (1024, 65) logits, embedding of 1024 ids into (65, 64) and (65, 128) weights (shown as
ids x rows x features). Each figure is the median over rounds of the best of `--repeat` calls;
the ratio is minigrad's compiled form (its numpy form when numba is absent) over PyTorch's, and
the numpy/compiled column shows what the compiled form gains.
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np


def cases():
    """(name, shape, minigrad step(mg, F, arrays), torch step(torch, arrays), inputs)."""
    rng = np.random.default_rng(0)

    def f32(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    out = []
    for shape in ((1024, 64), (16384, 128)):
        n = shape[-1]
        arrays = (f32(*shape), f32(n), f32(n), f32(*shape))
        out.append(("layer norm", shape, arrays,
                    lambda F, x, w, b, g: F.layer_norm(x, (x.shape[-1],), w, b).backward(g),
                    lambda TF, x, w, b, g: TF.layer_norm(x, (x.shape[-1],), w, b).backward(g)))
    for shape in ((16, 64, 256), (2, 1024, 512)):
        out.append(("GELU tanh", shape, (f32(*shape, scale=2.0), f32(*shape)),
                    lambda F, x, g: F.gelu(x, approximate="tanh").backward(g),
                    lambda TF, x, g: TF.gelu(x, approximate="tanh").backward(g)))
    shape = (64, 64, 64)
    out.append(("softmax", shape, (f32(*shape, scale=3.0), f32(*shape)),
                lambda F, x, g: F.softmax(x, dim=-1).backward(g),
                lambda TF, x, g: TF.softmax(x, dim=-1).backward(g)))
    shape = (1024, 65)
    target = rng.integers(0, 65, 1024)
    out.append(("cross entropy", shape, (f32(*shape, scale=2.0), target),
                lambda F, x, t: F.cross_entropy(x, t).backward(),
                lambda TF, x, t: TF.cross_entropy(x, t).backward()))
    for ids, width in ((1024, 64), (1024, 128)):  # B x T ids of the GPT step and of nanoGPT's
        arrays = (rng.integers(0, 65, ids), f32(65, width), f32(ids, width))
        out.append(("embedding", (ids, 65, width), arrays,
                    lambda F, i, w, g: F.embedding(i, w).backward(g),
                    lambda TF, i, w, g: TF.embedding(i, w).backward(g)))
    return out


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    import torch
    import torch.nn.functional as TF

    import minigrad as mg
    import minigrad.nn.functional as F
    from minigrad.runtime import compiled

    forms = [False, True] if compiled.available() else [False]
    print(f"torch {torch.__version__}; compiled kernels: "
          f"{'numba' if compiled.available() else 'absent (pip install numba)'}")
    print("| kernel | shape | threads | numpy ms | compiled ms | PyTorch ms | numpy / compiled | "
          "minigrad / PyTorch |")
    print("|---|---|---|---|---|---|---|---|")
    for threads in args.threads:
        mg.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, shape, arrays, ours, theirs in cases():
            mine = [mg.tensor(a, requires_grad=a.dtype.kind == "f" and i < len(arrays) - 1)
                    for i, a in enumerate(arrays)]
            if name == "cross entropy":
                mine[1] = mg.tensor(arrays[1])
            tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f" and i < len(arrays) - 1)
                  for i, a in enumerate(arrays)]
            runs = {form: functools.partial(_with, compiled, form, functools.partial(ours, F, *mine))
                    for form in forms}
            runs["torch"] = functools.partial(theirs, TF, *tt)
            for run in runs.values():
                run()  # warm up (and compile)
            times: dict = {key: [] for key in runs}
            for _ in range(args.rounds):
                for key, run in runs.items():
                    times[key].append(best_of(run, args.repeat))
            ms = {key: 1e3 * float(np.median(t)) for key, t in times.items()}
            fast = ms[True] if True in ms else ms[False]
            shown = "x".join(map(str, shape))
            compiled_ms = f"{ms[True]:.3f}" if True in ms else "-"
            gain = f"{ms[False] / ms[True]:.2f}x" if True in ms else "-"
            print(f"| {name} | {shown} | {threads} | {ms[False]:.3f} | {compiled_ms} | {ms['torch']:.3f} | "
                  f"{gain} | {fast / ms['torch']:.2f}x |", flush=True)


def _with(compiled, flag: bool, fn):
    with compiled.using(flag):
        return fn()


if __name__ == "__main__":
    main()
