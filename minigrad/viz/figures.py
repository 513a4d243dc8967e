"""`show`: one call that puts a tutorial's matplotlib figure where it belongs. In a notebook it
is drawn inline; in a script it is rendered off-screen and then either thrown away or, when the
environment variable MINIGRAD_FIGURES names a folder, saved there as a PNG.

    import matplotlib.pyplot as plt
    from minigrad.viz import show
    fig, ax = plt.subplots()
    ax.plot(losses)
    show(fig, "loss")     # notebook: inline; MINIGRAD_FIGURES=figs python 04_gpt.py: figs/04_gpt-loss.png

`use_script_backend()` (call it before pyplot is imported) makes a script draw off-screen, so
running a tutorial never opens a window.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIGURES_ENV = "MINIGRAD_FIGURES"
_counter = {"n": 0}  # figures shown so far by this process: numbers the unnamed ones


def have_matplotlib() -> bool:
    """Whether matplotlib is installed (without importing it)."""
    return importlib.util.find_spec("matplotlib") is not None


def in_notebook() -> bool:
    """True inside a Jupyter (IPython) kernel."""
    return "ipykernel" in sys.modules


def use_script_backend() -> bool:
    """Outside a notebook, select matplotlib's off-screen Agg backend (call it before importing
    pyplot). Returns whether matplotlib is installed, so a tutorial can skip its drawings."""
    if not have_matplotlib():
        return False
    if not in_notebook():
        import matplotlib

        matplotlib.use("Agg")  # a script never opens a window
    return True


def _script_name() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv and sys.argv[0] else "figure")
    return os.path.splitext(os.path.basename(path))[0] or "figure"


def show(fig: Figure | Any = None, name: str | None = None) -> str | None:
    """Show a figure inline in a notebook; in a script render it, and save it as a PNG when
    MINIGRAD_FIGURES names a folder (created if missing). The figure is closed afterwards.

    Args:
        fig: a matplotlib Figure (default: pyplot's current figure).
        name: part of the file name, `<script>-<name>.png`; default the figure's number in the
            script (`<script>-01.png`, ...). Characters other than letters, digits, `-` and `_`
            become `_`.

    Returns:
        The path of the saved PNG, or None when nothing was saved.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("drawing needs matplotlib: pip install 'minigrad[plot]'") from None
    import matplotlib.pyplot as plt

    fig = plt.gcf() if fig is None else fig
    _counter["n"] += 1
    saved = None
    if in_notebook():
        from IPython.display import Image, display

        # PNG bytes of our own: inline whether or not the kernel's matplotlib backend has set up
        # its figure formatters yet; closing below keeps pyplot from drawing it a second time.
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=100, bbox_inches="tight")
        display(Image(data=png.getvalue(), format="png"))
    else:
        folder = os.environ.get(FIGURES_ENV)
        if folder:
            os.makedirs(folder, exist_ok=True)
            stem = re.sub(r"[^A-Za-z0-9_-]", "_", name) if name else f"{_counter['n']:02d}"
            saved = os.path.join(folder, f"{_script_name()}-{stem}.png")
            fig.savefig(saved, dpi=100)
        else:
            fig.savefig(io.BytesIO(), format="png", dpi=50)  # render anyway: a drawing error shows up here
    plt.close(fig)
    return saved
