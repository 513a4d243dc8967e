"""Recurrent cells (one time step, the whole batch at once): the Elman RNN cell, the GRU cell
and the LSTM cell, and the step equations they share with the multi-layer RNN, GRU and LSTM
(recurrent_layers.py).

Parameter names, layouts, gate order and initialisation are PyTorch's, so state dicts carry
over. Loop over time outside the cell (see the RNN encoder-decoder in minigrad.models), or use
nn.RNN / nn.GRU / nn.LSTM, which loop for you.
"""

from __future__ import annotations

import math

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError

from . import functional as F
from . import init
from .module import Module, Parameter

# ----------------------------------------------------------------------------- step equations
# One time step of each cell, given gi = x W_ih^T + b_ih (the input's part of every gate), so
# that a layer can compute gi for all time steps with one matrix product before its loop.


def rnn_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias_hh: Tensor | None, nonlinearity: str) -> Tensor:
    """h' = tanh(gi + h W_hh^T + b_hh) (or relu); gi, h and h' are (B, H)."""
    pre = gi + F.linear(h, weight_hh, bias_hh)
    return pre.tanh() if nonlinearity == "tanh" else pre.relu()


def gru_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias_hh: Tensor | None) -> Tensor:
    """GRUCell's equations (gate order r, z, n) from gi (B, 3H) and h (B, H); h' is (B, H)."""
    gh = F.linear(h, weight_hh, bias_hh)  # (B, 3H): h parts of r, z, n
    i_r, i_z, i_n = gi.chunk(3, dim=-1)  # each (B, H)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def lstm_step(gi: Tensor, h: Tensor, c: Tensor, weight_hh: Tensor, bias_hh: Tensor | None,
              weight_hr: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """LSTMCell's equations (gate order i, f, g, o) from gi (B, 4H), h (B, P) and c (B, H):
    (h' (B, P), c' (B, H)), with P = H, or P = proj_size when weight_hr (P, H) projects h'."""
    gates = gi + F.linear(h, weight_hh, bias_hh)  # (B, 4H)
    i, f, g, o = gates.chunk(4, dim=-1)  # each (B, H)
    c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h_new = o.sigmoid() * c_new.tanh()
    return (h_new if weight_hr is None else F.linear(h_new, weight_hr)), c_new


class _Cell(Module):
    """Parameters W_ih (G*H, in), W_hh (G*H, H), b_ih, b_hh (G*H) for G stacked gates."""

    def _init_params(self, input_size: int, hidden_size: int, bias: bool, gates: int) -> None:
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih = Parameter(np.zeros((gates * hidden_size, input_size), dtype=np.float32))
        self.weight_hh = Parameter(np.zeros((gates * hidden_size, hidden_size), dtype=np.float32))
        self.bias_ih = Parameter(np.zeros(gates * hidden_size, dtype=np.float32)) if bias else None
        self.bias_hh = Parameter(np.zeros(gates * hidden_size, dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(H), 1/sqrt(H)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _inputs(self, input: Tensor, hx: Tensor | None) -> tuple[Tensor, Tensor, bool]:
        """(input (B, in), hx (B, H), batched?), with an unbatched (in,) input made (1, in)."""
        x, batched = self._input(input)
        return x, self._state(hx, x, input, batched, "hx"), batched

    def _input(self, input: Tensor) -> tuple[Tensor, bool]:
        """(input as (B, in), batched?)."""
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise ShapeError(f"{type(self).__name__}: input must have shape (B, {self.input_size}) or "
                             f"({self.input_size},), got {input.shape}")
        batched = input.ndim == 2
        return (input if batched else input.unsqueeze(0)), batched

    def _state(self, hx: Tensor | None, x: Tensor, input: Tensor, batched: bool, label: str,
               size: int | None = None) -> Tensor:
        """One state tensor as (B, size) (size defaults to hidden_size); zeros when hx is None."""
        size = self.hidden_size if size is None else size
        if hx is None:
            return Tensor(np.zeros((x.shape[0], size), dtype=x.dtype))
        want = (x.shape[0], size) if batched else (size,)
        if tuple(hx.shape) != want:
            raise ShapeError(f"{type(self).__name__}: {label} must have shape {want} for an "
                             f"input of shape {input.shape}, got {tuple(hx.shape)}")
        return hx if batched else hx.unsqueeze(0)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias_ih is not None}"


class RNNCell(_Cell):
    """The Elman RNN cell: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    Args:
        input_size: features of the input x.
        hidden_size: features of the hidden state h.
        bias: whether to add b_ih and b_hh.
        nonlinearity: "tanh" or "relu".

    Shape:
        - input: (B, input_size) or (input_size)
        - hx: (B, hidden_size) or (hidden_size); zeros when None
        - Output: h', the same shape as hx

    Attributes:
        weight_ih: (hidden_size, input_size); weight_hh: (hidden_size, hidden_size);
        bias_ih, bias_hh: (hidden_size), or None.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', not {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        self._init_params(input_size, hidden_size, bias, gates=1)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, h, batched = self._inputs(input, hx)
        gi = F.linear(x, self.weight_ih, self.bias_ih)  # (B, H)
        h_new = rnn_step(gi, h, self.weight_hh, self.bias_hh, self.nonlinearity)  # (B, H)
        return h_new if batched else h_new.squeeze(0)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", nonlinearity={self.nonlinearity!r}"


class GRUCell(_Cell):
    """The gated recurrent unit (Cho et al., 2014), with PyTorch's equations and gate order r, z, n:

        r  = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)        reset gate
        z  = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)        update gate
        n  = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))     candidate state
        h' = (1 - z) * n + z * h

    The three gates are stacked in one matrix: weight_ih = [W_ir; W_iz; W_in] (3H, in), and
    one matmul per input computes all of them.

    Args:
        input_size: features of the input x.
        hidden_size: features of the hidden state h.
        bias: whether to add b_ih and b_hh.

    Shape:
        - input: (B, input_size) or (input_size)
        - hx: (B, hidden_size) or (hidden_size); zeros when None
        - Output: h', the same shape as hx

    Attributes:
        weight_ih: (3*hidden_size, input_size); weight_hh: (3*hidden_size, hidden_size);
        bias_ih, bias_hh: (3*hidden_size), or None.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        self._init_params(input_size, hidden_size, bias, gates=3)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, h, batched = self._inputs(input, hx)
        gi = F.linear(x, self.weight_ih, self.bias_ih)  # (B, 3H): x parts of r, z, n
        h_new = gru_step(gi, h, self.weight_hh, self.bias_hh)  # (B, H)
        return h_new if batched else h_new.squeeze(0)


class LSTMCell(_Cell):
    """The long short-term memory cell (Hochreiter and Schmidhuber, 1997), as PyTorch's.

    PyTorch's equations and gate order i, f, g, o:

        i  = sigmoid(x W_ii^T + b_ii + h W_hi^T + b_hi)        input gate
        f  = sigmoid(x W_if^T + b_if + h W_hf^T + b_hf)        forget gate
        g  = tanh(x W_ig^T + b_ig + h W_hg^T + b_hg)           candidate cell
        o  = sigmoid(x W_io^T + b_io + h W_ho^T + b_ho)        output gate
        c' = f * c + i * g
        h' = o * tanh(c')

    weight_ih = [W_ii; W_if; W_ig; W_io] (4H, in), and likewise weight_hh, bias_ih, bias_hh.

    Args:
        input_size: features of the input x.
        hidden_size: features of the hidden state h and of the cell state c.
        bias: whether to add b_ih and b_hh.

    Shape:
        - input: (B, input_size) or (input_size)
        - hx: a tuple (h, c) of (B, hidden_size) or (hidden_size) each; zeros when None
        - Output: (h', c'), the shapes of h and c

    Attributes:
        weight_ih: (4*hidden_size, input_size); weight_hh: (4*hidden_size, hidden_size);
        bias_ih, bias_hh: (4*hidden_size), or None.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        self._init_params(input_size, hidden_size, bias, gates=4)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        x, batched = self._input(input)
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c) of two tensors, not {type(hx).__name__}")
        h0, c0 = (None, None) if hx is None else hx
        h = self._state(h0, x, input, batched, "hx[0] (h)")
        c = self._state(c0, x, input, batched, "hx[1] (c)")
        gi = F.linear(x, self.weight_ih, self.bias_ih)  # (B, 4H): x parts of i, f, g, o
        h_new, c_new = lstm_step(gi, h, c, self.weight_hh, self.bias_hh)  # (B, H) each
        return (h_new, c_new) if batched else (h_new.squeeze(0), c_new.squeeze(0))
