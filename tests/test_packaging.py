"""setup.cfg lists packages by hand, so these checks keep the list from going stale: every folder
with an __init__.py ships, under the right name, with every data file the code might read."""

import configparser
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {"__pycache__"}


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    return cfg


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def _package_dir() -> dict[str, str]:
    pairs = (line.split("=") for line in _lines(_setup_cfg()["options"].get("package_dir", "")))
    return {name.strip(): folder.strip() for name, folder in pairs}


def _folder(package: str, package_dir: dict[str, str]) -> str:
    """Where setuptools looks for `package`: the longest mapped prefix, then one folder per part."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in package_dir:
            return os.path.join(ROOT, package_dir[prefix], *parts[cut:])
    return os.path.join(ROOT, *parts)


def _roots() -> dict[str, str]:
    """Top-level package name -> folder: minigrad/ and every folder mapped under it."""
    roots = {"minigrad": os.path.join(ROOT, "minigrad")}
    roots.update({name: os.path.join(ROOT, folder) for name, folder in _package_dir().items()})
    return roots


def _packages_on_disk() -> dict[str, str]:
    """Dotted name -> folder of every package folder under the roots (an __init__.py all the way down)."""
    found = {}
    for root_name, root in _roots().items():
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            if "__init__.py" not in files:
                dirs[:] = []  # a plain folder (e.g. data) holds no packages setuptools would find
                continue
            rel = os.path.relpath(folder, root)
            found[root_name if rel == "." else f"{root_name}.{rel.replace(os.sep, '.')}"] = folder
    return found


def test_top_level_package_folders_are_all_mapped():
    tops = {d for d in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, d, "__init__.py"))}
    mapped = {os.path.normpath(folder) for folder in _package_dir().values()} | {"minigrad"}
    assert tops == mapped, (f"folders with an __init__.py at the top of the repository: {sorted(tops)}; "
                            f"minigrad plus setup.cfg's package_dir map {sorted(mapped)}")


def test_every_package_folder_is_listed_with_its_folder():
    listed = _lines(_setup_cfg()["options"]["packages"])
    on_disk = _packages_on_disk()
    missing = sorted(set(on_disk) - set(listed))
    assert not missing, f"add to setup.cfg's packages (else the wheel lacks them): {missing}"
    stale = sorted(set(listed) - set(on_disk))
    assert not stale, f"setup.cfg lists packages that have no folder with an __init__.py: {stale}"
    package_dir = _package_dir()
    for name in listed:
        assert os.path.samefile(_folder(name, package_dir), on_disk[name]), name


def _data_files() -> dict[str, list[str]]:
    """Package -> its files that are not modules of a listed package: what package_data must cover."""
    packages = _packages_on_disk()
    owner = {os.path.normpath(folder): name for name, folder in packages.items()}
    data: dict[str, list[str]] = {}
    for name, folder in packages.items():
        for path, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS
                       and os.path.normpath(os.path.join(path, d)) not in owner]  # subpackages: their own
            for f in files:
                if f.startswith(".") or f.endswith((".pyc", ".pyo")):
                    continue  # .keep files, editor droppings
                if path == folder and f.endswith(".py"):
                    continue  # a module of the package itself
                data.setdefault(name, []).append(os.path.join(path, f))
    return data


def test_package_data_covers_every_data_file():
    cfg = _setup_cfg()
    patterns = {}
    if cfg.has_section("options.package_data"):
        patterns = {k: _lines(v) for k, v in cfg["options.package_data"].items()}
    package_dir = _package_dir()
    uncovered = []
    for package, files in _data_files().items():
        folder = _folder(package, package_dir)
        covered = {os.path.normpath(p) for pattern in patterns.get(package, []) + patterns.get("*", [])
                   for p in glob.glob(os.path.join(folder, pattern), recursive=True)}
        uncovered += [os.path.relpath(f, ROOT) for f in files if os.path.normpath(f) not in covered]
    assert not uncovered, f"not in setup.cfg's [options.package_data], so missing from the wheel: {uncovered}"


def test_exercise_stubs_are_package_data():
    # The exercises copy their stubs out of the installed package, so the pattern must stay even
    # while the folder is empty.
    patterns = _lines(_setup_cfg()["options.package_data"]["minigrad.exercises"])
    assert "stubs/*.py" in patterns


def test_code_reads_files_only_from_inside_its_packages():
    # Files next to the code ship as package data (checked above); a path climbing out of the
    # package (to the repository) works in a checkout and breaks in an installed wheel.
    climbing = re.compile(r"(__file__|resources\.files|files\()[^\n]*(\.\.|\.parent\.parent|parents\[)")
    offenders = []
    for folder in _packages_on_disk().values():
        for f in glob.glob(os.path.join(folder, "*.py")):
            with open(f, encoding="utf-8") as src:
                offenders += [f"{os.path.relpath(f, ROOT)}:{i}" for i, line in enumerate(src, 1)
                              if climbing.search(line)]
    assert not offenders, f"reads files outside the installed package: {offenders}"


def test_the_console_script_is_the_command_line_above_every_package():
    """`minigrad` (and `python -m minigrad`) run minigrad.cli, the one module that knows every
    subcommand; the models contribute theirs, so no package below it holds a `main`."""
    import importlib

    lines = _lines(_setup_cfg()["options.entry_points"]["console_scripts"])
    target = {name.strip(): value.strip() for name, value in (line.split("=") for line in lines)}["minigrad"]
    assert target == "minigrad.cli:main"
    module, _, name = target.partition(":")
    assert callable(getattr(importlib.import_module(module), name))
    with open(os.path.join(ROOT, "minigrad", "__main__.py")) as f:
        assert "from minigrad.cli import main" in f.read()
    assert not os.path.exists(os.path.join(ROOT, "models", "cli.py"))
