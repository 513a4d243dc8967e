"""The data sweep of the lecture's "ViT throws away convolution's image bias and relearns it from
data": the quick CNN and the quick ViT, each trained on the first 100, 200, 500 and all 1437
training digits, with the same budget of steps, tested on the same 360 held-out digits.

    python benchmarks/cnn_vs_vit.py                                   # the table (~4 min)
    python benchmarks/cnn_vs_vit.py --json benchmarks/cnn_vs_vit_results.json --plot docs/cnn_vs_vit.png
    python benchmarks/cnn_vs_vit.py --steps 100 --sizes 100 1437      # a quicker look
    python benchmarks/cnn_vs_vit.py --readme-only    # README's table from the saved results

Each run is what `minigrad train cnn|vit --preset quick --steps STEPS` does on a training set
cut to its first N images: the preset's batch size, learning rate and schedule, the weights
drawn from seed 0, one BLAS thread. With few images the same steps are many more epochs. The
times are wall seconds on a machine other jobs may share (the load average when each run
started is recorded): the saved sweep took 255 s on 2 cores at a load average of 5 to 8.
--plot needs matplotlib (`pip install -e ".[plot]"`), imported only then.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import minigrad as mg
from minigrad.models.recipes import recipe_class
from minigrad.models.train import train

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality import machine  # noqa: E402  (the machine line, as the quality table's)

MODELS = ("cnn", "vit")
NAMES = {"cnn": "CNN", "vit": "ViT"}
SIZES = (100, 200, 500, 1437)  # 1437: every training image
STEPS = 500  # the budget of both models (the ViT's quick preset trains 1000)


def run(model: str, train_size: int, steps: int, seed: int | None = None) -> dict:
    """Train the quick preset of `model` on the first `train_size` images for `steps` steps:
    its test accuracy and loss, parameter count and wall seconds."""
    cls = recipe_class(model)
    mg.manual_seed(0)  # the weights are drawn here, before train() seeds: the same for every size
    recipe = cls("quick", train_size=train_size)
    cfg = cls.train_config("quick", steps=steps, eval_every=steps, seed=seed)
    load = round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        metrics = train(recipe, cfg, out, progress=False, log=lambda s: None)
    return {"model": model, "train_size": train_size, "accuracy": float(metrics["accuracy"]),
            "val_loss": float(metrics["val_loss"]), "parameters": recipe.model.num_parameters(),
            "steps": cfg.steps, "batch_size": cfg.batch_size, "seconds": round(time.perf_counter() - t0, 1),
            "load": load}


def table(rows: list[dict], sizes: list[int]) -> str:
    """Test accuracy per training-set size, one column per model, then the seconds."""
    by = {(r["model"], r["train_size"]): r for r in rows}
    models = [m for m in MODELS if any(r["model"] == m for r in rows)]
    head = f"{'images':>7} " + " ".join(f"{m + ' acc':>9}" for m in models) + " " + " ".join(
        f"{m + ' s':>7}" for m in models)
    lines = [head]
    for n in sizes:
        lines.append(f"{n:7d} " + " ".join(f"{100 * by[m, n]['accuracy']:8.1f}%" for m in models) + " "
                     + " ".join(f"{by[m, n]['seconds']:7.1f}" for m in models))
    params = ", ".join(f"{m} {next(r['parameters'] for r in rows if r['model'] == m):,}" for m in models)
    return "\n".join(lines + [f"parameters: {params}"])


README = Path(__file__).resolve().parents[1] / "README.md"
RESULTS = Path(__file__).resolve().with_name("cnn_vs_vit_results.json")
START, END = "<!-- cnn-vs-vit:start -->", "<!-- cnn-vs-vit:end -->"


def markdown(figures: dict) -> str:
    """README's CNN-vs-ViT section (between the markers) from the saved figures, and nothing else."""
    by = {(r["model"], r["train_size"]): r for r in figures["runs"]}
    params = {m: next(r["parameters"] for r in figures["runs"] if r["model"] == m) for m in MODELS}
    head = " | ".join(f"{NAMES[m]} ({params[m]:,} parameters)" for m in MODELS)
    lines = [START, "", f"| training images | {head} |", "|---" * (len(MODELS) + 1) + "|"]
    for n in figures["sizes"]:
        lines.append(f"| {n} | " + " | ".join(f"{100 * by[m, n]['accuracy']:.1f}%" for m in MODELS) + " |")
    lines += ["", f"Test accuracy on the {figures['test_images']} held-out digits, {figures['steps']} steps "
              f"for every run; measured by `{figures['command']}` ({figures['machine']}, "
              f"{figures['threads']} thread, {figures['date']}).", "", END]
    return "\n".join(lines)


def write_readme(figures: dict) -> None:
    text = README.read_text()
    a, b = text.index(START), text.index(END) + len(END)
    README.write_text(text[:a] + markdown(figures) + text[b:])


def plot(rows: list[dict], steps: int, path: str) -> None:
    """Test accuracy against training-set size (log scale), one line per model."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install -e '.[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for model, marker in zip(MODELS, "os"):
        mine = sorted((r for r in rows if r["model"] == model), key=lambda r: r["train_size"])
        if not mine:
            continue
        ax.plot([r["train_size"] for r in mine], [100 * r["accuracy"] for r in mine], marker=marker,
                label=f"{NAMES[model]} ({mine[0]['parameters']:,} parameters)")
    sizes = sorted({r["train_size"] for r in rows})
    ax.set_xscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("training images")
    ax.set_ylabel("test accuracy (%, 360 digits)")
    ax.set_title(f"8x8 digits, {steps} steps each")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=STEPS, help=f"training steps of every run (default {STEPS})")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                   help="training-set sizes, the first N training images (default 100 200 500 1437)")
    p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    p.add_argument("--seed", type=int, help="the training seed (default: the presets')")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--plot", help="draw accuracy against training-set size to this PNG")
    p.add_argument("--readme-only", action="store_true",
                   help=f"rewrite README's table from {RESULTS.name} (no training)")
    args = p.parse_args()
    if args.readme_only:
        write_readme(json.loads(RESULTS.read_text()))
        print(f"wrote README's CNN-vs-ViT table from {RESULTS.name}")
        return
    if args.steps < 1 or min(args.sizes) < 1:
        p.error("--steps and --sizes must be positive")
    mg.set_num_threads(args.threads)
    rows, t0 = [], time.perf_counter()
    for n in args.sizes:
        for model in args.models:
            rows.append(run(model, n, args.steps, args.seed))
            r = rows[-1]
            print(f"{model} on {n:4d} images: test accuracy {100 * r['accuracy']:5.1f}%, "
                  f"val loss {r['val_loss']:.3f}, {r['seconds']:.1f} s", flush=True)
    total = time.perf_counter() - t0
    print(table(rows, args.sizes))
    print(f"{args.steps} steps per run, {total:.0f} s in all")
    if args.json:
        figures = {"date": datetime.date.today().isoformat(), "machine": machine(), "threads": args.threads,
                   "steps": args.steps, "test_images": 360, "sizes": args.sizes, "seconds": round(total, 1),
                   "command": " ".join(["python benchmarks/cnn_vs_vit.py", *sys.argv[1:]]), "runs": rows}
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.plot:
        plot(rows, args.steps, args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
