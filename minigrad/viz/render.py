"""`save_graph`: write a drawing to a file chosen by its extension, with or without Graphviz.

Rendering needs Graphviz's `dot` program. Without it the DOT source is written instead and a
single warning says how to install Graphviz, so a script or a lesson keeps going.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

INSTALL_HINT = (
    "Install Graphviz (apt-get install graphviz / brew install graphviz / conda install graphviz) "
    "to render SVG or PNG."
)


class GraphvizNotFoundWarning(UserWarning):
    """Graphviz's `dot` program is missing, so DOT source was written instead of an image."""


def save_graph(dot: Any, path: str | os.PathLike) -> str:
    """Write a drawing to `path`, in the format its extension names.

    `.dot` and `.gv` get the DOT source; `.svg`, `.png`, `.pdf` (and any other format
    Graphviz knows) are rendered by the `dot` program. When `dot` is not installed this does
    not raise: it writes the source next to the requested file (`graph.svg` -> `graph.dot`),
    warns once with `GraphvizNotFoundWarning` saying how to install Graphviz, and returns the
    path of the `.dot` file, so the caller can tell what was written.

    Args:
        dot: a graphviz graph, e.g. from `draw_graph`.
        path: the file to write.

    Returns:
        The path actually written.

    Raises:
        ValueError: the extension names no format Graphviz can write.
    """
    import graphviz  # the caller already holds a graphviz graph, so this costs nothing

    path = os.fspath(path)
    stem, ext = os.path.splitext(path)
    fmt = ext[1:].lower()
    if fmt in ("dot", "gv"):
        _write(path, dot.source.encode("utf-8"))
        return path
    if fmt not in graphviz.FORMATS:
        raise ValueError(
            f"save_graph: cannot tell the format from {path!r}; end the name in .svg, .png, "
            ".pdf, .dot or .gv"
        )
    try:
        data = dot.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        source = stem + ".dot"
        _write(source, dot.source.encode("utf-8"))
        warnings.warn(
            f"Graphviz's `dot` program was not found; wrote DOT source to {source}. {INSTALL_HINT}",
            GraphvizNotFoundWarning,
            stacklevel=2,
        )
        return source
    _write(path, data)
    return path


def _write(path: str, data: bytes) -> None:
    # Write then rename, so a crash never leaves half an image where a good one was.
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
