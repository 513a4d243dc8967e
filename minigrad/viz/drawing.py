"""`Drawing`: the graphviz Digraph that `draw_graph` returns, with `save()` and a Jupyter
display that still works (as DOT text) when Graphviz's `dot` program is missing."""

from __future__ import annotations

import os
from typing import Any

import graphviz

from .render import INSTALL_HINT, save_graph


class Drawing(graphviz.Digraph):
    """A `graphviz.Digraph` (all its methods work) that can save itself by file extension."""

    def save(self, path: str | os.PathLike) -> str:
        """Write to `path` (.svg, .png, .pdf, .dot, .gv); see `save_graph`. Returns the path
        written (the .dot file when Graphviz's `dot` program is missing)."""
        return save_graph(self, path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict:
        # Jupyter calls this to show the graph inline; without `dot` show the source instead of
        # a traceback.
        try:
            return super()._repr_mimebundle_(include, exclude, **kwargs)
        except graphviz.ExecutableNotFound:
            return {"text/plain": f"Graphviz's `dot` program was not found. {INSTALL_HINT}\n"
                    + self.source}
