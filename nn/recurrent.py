"""Recurrent cells (one time step, the whole batch at once): the Elman RNN cell and the GRU cell.

Parameter names, layouts, gate order and initialisation are PyTorch's, so state dicts carry
over. Loop over time outside the cell (see the RNN encoder-decoder in minigrad.models).
"""

from __future__ import annotations

import math

import numpy as np

from minigrad import Tensor

from . import functional as F
from . import init
from .module import Module, Parameter


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
        name = type(self).__name__
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input must have shape (B, {self.input_size}) or "
                             f"({self.input_size},), got {input.shape}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            hx = Tensor(np.zeros((x.shape[0], self.hidden_size), dtype=x.dtype))
        elif not batched:
            hx = hx.unsqueeze(0)
        if hx.shape != (x.shape[0], self.hidden_size):
            raise ValueError(f"{name}: hx must have shape {(x.shape[0], self.hidden_size)} for an "
                             f"input of shape {input.shape}, got {tuple(hx.shape)}")
        return x, hx, batched

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
        pre = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        h_new = pre.tanh() if self.nonlinearity == "tanh" else pre.relu()  # (B, H)
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
        gh = F.linear(h, self.weight_hh, self.bias_hh)  # (B, 3H): h parts of r, z, n
        i_r, i_z, i_n = gi.chunk(3, dim=-1)  # each (B, H)
        h_r, h_z, h_n = gh.chunk(3, dim=-1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        h_new = (1 - z) * n + z * h  # (B, H)
        return h_new if batched else h_new.squeeze(0)
