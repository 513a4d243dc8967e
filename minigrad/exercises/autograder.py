"""Gradescope's autograder zip: minigrad's own wheel, `setup.sh` and `run_autograder`.

    minigrad exercise autograder softmax_backward cross_entropy --out autograder.zip

The zip always carries minigrad's wheel, and setup.sh installs that file by its path into a
virtual environment (Ubuntu's Python refuses a system-wide `pip install`, PEP 668): minigrad never
comes from a package index, where the name belongs to another project; its dependencies (numpy,
graphviz, tqdm, threadpoolctl) do, as pip resolves them. The wheel is built from the checkout of
an editable install, or rebuilt from the files of an installed one (`pip install .`).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from .catalogue import get_task

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image. It installs minigrad's wheel,
# shipped in this zip (never a name from a package index: minigrad's dependencies, such as numpy,
# come from PyPI), into a virtual environment, since Ubuntu's Python refuses a system-wide install
# (PEP 668). AUTOGRADER_ROOT moves /autograder, AUTOGRADER_VENV the environment (default
# $AUTOGRADER_ROOT/venv); AUTOGRADER_PYTHON is the Python that makes it (default python3) and
# AUTOGRADER_VENV_OPTIONS adds options to `python3 -m venv`.
set -euo pipefail
cd "$(dirname "$0")"
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
VENV="${{AUTOGRADER_VENV:-$ROOT/venv}}"
PYTHON="${{AUTOGRADER_PYTHON:-python3}}"
if ! command -v "$PYTHON" >/dev/null || ! "$PYTHON" -c "import ensurepip, venv" 2>/dev/null; then
    # an image without Python, or with Ubuntu's Python before its venv and pip packages
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3 python3-pip python3-venv
fi
"$PYTHON" -m venv ${{AUTOGRADER_VENV_OPTIONS:-}} "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-cache-dir "./{wheel}"
"$VENV/bin/python" -c "import minigrad.exercises"  # a broken install fails here, not per submission
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grades {root}/submission/*.py into
# {root}/results/results.json, with the Python of the environment setup.sh made.
# AUTOGRADER_ROOT moves {root}, AUTOGRADER_VENV the environment; AUTOGRADER_PYTHON picks another Python.
# Each file runs in a child process within AUTOGRADER_TIMEOUT seconds and AUTOGRADER_MEMORY.
ROOT="${{AUTOGRADER_ROOT:-{root}}}"
VENV="${{AUTOGRADER_VENV:-$ROOT/venv}}"
PYTHON="${{AUTOGRADER_PYTHON:-$VENV/bin/python}}"
mkdir -p "$ROOT/results"
"$PYTHON" -m minigrad.cli exercise grade "$ROOT/submission" --tasks {tasks} \\
    --timeout "${{AUTOGRADER_TIMEOUT:-{timeout:g}}}" --memory "${{AUTOGRADER_MEMORY:-{memory}}}" \\
    --format gradescope --results "$ROOT/results/results.json"
"""



def run_autograder_script(tasks: list[str], root: str = "/autograder") -> str:
    """The run_autograder script for `tasks`, with the isolation's default limits."""
    from .isolation import DEFAULT_LIMITS

    return RUN_AUTOGRADER.format(root=root, tasks=" ".join(tasks), timeout=DEFAULT_LIMITS.timeout,
                                 memory=f"{DEFAULT_LIMITS.memory_mb}M")


NOT_SOURCES = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                     ".pytest_cache", ".hypothesis", "*.zip")
# Written by the installer, not part of the wheel (RECORD is written anew).
_INSTALLER_FILES = ("INSTALLER", "REQUESTED", "RECORD", "direct_url.json")
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest date: the same files give the same wheel


def source_tree() -> str | None:
    """The checkout minigrad runs from (an editable install), or None for an installed wheel."""
    import minigrad

    root = os.path.dirname(os.path.dirname(os.path.abspath(minigrad.__file__)))
    return root if os.path.isfile(os.path.join(root, "setup.cfg")) else None


def _wheel_from_source(root: str, out_dir: str) -> str:
    """`pip wheel` on a copy of the checkout (it stays clean), offline."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        shutil.copytree(root, src, ignore=NOT_SOURCES)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--no-index", "--quiet", "--disable-pip-version-check", "-w", out_dir, src],
                       check=True, capture_output=True)
    (wheel,) = [f for f in os.listdir(out_dir) if f.startswith("minigrad-") and f.endswith(".whl")]
    return os.path.join(out_dir, wheel)


def _digest(data: bytes) -> str:
    """RECORD's hash: sha256, urlsafe base64 without padding (the wheel format, PEP 376/427)."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.external_attr, info.compress_type = (0o100644 << 16), zipfile.ZIP_DEFLATED
    return info


def _wheel_from_installed(out_dir: str) -> str:
    """The wheel again, from the installed distribution's files (its RECORD): the package and
    the dist-info (METADATA, WHEEL, entry points), with a new RECORD. A file changed since the
    install (its hash no longer the RECORD's) is refused."""
    from importlib import metadata

    import minigrad

    dist = metadata.distribution("minigrad")
    here = os.path.abspath(minigrad.__file__)
    if os.path.abspath(str(dist.locate_file("minigrad/__init__.py"))) != here:
        raise ValueError(f"the minigrad imported ({here}) is not the installed distribution "
                         f"({dist.locate_file('')}): reinstall it with `pip install .`")
    info = next(f.parts[0] for f in dist.files or [] if f.parts[0].endswith(".dist-info"))
    package, dist_info = [], []
    for f in dist.files or []:
        parts = f.parts
        if parts[0] == "minigrad" and "__pycache__" not in parts and not f.name.endswith(".pyc"):
            package.append(f)
        elif parts[0] == info and f.name not in _INSTALLER_FILES:
            dist_info.append(f)
    wheel_meta = (dist.read_text("WHEEL") or "").splitlines()
    tag = next((line.split(":", 1)[1].strip() for line in wheel_meta if line.startswith("Tag:")), "")
    if not package or not tag:
        raise ValueError(f"the installed minigrad at {dist.locate_file('')} lists no package files "
                         "or no wheel tag in its dist-info: reinstall it with `pip install .`")
    path = os.path.join(out_dir, f"minigrad-{dist.version}-{tag}.whl")
    record = io.StringIO()
    rows = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(package, key=str) + sorted(dist_info, key=str):  # dist-info last
            name = "/".join(f.parts)
            with open(dist.locate_file(f), "rb") as src:
                data = src.read()
            if f.hash is not None and _digest(data) != f"{f.hash.mode}={f.hash.value}":
                raise ValueError(f"{dist.locate_file(f)} changed since minigrad was installed: "
                                 "reinstall it (`pip install --force-reinstall .`)")
            zf.writestr(_entry(name), data)
            rows.writerow([name, _digest(data), len(data)])
        rows.writerow([f"{info}/RECORD", "", ""])
        zf.writestr(_entry(f"{info}/RECORD"), record.getvalue())
    return path


def build_wheel(out_dir: str) -> str:
    """minigrad's wheel, offline: built from the checkout of an editable install, or rebuilt from
    the installed files otherwise."""
    root = source_tree()
    return _wheel_from_source(root, out_dir) if root else _wheel_from_installed(out_dir)


def autograder_zip(tasks: list[str], out: str) -> list[str]:
    """Write Gradescope's autograder zip; returns the names in it."""
    names = [get_task(t).name for t in tasks]
    if not names:
        raise ValueError("autograder: name at least one task")
    files: dict[str, tuple[bytes, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = build_wheel(tmp)
        wheel = os.path.basename(path)
        with open(path, "rb") as f:
            files[wheel] = (f.read(), 0o644)
    files["setup.sh"] = (SETUP.format(wheel=wheel).encode(), 0o755)
    run = run_autograder_script(names)
    files["run_autograder"] = (run.encode(), 0o755)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16  # a regular file, executable for the scripts
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return list(files)
