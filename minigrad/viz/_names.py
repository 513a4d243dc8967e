"""Dotted names for modules and parameters, and short text for shapes, norms and values.

The core never imports nn, so names are found by duck typing: any object with
`named_modules()` / `named_parameters()` (an nn.Module) is walked.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np


class Names:
    """Finds the dotted path of a module and the name of a parameter.

    Names come from, in order: the `params` dict, the `model`, and then the outermost module of
    every scope seen (`see(scope)`), whose paths are relative to that module. A module called
    from plain code (no model given) is thus still named by its path inside the module that
    called it.

    Args:
        model: the model whose `named_modules()` / `named_parameters()` give the names.
        params: parameter name -> tensor, e.g. `dict(model.named_parameters())`.
    """

    def __init__(self, model: Any = None, params: Mapping[str, Any] | None = None):
        self._module_path: dict[int, str] = {}
        self._by_path: dict[str, Any] = {}
        self._param_name: dict[int, str] = {}
        self._walked: set[int] = set()
        self._seen_scopes: set[int] = set()
        # ids are only unique while their objects live, so hold on to everything named.
        self._keep: list[Any] = []
        for name, t in (params or {}).items():
            self._param_name[id(t)] = name
            self._keep.append(t)
        if model is not None:
            self._walk(model)

    def _walk(self, root: Any) -> None:
        if id(root) in self._walked:
            return
        self._walked.add(id(root))
        self._keep.append(root)
        named_modules = getattr(root, "named_modules", None)
        if named_modules is not None:
            for path, m in named_modules():
                self._module_path.setdefault(id(m), path)
                self._by_path.setdefault(path, m)
        named_parameters = getattr(root, "named_parameters", None)
        if named_parameters is not None:
            for name, p in named_parameters():
                self._param_name.setdefault(id(p), name)

    def see(self, scope: tuple) -> None:
        """Learn the names under the outermost module of `scope` (cheap when seen before)."""
        if scope and id(scope) not in self._seen_scopes:
            self._seen_scopes.add(id(scope))
            self._keep.append(scope)
            self._walk(scope[0])

    def path(self, module: Any) -> str | None:
        """Dotted path of `module` ("" for a root), or None when unknown."""
        return self._module_path.get(id(module))

    def module(self, path: str) -> Any:
        """The module at a dotted path; raises ValueError listing a few known paths."""
        if path in self._by_path:
            return self._by_path[path]
        known = [p for p in self._by_path if p][:12]
        raise ValueError(
            f"draw_graph: no module at path {path!r}; known paths: {', '.join(known) or 'none'}"
            " (pass model= to name modules)"
        )

    def describe(self, module: Any) -> str:
        """`blocks.0.attn (MultiheadAttention)`; the class name alone for a root or unknown."""
        path = self.path(module)
        cls = type(module).__name__
        return f"{path} ({cls})" if path else cls

    def describe_scope(self, scope: tuple) -> str:
        """The innermost module of a node's scope, by path, else the chain of class names."""
        if not scope:
            return ""
        self.see(scope)
        if self.path(scope[-1]) is not None:
            return self.describe(scope[-1])
        return " > ".join(type(m).__name__ for m in scope)

    def param(self, t: Any) -> str | None:
        """Name of a parameter (or of a tensor the user named with `.name`), else None."""
        return self._param_name.get(id(t)) or getattr(t, "name", None)

    def owns(self, module: Any, t: Any) -> bool:
        """Whether parameter `t` belongs to `module` or one of its descendants (by path)."""
        path, name = self.path(module), self._param_name.get(id(t))
        if path is None or name is None:
            return False
        return path == "" or name.startswith(path + ".")


def describe_scope(scope: tuple, model: Any = None) -> str:
    """Where a node ran, for messages: `blocks.0.fc (Linear)`, the innermost module of `scope`
    (a `current_scope()` or a node's `.scope`) by its path inside `model`, or without one inside
    the outermost module; "" outside any module."""
    return Names(model).describe_scope(scope)


# ----------------------------------------------------------------------------- short text


_DTYPE_NAMES: dict[Any, str] = {}


def shape_text(shape: tuple[int, ...], dtype: Any) -> str:
    """`(3, 4) float32`; a 0-d shape reads `scalar float32`."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:  # dtype.name is slow enough to matter on thousands of tensors
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return f"{'scalar' if shape == () else dims(shape)} {name}"


def dims(shape: tuple[int, ...]) -> str:
    """A shape as Python writes a tuple: `(3, 4)`, `(50,)`, `()`."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def norm(a: np.ndarray) -> float:
    """Euclidean norm over all elements, in float64 so float32 sums do not overflow early."""
    return float(np.sqrt(np.sum(np.square(a, dtype=np.float64))))


def values_text(a: np.ndarray) -> str:
    """Values on one line, 4 significant digits, long arrays summarized with `...`."""
    a = np.asarray(a)
    if a.ndim == 0 and a.dtype.kind in "fiub":  # most constants; array2string is slow
        return f"{a.item() + 0.0:.4g}" if a.dtype.kind == "f" else str(a.item())
    # `+ 0.0` prints -0.0 as 0; %g drops the padding numpy adds to line numbers up.
    text = np.array2string(
        a, separator=", ", threshold=8, edgeitems=2, max_line_width=10**6,
        formatter={"float_kind": lambda v: f"{v + 0.0:.4g}"},
    )
    return " ".join(text.split())


def values_grid(a: np.ndarray, rows: int = 6, cols: int = 6) -> list[str]:
    """Values as lines of a grid: one line per row of the last two axes, so a (4, 4) tensor
    reads as four rows instead of one long line. Larger arrays show their first and last
    rows and columns around `...`; a 0-d or 1-d array is one line."""
    a = np.asarray(a)
    if a.ndim <= 1:
        return [values_text(a)]
    lead = a.reshape(-1, a.shape[-2], a.shape[-1])  # (matrices, rows, cols)
    lines: list[str] = []
    for i in _cut(lead.shape[0], 2):
        if i is None:
            lines.append("...")
            continue
        if lead.shape[0] > 1:
            lines.append(f"[{', '.join(map(str, np.unravel_index(i, a.shape[:-2])))}, :, :]")
        for r in _cut(lead.shape[1], rows):
            if r is None:
                lines.append("...")
                continue
            row = lead[i, r]
            cells = ["..." if c is None else f"{row[c] + 0.0:.4g}" if a.dtype.kind == "f" else str(row[c])
                     for c in _cut(len(row), cols)]
            lines.append("[" + ", ".join(cells) + "]")
    return lines


def _cut(n: int, keep: int) -> list[int | None]:
    """Indices 0..n-1, or the first and last keep/2 of them around a None (for `...`)."""
    if n <= keep:
        return list(range(n))
    half = max(keep // 2, 1)
    return list(range(half)) + [None] + list(range(n - half, n))
