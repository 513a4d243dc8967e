"""nn.RNN, nn.GRU, nn.LSTM and nn.LSTMCell: the cells' equations unrolled over time, layers and
directions; gradients (inputs, initial states, every parameter); names, init, dropout, errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn

KINDS = {
    "rnn-tanh": lambda *a, **k: nn.RNN(*a, **k),
    "rnn-relu": lambda *a, **k: nn.RNN(*a, nonlinearity="relu", **k),
    "gru": lambda *a, **k: nn.GRU(*a, **k),
    "lstm": lambda *a, **k: nn.LSTM(*a, **k),
    "lstm-proj": lambda *a, **k: nn.LSTM(*a, proj_size=1, **k),
}

fewer = settings(max_examples=max(10, settings.default.max_examples // 2))  # each example unrolls a graph


class WithState(nn.Module):
    """rnn(x, hx) with the initial state as separate inputs (h, or h and c) and every result
    flattened into one output, so that gradcheck_module checks x, hx and every parameter."""

    def __init__(self, rnn):
        self.rnn = rnn

    def forward(self, x, h=None, c=None):
        out, final = self.rnn(x, h if c is None else (h, c))
        finals = final if isinstance(final, tuple) else (final,)
        return mg.cat([t.reshape(-1) for t in (out, *finals)])


def state_shapes(rnn, N, batched):
    """Shapes of h_0 (and c_0 for the LSTM)."""
    k = rnn.num_layers * rnn.num_directions
    lead = (k, N) if batched else (k,)
    shapes = [lead + (rnn.proj_size or rnn.hidden_size,)]
    if isinstance(rnn, nn.LSTM):
        shapes.append(lead + (rnn.hidden_size,))
    return shapes


@fewer
@given(kind=st.sampled_from(sorted(KINDS)), N=st.integers(1, 2), L=st.integers(1, 3),
       num_layers=st.integers(1, 2), bidirectional=st.booleans(), batch_first=st.booleans(),
       bias=st.booleans(), with_state=st.booleans(), batched=st.booleans(), seed=st.integers(0, 2**16))
@example(kind="lstm-proj", N=1, L=1, num_layers=2, bidirectional=True, batch_first=False, bias=True,
         with_state=True, batched=True, seed=0)  # every size-1 axis, every part of the layer
@example(kind="gru", N=2, L=3, num_layers=2, bidirectional=True, batch_first=True, bias=False,
         with_state=False, batched=False, seed=1)
def test_gradcheck_inputs_states_and_every_parameter(kind, N, L, num_layers, bidirectional, batch_first, bias,
                                                      with_state, batched, seed):
    mg.manual_seed(seed)
    rnn = KINDS[kind](2, 2, num_layers=num_layers, bias=bias, batch_first=batch_first,
                      bidirectional=bidirectional)
    rng = np.random.default_rng(seed)
    shape = ((N, L, 2) if batch_first else (L, N, 2)) if batched else (L, 2)
    inputs = [rng.standard_normal(shape)]
    if with_state:
        inputs += [rng.standard_normal(s) for s in state_shapes(rnn, N, batched)]
    assert gradcheck_module(WithState(rnn), *inputs)


def unrolled(rnn, cells, x, states):
    """The same math with the cells: x (L, N, C) time-major, states[k] per layer and direction."""
    finals = []
    for layer in range(rnn.num_layers):
        outs = []
        for d in range(rnn.num_directions):
            k = layer * rnn.num_directions + d
            cell, state, hs = cells[k], states[k], [None] * x.shape[0]
            for t in (range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])):
                state = cell(x[t], state)
                hs[t] = state[0] if isinstance(state, tuple) else state
            outs.append(mg.stack(hs))
            finals.append(state)
        x = mg.cat(outs, dim=2)
    return x, finals


@pytest.mark.parametrize("kind, cell", [("rnn-relu", nn.RNNCell), ("gru", nn.GRUCell), ("lstm", nn.LSTMCell)])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_layers_are_the_cells_unrolled(kind, cell, bidirectional):
    mg.manual_seed(3)
    rnn = KINDS[kind](3, 4, num_layers=2, bidirectional=bidirectional).double()
    cells = []
    for layer in range(2):
        for sfx in ("", "_reverse")[: rnn.num_directions]:
            c = cell(3 if layer == 0 else 4 * rnn.num_directions, 4,
                     **({"nonlinearity": "relu"} if cell is nn.RNNCell else {})).double()
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                setattr(c, name, getattr(rnn, f"{name}_l{layer}{sfx}"))
            cells.append(c)
    rng = np.random.default_rng(3)
    x = mg.tensor(rng.standard_normal((5, 2, 3)))
    hs = [mg.tensor(rng.standard_normal((2, 4))) for _ in cells]
    states = [(h, mg.tensor(rng.standard_normal((2, 4)))) for h in hs] if kind == "lstm" else hs
    want_out, want_finals = unrolled(rnn, cells, x, states)
    hx = ((mg.stack([s[0] for s in states]), mg.stack([s[1] for s in states])) if kind == "lstm"
          else mg.stack(states))
    out, final = rnn(x, hx)
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-12, atol=1e-14)
    if kind == "lstm":
        np.testing.assert_allclose(final[0], np.stack([h.numpy() for h, _ in want_finals]), rtol=1e-12)
        np.testing.assert_allclose(final[1], np.stack([c.numpy() for _, c in want_finals]), rtol=1e-12)
    else:
        np.testing.assert_allclose(final.numpy(), np.stack([h.numpy() for h in want_finals]), rtol=1e-12)


def test_layouts_batch_first_and_unbatched_agree():
    mg.manual_seed(4)
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2).double()
    x = np.random.default_rng(4).standard_normal((5, 2, 3))  # (L, N, C)
    out, (h, c) = lstm(mg.tensor(x))
    assert out.shape == (5, 2, 4) and h.shape == (4, 2, 2) and c.shape == (4, 2, 4)
    lstm.batch_first = True
    out_bf, (h_bf, c_bf) = lstm(mg.tensor(x.transpose(1, 0, 2)))
    np.testing.assert_allclose(out_bf.numpy(), out.numpy().transpose(1, 0, 2), rtol=1e-12)
    np.testing.assert_allclose(h_bf.numpy(), h.numpy(), rtol=1e-12)
    for batch_first in (True, False):  # an unbatched (L, C) input is time-major either way
        lstm.batch_first = batch_first
        out1, (h1, c1) = lstm(mg.tensor(x[:, 1]))
        assert out1.shape == (5, 4) and h1.shape == (4, 2) and c1.shape == (4, 4)
        np.testing.assert_allclose(out1.numpy(), out.numpy()[:, 1], rtol=1e-12)
        np.testing.assert_allclose(c1.numpy(), c.numpy()[:, 1], rtol=1e-12)


@given(kind=st.sampled_from(["rnn", "gru", "lstm"]), batched=st.booleans(), with_state=st.booleans(),
       seed=st.integers(0, 2**16))
def test_cell_gradcheck(kind, batched, with_state, seed):
    mg.manual_seed(seed)
    cell = {"rnn": nn.RNNCell, "gru": nn.GRUCell, "lstm": nn.LSTMCell}[kind](2, 3)
    rng = np.random.default_rng(seed)
    lead = (2,) if batched else ()
    x = rng.standard_normal(lead + (2,))
    states = [rng.standard_normal(lead + (3,)) for _ in range(2 if kind == "lstm" else 1)]

    class Call(nn.Module):
        def __init__(self):
            self.cell = cell

        def forward(self, x, *hx):
            out = self.cell(x, (tuple(hx) if kind == "lstm" else hx[0]) if hx else None)
            return out if isinstance(out, tuple) else (out,)

    assert gradcheck_module(Call(), x, *(states if with_state else []))


def test_lstm_cell_equations_and_shapes():
    mg.manual_seed(5)
    cell = nn.LSTMCell(3, 4).double()
    rng = np.random.default_rng(5)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    w_ih, w_hh = cell.weight_ih.numpy(), cell.weight_hh.numpy()
    gates = x @ w_ih.T + cell.bias_ih.numpy() + h @ w_hh.T + cell.bias_hh.numpy()
    i, f, g, o = np.split(gates, 4, axis=1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c_want = sig(f) * c + sig(i) * np.tanh(g)
    h_want = sig(o) * np.tanh(c_want)
    h1, c1 = cell(mg.tensor(x), (mg.tensor(h), mg.tensor(c)))
    np.testing.assert_allclose(h1.numpy(), h_want, rtol=1e-12)
    np.testing.assert_allclose(c1.numpy(), c_want, rtol=1e-12)
    h0, c0 = cell(mg.tensor(x[1]), (mg.tensor(h[1]), mg.tensor(c[1])))  # unbatched
    assert h0.shape == c0.shape == (4,)
    np.testing.assert_allclose(h0.numpy(), h_want[1], rtol=1e-12)
    pre = x @ cell.weight_ih.numpy().T + cell.bias_ih.numpy() + cell.bias_hh.numpy()
    i0, _, g0, o0 = np.split(pre, 4, axis=1)
    hz, cz = cell(mg.tensor(x))  # zeros when hx is None: c' = i * g
    np.testing.assert_allclose(cz.numpy(), sig(i0) * np.tanh(g0), rtol=1e-12)
    np.testing.assert_allclose(hz.numpy(), sig(o0) * np.tanh(sig(i0) * np.tanh(g0)), rtol=1e-12)
    assert [n for n, _ in nn.LSTMCell(3, 4, bias=False).named_parameters()] == ["weight_ih", "weight_hh"]


@pytest.mark.parametrize("make, gates", [
    pytest.param(lambda **k: nn.RNN(3, 16, **k), 1, id="RNN"),
    pytest.param(lambda **k: nn.GRU(3, 16, **k), 3, id="GRU"),
    pytest.param(lambda **k: nn.LSTM(3, 16, **k), 4, id="LSTM"),
])
def test_parameter_names_shapes_and_init(make, gates):
    rnn = make(num_layers=2, bidirectional=True)
    G = gates * 16
    want = {}
    for layer, fan_in in ((0, 3), (1, 32)):
        for sfx in ("", "_reverse"):
            want |= {f"weight_ih_l{layer}{sfx}": (G, fan_in), f"weight_hh_l{layer}{sfx}": (G, 16),
                     f"bias_ih_l{layer}{sfx}": (G,), f"bias_hh_l{layer}{sfx}": (G,)}
    shapes = {n: p.shape for n, p in rnn.named_parameters()}
    assert list(shapes) == list(want) and shapes == want  # PyTorch's order too
    bound = 1 / math.sqrt(16)
    for p in rnn.parameters():
        assert np.all(np.abs(p.numpy()) <= bound) and p.numpy().std() > bound / 4 and p.dtype == np.float32
    assert [n for n, _ in make(bias=False).named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]


def test_lstm_projection_parameters():
    lstm = nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    shapes = dict((n, p.shape) for n, p in lstm.named_parameters())
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert shapes["weight_hh_l0"] == (24, 2) and shapes["weight_hr_l1_reverse"] == (2, 6)
    assert shapes["weight_ih_l1"] == (24, 4)
    out, (h, c) = lstm(mg.randn(5, 3, 3))
    assert out.shape == (5, 3, 4) and h.shape == (4, 3, 2) and c.shape == (4, 3, 6)


def test_dropout_only_between_layers_and_only_in_training():
    mg.manual_seed(6)
    x = mg.randn(4, 2, 3)
    with pytest.warns(UserWarning, match="num_layers=1 has no effect"):
        one = nn.GRU(3, 5, dropout=0.5)
    np.testing.assert_array_equal(one(x)[0], one.eval()(x)[0])  # no dropout after the last layer
    rnn = nn.LSTM(3, 5, num_layers=2, dropout=0.5)
    plain = nn.LSTM(3, 5, num_layers=2)
    plain.load_state_dict(rnn.state_dict())
    a, b = rnn(x)[0].numpy(), rnn(x)[0].numpy()
    assert not np.allclose(a, b)  # a new mask on every call
    with nn.evaluating(rnn):
        np.testing.assert_array_equal(rnn(x)[0].numpy(), plain(x)[0].numpy())
    rnn.dropout = 1.0  # the second layer sees zeros: its outputs depend on its weights alone
    out, (h, c) = rnn(x)
    zeros = mg.zeros(4, 2, 5)
    second = nn.LSTM(5, 5)
    second.load_state_dict({k.replace("l1", "l0"): v for k, v in rnn.state_dict().items() if "l1" in k})
    np.testing.assert_allclose(out.numpy(), second(zeros)[0].numpy(), rtol=1e-6)
    assert np.abs(out.numpy()).min() > 0  # the last layer's output is not dropped


def test_edges_saturation_empty_batch_and_repr():
    mg.manual_seed(7)
    lstm = nn.LSTM(2, 3, bidirectional=True)
    out, (h, c) = lstm(mg.tensor(np.full((6, 1, 2), 1e4)))  # saturated gates: finite, |h| <= 1
    assert np.isfinite(out.numpy()).all() and np.abs(out.numpy()).max() <= 1
    out, (h, c) = lstm(mg.zeros(4, 0, 2))  # an empty batch, as PyTorch
    assert out.shape == (4, 0, 6) and h.shape == c.shape == (2, 0, 3)
    x = mg.randn(3, 2, 2, requires_grad=True)
    nn.GRU(2, 3)(x)[0].sum().backward()
    assert x.grad.shape == (3, 2, 2) and np.abs(x.grad).sum() > 0
    assert repr(nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True, proj_size=2)) == \
        "LSTM(3, 4, proj_size=2, num_layers=2, batch_first=True, bidirectional=True)"
    assert repr(nn.RNN(3, 4, nonlinearity="relu", bias=False)) == "RNN(3, 4, nonlinearity='relu', bias=False)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4, bias=True)"


ERRORS = [
    pytest.param(lambda: nn.LSTM(3, 4)(mg.randn(5, 2, 4)), ValueError,
                 r"^LSTM: input.size\(-1\) must equal input_size=3, got input of shape \(5, 2, 4\)$",
                 id="input-size"),
    pytest.param(lambda: nn.GRU(3, 4, batch_first=True)(mg.randn(5, 2, 2, 3)), ValueError,
                 r"^GRU: input must be 2-D \(L, H_in\) unbatched or 3-D \(N, L, H_in\), "
                 r"got shape \(5, 2, 2, 3\)$",
                 id="input-ndim"),
    pytest.param(lambda: nn.RNN(3, 4)(mg.randn(0, 2, 3)), ValueError,
                 "RNN: the sequence length must be greater", id="empty-sequence"),
    pytest.param(lambda: nn.RNN(3, 4, num_layers=2)(mg.randn(5, 2, 3), mg.randn(2, 3, 4)), ValueError,
                 r"^RNN: hx must have shape \(2, 2, 4\) \(num_layers \* num_directions, N, hidden_size\) "
                 r"for a batched 3-D input of shape \(5, 2, 3\), got \(2, 3, 4\)$", id="hx-shape"),
    pytest.param(lambda: nn.GRU(3, 4, bidirectional=True)(mg.randn(5, 3), mg.randn(2, 1, 4)), ValueError,
                 r"hx must have shape \(2, 4\) .* unbatched 2-D input of shape \(5, 3\), got \(2, 1, 4\)",
                 id="hx-unbatched"),
    pytest.param(lambda: nn.LSTM(3, 4, proj_size=2)(mg.randn(5, 2, 3), (mg.randn(1, 2, 4),) * 2),
                 ValueError, r"LSTM: h_0 must have shape \(1, 2, 2\) \(.*proj_size\).*got \(1, 2, 4\)",
                 id="h0"),
    pytest.param(lambda: nn.LSTM(3, 4)(mg.randn(5, 2, 3), (mg.randn(1, 2, 4), mg.randn(1, 2, 3))),
                 ValueError, r"LSTM: c_0 must have shape \(1, 2, 4\).*got \(1, 2, 3\)", id="c0"),
    pytest.param(lambda: nn.LSTM(3, 4)(mg.randn(5, 2, 3), mg.randn(1, 2, 4)), TypeError,
                 r"LSTM: hx must be a tuple \(h_0, c_0\)", id="lstm-hx-not-tuple"),
    pytest.param(lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError,
                 "RNN: unknown nonlinearity 'sigmoid'; it must be 'tanh' or 'relu'", id="nonlinearity"),
    pytest.param(lambda: nn.GRU(3, 4, nonlinearity="relu"), TypeError, "nonlinearity", id="gru-nonlinearity"),
    pytest.param(lambda: nn.LSTM(3, 4, num_layers=2, dropout=1.5), ValueError,
                 r"LSTM: dropout must be a number in \[0, 1\].*not 1.5", id="dropout-high"),
    pytest.param(lambda: nn.RNN(3, 4, num_layers=2, dropout=-0.1), ValueError,
                 r"RNN: dropout must be a number in \[0, 1\].*not -0.1", id="dropout-negative"),
    pytest.param(lambda: nn.LSTM(3, 4, proj_size=4), ValueError,
                 r"LSTM: proj_size must be an integer in \[0, hidden_size=4\)", id="proj-size"),
    pytest.param(lambda: nn.GRU(3, 4, proj_size=2), TypeError, "proj_size", id="gru-proj-size"),
    pytest.param(lambda: nn.GRU(3, 4, num_layers=0), ValueError,
                 "GRU: num_layers must be an integer greater than zero, not 0", id="num-layers"),
    pytest.param(lambda: nn.RNN(3, 0), ValueError, "RNN: hidden_size must be an integer greater than zero",
                 id="hidden-size"),
    pytest.param(lambda: nn.LSTMCell(3, 4)(mg.randn(2, 4)), ValueError,
                 r"LSTMCell: input must have shape \(B, 3\) or \(3,\), got \(2, 4\)", id="cell-input"),
    pytest.param(lambda: nn.LSTMCell(3, 4)(mg.randn(2, 3), (mg.randn(2, 4), mg.randn(2, 3))), ValueError,
                 r"LSTMCell: hx\[1\] \(c\) must have shape \(2, 4\) for an input of shape \(2, 3\), "
                 r"got \(2, 3\)",
                 id="cell-c"),
    pytest.param(lambda: nn.LSTMCell(3, 4)(mg.randn(3), (mg.randn(1, 4), mg.randn(1, 4))), ValueError,
                 r"LSTMCell: hx\[0\] \(h\) must have shape \(4,\) for an input of shape \(3,\), got \(1, 4\)",
                 id="cell-unbatched-h"),
    pytest.param(lambda: nn.LSTMCell(3, 4)(mg.randn(2, 3), mg.randn(2, 4)), TypeError,
                 r"LSTMCell: hx must be a tuple \(h, c\)", id="cell-hx-not-tuple"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_errors_name_the_module_and_the_shapes(call, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=message):
            call()
