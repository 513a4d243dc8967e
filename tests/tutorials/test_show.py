"""`minigrad.viz.show`: a script keeps its figures in MINIGRAD_FIGURES (named after the script)
or only renders them; the figure is closed either way."""

import sys

import pytest

matplotlib = pytest.importorskip("matplotlib", reason="needs the plot extra: pip install -e '.[plot]'")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from minigrad.viz import figures, show  # noqa: E402


@pytest.fixture
def script(monkeypatch):
    monkeypatch.setattr(sys.modules["__main__"], "__file__", "/somewhere/07_example.py", raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setitem(figures._counter, "n", 0)


def test_saves_named_and_numbered_pngs_in_the_folder(script, tmp_path, monkeypatch):
    folder = tmp_path / "figs"  # created on first use
    monkeypatch.setenv("MINIGRAD_FIGURES", str(folder))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert show(fig, "loss curve") == str(folder / "07_example-loss_curve.png")
    off_screen = Figure()
    off_screen.add_subplot().imshow([[0, 1], [1, 0]])
    assert show(off_screen) == str(folder / "07_example-02.png")
    assert sorted(p.name for p in folder.iterdir()) == ["07_example-02.png", "07_example-loss_curve.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in folder.iterdir())
    assert not plt.fignum_exists(fig.number)  # closed: a long tutorial does not pile figures up


def test_without_the_variable_nothing_is_written(script, tmp_path, monkeypatch):
    monkeypatch.delenv("MINIGRAD_FIGURES", raising=False)
    monkeypatch.chdir(tmp_path)
    fig, ax = plt.subplots()
    ax.plot([1, 2])
    assert show(fig) is None
    assert list(tmp_path.iterdir()) == [] and not plt.fignum_exists(fig.number)


def test_a_drawing_error_surfaces_in_a_script(script, monkeypatch):
    monkeypatch.delenv("MINIGRAD_FIGURES", raising=False)
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.text(0.5, 0.5, r"$\frac{1}{$")  # bad mathtext fails only when the figure is drawn
    with pytest.raises(ValueError):
        show(fig)
    plt.close(fig)
