"""`minigrad graph` with --expand-fused, --show-values and --html (the page of
`minigrad.viz.explore`), with --depth kept; errors are one line and write nothing."""

from __future__ import annotations

import json
import re

import pytest

from minigrad import cli
from minigrad.models import commands
from minigrad.models.recipes import recipe_class


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


class Built:
    """Stands in for the gpt recipe class and hands out one recipe built once (as in
    test_cli_viz.py), so the commands below do not build the model and load its data each time."""

    def __init__(self, recipe):
        cls = type(recipe)
        self.recipe, self.name, self.presets, self.default_preset = recipe, cls.name, cls.presets, "tiny"

    def __call__(self, preset):
        return self.recipe


@pytest.fixture(scope="module")
def gpt():
    return Built(recipe_class("gpt")("tiny"))


@pytest.fixture
def tiny_gpt(gpt, monkeypatch):
    monkeypatch.setattr(commands, "recipe_class", lambda _: gpt)
    return gpt.recipe


def page_data(path):
    text = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'id="minigrad-data">(.*?)</script>', text, re.S).group(1))


def test_expand_fused_and_show_values_reach_the_drawing(tiny_gpt, tmp_path, capsys):
    plain, opened = tmp_path / "plain.dot", tmp_path / "opened.dot"
    assert run(["graph", "gpt", "--depth", "all", "--out", str(plain)], capsys)[0] == 0
    code, out, _ = run(["graph", "gpt", "--depth", "all", "--expand-fused", "--show-values",
                        "--out", str(opened)], capsys)
    assert code == 0 and "opened.dot" in out and "the whole graph" in out
    before, after = plain.read_text(), opened.read_text()
    for step in ("MatMul q @ k^T", "Softmax over keys", "PackedAttention (fused kernel, expanded)"):
        assert step in after and step not in before
    assert after.count("\\ndata [") > before.count("\\ndata [")  # values of every tensor
    assert "\\ngrad [" in after  # and their gradients: the backward ran


def test_depth_is_kept_with_the_new_flags(tiny_gpt, tmp_path, capsys):
    path = tmp_path / "g1.dot"
    code, out, _ = run(["graph", "gpt", "--depth", "1", "--show-values", "--out", str(path)], capsys)
    assert code == 0 and "depth 1" in out
    source = path.read_text()
    assert "blocks.0 (Block)" in source and "PackedAttention" not in source  # folded into its box


def test_html_writes_the_page_and_only_the_page(tiny_gpt, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["graph", "gpt", "--html", "sub/step.html"], capsys)
    assert code == 0 and "wrote sub/step.html" in out and "backward steps" in out
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["step.html"]
    data = page_data(tmp_path / "sub" / "step.html")
    modules = {m["label"]: m["open"] for m in data["modules"]}
    assert modules["GPT"] and not modules["blocks.0 (Block)"]  # --depth 1, the default
    assert data["steps"][0]["name"] == "CrossEntropy" and len(data["steps"]) == len(data["ops"])


def test_html_with_out_writes_both(tiny_gpt, tmp_path, capsys):
    page, picture = tmp_path / "g.html", tmp_path / "g.dot"
    code, out, _ = run(["graph", "gpt", "--depth", "0", "--html", str(page), "--out", str(picture)], capsys)
    assert code == 0 and "g.html" in out and "g.dot" in out
    assert all(m["open"] is False for m in page_data(page)["modules"])  # depth 0: the model as one box
    source = picture.read_text()
    assert source.startswith("digraph") and "\\ngrad 1" in source  # the loss's gradient: backward ran


@pytest.mark.parametrize("argv,message", [
    pytest.param(["--html", "page.txt"], "--html writes a web page: end its name in .html", id="html-name"),
    pytest.param(["--html", "p.html", "--module", "blocks.0"], "the --html page opens modules by click",
                 id="html-module"),
    pytest.param(["--show-values", "--out", "g.txt"], "cannot tell the picture's format", id="bad-format"),
    pytest.param(["--expand-fused", "--module", "blocks.7"], "has no module 'blocks.7'", id="bad-module"),
    pytest.param(["--show-values", "--batch-size", "0"], "--batch-size must be positive", id="batch"),
])
def test_errors_are_one_line_and_write_nothing(argv, message, tiny_gpt, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["graph", "gpt", *argv], capsys)
    assert code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["graph", "--help"])
    text = capsys.readouterr().out
    assert exit_.value.code == 0
    for flag in ("--depth", "--expand-fused", "--show-values", "--html"):
        assert flag in text
