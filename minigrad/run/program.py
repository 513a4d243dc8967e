"""Running one PyTorch program on minigrad: its file as `__main__`, with its own arguments in
sys.argv and its folder first on the import path (as `python script.py` does), `torch` bound to
minigrad (binding.py) for the run only; and, when asked, the explorer page (graph, values,
backward stepper) of the first backward pass the program takes."""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any, Sequence

from minigrad.nn import Module
from minigrad.tensor import Tensor

from .binding import bound_to_minigrad


def _model_in_frames(frame: Any) -> Module | None:
    """The Module with the most parameters among the locals of the frames up from `frame` (the
    program's model, which names the explorer's boxes and parameters), or None."""
    best, best_count = None, 0
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, Module):
                count = sum(1 for _ in value.parameters())
                if count > best_count:
                    best, best_count = value, count
        frame = frame.f_back
    return best


class _ExploreFirstBackward:
    """Stands for Tensor.backward until its first call, which it takes through viz.explore
    (the same backward, traced) and saves as the page at `path`; then puts backward back."""

    def __init__(self, path: str) -> None:
        self.path, self.original, self.saved = path, Tensor.backward, None

    def __enter__(self) -> _ExploreFirstBackward:
        watcher = self

        def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
            Tensor.backward = watcher.original
            from minigrad.viz import explore

            model = _model_in_frames(sys._getframe(1))
            page = explore(tensor, model, gradient=gradient, retain_graph=retain_graph)
            watcher.saved = page.save(watcher.path)

        backward.__doc__ = self.original.__doc__
        Tensor.backward = backward
        return self

    def __exit__(self, *exc: Any) -> None:
        Tensor.backward = self.original


def run_program(path: str, args: Sequence[str] = (), *, explore: str | None = None) -> str | None:
    """Run the PyTorch program at `path` with `args` as its sys.argv[1:], `torch` being minigrad.

    With `explore`, the first `backward()` the program calls writes the explorer page there;
    returns the page's path (None when the program called no backward, or without explore).
    The program's exceptions are its own and pass through (SystemExit included); a torch name
    minigrad lacks raises MissingName or MissingModule, naming it with its file and line.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"run: no such program file: {path}")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    watcher = _ExploreFirstBackward(explore) if explore else None
    try:
        with bound_to_minigrad():
            if watcher is None:
                runpy.run_path(path, run_name="__main__")
            else:
                with watcher:
                    runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return watcher.saved if watcher else None
