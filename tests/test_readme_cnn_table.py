"""README's CNN-vs-ViT table is what `benchmarks/cnn_vs_vit.py` measured: the text between its
markers is the script's rendering of the results file it wrote, and the results have the
shape the lecture asserts (the image bias helps most with the fewest images)."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("benchmarks_cnn_vs_vit", ROOT / "benchmarks" / "cnn_vs_vit.py")
sweep = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("benchmarks_cnn_vs_vit", sweep)
_spec.loader.exec_module(sweep)


def test_the_table_is_the_rendering_of_the_saved_results():
    readme = sweep.README.read_text()
    assert readme.count(sweep.START) == 1 and readme.count(sweep.END) == 1
    a, b = readme.index(sweep.START), readme.index(sweep.END) + len(sweep.END)
    figures = json.loads(sweep.RESULTS.read_text())
    assert readme[a:b] == sweep.markdown(figures), (
        "README's CNN-vs-ViT table differs from benchmarks/cnn_vs_vit_results.json: run "
        "python benchmarks/cnn_vs_vit.py --readme-only")


def test_the_saved_sweep_covers_every_size_for_both_models():
    figures = json.loads(sweep.RESULTS.read_text())
    acc = {(r["model"], r["train_size"]): r["accuracy"] for r in figures["runs"]}
    assert figures["sizes"] == [100, 200, 500, 1437]
    assert set(acc) == {(m, n) for m in ("cnn", "vit") for n in figures["sizes"]}
    gaps = [acc["cnn", n] - acc["vit", n] for n in figures["sizes"]]
    assert gaps[0] == max(gaps)  # the CNN's lead is largest with the fewest images
