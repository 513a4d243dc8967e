"""The layout of the attention package (nn/attention/), read off its modules' imports with `ast`:
the kernels never import the layers or the functional forms, a private name of the package is
imported only from the module that defines it (no module re-exports another's), and outside the
package only the shared helpers' (helpers.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_reading import imports_of

import minigrad.nn.attention as attention

PACKAGE = "minigrad.nn.attention"
HERE = Path(attention.__file__).parent
ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "__init__")

KERNELS = {"one_block", "tiled", "packed"}
# What a kernel may import from the package: the other kernels, and what sits below them all.
BELOW_KERNELS = {"dispatch", "masks", "helpers", "cache", "tiles"}
ABOVE_KERNELS = {"layers", "functional", "maps", "drawing"}
# Where the library's own code lives (tests, tutorials and benchmarks may reach a private name to
# test or show it; the library does not): minigrad/ holds exercises/ and export/ too.
LIBRARY = {"nn": "minigrad.nn", "models": "minigrad.models", "minigrad": "minigrad"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = LIBRARY[rel.parts[0]].split(".") + list(rel.parts[1:])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> list[tuple[int, str, list[str]]]:
    """imports_of, with `from package import submodule` read as importing the submodule (its
    name then not counted as an imported name)."""
    found = []
    for line, target, names in imports_of(path, module):
        if target == PACKAGE:
            subs = [n for n in names if n in MODULES]
            found += [(line, f"{PACKAGE}.{n}", []) for n in subs]
            names = [n for n in names if n not in subs]
        found.append((line, target, names))
    return found


def _in_package(target: str) -> str | None:
    """The package module `target` names (`tiled`), `""` for the package itself, None outside it."""
    if target == PACKAGE:
        return ""
    if target.startswith(PACKAGE + "."):
        return target[len(PACKAGE) + 1:].split(".")[0]
    return None


def _package_imports(name: str) -> set[str]:
    path = HERE / f"{name}.py"
    return {m for _, t, _ in _imports(path, f"{PACKAGE}.{name}")
            if (m := _in_package(t)) is not None}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_kernel_imports_only_the_kernels_and_what_is_below_them(name):
    imported = _package_imports(name)
    assert not imported & ABOVE_KERNELS, f"{name}.py imports {sorted(imported & ABOVE_KERNELS)}"
    assert "" not in imported, f"{name}.py imports the package's face"
    assert imported <= KERNELS | BELOW_KERNELS


@pytest.mark.parametrize("name", sorted(BELOW_KERNELS))
def test_what_the_kernels_import_imports_no_layer_and_no_functional_form(name):
    imported = _package_imports(name)
    assert not imported & ({"layers", "functional", "drawing", ""}), f"{name}.py imports {sorted(imported)}"


def test_every_module_of_the_package_is_placed():
    assert set(MODULES) == KERNELS | BELOW_KERNELS | ABOVE_KERNELS


def _library_files() -> list[Path]:
    return [p for folder in LIBRARY for p in sorted((ROOT / folder).rglob("*.py")) if "stubs" not in p.parts]


def _defined_in(module: str) -> set[str]:
    """The names a package module's own top-level statements define (not those it imports)."""
    tree = ast.parse((HERE / f"{module}.py").read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _private_crossings(path: Path, module: str, shown: str) -> list[str]:
    """Private names of a package module that `path` (shown as `shown`) imports from a module
    that does not define them, or from outside the package from another module than helpers, or
    reads as `module_alias._name`."""
    found, aliases = [], {}
    tree = ast.parse(path.read_text(), str(path))
    here = _in_package(module)
    for line, target, names in _imports(path, module):
        there = _in_package(target)
        if there is None or there == here or not there:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        if here is None and there != "helpers":
            found += [f"{shown}:{line}: {n} from {target}, outside the package" for n in private]
        else:
            found += [f"{shown}:{line}: {n} from {target}, which does not define it"
                      for n in private if n not in _defined_in(there)]
    for node in ast.walk(tree):  # import minigrad.nn.attention.tiled as tiled; tiled._x
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                full = alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
                if _in_package(full) not in (None, "", "helpers") and alias.asname:
                    aliases[alias.asname] = full
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            found.append(f"{shown}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_private_names_come_from_where_they_are_defined():
    crossings = [c for p in _library_files()
                 for c in _private_crossings(p, _module_name(p), str(p.relative_to(ROOT)))]
    assert crossings == []


def test_the_checks_see_a_planted_crossing_and_an_upward_kernel_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from .helpers import _Tiles\nfrom .helpers import _causal\nfrom .tiles import _Tiles\n"
                     "from minigrad.nn.attention import tiled as t\nx = t._flat\n"
                     "from . import layers\n")
    name = f"{PACKAGE}.probe"
    crossings = _private_crossings(probe, name, "probe.py")
    assert len(crossings) == 2 and "_Tiles from" in crossings[0] and "_flat" in crossings[1]
    outside = tmp_path / "outside.py"
    outside.write_text("from minigrad.nn.attention.tiles import _Tiles\nfrom .attention.helpers import _T\n")
    crossings = _private_crossings(outside, "minigrad.nn.outside", "outside.py")
    assert len(crossings) == 1 and "outside the package" in crossings[0]
    assert {m for _, t, _ in _imports(probe, name) if (m := _in_package(t))} >= {"layers", "tiles"}


def test_the_face_offers_what_the_old_module_did():
    for name in ("MultiheadAttention", "AdditiveAttention", "BilinearAttention", "causal_mask",
                 "padding_mask", "masked_softmax", "KVCache", "attention_reference", "combine_masks",
                 "from_torch_masks", "check_float_mask", "mask_dtype_error"):
        assert name in attention.__all__ and getattr(attention, name).__module__.startswith(PACKAGE + ".")
