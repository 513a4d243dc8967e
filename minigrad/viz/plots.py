"""Pictures made with matplotlib: attention heatmaps (`plot_attention`) and training curves
(`plot_training`).

matplotlib is an optional extra (`pip install 'minigrad[plot]'`), imported only when something
is plotted. A figure that is saved (`path=...`) is drawn off-screen with the Agg canvas, so
plotting works without a display (a server, CI, the `minigrad` command); without `path` it is a
pyplot figure, shown by a notebook or `plt.show()`.
"""

from __future__ import annotations

import csv
import math
import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..tensor import Tensor

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INSTALL_HINT = "plotting needs matplotlib: pip install 'minigrad[plot]'"

# Characters that would print as nothing (or break the line) in a tick label.
_VISIBLE = {" ": "\u2423", "\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d"}


def _figure(figsize: tuple[float, float], off_screen: bool) -> Figure:
    """A new figure: off-screen (Agg when saved, no GUI, not tracked by pyplot) or pyplot's."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    if off_screen:
        from matplotlib.figure import Figure

        return Figure(figsize=figsize, layout="constrained")
    import matplotlib.pyplot as plt

    return plt.figure(figsize=figsize, layout="constrained")


def _save(fig: Figure, path: str | os.PathLike | None, dpi: int = 120) -> None:
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)


# ----------------------------------------------------------------------------- attention


def plot_attention(
    weights: Any,
    x_tokens: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    y_tokens: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    heads: int | Sequence[int] | None = None,
    *,
    names: Sequence[str] | None = None,
) -> Figure:
    """Heatmaps of attention weights, one panel per head: row i shows where query i looked.

    Colours run from 0 (dark) to 1 (bright) in every panel, with one colour bar, so panels and
    figures can be compared.

    Args:
        weights: (Tq, Tk) one map; (H, Tq, Tk) one map per head; (1, H, Tq, Tk) one item of a
            batch (pick one with `weights[b]`). A Tensor or anything numpy reads. A dict
            {name: weights} draws one row of panels per entry (e.g. per layer, from
            `nn.record_attention`), each labelled with its name.
        x_tokens: labels of the keys (columns), e.g. the input tokens. With a dict of weights,
            either one list for every row whose key count matches, or a dict {name: tokens}.
        y_tokens: labels of the queries (rows); default: x_tokens when Tq == Tk (self-attention).
        title: a title over the whole figure.
        path: save the figure there (.png, .svg, .pdf ...), drawn off-screen.
        heads: which heads to draw (an index or a list); default all.
        names: a title for each panel instead of "head h" (one per panel drawn).

    Returns:
        The matplotlib Figure.

    Raises:
        ImportError: matplotlib is not installed.
        ValueError: a shape or a token count does not fit.

    Example:
        >>> with nn.record_attention(model) as maps:
        ...     model(idx)
        >>> plot_attention(maps[0].weights[0], x_tokens=list(text), path="attention.png")
    """
    rows = list(weights.items()) if isinstance(weights, Mapping) else [(None, weights)]
    if not rows:
        raise ValueError("plot_attention: no weights to draw (an empty dict)")
    panels = []  # (row, col, map (Tq, Tk), panel title, x labels, y labels)
    fits = {"x_tokens": False, "y_tokens": False}  # did a list shared by all rows fit one?
    for r, (row_name, w) in enumerate(rows):
        maps, single = _as_maps(w, row_name)
        picked = _pick_heads(heads, len(maps), row_name)
        x = _tokens(x_tokens, row_name, maps.shape[2], "x_tokens", "keys", strict=len(rows) == 1)
        y = _tokens(y_tokens, row_name, maps.shape[1], "y_tokens", "queries", strict=len(rows) == 1)
        fits["x_tokens"] |= x is not None
        fits["y_tokens"] |= y is not None
        if y is None and x is not None and maps.shape[1] == maps.shape[2]:
            y = x  # self-attention: the queries are the keys
        for c, h in enumerate(picked):
            label = "" if single else f"head {h}"
            if row_name is not None:  # on two lines: module paths are long
                label = f"{row_name}\n{label}" if label else row_name
            panels.append((r, c, maps[h], label, x, y))
    for arg, spec in (("x_tokens", x_tokens), ("y_tokens", y_tokens)):
        if spec is not None and not isinstance(spec, Mapping) and not fits[arg]:
            raise ValueError(f"plot_attention: the {len(spec)} {arg} fit none of the weights")
    if names is not None:
        if len(names) != len(panels):
            raise ValueError(f"plot_attention: {len(names)} names for {len(panels)} panels")
        panels = [p[:3] + (n,) + p[4:] for p, n in zip(panels, names)]
    if len(rows) == 1:  # wrap one attention's heads at 4 a row
        ncols = min(len(panels), 4)
        panels = [(i // ncols, i % ncols) + p[2:] for i, p in enumerate(panels)]
    else:
        ncols = max(p[1] for p in panels) + 1
    nrows = max(p[0] for p in panels) + 1

    longest = max(max(p[2].shape) for p in panels)
    side = min(max(1.2 + 0.16 * longest, 2.2), 4.6)  # inches per panel: room for the tick labels
    size = (ncols * side + 1.2, nrows * side + 0.5 + (0.4 if title else 0.0))
    fig = _figure(size, off_screen=path is not None)
    grid = fig.subplots(nrows, ncols, squeeze=False)
    used = {(p[0], p[1]) for p in panels}
    for (r, c), ax in np.ndenumerate(grid):
        if (r, c) not in used:
            fig.delaxes(ax)
    image = None
    for r, c, m, label, x, y in panels:
        ax = grid[r, c]
        image = ax.imshow(m, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        _label_axis(ax.xaxis, x, m.shape[1], longest)
        _label_axis(ax.yaxis, y, m.shape[0], longest)
        if label:
            ax.set_title(label, fontsize=9)
        if c == 0:
            ax.set_ylabel("query")
        if (r + 1, c) not in used:
            ax.set_xlabel("key")
    fig.colorbar(image, ax=[grid[r, c] for r, c, *_ in panels], shrink=0.8, label="attention weight")
    if title:
        fig.suptitle(title)
    _save(fig, path)
    return fig


def _as_maps(weights: Any, name: str | None) -> tuple[np.ndarray, bool]:
    """(H, Tq, Tk) float maps, and whether the input was a single (Tq, Tk) map."""
    a = np.asarray(weights._data if isinstance(weights, Tensor) else weights, dtype=np.float64)
    where = f" of {name!r}" if name is not None else ""
    if a.ndim == 4:
        if a.shape[0] != 1:
            raise ValueError(
                f"plot_attention: weights{where} {a.shape} hold a batch of {a.shape[0]}; "
                "pass one item, e.g. weights[0]"
            )
        a = a[0]
    if a.ndim == 2:
        return a[None], True
    if a.ndim == 3 and a.shape[0] > 0:
        return a, False
    raise ValueError(
        f"plot_attention: weights{where} must be (Tq, Tk), (H, Tq, Tk) or (1, H, Tq, Tk), got {a.shape}"
    )


def _pick_heads(heads: int | Sequence[int] | None, count: int, name: str | None) -> list[int]:
    if heads is None:
        return list(range(count))
    picked = [heads] if isinstance(heads, (int, np.integer)) else list(heads)
    bad = [h for h in picked if not -count <= h < count]
    if bad or not picked:
        where = f" of {name!r}" if name is not None else ""
        raise ValueError(f"plot_attention: heads {picked} are not among the {count} heads{where}")
    return [h % count for h in picked]


def _tokens(spec: Any, name: str | None, size: int, arg: str, axis: str, strict: bool) -> list[str] | None:
    """The labels of one axis of one row, checked against its size.

    One list given for several rows labels only the rows it fits (strict=False)."""
    tokens = spec.get(name) if isinstance(spec, Mapping) else spec
    if tokens is None:
        return None
    tokens = [str(t) for t in tokens]
    if len(tokens) != size:
        if strict or isinstance(spec, Mapping):
            where = f" of {name!r}" if name is not None else ""
            raise ValueError(f"plot_attention: {len(tokens)} {arg} for {size} {axis}{where}")
        return None
    return tokens


def _visible(token: str) -> str:
    """A label that shows: a space as a visible symbol, other control characters escaped."""
    if token in _VISIBLE:
        return _VISIBLE[token]
    if not token or not token.isprintable():
        return repr(token)[1:-1] or "''"
    return token


def _label_axis(axis: Any, tokens: list[str] | None, size: int, longest: int) -> None:
    from matplotlib.ticker import MaxNLocator

    if tokens is None:
        axis.set_major_locator(MaxNLocator(integer=True))  # positions, not 0.5 steps
        return
    labels = [_visible(t) for t in tokens]
    # Single characters stay upright; words on the key axis are turned to fit side by side.
    vertical = axis.axis_name == "x" and max(len(t) for t in labels) > 2
    axis.set_ticks(range(size), labels, fontsize=8 if longest <= 24 else 6,
                   rotation=90 if vertical else 0)


# ----------------------------------------------------------------------------- training


def plot_training(run_dir_or_csv: str | os.PathLike, path: str | os.PathLike | None = None,
                  title: str | None = None) -> Figure:
    """Loss curves of a training run, from the `log.csv` that `minigrad train` writes.

    The training loss of every step (with a moving average when there are many steps), the
    validation loss at the steps where it was measured, and the learning rate on a second
    axis on the right.

    Args:
        run_dir_or_csv: the run's folder (holding log.csv) or the CSV file itself, with
            columns step, train_loss, val_loss (empty where not measured), lr.
        path: save the figure there (.png, .svg, .pdf ...), drawn off-screen.
        title: the figure's title; default: the run folder's name.

    Returns:
        The matplotlib Figure; `fig.axes` is [loss axis, learning-rate axis].

    Raises:
        FileNotFoundError: there is no log.csv.
        ValueError: the file lacks a column or has no rows.
        ImportError: matplotlib is not installed.
    """
    csv_path, log = _read_log(run_dir_or_csv)
    step, train, val, lr = log["step"], log["train_loss"], log["val_loss"], log["lr"]
    fig = _figure((7.0, 4.0), off_screen=path is not None)
    ax = fig.add_subplot()
    many = len(step) >= 50
    ax.plot(step, train, color="tab:blue", lw=1, alpha=0.35 if many else 1.0, label="train loss")
    if many:  # minibatch losses are noisy; the average shows the trend
        k = max(len(step) // 25, 2)
        smooth = np.convolve(train, np.ones(k) / k, mode="valid")
        ax.plot(step[k - 1:], smooth, color="tab:blue", lw=2, label=f"train loss ({k}-step mean)")
    seen = ~np.isnan(val)
    if seen.any():
        ax.plot(step[seen], val[seen], "o-", color="tab:orange", lw=2, ms=4, label="val loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    lr_ax = ax.twinx()
    lr_ax.plot(step, lr, color="gray", ls="--", lw=1, label="learning rate")
    lr_ax.set_ylabel("learning rate")
    lr_ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    handles = ax.get_legend_handles_labels()[0] + lr_ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="upper right", fontsize=8)
    name = os.path.basename(os.path.dirname(os.path.abspath(csv_path)))
    ax.set_title(title if title is not None else f"training: {name}")
    _save(fig, path)
    return fig


_LOG_COLUMNS = ("step", "train_loss", "val_loss", "lr")


def _read_log(run_dir_or_csv: str | os.PathLike) -> tuple[str, dict[str, np.ndarray]]:
    """(path of the CSV, column -> float array); an empty cell reads as NaN."""
    where = os.fspath(run_dir_or_csv)
    csv_path = os.path.join(where, "log.csv") if os.path.isdir(where) else where
    if not os.path.isfile(csv_path):
        raise FileNotFoundError(
            f"no log.csv in {where}" if os.path.isdir(where) else f"no training log at {where}"
        )
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in _LOG_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{csv_path}: not a training log (no column {', '.join(missing)})")
        rows = [r for r in reader if r.get("step")]
    if not rows:
        raise ValueError(f"{csv_path}: no steps logged yet")
    try:
        log = {c: np.array([float(r[c]) if r[c] else math.nan for r in rows]) for c in _LOG_COLUMNS}
    except (TypeError, ValueError):
        raise ValueError(f"{csv_path}: a value is not a number") from None
    return csv_path, log
