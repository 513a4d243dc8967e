"""The `minigrad` command's looking-inside subcommands: graph (SVG parsed for op and module
labels), attention (heatmaps of a checkpoint) and plot (loss curves), on GPT and on every other
model whose recipe imports."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from minigrad import cli
from minigrad.models import commands
from minigrad.models.recipes import RECIPES, recipe_class
from minigrad.models.runs import save_checkpoint
from minigrad.models.train import TrainConfig, make_optimizer

PNG = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def svg_texts(path):
    """Every line of text drawn in an SVG written by Graphviz."""
    root = ET.parse(path).getroot()
    return [t.text for t in root.iter(f"{SVG}text") if t.text]


@pytest.fixture(scope="module")
def gpt_run(tmp_path_factory):
    """A tiny GPT trained for a few steps on a small text: its run folder."""
    folder = tmp_path_factory.mktemp("gpt")
    text = folder / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog.\n" * 60)
    code = cli.main(["train", "gpt", "--preset", "tiny", "--steps", "4", "--data", str(text),
                     "--out", str(folder / "run"), "--quiet"])
    assert code == 0
    return folder / "run"


# Every recipe: one that fails to import fails here, loudly, rather than dropping out.
MODELS = list(RECIPES)
NO_ATTENTION = {"cnn"}  # convolutions only: nothing to open down to, no heatmap to draw


@pytest.fixture(scope="module")
def recipes():
    return {}


def tiny_recipe(recipes, name):
    if name not in recipes:
        cls = recipe_class(name)
        recipes[name] = cls("tiny" if "tiny" in cls.presets else cls.default_preset)
    return recipes[name]


class Built:
    """Stands in for a recipe class and hands out one recipe already built, so that drawing a
    model twice builds it (and loads its data) once; `minigrad graph` treats it as the class."""

    def __init__(self, recipe):
        cls = type(recipe)
        self.recipe, self.name, self.presets, self.default_preset = recipe, cls.name, cls.presets, "tiny"

    def __call__(self, preset):
        return self.recipe


def attention_paths(model):
    return [p for p, m in model.named_modules() if "Attention" in type(m).__name__]


# ----------------------------------------------------------------------------- graph


@pytest.mark.requires_dot
def test_graph_depth_1_shows_the_blocks_depth_3_the_ops(tmp_path, capsys):
    code, out, _ = run(["graph", "gpt", "--depth", "1", "--out", str(tmp_path / "g1.svg")], capsys)
    assert code == 0 and "g1.svg" in out and "gpt (tiny)" in out
    shallow = svg_texts(tmp_path / "g1.svg")
    assert "blocks.0 (Block)" in shallow and "CrossEntropy" in shallow
    assert "Attention" not in shallow and "Linear" not in shallow  # folded into the block box

    assert run(["graph", "gpt", "--depth", "3", "--out", str(tmp_path / "g3.svg")], capsys)[0] == 0
    deep = svg_texts(tmp_path / "g3.svg")
    assert {"PackedAttention", "LinearOp", "LayerNormOp", "blocks.0.attn (MultiheadAttention)"} <= set(deep)
    assert any(t.startswith("|grad| = ") for t in deep)  # drawn after backward


def test_graph_grad_of_draws_the_backward_pass(tmp_path, capsys):
    """--grad-of: the graph of one parameter's gradient, made with create_graph=True: the ops of
    the backward pass (the fused kernels' composed references among them), drawn after its own
    backward, and its page; a parameter the model lacks is named in one line."""
    out = tmp_path / "grad.svg"
    code, stdout, _ = run(["graph", "gpt", "--grad-of", "blocks.0.attn.q_proj.weight", "--depth", "all",
                           "--out", str(out)], capsys)
    assert code == 0 and "the backward pass giving d loss / d blocks.0.attn.q_proj.weight" in stdout
    texts = set(svg_texts(out))
    assert {"MatMul", "Exp", "Sum"} <= texts and "CrossEntropy" not in texts  # the ops of its parts
    page = tmp_path / "grad.html"
    assert run(["graph", "gpt", "--grad-of", "tok_emb.weight", "--html", str(page)], capsys)[0] == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    code, _, err = run(["graph", "gpt", "--grad-of", "blocks.9.weight", "--out", str(out)], capsys)
    assert code == 2 and "--grad-of: gpt has no parameter 'blocks.9.weight'" in err


@pytest.mark.requires_dot
def test_graph_of_one_module_and_other_formats(recipes, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(commands, "recipe_class", lambda _: Built(tiny_recipe(recipes, "gpt")))
    out = tmp_path / "sub" / "attn.svg"  # the folder is made
    assert run(["graph", "gpt", "--module", "blocks.0.attn", "--out", str(out)], capsys)[0] == 0
    texts = svg_texts(out)
    assert "PackedAttention" in texts and "CrossEntropy" not in texts
    assert run(["graph", "gpt", "--depth", "all", "--out", str(tmp_path / "g.dot")], capsys)[0] == 0
    source = (tmp_path / "g.dot").read_text()
    assert source.startswith("digraph") and "blocks.0.attn.q_proj.weight" in source
    assert run(["graph", "gpt", "--depth", "0", "--out", str(tmp_path / "g.png")], capsys)[0] == 0
    assert (tmp_path / "g.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize("argv,message", [
    pytest.param(["graph", "gpt4"], "unknown model 'gpt4'", id="unknown-model"),
    pytest.param(["graph", "gpt", "--preset", "huge"], "unknown preset 'huge' for gpt", id="bad-preset"),
    pytest.param(["graph", "gpt", "--out", "g.txt"], "cannot tell the picture's format", id="bad-format"),
    pytest.param(["graph", "gpt", "--module", "blocks.7", "--out", "g.svg"], "has no module 'blocks.7'",
                 id="bad-module"),
])
def test_graph_errors_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(argv, capsys)
    assert code == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- attention


def test_attention_heatmaps_of_a_gpt_checkpoint(gpt_run, tmp_path, capsys):
    out = tmp_path / "attention.png"
    code, stdout, _ = run(["attention", str(gpt_run / "checkpoint.npz"), "--text", "the lazy dog",
                           "--out", str(out)], capsys)
    assert code == 0 and "blocks.0.attn" in stdout
    assert out.read_bytes().startswith(PNG)


@pytest.mark.parametrize("argv,message", [
    pytest.param(["--text", ""], "--text is empty", id="empty-text"),
    pytest.param([], "give the input of the gpt model with --text", id="no-text"),
    pytest.param(["--text", "XYZ"], "characters not in the vocabulary: ['X', 'Y', 'Z']", id="unknown-chars"),
    pytest.param(["--text", "the dog " * 10], "this model reads at most 32", id="too-long"),
])
def test_attention_errors_are_one_line(gpt_run, argv, message, capsys, tmp_path):
    out = tmp_path / "a.png"
    code, _, err = run(["attention", str(gpt_run / "checkpoint.npz"), "--out", str(out), *argv], capsys)
    assert code == 2 and message in err and err.count("\n") == 1
    assert not out.exists()


def test_attention_of_a_missing_checkpoint(capsys):
    code, _, err = run(["attention", "nowhere.npz", "--text", "hi"], capsys)
    assert code == 2 and "no checkpoint at nowhere.npz" in err and err.count("\n") == 1


# ----------------------------------------------------------------------------- plot


def test_plot_draws_the_training_log(gpt_run, tmp_path, capsys):
    code, stdout, _ = run(["plot", str(gpt_run), "--out", str(tmp_path / "curves.png")], capsys)
    assert code == 0 and "curves.png" in stdout
    assert (tmp_path / "curves.png").read_bytes().startswith(PNG)
    code, _, _ = run(["plot", str(gpt_run / "log.csv")], capsys)  # default: next to the log
    assert code == 0 and (gpt_run / "training.png").read_bytes().startswith(PNG)


def test_plot_without_a_log_is_an_error(tmp_path, capsys):
    code, _, err = run(["plot", str(tmp_path)], capsys)
    assert code == 2 and "no log.csv in" in err and err.count("\n") == 1


# ----------------------------------------------------------------------------- every model


@pytest.mark.requires_dot
@pytest.mark.parametrize("name", MODELS)
def test_graph_of_every_model(name, recipes, tmp_path, capsys, monkeypatch):
    recipe = tiny_recipe(recipes, name)
    monkeypatch.setattr(commands, "recipe_class", lambda _: Built(recipe))
    model = recipe.model
    assert run(["graph", name, "--depth", "1", "--out", str(tmp_path / "g1.svg")], capsys)[0] == 0
    shallow = svg_texts(tmp_path / "g1.svg")
    children = {f"{n} ({type(m).__name__})" for n, m in model.named_children()}
    assert len(children & set(shallow)) >= 3  # the model's parts, each one box
    assert "CrossEntropy" in shallow
    # depth 3 as DOT source: unrolled recurrent graphs take Graphviz long to lay out.
    assert run(["graph", name, "--depth", "3", "--out", str(tmp_path / "g3.dot")], capsys)[0] == 0
    deep = (tmp_path / "g3.dot").read_text()
    paths = attention_paths(model)
    if name in NO_ATTENTION:
        assert not paths and '"block1.conv (Conv2d)' in deep  # opened down to the convolutions
        return
    assert paths and all(f'"{path} (' in deep for path in paths)  # opened down to the attention
    assert not any(f"{path} (" in " ".join(shallow) for path in paths)


INPUTS = {"gpt": ["--text", "Return the value"], "bert": ["--text", "Return the value of x."],
          "vit": ["--index", "2"], "caption": ["--index", "2"]}


@pytest.mark.parametrize("name", [m for m in MODELS if m not in NO_ATTENTION])
def test_attention_of_every_model(name, recipes, tmp_path, capsys):
    recipe = tiny_recipe(recipes, name)
    ckpt = str(tmp_path / "checkpoint.npz")
    cfg = TrainConfig(steps=1)
    opt, sched = make_optimizer(recipe.model, cfg)
    save_checkpoint(ckpt, recipe, opt, sched, 0, cfg, np.random.default_rng(0), [])
    argv = INPUTS.get(name) or ["--text", recipe.test_pairs[0][0]]  # seq2seq, rnn: a test source
    code, stdout, err = run(["attention", ckpt, "--out", str(tmp_path / "a.png"), *argv], capsys)
    assert code == 0, err
    assert (tmp_path / "a.png").read_bytes().startswith(PNG)
    recorded = stdout.splitlines()[-1]
    for path in attention_paths(recipe.model):
        assert path in recorded
