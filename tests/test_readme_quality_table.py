"""README's quality table is what `benchmarks/quality.py` measured, and nothing else: the text
between its markers is the script's rendering of the results file the script wrote, every row
was measured with the presets as they are now, and the cheapest row is measured again here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from minigrad.models.recipes import recipe_class

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("benchmarks_quality", ROOT / "benchmarks" / "quality.py")
quality = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("benchmarks_quality", quality)  # its dataclass looks itself up there
_spec.loader.exec_module(quality)

RERUN = "run python benchmarks/quality.py --write-readme (or --readme-only after a partial run)"


def _section(readme: str) -> str:
    a, b = readme.index(quality.START), readme.index(quality.END) + len(quality.END)
    return readme[a:b]


def test_readme_holds_the_markers_once_in_order():
    readme = quality.README.read_text()
    assert readme.count(quality.START) == 1 and readme.count(quality.END) == 1
    assert readme.index(quality.START) < readme.index(quality.END)


def test_the_table_is_the_rendering_of_the_saved_results():
    results = quality.load_results()
    assert _section(quality.README.read_text()) == quality.render_table(results), (
        f"README's quality table differs from benchmarks/quality_results.json: {RERUN}")


@pytest.mark.parametrize("name", quality.TABLE_ORDER)
def test_each_row_was_measured_with_the_preset_as_it_is(name):
    """A preset whose step count changed since the figures were measured makes them stale."""
    row, saved = quality.ROWS[name], quality.load_results()["rows"][name]
    assert saved["steps"] == recipe_class(row.model).train_config(row.preset).steps, RERUN
    assert saved["seconds"] > 0 and saved["date"] and saved["machine"]
    assert quality.check(name, quality.load_results()["rows"]), f"{name} misses its target: {saved}"


@pytest.mark.slow
def test_the_cheapest_row_measures_what_the_table_says():
    """rnn-plain (300 steps, under a minute) trained again gives the table's figures: the
    README cannot hold a number the script does not produce (1 BLAS thread, as the script)."""
    import minigrad as mg

    row = quality.ROWS["rnn-plain"]
    saved = quality.load_results()["rows"]["rnn-plain"]["metrics"]
    mg.set_num_threads(1)
    metrics, steps, _ = quality.run(row.model, row.preset, None, None)
    assert row.result(metrics) in _section(quality.README.read_text())
    assert metrics["exact_match"] == pytest.approx(saved["exact_match"], abs=2e-3)
    assert metrics["val_loss"] == pytest.approx(saved["val_loss"], rel=1e-3)


# ----------------------------------------------------------------------------- the writer


def _fake() -> dict:
    metrics = {"val_loss": 1.2345, "accuracy": 0.9712, "exact_match": 0.9876, "mlm_acc": 0.301,
               "mlm_baseline": 0.052, "mlm_margin": 0.249, "nsp_acc": 0.733, "exact_match_seen": 0.951,
               "exact_match_unseen": 0.902, "attention_share": 0.876}
    return {"rows": {name: {"metrics": dict(metrics, exact_match=0.5 if name == "rnn-plain" else 0.9876),
                            "steps": 123, "seconds": 45.6 if i else 1234.0, "date": "2000-01-02",
                            "machine": "Some CPU, 2 cores", "load": 1.5}
                     for i, name in enumerate(quality.TABLE_ORDER)}}


def test_the_writer_renders_every_row_from_the_results():
    table = quality.render_table(_fake())
    lines = table.splitlines()
    assert lines[0] == quality.START and lines[-1] == quality.END
    head = " ".join(lines[1:lines.index("")])
    assert "on Some CPU, 2 cores, 2000-01-02." in head and "upper bounds" in head
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(quality.TABLE_ORDER)
    assert rows[0] == ("| GPT 2 layers, 4 heads, d=64 | `quick` | 123 | val loss 1.234 nats/char | <= 2.10 "
                       "| 21 min (load 1.5) |")
    assert "| CNN 3 conv layers" in rows[3] and "| test accuracy 97.1% (360 digits) | >= 98% |" in rows[3]
    assert ("exact caption 95.1% on held-out images of seen pairs, 90.2% unseen pairs; 87.6% of a digit "
            "word's attention on its digit") in rows[4]
    assert "| exact match 98.8% (1000 held out) | >= 99% | 46 s (load 1.5) |" in rows[5]
    assert "masked-word accuracy 30.1% (most frequent word: 5.2%); next sentence 73.3%" in rows[7]
    assert rows[-1].startswith("| GRU encoder-decoder, no attention | `dates-noattn` | 123 "
                               "| exact match 50.0% |")


def test_the_writer_replaces_only_the_marked_section(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{quality.START}\nold figures\n{quality.END}\nafter\n")
    quality.write_readme(_fake(), readme)
    text = readme.read_text()
    assert text.startswith("before\n" + quality.START) and text.endswith(quality.END + "\nafter\n")
    assert "old figures" not in text and "val loss 1.234" in text
    quality.write_readme(_fake(), readme)
    assert readme.read_text() == text  # idempotent


def test_the_writer_refuses_missing_rows_and_markers(tmp_path):
    results = _fake()
    del results["rows"]["vit"]
    with pytest.raises(ValueError, match=r"no results for vit; run python benchmarks/quality.py vit"):
        quality.render_table(results)
    with pytest.raises(ValueError, match="README must hold"):
        quality.replace_table("no markers here", "table")


def test_the_results_file_is_json_of_every_row():
    saved = json.loads(quality.RESULTS.read_text())
    assert set(saved["rows"]) == set(quality.ROWS)


def test_a_row_saved_keeps_the_others(tmp_path):
    path = tmp_path / "results.json"
    fake = _fake()
    for name, entry in fake["rows"].items():
        quality.save_row(name, entry, path)
    quality.save_row("vit", dict(fake["rows"]["vit"], seconds=1.0), path)
    saved = quality.load_results(path)["rows"]
    assert set(saved) == set(fake["rows"]) and saved["vit"]["seconds"] == 1.0
    assert saved["bert"] == fake["rows"]["bert"]
