"""minigrad.viz plots: attention heatmaps (panels, tick labels, colour scale, files) and
training curves from log.csv, and the one-line error without matplotlib."""

from __future__ import annotations

import csv
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")  # figures made without `path` are pyplot's; never open a window here
import matplotlib.pyplot as plt  # noqa: E402

import minigrad as mg  # noqa: E402
from minigrad.viz import plot_attention, plot_training  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
TOKENS = ["the", "cat", "sat", "on", "mat"]


def maps(*shape, seed=0):
    """Random attention weights: rows on the last axis sum to 1."""
    w = np.random.default_rng(seed).random(shape)
    return w / w.sum(-1, keepdims=True)


def labels(ticks):
    return [t.get_text() for t in ticks]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# ----------------------------------------------------------------------------- attention


def test_one_panel_per_head_with_token_ticks_and_a_0_1_colour_bar():
    fig = plot_attention(maps(3, 5, 5), x_tokens=TOKENS, title="three heads")
    panels, bar = fig.axes[:3], fig.axes[3]
    assert len(fig.axes) == 4  # three heads and the colour bar
    for h, ax in enumerate(panels):
        assert ax.get_title() == f"head {h}"
        assert labels(ax.get_xticklabels()) == TOKENS
        assert labels(ax.get_yticklabels()) == TOKENS  # self-attention: queries are the keys
        assert ax.images[0].get_clim() == (0.0, 1.0)
    assert bar.get_ylabel() == "attention weight" and bar.get_ylim() == (0.0, 1.0)
    assert fig._suptitle.get_text() == "three heads"


def test_heads_wrap_at_four_a_row_and_empty_cells_are_removed():
    fig = plot_attention(maps(6, 3, 3))
    assert len(fig.axes) == 7
    rows = sorted({round(ax.get_position().y0, 3) for ax in fig.axes[:6]})
    assert len(rows) == 2
    # Without tokens the ticks are positions 0, 1, 2, not half steps.
    assert all(float(t).is_integer() for t in fig.axes[0].get_xticks())


@pytest.mark.parametrize("weights,panels", [
    pytest.param(maps(4, 5), 1, id="one-map"),
    pytest.param(maps(2, 4, 5), 2, id="heads"),
    pytest.param(maps(1, 2, 4, 5), 2, id="batch-of-one"),
    pytest.param(mg.tensor(maps(2, 4, 5)), 2, id="tensor"),
])
def test_accepted_shapes(weights, panels):
    fig = plot_attention(weights, x_tokens=TOKENS, y_tokens=list("abcd"))
    assert len(fig.axes) == panels + 1
    assert labels(fig.axes[0].get_yticklabels()) == list("abcd")
    assert labels(fig.axes[0].get_xticklabels()) == TOKENS


def test_heads_and_names_choose_and_title_the_panels():
    fig = plot_attention(maps(4, 5, 5), heads=[3, 1])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["head 3", "head 1"] and len(fig.axes) == 3
    fig = plot_attention(maps(2, 5, 5), names=["full", "causal"])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["full", "causal"]
    assert np.array_equal(fig.axes[1].images[0].get_array(), maps(2, 5, 5)[1])


def test_a_dict_draws_one_row_per_module_with_its_own_tokens():
    src, out = list("12345"), ["5", "4", "[EOS]"]
    weights = {"encoder.self_attn": maps(1, 2, 5, 5), "decoder.cross_attn": maps(1, 2, 3, 5),
               "decoder.attention": maps(3, 5)}
    y_tokens = {"decoder.cross_attn": out, "decoder.attention": out}
    fig = plot_attention(weights, x_tokens=src, y_tokens=y_tokens)
    assert len(fig.axes) == 2 + 2 + 1 + 1
    titles = [ax.get_title() for ax in fig.axes[:5]]
    assert titles == ["encoder.self_attn\nhead 0", "encoder.self_attn\nhead 1", "decoder.cross_attn\nhead 0",
                      "decoder.cross_attn\nhead 1", "decoder.attention"]
    assert labels(fig.axes[0].get_yticklabels()) == src
    assert labels(fig.axes[2].get_yticklabels()) == out and labels(fig.axes[2].get_xticklabels()) == src


def test_blank_tokens_are_drawn_visibly():
    fig = plot_attention(maps(4, 4), x_tokens=["a", " ", "\n", "\x00"])
    assert labels(fig.axes[0].get_xticklabels()) == ["a", "\u2423", "\u21b5", "\\x00"]


@pytest.mark.parametrize("weights,kwargs,match", [
    pytest.param(maps(2, 2, 3, 3), {}, "batch of 2; pass one item", id="batch"),
    pytest.param(maps(3), {}, r"must be \(Tq, Tk\)", id="1-d"),
    pytest.param({}, {}, "no weights to draw", id="empty-dict"),
    pytest.param(maps(3, 3), {"x_tokens": ["a", "b"]}, "2 x_tokens for 3 keys", id="x-count"),
    pytest.param(maps(2, 3), {"y_tokens": ["a"]}, "1 y_tokens for 2 queries", id="y-count"),
    pytest.param(maps(2, 3, 3), {"heads": [2]}, r"heads \[2\] are not among the 2 heads", id="head"),
    pytest.param(maps(2, 3, 3), {"names": ["x"]}, "1 names for 2 panels", id="names"),
    pytest.param({"a": maps(3, 3), "b": maps(2, 2)}, {"x_tokens": ["a"]}, "fit none of the weights",
                 id="dict-tokens"),
])
def test_clear_errors(weights, kwargs, match):
    with pytest.raises(ValueError, match=match):
        plot_attention(weights, **kwargs)


@pytest.mark.parametrize("ext,header", [pytest.param("png", PNG, id="png"),
                                        pytest.param("svg", b"<?xml", id="svg")])
def test_saving_writes_the_file_off_screen(tmp_path, ext, header):
    before = plt.get_fignums()
    fig = plot_attention(maps(2, 5, 5), x_tokens=TOKENS, path=tmp_path / f"a.{ext}")
    assert (tmp_path / f"a.{ext}").read_bytes().startswith(header)
    assert plt.get_fignums() == before  # saved figures are not left open in pyplot
    assert len(fig.axes) == 3
    shown = plot_attention(maps(5, 5))  # no path: a pyplot figure, for plt.show() or a notebook
    assert shown.number in plt.get_fignums()


# ----------------------------------------------------------------------------- training


def write_log(folder, steps=10, val_every=5):
    folder.mkdir(exist_ok=True)
    path = folder / "log.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "train_loss", "val_loss", "lr", "seconds"])
        for s in range(1, steps + 1):
            val = f"{3.0 / s:.5f}" if s % val_every == 0 else ""
            w.writerow([s, f"{4.0 / s:.5f}", val, f"{1e-3 * s / steps:.3e}", f"{0.1 * s:.2f}"])
    return path


def test_training_curves_from_a_run_folder(tmp_path):
    write_log(tmp_path / "run", steps=10, val_every=5)
    fig = plot_training(tmp_path / "run", path=tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes().startswith(PNG)
    loss_ax, lr_ax = fig.axes
    lines = {line.get_label(): line for line in loss_ax.get_lines()}
    assert set(lines) == {"train loss", "val loss"}  # no moving average for 10 steps
    np.testing.assert_allclose(lines["train loss"].get_ydata(), 4.0 / np.arange(1, 11), rtol=1e-4)
    np.testing.assert_array_equal(lines["val loss"].get_xdata(), [5, 10])  # only where measured
    np.testing.assert_allclose(lines["val loss"].get_ydata(), [0.6, 0.3], rtol=1e-4)
    (lr,) = lr_ax.get_lines()
    np.testing.assert_allclose(lr.get_ydata(), 1e-3 * np.arange(1, 11) / 10, rtol=1e-3)
    assert lr_ax.get_ylabel() == "learning rate" and loss_ax.get_title() == "training: run"
    legend = [t.get_text() for t in loss_ax.get_legend().get_texts()]
    assert legend == ["train loss", "val loss", "learning rate"]


def test_long_runs_get_a_moving_average_and_a_log_without_val(tmp_path):
    csv_path = write_log(tmp_path / "long", steps=100, val_every=1000)
    fig = plot_training(csv_path, title="long run")
    labels_ = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels_ == ["train loss", "train loss (4-step mean)"]
    assert fig.axes[0].get_title() == "long run"


def test_training_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no log.csv in"):
        plot_training(tmp_path)
    with pytest.raises(FileNotFoundError, match="no training log at"):
        plot_training(tmp_path / "nothing.csv")
    (tmp_path / "log.csv").write_text("step,train_loss,val_loss,lr,seconds\n")
    with pytest.raises(ValueError, match="no steps logged yet"):
        plot_training(tmp_path)
    (tmp_path / "log.csv").write_text("step,loss\n1,2.0\n")
    with pytest.raises(ValueError, match="not a training log"):
        plot_training(tmp_path)
    (tmp_path / "log.csv").write_text("step,train_loss,val_loss,lr\n1,abc,,0.1\n")
    with pytest.raises(ValueError, match="not a number"):
        plot_training(tmp_path)


# ----------------------------------------------------------------------------- no matplotlib


def test_without_matplotlib_the_error_is_one_line(monkeypatch, tmp_path):
    write_log(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    for plot in (lambda: plot_attention(maps(3, 3)), lambda: plot_training(tmp_path)):
        with pytest.raises(ImportError) as e:
            plot()
        assert str(e.value) == "plotting needs matplotlib: pip install 'minigrad[plot]'"
