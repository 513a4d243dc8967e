"""Quality targets: train each model as the `minigrad` command would and check its held-out
metric against the target. Slow (minutes per row); not part of the test suite.

    python benchmarks/quality.py                      # every row
    python benchmarks/quality.py gpt-quick vit        # some of them
    python benchmarks/quality.py --write-readme       # every row, then rewrite README's table
    python benchmarks/quality.py --readme-only        # rewrite the table from the saved results

Every run stores its figures, with the machine and the date, in quality_results.json (next to
this file; a run of some rows replaces only those rows). README.md's quality table, between
the markers `<!-- quality-table:start -->` and `<!-- quality-table:end -->`, is rendered from
that file and nothing else, and a test checks that the two agree.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "quality_results.json"
README = HERE.parent / "README.md"
START, END = "<!-- quality-table:start -->", "<!-- quality-table:end -->"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


@dataclass(frozen=True)
class Row:
    """One README row: a preset trained from scratch, its checks and how its result reads.

    checks: (metric, comparison, target); a target that is a row name means "that row's
    value of the same metric".
    """

    model: str
    preset: str
    description: str
    checks: tuple[tuple[str, str, float | str], ...]
    result: Callable[[dict], str]
    aim: str


ROWS = {
    "gpt-quick": Row("gpt", "quick", "GPT 2 layers, 4 heads, d=64", (("val_loss", "<=", 2.10),),
                     lambda m: f"val loss {m['val_loss']:.3f} nats/char", "<= 2.10"),
    "gpt-small": Row("gpt", "small", "GPT 4 layers, 4 heads, d=128", (("val_loss", "<=", 1.85),),
                     lambda m: f"val loss {m['val_loss']:.3f} nats/char", "<= 1.85"),
    "vit": Row("vit", "quick", "ViT 2 layers, 4 heads, d=64, 2x2 patches", (("accuracy", ">=", 0.95),),
               lambda m: f"test accuracy {_pct(m['accuracy'])} (360 digits)", ">= 95%"),
    "cnn": Row("cnn", "quick", "CNN 3 conv layers (32, 64, 128 channels), BatchNorm",
               (("accuracy", ">=", 0.98),),
               lambda m: f"test accuracy {_pct(m['accuracy'])} (360 digits)", ">= 98%"),
    "caption": Row("caption", "quick", "Captioning: CNN grid + LSTM with additive attention",
                   (("exact_match_seen", ">=", 0.90), ("attention_share", ">=", 0.5)),
                   lambda m: (f"exact caption {_pct(m['exact_match_seen'])} on held-out images of seen "
                              "pairs, "
                              f"{_pct(m['exact_match_unseen'])} unseen pairs; "
                              f"{_pct(m['attention_share'])} of a digit word's attention on its digit"),
                   ">= 90%; most on the digit"),
    "seq2seq-reverse": Row("seq2seq", "reverse", "Transformer encoder-decoder (reverse 8-12 digits)",
                           (("exact_match", ">=", 0.99),),
                           lambda m: f"exact match {_pct(m['exact_match'])} (1000 held out)", ">= 99%"),
    "seq2seq-dates": Row("seq2seq", "dates", "Transformer encoder-decoder",
                         (("exact_match", ">=", 0.95),),
                         lambda m: f"exact match {_pct(m['exact_match'])} (1000 held out)", ">= 95%"),
    "bert": Row("bert", "quick", "BERT 2 layers, d=128, word level",
                (("mlm_margin", ">=", 0.10), ("nsp_acc", ">=", 0.70)),
                lambda m: (f"masked-word accuracy {_pct(m['mlm_acc'])} (most frequent word: "
                           f"{_pct(m['mlm_baseline'])}); next sentence {_pct(m['nsp_acc'])}"),
                "+10 points; >= 70%"),
    "rnn-plain": Row("rnn", "dates-noattn", "GRU encoder-decoder, no attention", (),
                     lambda m: f"exact match {_pct(m['exact_match'])}", ""),
    "rnn-attention": Row("rnn", "dates", "GRU encoder-decoder + additive attention",
                         (("exact_match", ">", "rnn-plain"),),
                         lambda m: f"exact match {_pct(m['exact_match'])}", "beats no attention"),
}
TABLE_ORDER = ["gpt-quick", "gpt-small", "vit", "cnn", "caption", "seq2seq-reverse", "seq2seq-dates", "bert",
               "rnn-attention", "rnn-plain"]


def run(model: str, preset: str, steps: int | None, seed: int | None) -> tuple[dict, int, float]:
    """Train one preset from scratch; (final metrics, steps, wall seconds)."""
    import minigrad as mg
    from minigrad.models.recipes import recipe_class
    from minigrad.models.train import train

    cls = recipe_class(model)
    # The weights are drawn when the recipe is built, before train() seeds: start the generator
    # as a fresh process does, so each row is what `minigrad train` gives, whatever ran before.
    mg.manual_seed(0)
    recipe = cls(preset)
    cfg = cls.train_config(preset, steps=steps, seed=seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        metrics = train(recipe, cfg, out, progress=False, log=lambda s: print("   ", s, flush=True))
    if "mlm_acc" in metrics and "mlm_baseline" in metrics:
        metrics["mlm_margin"] = metrics["mlm_acc"] - metrics["mlm_baseline"]
    return {k: float(v) for k, v in metrics.items()}, cfg.steps, time.perf_counter() - t0


def check(name: str, rows: dict) -> bool:
    """Whether row `name` of the results `rows` meets every target of its Row."""
    metrics = rows[name]["metrics"]
    ok = True
    for metric, op, target in ROWS[name].checks:
        if isinstance(target, str):
            target = rows[target]["metrics"][metric]
        value = metrics[metric]
        ok &= {"<=": value <= target, ">=": value >= target, ">": value > target}[op]
    return bool(ok)


def machine() -> str:
    """The CPU and its core count."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def load() -> float | None:
    """The 1-minute load average: other jobs on the machine make the times upper bounds."""
    return round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None


def _wall(r: dict) -> str:
    s = r["seconds"]
    time_ = f"{s:.0f} s" if s < 600 else f"{s / 60:.0f} min"
    return time_ if r.get("load") is None else f"{time_} (load {r['load']:.1f})"


def render_table(results: dict) -> str:
    """README's quality section (between the markers) from the saved results: the figures,
    steps and times of every row, and the machines and dates they were measured on."""
    rows = results["rows"]
    missing = [n for n in TABLE_ORDER if n not in rows]
    if missing:
        raise ValueError(f"quality: no results for {', '.join(missing)}; "
                         f"run python benchmarks/quality.py {' '.join(missing)}")
    lines = ["| model | preset | steps | result | target | wall time |", "|---|---|---|---|---|---|"]
    for name in TABLE_ORDER:
        row, r = ROWS[name], rows[name]
        lines.append(f"| {row.description} | `{row.preset}` | {r['steps']} | {row.result(r['metrics'])} "
                     f"| {row.aim} | {_wall(r)} |")
    where = sorted({(rows[n]["date"], rows[n]["machine"]) for n in TABLE_ORDER})
    measured = "; ".join(f"{m}, {d}" for d, m in where)
    head = (f"Measured with `python benchmarks/quality.py --write-readme` (held-out data, one BLAS "
            f"thread; the figures are kept in `benchmarks/quality_results.json`) on {measured}. "
            f"Other jobs shared the machine (its load average when each row started is given), "
            f"so the times are upper bounds:")
    return "\n".join([START, textwrap.fill(head, 96), "", *lines, END])


def replace_table(readme: str, table: str) -> str:
    """`readme` with the text from START to END (inclusive) replaced by `table`."""
    if readme.count(START) != 1 or readme.count(END) != 1 or readme.index(START) > readme.index(END):
        raise ValueError(f"quality: README must hold {START} once, then {END} once")
    return readme[: readme.index(START)] + table + readme[readme.index(END) + len(END):]


def load_results(path: Path = RESULTS) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"rows": {}}


def save_row(name: str, entry: dict, path: Path = RESULTS) -> None:
    """Replace one row of the results file, keeping the others (and what another run saved)."""
    results = load_results(path)
    results["rows"][name] = entry
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def write_readme(results: dict, readme: Path = README) -> None:
    readme.write_text(replace_table(readme.read_text(), render_table(results)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", nargs="*", default=TABLE_ORDER, help=f"some of: {', '.join(ROWS)}")
    p.add_argument("--steps", type=int, help="override the presets' step counts (quick checks; "
                   "such results are not saved)")
    p.add_argument("--seed", type=int, help="another seed (not saved)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--write-readme", action="store_true", help="then rewrite README.md's quality table")
    p.add_argument("--readme-only", action="store_true", help="rewrite the table from the saved results")
    args = p.parse_args()
    if args.readme_only:
        write_readme(load_results())
        return
    import minigrad as mg

    unknown = [n for n in args.rows if n not in ROWS]
    if unknown:
        p.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    mg.set_num_threads(args.threads)
    names = list(dict.fromkeys(args.rows))
    if "rnn-attention" in names:  # its reference goes first
        if "rnn-plain" in names:
            names.remove("rnn-plain")
        names.insert(names.index("rnn-attention"), "rnn-plain")
    saved = args.steps is None and args.seed is None and args.threads == 1
    if args.write_readme and not saved:
        p.error("--write-readme writes the figures of the presets as they are: "
                "no --steps, --seed or --threads")
    results = {"rows": {}}
    for name in names:
        row = ROWS[name]
        print(f"{name}: training {row.model} --preset {row.preset}", flush=True)
        busy = load()  # as the row starts
        metrics, steps, seconds = run(row.model, row.preset, args.steps, args.seed)
        results["rows"][name] = {"metrics": metrics, "steps": steps, "seconds": round(seconds, 1),
                                 "date": datetime.date.today().isoformat(), "machine": machine(),
                                 "load": busy}
        if saved:  # after each row, so an interrupted run keeps what it measured
            save_row(name, results["rows"][name])
    print(f"\n{'row':<16} {'result':<72} {'seconds':>8}  ok")
    for name in names:
        r = results["rows"][name]
        print(f"{name:<16} {ROWS[name].result(r['metrics']):<72} {r['seconds']:>8.0f}  "
              f"{'yes' if check(name, results['rows']) else 'NO'}")
    print(f"({args.threads} BLAS thread(s), {machine()}, load average {load()})")
    if args.write_readme:
        write_readme(load_results())


if __name__ == "__main__":
    main()
