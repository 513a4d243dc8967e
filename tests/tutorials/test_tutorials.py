"""Every numbered tutorial runs as a script (each checks its own numbers with assert and leaves
no file behind; its figures are saved to a MINIGRAD_FIGURES folder outside its working
directory), on the machine's own code and on the AVX2 code, and as a notebook in a Jupyter
kernel (no cell error, and an inline PNG wherever the tutorial draws). Then the lecture's worked
example; test_tutorial_figures.py holds every figure the tutorials state against what they
print."""

import ast
import re

import numpy as np
import pytest
from tutorial_runs import SCRIPTS, TUTORIALS

# A tutorial draws when it uses matplotlib itself, or minigrad's show() / plot_* helpers.
DRAWS = re.compile(r"^[^#\n]*(\bmatplotlib\b|\bplt\.|\bshow\(|\bplot_\w+\()", re.MULTILINE)


def draws(name: str) -> bool:
    return DRAWS.search((TUTORIALS / name).read_text()) is not None


def test_every_numbered_tutorial_is_found():
    """The tutorials are numbered 01, 02, ... without gaps or repeats, and tutorials/README.md
    lists every one."""
    numbers = [int(name[:2]) for name in SCRIPTS]
    assert len(SCRIPTS) >= 4 and numbers == list(range(1, len(SCRIPTS) + 1)), SCRIPTS
    readme = (TUTORIALS / "README.md").read_text()
    missing = [name for name in SCRIPTS if f"`{name}`" not in readme]
    assert not missing, f"tutorials/README.md does not list {missing}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_tutorial_runs_as_a_script_and_leaves_no_files(runs, name):
    run = runs["script", name]
    assert run.returncode == 0, f"{name} failed:\n{run.stderr[-3000:]}"
    assert run.stdout.strip(), f"{name} printed nothing"
    assert run.left == [], f"{name} wrote files into its working directory: {run.left}"
    if draws(name):  # MINIGRAD_FIGURES keeps them, named after the script
        named = [f for f in run.figures if f.startswith(name[:-3] + "-") and f.endswith(".png")]
        assert named and named == run.figures, f"{name} draws, but saved {run.figures} to MINIGRAD_FIGURES"


def _outputs(notebook: dict) -> list[dict]:
    cells = [cell for cell in notebook.get("cells", []) if cell["cell_type"] == "code"]
    return [out for cell in cells for out in cell["outputs"]]


@pytest.mark.parametrize("name", SCRIPTS)
def test_tutorial_runs_in_a_jupyter_kernel(native_runs, name):
    run = native_runs["kernel", name]
    assert run.returncode == 0, f"{name} failed in the kernel:\n{run.stderr[-4000:]}"
    outputs = _outputs(run.notebook)
    assert not [o for o in outputs if o["output_type"] == "error"]
    printed = [o for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout"]
    assert printed, f"{name} printed nothing"
    assert run.left == [], f"{name} wrote files into the kernel's working directory: {run.left}"
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    if draws(name):
        assert images, f"{name} draws, but no cell shows an inline PNG"


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
    assert np.allclose(weights.numpy()[0], ex["weights"]) and np.allclose(output.numpy()[0], ex["output"])
    assert np.allclose(weights.numpy().sum(-1), 1.0)
