"""A virtual environment without minigrad whose run-time dependencies (numpy, ...) come from
this interpreter through a .pth file, for the tests that install minigrad as a user would.

Not --system-site-packages: that would also run the editable install's finder, which quietly
fills in any subpackage missing from a wheel. The .pth lists the folders the dependencies are
imported from here (inside a --system-site-packages venv they are outside its own site-packages).
"""

from __future__ import annotations

import importlib.util
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path


def dependency_dirs() -> set[str]:
    """This interpreter's site-packages and the folders numpy and the other run-time
    dependencies are imported from."""
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for name in ("numpy", "graphviz", "tqdm", "threadpoolctl"):
        spec = importlib.util.find_spec(name)
        path = os.path.dirname(spec.origin)
        dirs.add(os.path.dirname(path) if spec.submodule_search_locations else path)
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        dirs.add(site.getusersitepackages())
    return dirs


def make_venv(path: Path) -> tuple[Path, Path, str]:
    """(its bin folder, its python, its site-packages) of a new venv at path, without pip, that
    finds the dependencies but not minigrad."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   capture_output=True)
    bindir = Path(path) / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    ask = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    venv_site = subprocess.run([str(python), "-c", ask], check=True, capture_output=True,
                               text=True).stdout.strip()
    Path(venv_site, "_minigrad_test_dependencies.pth").write_text("\n".join(sorted(dependency_dirs())) + "\n")
    return bindir, python, venv_site
