"""Recurrent cells: PyTorch's equations and layouts, gradients (one step and unrolled), errors."""

import math

import numpy as np
import pytest
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def gru_numpy(cell, x, h):
    """PyTorch's GRU equations, gate order r, z, n, written out with numpy."""
    W_ir, W_iz, W_in = np.split(cell.weight_ih.numpy(), 3)
    W_hr, W_hz, W_hn = np.split(cell.weight_hh.numpy(), 3)
    b_ir, b_iz, b_in = np.split(cell.bias_ih.numpy(), 3)
    b_hr, b_hz, b_hn = np.split(cell.bias_hh.numpy(), 3)
    r = _sigmoid(x @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
    z = _sigmoid(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
    n = np.tanh(x @ W_in.T + b_in + r * (h @ W_hn.T + b_hn))
    return (1 - z) * n + z * h


def rnn_numpy(cell, x, h):
    w_ih, w_hh = cell.weight_ih.numpy(), cell.weight_hh.numpy()
    pre = x @ w_ih.T + cell.bias_ih.numpy() + h @ w_hh.T + cell.bias_hh.numpy()
    return np.tanh(pre) if cell.nonlinearity == "tanh" else np.maximum(pre, 0)


CELLS = [
    pytest.param(lambda: nn.RNNCell(3, 4), rnn_numpy, id="rnn-tanh"),
    pytest.param(lambda: nn.RNNCell(3, 4, nonlinearity="relu"), rnn_numpy, id="rnn-relu"),
    pytest.param(lambda: nn.GRUCell(3, 4), gru_numpy, id="gru"),
]


@pytest.mark.parametrize("make, reference", CELLS)
def test_cell_matches_equations(make, reference):
    mg.manual_seed(0)
    cell = make().double()
    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(cell(mg.tensor(x), mg.tensor(h)).numpy(), reference(cell, x, h), rtol=1e-12)
    np.testing.assert_allclose(cell(mg.tensor(x)).numpy(), reference(cell, x, np.zeros((5, 4))), rtol=1e-12)
    np.testing.assert_allclose(cell(mg.tensor(x[0]), mg.tensor(h[0])).numpy(), reference(cell, x, h)[0],
                               rtol=1e-12)  # an unbatched step


@pytest.mark.parametrize("make, reference", CELLS)
def test_cell_gradcheck(make, reference):
    mg.manual_seed(1)
    cell = make()
    rng = np.random.default_rng(1)
    assert gradcheck_module(cell, rng.standard_normal((2, 3)), rng.standard_normal((2, 4)))


def test_gru_unrolled_over_time_gradcheck():
    mg.manual_seed(2)
    cell = nn.GRUCell(2, 3)

    class Unrolled(nn.Module):
        def __init__(self):
            self.cell = cell

        def forward(self, xs):  # xs (B, T, in) -> every hidden state (B, T, H)
            h, hs = None, []
            for t in range(xs.shape[1]):
                h = self.cell(xs[:, t], h)
                hs.append(h)
            return mg.stack(hs, dim=1)

    assert gradcheck_module(Unrolled(), np.random.default_rng(2).standard_normal((2, 3, 2)))


@pytest.mark.parametrize(
    "make, gates", [pytest.param(lambda b: nn.RNNCell(3, 16, bias=b), 1, id="rnn"),
                    pytest.param(lambda b: nn.GRUCell(3, 16, bias=b), 3, id="gru")],
)
def test_parameter_names_layouts_and_init(make, gates):
    cell = make(True)
    shapes = {n: p.shape for n, p in cell.named_parameters()}
    assert shapes == {"weight_ih": (gates * 16, 3), "weight_hh": (gates * 16, 16),
                      "bias_ih": (gates * 16,), "bias_hh": (gates * 16,)}
    bound = 1 / math.sqrt(16)
    for p in cell.parameters():
        assert np.all(np.abs(p.numpy()) <= bound) and p.numpy().std() > bound / 4
    assert [n for n, _ in make(False).named_parameters()] == ["weight_ih", "weight_hh"]


def test_clear_errors():
    cell = nn.GRUCell(3, 4)
    with pytest.raises(ValueError, match=r"input must have shape \(B, 3\) or \(3,\), got \(2, 5\)"):
        cell(mg.randn(2, 5))
    with pytest.raises(ValueError, match=r"hx must have shape \(2, 4\).*got \(2, 3\)"):
        cell(mg.randn(2, 3), mg.randn(2, 3))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")
