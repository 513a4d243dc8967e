"""The layer rule of CONTRIBUTING.md, read off every module's imports: core (`minigrad`) <- `nn`
<- `models` <- `exercises`, `export` <- the command line. No module imports a package above its
own, and none imports a private (`_name`) from another package."""

from __future__ import annotations

from pathlib import Path

import pytest
from import_reading import imports_of

ROOT = Path(__file__).resolve().parents[1]

# Each source folder, the package it installs as, and its layer (higher may import lower).
PACKAGES = {
    "minigrad": ("minigrad", 0),
    "nn": ("minigrad.nn", 1),
    "models": ("minigrad.models", 2),
    "minigrad/exercises": ("minigrad.exercises", 3),
    "minigrad/export": ("minigrad.export", 3),
    "minigrad/run": ("minigrad.run", 3),
}
CLI = ("minigrad.cli", 4)  # the command line: above every package it dispatches to
CLI_MODULES = ("minigrad.cli", "minigrad.__main__")  # `python -m minigrad` is the command line too


def _package_of(module: str) -> tuple[str, int]:
    """The package (and its layer) that a dotted module name belongs to."""
    if any(module == name or module.startswith(name + ".") for name in CLI_MODULES):
        return CLI
    best = ("minigrad", 0)
    for name, layer in PACKAGES.values():
        if (module == name or module.startswith(name + ".")) and len(name) > len(best[0]):
            best = (name, layer)
    return best


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] != "minigrad":
        parts = list(PACKAGES[parts[0]][0].split(".")) + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> list[Path]:
    files = {p for folder in PACKAGES for p in (ROOT / folder).rglob("*.py") if "stubs" not in p.parts}
    return sorted(files)


def _imports(path: Path, module: str) -> list[tuple[int, str, list[str]]]:
    return imports_of(path, module)


def _violations(path: Path, module: str, shown: str) -> list[str]:
    """What breaks the rule in one file, which installs as `module`."""
    out = []
    here, layer = _package_of(module)
    for line, target, names in _imports(path, module):
        if not (target == "minigrad" or target.startswith("minigrad.")):
            continue
        there, their_layer = _package_of(target)
        where = f"{shown}:{line}"
        if their_layer > layer:
            out.append(f"{where}: {here} imports {target}, a layer above it")
        if there != here:
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            private += [p for p in target.split(".") if p.startswith("_")]
            if private:
                out.append(f"{where}: {here} imports private {private} from {target}")
    return out


def test_imports_flow_one_way_and_stay_public():
    violations = [v for path in _sources()
                  for v in _violations(path, _module_name(path), str(path.relative_to(ROOT)))]
    assert not violations, "layer rule broken (see CONTRIBUTING.md):\n" + "\n".join(violations)


@pytest.mark.parametrize("module, package", [
    ("minigrad.nn.functional", "minigrad.nn"), ("minigrad.models.recipes.lm", "minigrad.models"),
    ("minigrad.viz.graph", "minigrad"), ("minigrad.cli", "minigrad.cli"),
    ("minigrad.__main__", "minigrad.cli"),
])
def test_modules_are_placed_in_their_package(module, package):
    assert _package_of(module)[0] == package


def test_the_checker_sees_an_upward_and_a_private_import(tmp_path):
    """The rule itself: a planted upward import and a private cross-package import are found,
    and a relative import inside the package is not."""
    probe = tmp_path / "probe.py"
    probe.write_text("from minigrad.models import GPT\nfrom minigrad.viz._names import x\n"
                     "from ._kernels import erf\nfrom minigrad import Tensor\n")
    found = _violations(probe, "minigrad.nn.probe", "probe.py")
    assert len(found) == 2
    assert "probe.py:1" in found[0] and "a layer above" in found[0]
    assert "probe.py:2" in found[1] and "private" in found[1]


# Modules that are a face on purpose (besides every package's __init__.py): they gather names
# defined elsewhere under the name PyTorch gives the namespace.
FACES = {
    "minigrad.nn.functional": "torch.nn.functional: every topic's function forms",
    "minigrad.autograd": "torch.autograd: no_grad, enable_grad and set_grad_enabled (grad_mode.py)",
    "minigrad.optim.lr_scheduler": "torch.optim.lr_scheduler: LRScheduler and OneCycleLR beside the rest",
}


def _file_of(module: str) -> Path | None:
    """The source file of a module of the project, or None."""
    parts = module.split(".")
    for folder, (package, _) in sorted(PACKAGES.items(), key=lambda kv: -len(kv[1][0])):
        if module == package or module.startswith(package + "."):
            rest = parts[len(package.split(".")):]
            base = ROOT.joinpath(folder, *rest)
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.exists():
                    return candidate
    return None


def _imported_names(path: Path) -> set[str]:
    """The names a module binds by importing them (not by defining them)."""
    import ast

    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _second_homes(path: Path, module: str, shown: str) -> list[str]:
    out = []
    for line, target, names in _imports(path, module):
        source = _file_of(target)
        if source is None or source.name == "__init__.py" or target in FACES:
            continue
        again = sorted(n for n in set(names) & _imported_names(source) if _file_of(f"{target}.{n}") is None)
        if again:
            out.append(f"{shown}:{line}: {again} imported from {target}, which only imports them")
    return out


def test_a_name_is_imported_from_where_it_is_defined_or_from_a_face():
    """One home per name: `from X import name` where X defines name, or where X is a package's
    face (its __init__.py) or one of FACES; never through a module that imported it too."""
    found = [v for path in _sources()
             for v in _second_homes(path, _module_name(path), str(path.relative_to(ROOT)))]
    assert not found, "a second import path (import the name from its module):\n" + "\n".join(found)
