"""A plain install, as a new user gets it: build the wheel, install it (no -e) into a fresh virtual
environment, and use it from a folder outside the repository.

The suite itself runs on the editable install, which finds every folder of the checkout whatever
setup.cfg lists; only a real wheel shows a subpackage or data file that does not ship.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from plain_venv import make_venv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Source folder -> where it installs (setup.cfg's package_dir).
SOURCES = {"minigrad": "minigrad", "nn": "minigrad/nn", "models": "minigrad/models"}
SUBPACKAGES = ["minigrad", "minigrad.nn", "minigrad.nn.attention", "minigrad.models", "minigrad.models.data",
               "minigrad.models.recipes", "minigrad.optim", "minigrad.viz", "minigrad.ops",
               "minigrad.exercises", "minigrad.export"]
NOT_SOURCES = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                     "runs", "out", ".hypothesis", ".pytest_cache", ".ruff_cache",
                                     ".ipynb_checkpoints")


def _run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kwargs)
    shown = " ".join(map(str, cmd))
    assert done.returncode == 0, f"{shown} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _build_wheel(tmp_path):
    # Build from a copy, so the checkout (and its editable install's egg-info) is left untouched.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCES)
    # No isolation: an isolated build would download setuptools; the test extra installs `build`.
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(tmp_path / "dist"), str(src)])
    (wheel,) = (tmp_path / "dist").glob("minigrad-*.whl")
    return wheel


def _expected_files():
    """Installed path of every file of the source packages (modules and data alike)."""
    for folder, target in SOURCES.items():
        base = os.path.join(ROOT, folder)
        for path, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
            for f in files:
                if not f.startswith(".") and not f.endswith((".pyc", ".pyo")):
                    rel = os.path.relpath(os.path.join(path, f), base).replace(os.sep, "/")
                    yield f"{target}/{rel}"


def _venv(tmp_path, wheel):
    """A venv holding only the wheel, its dependencies linked from this interpreter
    (tests/plain_venv.py)."""
    bindir, python, venv_site = make_venv(tmp_path / "venv")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
          "--quiet", "--disable-pip-version-check", str(wheel)])
    return bindir, python, venv_site


@pytest.mark.slow
def test_the_wheel_installs_and_runs(tmp_path):
    pytest.importorskip("build", reason="needs the test extra: pip install -e '.[test]'")
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        shipped = set(zf.namelist())
    missing = sorted(set(_expected_files()) - shipped)
    assert not missing, f"the wheel lacks {missing}"

    bindir, python, venv_site = _venv(tmp_path, wheel)
    outside = tmp_path / "elsewhere"  # not the checkout, whose folders would be importable from the cwd
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    env.pop("NUMBA_CACHE_DIR", None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # where compiled kernels' machine code goes
    # minigrad.export bridges to PyTorch: it is imported last, and only where torch is installed.
    names = SUBPACKAGES if importlib.util.find_spec("torch") else SUBPACKAGES[:-1]
    script = ("import importlib, sys\n"
              f"for name in {names!r}:\n"
              "    path = importlib.import_module(name).__file__\n"
              "    print(name, 'torch' in sys.modules, path)\n")
    done = _run([str(python), "-c", script], cwd=outside, env=env)
    imported = [line.split(" ", 2) for line in done.stdout.splitlines()]
    assert [name for name, _, _ in imported] == names
    for name, torch_loaded, path in imported:
        inside = os.path.commonpath([path, venv_site]) == venv_site
        assert inside, f"{name} imported from {path}, not from the wheel"
        if name != "minigrad.export":
            assert torch_loaded == "False", f"importing {name} imported torch"

    command = str(bindir / "minigrad")
    done = _run([command, "--help"], cwd=outside, env=env)
    assert "train" in done.stdout and "graph" in done.stdout
    done = _run([command, "train", "gpt", "--preset", "tiny", "--steps", "5", "--out", "run", "--quiet"],
                cwd=outside, env=env)
    assert "5 steps" in done.stdout and "val_loss" in done.stdout
    with open(outside / "run" / "log.csv") as f:
        assert [row.split(",")[0] for row in f.read().split()[1:]] == ["1", "2", "3", "4", "5"]
    assert (outside / "run" / "checkpoint.npz").is_file()

    # Running writes nothing into the installed package (numba's default cache folder is the
    # __pycache__ beside the source), so uninstalling removes it whole: a folder left behind would
    # be imported as an empty namespace package ahead of a later editable install.
    package = os.path.join(venv_site, "minigrad")
    added = [os.path.relpath(os.path.join(path, f), venv_site).replace(os.sep, "/")
             for path, _, files in os.walk(package) for f in files if not f.endswith(".pyc")]
    assert sorted(set(added) - shipped) == []
    _run([sys.executable, "-m", "pip", "--python", str(python), "uninstall", "--yes", "--quiet",
          "--disable-pip-version-check", "minigrad"])
    assert not os.path.exists(package), f"pip uninstall left {sorted(os.listdir(package))}"
