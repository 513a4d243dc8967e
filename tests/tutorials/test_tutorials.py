"""Every numbered tutorial runs twice: as a script (each checks its own numbers with assert and
leaves no file behind; its figures are saved to a MINIGRAD_FIGURES folder outside its working
directory) and as a notebook in a Jupyter kernel (no cell error, and an inline PNG wherever the
tutorial draws). Then the numbers the tutorials print, and the lecture's worked example."""

import ast
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
SCRIPTS = sorted(p.name for p in TUTORIALS.glob("[0-9][0-9]_*.py"))
RUN_NOTEBOOK = Path(__file__).resolve().with_name("run_notebook.py")
CONCURRENCY = 2  # the machines this runs on have 2 cores; every run is single-threaded
TIMEOUT = 300  # seconds for one run; a tutorial should take well under a minute
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


@dataclass
class Run:
    """One run of a tutorial: as a "script" or in a "kernel"."""

    returncode: int
    stdout: str
    stderr: str
    left: list[str]  # files left in its working directory
    seconds: float
    figures: list[str] = field(default_factory=list)  # script: PNGs saved to MINIGRAD_FIGURES
    notebook: dict = field(default_factory=dict)  # kernel: the executed notebook


def _run(kind: str, name: str, base: Path) -> Run:
    """Run one tutorial in its own Python (and, for "kernel", its own Jupyter kernel), with an
    empty working directory and one BLAS thread."""
    work, out = base / "work", base / "out"
    work.mkdir(parents=True)
    out.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MINIGRAD_FIGURES=str(out / "figures"))
    if kind == "script":
        env["MPLBACKEND"] = "Agg"
        command = [sys.executable, str(TUTORIALS / name)]
    else:
        env.pop("MPLBACKEND", None)  # the kernel picks its inline backend
        env.pop("MINIGRAD_FIGURES", None)
        command = [sys.executable, str(RUN_NOTEBOOK), str(TUTORIALS / name), str(work),
                   str(out / "run.ipynb")]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, stdout = -1, e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = f"(killed after {TIMEOUT} s)"
    seconds = time.perf_counter() - t0
    run = Run(code, stdout, stderr, sorted(p.name for p in work.iterdir()), seconds)
    if kind == "script" and (out / "figures").is_dir():
        run.figures = sorted(p.name for p in (out / "figures").iterdir())
    if kind == "kernel" and (out / "run.ipynb").exists():
        run.notebook = json.loads((out / "run.ipynb").read_text())
    return run


def _children_cpu() -> float:
    """CPU seconds used by finished child processes (and theirs): the work, whatever the load."""
    try:
        import resource
    except ImportError:  # not on Windows
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every tutorial as a script and in a kernel, CONCURRENCY runs at a time (the slowest
    tutorials first). Returns {(kind, name): Run}; prints the time of every run."""
    jobs = [(kind, name) for name in SCRIPTS for kind in ("kernel", "script")]
    jobs.sort(key=lambda job: -(TUTORIALS / job[1]).stat().st_size)  # longer files train more
    t0, cpu0 = time.perf_counter(), _children_cpu()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = {job: pool.submit(_run, *job, tmp_path_factory.mktemp(f"{job[0]}-{job[1][:2]}"))
                   for job in jobs}
        results = {job: future.result() for job, future in futures.items()}
    total, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    print(f"\n{len(jobs)} tutorial runs, {CONCURRENCY} at a time: {total:.0f} s ({cpu:.0f} s of CPU)")
    for (kind, name), run in sorted(results.items(), key=lambda item: item[0][::-1]):
        print(f"  {name:34s} {kind:6s} {run.seconds:6.1f} s")
    return results


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
def test_tutorial_runs_in_a_jupyter_kernel(runs, name):
    run = runs["kernel", name]
    assert run.returncode == 0, f"{name} failed in the kernel:\n{run.stderr[-4000:]}"
    outputs = _outputs(run.notebook)
    assert not [o for o in outputs if o["output_type"] == "error"]
    printed = [o for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout"]
    assert printed, f"{name} printed nothing"
    assert run.left == [], f"{name} wrote files into the kernel's working directory: {run.left}"
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    if draws(name):
        assert images, f"{name} draws, but no cell shows an inline PNG"


def _lines(runs, name, pattern):
    found = re.findall(pattern, runs["script", name].stdout, flags=re.MULTILINE)
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


def test_05_the_grader_names_each_mistake_then_passes(runs):
    name = "05_attention_backward.py"
    codes = _lines(runs, name, r"^diagnosis: (\w+)$")
    assert codes == ["mask_after_softmax", "missing_rowsum_term", "transposed_grad", "ignores_upstream_grad"]
    assert _lines(runs, name, r"^all \d+ checks passed$")


def test_09_positions_matter_and_a_bag_of_patches_ignores_their_order(runs):
    name = "09_vit.py"
    (full,) = _lines(runs, name, r"^600 steps in .* test accuracy (\d\.\d+)")
    pattern = r"^no positions: +test accuracy (\d\.\d+); .* for (\d+)% of the images"
    ((bag, same),) = _lines(runs, name, pattern)
    assert float(full) > 0.85 and float(bag) < float(full) - 0.2 and same == "100"


def test_10_post_norm_needs_the_warm_up(runs):
    pattern = r"^\s+(\S+-norm\s+lr 1e-02\s+warm-up\s+\d+) steps: (\d\.\d+)"
    found = dict(_lines(runs, "10_pre_post_norm.py", pattern))
    losses = {" ".join(key.split()): float(value) for key, value in found.items()}
    post, pre = losses["post-norm lr 1e-02 warm-up 0"], losses["pre-norm lr 1e-02 warm-up 0"]
    assert post > pre + 0.5 and losses["post-norm lr 1e-02 warm-up 50"] < post - 0.5


def test_11_reach_and_the_masking_experiment(runs):
    name = "11_locality_and_explanations.py"
    (depth,) = _lines(runs, name, r"^first conv depth at which d out_bank / d x_river != 0: (\d+)")
    assert depth == "7"  # distance 7, kernel 3: one word more per layer
    pattern = r"masking it moves the output by ([\d.]+), masking 'not' .* by ([\d.]+):"
    ((most, other),) = _lines(runs, name, pattern)
    assert float(other) > 3 * float(most)


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
