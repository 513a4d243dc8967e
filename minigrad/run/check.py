"""`minigrad run --check script.py`: the torch names a script uses that minigrad lacks, read off
its text without running it.

What is read: `import torch...` and `from torch... import ...` (with their `as` names), and every
dotted name that starts at one of those names (`torch.zeros`, `F.gelu`, `nn.Linear`, and
`torch.nn.functional.gelu` written out). Each is looked up as `minigrad run` would bind it
(binding.TORCH_MODULES), segment by segment; the first segment that is missing is the one
reported. A method of a tensor (`x.masked_fill_`) cannot be known from the text, so it is not
checked: running the script finds those, with their line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .binding import TORCH_MODULES, minigrad_module


@dataclass(frozen=True)
class Use:
    """A torch name the script uses at `line` (and whether minigrad has it)."""

    name: str
    line: int
    found: bool


def _resolve(dotted: str) -> str | None:
    """The first prefix of the torch name `dotted` that minigrad lacks, or None if it has all."""
    parts = dotted.split(".")
    if parts[0] != "torch":
        return None
    current: Any = minigrad_module("torch")
    name = "torch"
    for part in parts[1:]:
        name = f"{name}.{part}"
        if name in TORCH_MODULES:
            current = minigrad_module(name)
        elif hasattr(current, part):
            current = getattr(current, part)
        else:
            return name
    return None


class _Reader(ast.NodeVisitor):
    """Collects (torch name, line) of every import and dotted use rooted at a torch name."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # local name -> torch name it stands for
        self.uses: list[tuple[str, int]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "torch" or alias.name.startswith("torch."):
                self.uses.append((alias.name, node.lineno))
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:
                    self.names["torch"] = "torch"  # `import torch.nn` binds torch

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not (module == "torch" or module.startswith("torch.")):
            return
        for alias in node.names:
            if alias.name == "*":
                self.uses.append((module, node.lineno))
                continue
            full = f"{module}.{alias.name}"
            self.uses.append((full, node.lineno))
            self.names[alias.asname or alias.name] = full

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain, inner = [], node
        while isinstance(inner, ast.Attribute):
            chain.append(inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and inner.id in self.names:
            self.uses.append((".".join([self.names[inner.id], *reversed(chain)]), node.lineno))
            return  # the inner attributes are prefixes of this one
        self.generic_visit(node)


def check_source(source: str, filename: str = "<script>") -> list[Use]:
    """Every torch name the source uses, once per name (at its first line), in order of lines;
    `found` False for those minigrad lacks (the missing prefix: `torch.foo`, not `torch.foo.bar`)."""
    reader = _Reader()
    reader.visit(ast.parse(source, filename))
    seen: dict[str, Use] = {}
    for name, line in sorted(reader.uses, key=lambda u: u[1]):
        missing = _resolve(name)
        key = missing or name
        if key not in seen:
            seen[key] = Use(key, line, missing is None)
    return list(seen.values())


def check_file(path: str) -> list[Use]:
    with open(path, encoding="utf-8") as f:
        return check_source(f.read(), path)
