"""Quality targets: train each model as the `minigrad` command would and check its held-out
metric against the target. Slow (minutes per target); not part of the test suite.

    python benchmarks/quality.py                 # every target
    python benchmarks/quality.py gpt-quick vit   # some of them
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import minigrad as mg
from minigrad.models.recipes import recipe_class
from minigrad.models.train import train

# name: (model, preset, metric, comparison, target)
TARGETS = {
    "gpt-quick": ("gpt", "quick", "val_loss", "<=", 2.10),
    "gpt-small": ("gpt", "small", "val_loss", "<=", 1.85),
    "vit": ("vit", "quick", "accuracy", ">=", 0.95),
    "seq2seq-reverse": ("seq2seq", "reverse", "exact_match", ">=", 0.99),
    "seq2seq-dates": ("seq2seq", "dates", "exact_match", ">=", 0.95),
    "bert-mlm": ("bert", "quick", "mlm_margin", ">=", 0.10),
    "bert-nsp": ("bert", "quick", "nsp_acc", ">=", 0.70),
    "rnn-attention": ("rnn", "dates", "exact_match", ">", "rnn-plain"),
    "rnn-plain": ("rnn", "dates-noattn", "exact_match", "", None),
}


def run(model: str, preset: str, steps: int | None, seed: int | None) -> tuple[dict, float]:
    """Train one preset from scratch; (final metrics, wall seconds)."""
    cls = recipe_class(model)
    recipe = cls(preset)
    cfg = cls.train_config(preset, steps=steps, seed=seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        metrics = train(recipe, cfg, out, progress=False, log=lambda s: print("   ", s, flush=True))
    if "mlm_acc" in metrics and "mlm_baseline" in metrics:
        metrics["mlm_margin"] = metrics["mlm_acc"] - metrics["mlm_baseline"]
    return metrics, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("targets", nargs="*", default=list(TARGETS), help=f"some of: {', '.join(TARGETS)}")
    p.add_argument("--steps", type=int, help="override the presets' step counts (quick checks)")
    p.add_argument("--seed", type=int)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    mg.set_num_threads(args.threads)
    results: dict[str, float] = {}
    rows = []
    names = list(args.targets)
    if "rnn-attention" in names and "rnn-plain" not in names:
        names.insert(names.index("rnn-attention"), "rnn-plain")  # its reference
    for name in sorted(names, key=lambda n: n == "rnn-attention"):
        model, preset, metric, op, target = TARGETS[name]
        print(f"{name}: training {model} --preset {preset}", flush=True)
        metrics, seconds = run(model, preset, args.steps, args.seed)
        value = metrics[metric]
        results[name] = value
        if isinstance(target, str):
            target = results[target]
        ok = target is None or {"<=": value <= target, ">=": value >= target, ">": value > target}[op]
        rows.append((name, metric, value, f"{op} {target:.4g}" if target is not None else "", seconds, ok))
    print(f"\n{'target':<16} {'metric':<12} {'value':>8} {'aim':>10} {'seconds':>8}  ok")
    for name, metric, value, aim, seconds, ok in rows:
        print(f"{name:<16} {metric:<12} {value:>8.4f} {aim:>10} {seconds:>8.0f}  {'yes' if ok else 'NO'}")
    print(f"(1 BLAS thread, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
