"""The tutorials run as scripts (each checks its own numbers with assert, and leaves no file
behind), and the lecture's worked example comes out with the notes' numbers."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"
SCRIPTS = sorted(p.name for p in TUTORIALS.glob("[0-9][0-9]_*.py"))


def test_every_numbered_tutorial_is_found():
    assert SCRIPTS == ["01_autograd.py", "02_attention_by_hand.py", "03_transformer_layer.py", "04_gpt.py"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run every tutorial as a script, all at once (they are independent), each in its own
    Python and its own empty working directory. Returns name -> (returncode, stdout, stderr,
    files left in the working directory)."""
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    procs = {}
    for name in SCRIPTS:
        cwd = tmp_path_factory.mktemp(name.removesuffix(".py"))
        procs[name] = (cwd, subprocess.Popen([sys.executable, str(TUTORIALS / name)], cwd=cwd, env=env,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = {}
    for name, (cwd, proc) in procs.items():
        try:
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += "\n(killed after 240 s)"
        results[name] = (proc.returncode, out, err, sorted(p.name for p in cwd.iterdir()))
    return results


@pytest.mark.parametrize("name", SCRIPTS)
def test_tutorial_runs_as_a_script_and_leaves_no_files(runs, name):
    code, out, err, left = runs[name]
    assert code == 0, f"{name} failed:\n{err[-3000:]}"
    assert out.strip(), f"{name} printed nothing"
    assert left == [], f"{name} wrote files into its working directory: {left}"


def _lines(runs, name, pattern):
    found = re.findall(pattern, runs[name][1], flags=re.MULTILINE)
    assert found, f"{name}: no line matches {pattern!r}"
    return found


def test_01_gradcheck_names_the_broken_input_and_element(runs):
    name = "01_autograd.py"
    assert _lines(runs, name, r"^gradcheck failed for a \(input 0, shape \(2, 3\)\) at element \(0, 0\)")
    assert _lines(runs, name, r"^gradcheck failed for b \(input 1, shape \(3,\)\) at element \(0,\)")
    assert _lines(runs, name, r"^    3 of 3 elements disagree$")
    assert _lines(runs, name, r"^    pattern: analytic is the negative of numeric: a sign error$")
    assert _lines(runs, name, r"summed over axes \(0,\) of \(2, 3\)\s+\[5, 7, 9\]")


def test_02_prints_the_slide_numbers(runs):
    (weights,) = _lines(runs, "02_attention_by_hand.py", r"^weights\s+\[(.*)\]$")
    (output,) = _lines(runs, "02_attention_by_hand.py", r"^output\s+\[(.*)\]$")
    assert np.array_equal(np.round(np.array(weights.split(), dtype=float), 2), [0.67, 0.16, 0.16])
    assert np.array_equal(np.round(np.array(output.split(), dtype=float), 3), [0.836, 0.327])


def test_03_layer_matches_and_equivariance_holds_without_positions(runs):
    (diff,) = _lines(runs, "03_transformer_layer.py", r"^output \(2, 6, 16\) largest difference: (\S+)")
    assert float(diff) < 1e-6
    (gap,) = _lines(runs, "03_transformer_layer.py", r"^no positions: .* = (\S+)$")
    assert float(gap) < 1e-12


def test_04_the_loss_falls(runs):
    ((before, after),) = _lines(runs, "04_gpt.py", r"validation loss (\d+\.\d+) -> (\d+\.\d+)")
    assert float(after) < float(before) - 1.0


# ----------------------------------------------------------------------------- the worked example


def _load_worked_example() -> dict:
    """The worked example of tutorial 02 (its imports, its data and its three functions) without
    running the rest of the notebook."""
    path = TUTORIALS / "02_attention_by_hand.py"
    tree = ast.parse(path.read_text())
    wanted = {"q_A", "KEYS", "VALUES", "worked_example", "by_minigrad_steps", "by_sdpa"}
    keep = [
        node for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        or (isinstance(node, ast.FunctionDef) and node.name in wanted)
        or (isinstance(node, ast.Assign) and all(getattr(t, "id", None) in wanted for t in node.targets))
    ]
    namespace: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), namespace)
    assert wanted <= namespace.keys()
    return namespace


def test_worked_example_gives_the_notes_numbers():
    ns = _load_worked_example()
    ex = ns["worked_example"]()
    # The slide: scores [2, 0, 0] -> / sqrt(2) -> [1.41, 0, 0] -> softmax [0.67, 0.16, 0.16].
    assert np.array_equal(ex["scores"], [2.0, 0.0, 0.0])
    assert np.array_equal(np.round(ex["scaled"], 2), [1.41, 0.0, 0.0])
    assert np.allclose(ex["weights"], np.exp([np.sqrt(2), 0, 0]) / (np.exp(np.sqrt(2)) + 2))
    assert np.array_equal(np.round(ex["weights"], 2), [0.67, 0.16, 0.16])
    # Output: exactly [0.836, 0.327]; the slide's [0.83, 0.33] takes 0.83 = 0.67 + 0.16 from the
    # rounded weights and 0.33 from the exact value (the rounded weights give 0.32).
    assert np.array_equal(np.round(ex["output"], 3), [0.836, 0.327])
    assert np.allclose(ex["output_from_rounded_weights"], [0.83, 0.32])
    assert np.round(ex["output"][1], 2) == 0.33


@pytest.mark.parametrize("way", ["by_minigrad_steps", "by_sdpa"])
def test_worked_example_the_same_three_ways(way):
    ns = _load_worked_example()
    ex = ns["worked_example"]()
    weights, output = ns[way]()
    assert weights.shape == (3, 3) and output.shape == (3, 2)
    assert np.allclose(weights.data[0], ex["weights"]) and np.allclose(output.data[0], ex["output"])
    assert np.allclose(weights.data.sum(-1), 1.0)
