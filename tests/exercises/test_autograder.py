"""The autograder zip as an instructor meets it: built after a plain (non-editable) `pip install .`,
its wheel installed by path (never minigrad from an index), its setup.sh making a virtual
environment (installing Python's venv and pip with apt-get where they are missing), and its
run_autograder grading a Gradescope folder with that environment's Python."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from plain_venv import make_venv

from minigrad.exercises import TASKS
from minigrad.exercises.instructor import check_names

ROOT = Path(__file__).resolve().parents[2]
CORRECT = Path(__file__).parent / "correct"
TWO = ["softmax_backward", "cross_entropy"]
NOT_SOURCES = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                     "runs", "out", ".hypothesis", ".pytest_cache", ".ruff_cache",
                                     ".ipynb_checkpoints", "*.zip")

pytestmark = pytest.mark.slow


def _run(cmd, **kwargs):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kwargs)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    return dict(env, PYTHONNOUSERSITE="1", **extra)


def _venv(path: Path) -> Path:
    """A venv without minigrad that finds its dependencies (tests/plain_venv.py)."""
    return make_venv(path)[1]


@pytest.fixture(scope="module")
def plain_zip(tmp_path_factory):
    """`minigrad exercise autograder` run by a minigrad installed with a plain `pip install .`."""
    tmp = tmp_path_factory.mktemp("plain")
    shutil.copytree(ROOT, tmp / "clone", ignore=NOT_SOURCES)
    python = _venv(tmp / "installed")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-build-isolation",
          "--no-index", "--quiet", "--disable-pip-version-check", tmp / "clone"])
    shutil.rmtree(tmp / "clone")  # the zip must come from the installed files alone
    work = tmp / "work"
    work.mkdir()
    ask = ("import minigrad.exercises.autograder as a, minigrad; print(a.source_tree(), minigrad.__file__)")
    tree, where = _run([python, "-c", ask], cwd=work, env=_env()).stdout.split()
    assert tree == "None" and where.startswith(str(tmp / "installed"))
    done = _run([python, "-m", "minigrad.cli", "exercise", "autograder", *TWO, "--out", "ag.zip"],
                cwd=work, env=_env())
    assert "wrote ag.zip" in done.stdout
    return work / "ag.zip"


def test_the_zip_builds_from_a_plain_install_and_carries_minigrads_own_wheel(plain_zip, tmp_path):
    with zipfile.ZipFile(plain_zip) as zf:
        (wheel,) = [n for n in zf.namelist() if n.endswith(".whl")]
        assert sorted(zf.namelist()) == sorted([wheel, "setup.sh", "run_autograder"])
        setup = zf.read("setup.sh").decode()
        zf.extractall(tmp_path / "source")
    assert wheel.startswith("minigrad-")
    assert f'pip install --disable-pip-version-check --no-cache-dir "./{wheel}"' in setup
    assert "minigrad==" not in setup and "pip3 install minigrad" not in setup
    with zipfile.ZipFile(tmp_path / "source" / wheel) as whl:
        names = whl.namelist()
        assert whl.testzip() is None and names[-1].endswith(".dist-info/RECORD")
        record = whl.read(names[-1]).decode().splitlines()
    assert "minigrad/exercises/instructor.py" in names and "minigrad/nn/__init__.py" in names
    assert not [n for n in names if n.endswith(".pyc") or "/INSTALLER" in n or "direct_url" in n]
    assert sorted(line.split(",")[0] for line in record) == sorted(names)
    # The wheel alone installs, offline, and its grader imports.
    python = _venv(tmp_path / "student")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
          "--quiet", "--disable-pip-version-check", tmp_path / "source" / wheel])
    where = _run([python, "-c", "import minigrad.exercises; print(minigrad.exercises.__file__)"],
                 cwd=tmp_path, env=_env()).stdout.strip()
    assert where.startswith(str(tmp_path / "student"))


def test_setup_makes_a_venv_and_run_autograder_grades_with_it(plain_zip, tmp_path):
    root = tmp_path / "autograder"  # Gradescope's layout, under AUTOGRADER_ROOT
    with zipfile.ZipFile(plain_zip) as zf:
        zf.extractall(root / "source")
    # A bare Ubuntu image: python3 fails `import ensurepip` until apt-get has run (both faked here).
    fake = tmp_path / "bin"
    fake.mkdir()
    done = tmp_path / "apt.done"
    (fake / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/apt.log\ntouch {done}\n')
    (fake / "python3").write_text(f'#!/bin/sh\n[ -e {done} ] || exit 1\nexec {sys.executable} "$@"\n')
    for f in fake.iterdir():
        f.chmod(0o755)
    # Offline: minigrad comes from its wheel; numpy and the rest from this interpreter's packages.
    env = _env(AUTOGRADER_ROOT=str(root), AUTOGRADER_VENV_OPTIONS="--system-site-packages", PIP_NO_INDEX="1",
               PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    _run(["bash", root / "source" / "setup.sh"], cwd=tmp_path, env=env)
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -q", "install -y -q python3 python3-pip python3-venv"]
    venv_python = root / "venv" / "bin" / "python"
    where = _run([venv_python, "-c", "import minigrad.exercises; print(minigrad.exercises.__file__)"],
                 cwd=tmp_path, env=_env()).stdout.strip()
    assert where.startswith(str(root / "venv"))

    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    shutil.copy(CORRECT / "softmax_backward.py", root / "submission")
    shutil.copy(CORRECT / "cross_entropy.py", root / "submission" / "ce.py")  # misnamed
    _run([root / "run_autograder"], cwd=root, env=_env(AUTOGRADER_ROOT=str(root)))
    result = json.loads((root / "results" / "results.json").read_text())
    n_soft, n_ce = (len(check_names(TASKS[t])) for t in TWO)
    assert result["score"] == n_soft and len(result["tests"]) == n_soft + n_ce
    assert result["test_output_format"] == "md"
    assert "**cross_entropy** scores 0: no file cross_entropy.py" in result["output"]
    assert "(found ce.py, named after no task)" in result["output"]
