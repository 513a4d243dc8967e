"""Reading a module's imports from its text (for the layout tests: test_import_layers.py and
tests/nn/test_attention_package.py)."""

from __future__ import annotations

import ast
from pathlib import Path


def imports_of(path: Path, module: str) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every import in the file, nested ones too;
    `module` is the dotted name the file installs as (relative imports resolve against it)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found
