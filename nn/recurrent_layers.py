"""Multi-layer, optionally bidirectional recurrent layers over whole sequences: RNN, GRU, LSTM.

PyTorch's arguments, defaults, parameter names (`weight_ih_l0`, ..., `bias_hh_l1_reverse`),
layouts and initialisation, so a torch state dict loads as it is. Time-major by default
(L, N, H_in) as in PyTorch; `batch_first=True` for (N, L, H_in). Each step is a cell's equation
from recurrent.py; the input's part of every gate is computed for all time steps at once, and
the loop over time is a Python loop.

A PackedSequence input (nn.utils.rnn) runs padded, each sequence's state held still outside its
length (a masked step: h = where(t < length, step(h), h)), so the final state is each
sequence's last real step's (or, going backwards, its first's) and the output comes back packed
as the input was.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

import minigrad as mg
from minigrad import Tensor
from minigrad.errors import ShapeError

from . import functional as F
from . import init
from .module import Module, Parameter
from .recurrent import gru_step, lstm_step, rnn_step
from .utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

State = Tensor | tuple[Tensor, Tensor]  # h, or (h, c) for the LSTM


class _RNNBase(Module):
    """Parameters of every layer and direction, the checks of inputs and states, and the loop."""

    gates = 1

    def _setup(self, input_size: int, hidden_size: int, num_layers: int, bias: bool, batch_first: bool,
               dropout: float, bidirectional: bool, proj_size: int = 0) -> None:
        name = type(self).__name__
        sizes = (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers))
        for arg, value in sizes:
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name}: {arg} must be an integer greater than zero, not {value!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout must be a number in [0, 1] (the probability of zeroing "
                             f"an element), not {dropout!r}")
        if not isinstance(proj_size, numbers.Integral) or not 0 <= proj_size < hidden_size:
            raise ShapeError(f"{name}: proj_size must be an integer in [0, hidden_size={hidden_size}) "
                             f"(0 for no projection), not {proj_size!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout is applied between layers (not after the last), so "
                          f"dropout={dropout} with num_layers=1 has no effect", UserWarning, stacklevel=3)
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers = int(num_layers)
        self.bias, self.batch_first, self.dropout = bool(bias), bool(batch_first), float(dropout)
        self.bidirectional, self.proj_size = bool(bidirectional), int(proj_size)
        G, H, out = self.gates * self.hidden_size, self.hidden_size, self.proj_size or self.hidden_size
        # set in PyTorch's order (layer, then direction, then ih, hh, biases, hr): state_dict() follows it
        for layer in range(self.num_layers):
            fan_in = self.input_size if layer == 0 else out * self.num_directions
            for sfx in self._suffixes(layer):
                setattr(self, f"weight_ih{sfx}", Parameter(np.zeros((G, fan_in), dtype=np.float32)))
                setattr(self, f"weight_hh{sfx}", Parameter(np.zeros((G, out), dtype=np.float32)))
                if self.bias:
                    setattr(self, f"bias_ih{sfx}", Parameter(np.zeros(G, dtype=np.float32)))
                    setattr(self, f"bias_hh{sfx}", Parameter(np.zeros(G, dtype=np.float32)))
                if self.proj_size:
                    hr = np.zeros((self.proj_size, H), dtype=np.float32)
                    setattr(self, f"weight_hr{sfx}", Parameter(hr))
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int) -> tuple[str, ...]:
        return (f"_l{layer}", f"_l{layer}_reverse")[: self.num_directions]

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _weights(self, sfx: str) -> tuple[Tensor | None, ...]:
        """(weight_ih, bias_ih, weight_hh, bias_hh, weight_hr) of one layer and direction (None
        where absent), looked up by name on each call so that replacing a parameter takes effect."""
        return tuple(getattr(self, f"{n}{sfx}", None) for n in ("weight_ih", "bias_ih", "weight_hh",
                                                                 "bias_hh", "weight_hr"))

    # ------------------------------------------------------------------ checks

    def _check_input(self, input: Tensor) -> tuple[Tensor, bool]:
        """(input as time-major (L, N, H_in), batched?)."""
        name = type(self).__name__
        layout = "(N, L, H_in)" if self.batch_first else "(L, N, H_in)"
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, not {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ShapeError(f"{name}: input must be 2-D (L, H_in) unbatched or 3-D {layout}, "
                             f"got shape {input.shape}")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input.size(-1) must equal input_size={self.input_size}, "
                             f"got input of shape {input.shape}")
        batched = input.ndim == 3
        if not batched:
            x = input.unsqueeze(1)  # (L, 1, H_in)
        else:
            x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[0] == 0:
            raise ShapeError(f"{name}: the sequence length must be greater than 0, got input of shape "
                             f"{input.shape}")
        return x, batched

    def _check_state(self, hx: Tensor | None, size: int, x: Tensor, input: Tensor, batched: bool,
                     label: str) -> list[Tensor]:
        """One initial state as a list of (N, size) tensors, one per layer and direction."""
        k, N = self.num_layers * self.num_directions, x.shape[1]
        if hx is None:
            return [Tensor(np.zeros((N, size), dtype=x.dtype)) for _ in range(k)]
        name = type(self).__name__
        if not isinstance(hx, Tensor):
            raise TypeError(f"{name}: {label} must be a Tensor, not {type(hx).__name__}")
        want = (k, N, size) if batched else (k, size)
        if tuple(hx.shape) != want:
            kind = "a batched 3-D" if batched else "an unbatched 2-D"
            what = "proj_size" if size != self.hidden_size else "hidden_size"
            raise ShapeError(f"{name}: {label} must have shape {want} (num_layers * num_directions, "
                             f"{'N, ' if batched else ''}{what}) for {kind} input of shape "
                             f"{input.shape}, got {tuple(hx.shape)}")
        hx = hx if batched else hx.unsqueeze(1)
        return list(hx.unbind(0))

    def _states(self, hx: State | None, x: Tensor, input: Tensor, batched: bool) -> list[State]:
        out = self.proj_size or self.hidden_size
        return self._check_state(hx, out, x, input, batched, "hx")

    # ------------------------------------------------------------------ forward

    def _direction(self, x: Tensor, state: State, sfx: str, reverse: bool,
                   lengths: np.ndarray | None) -> tuple[Tensor, State]:
        """Run one layer in one direction over x (L, N, C): (outputs (L, N, H_out), final state).
        With lengths (a packed input), a sequence's state does not move outside its length."""
        w_ih, b_ih, *w = self._weights(sfx)
        gi = F.linear(x, w_ih, b_ih)  # (L, N, G*H): the input's part of every gate at every step
        steps = gi.unbind(0)
        outs = [None] * len(steps)
        for t in (reversed(range(len(steps))) if reverse else range(len(steps))):
            new = self._step(steps[t], state, tuple(w))
            if lengths is not None:
                live = mg.tensor((t < lengths)[:, None])  # (N, 1)
                new = (tuple(mg.where(live, n, o) for n, o in zip(new, state)) if isinstance(new, tuple)
                       else mg.where(live, new, state))
            state = new
            outs[t] = state[0] if isinstance(state, tuple) else state  # (N, H_out)
        return mg.stack(outs, dim=0), state

    def forward(self, input: Tensor | PackedSequence, hx: State | None = None) -> tuple[Any, State]:
        packed = input if isinstance(input, PackedSequence) else None
        lengths = None
        if packed is not None:
            input, lengths_t = pad_packed_sequence(packed, batch_first=self.batch_first)
            lengths = lengths_t.numpy()
        x, batched = self._check_input(input)  # (L, N, H_in)
        states = self._states(hx, x, input, batched)
        finals: list[State] = []
        for layer in range(self.num_layers):
            outs = []
            for d, sfx in enumerate(self._suffixes(layer)):
                out, final = self._direction(x, states[layer * self.num_directions + d], sfx, d == 1, lengths)
                outs.append(out)
                finals.append(final)
            x = outs[0] if len(outs) == 1 else mg.cat(outs, dim=2)  # (L, N, D*H_out)
            if self.training and self.dropout > 0 and layer < self.num_layers - 1:
                x = x * 0.0 if self.dropout == 1 else F.dropout(x, self.dropout, training=True)
        if packed is not None:  # the output packed as the input was (x is (L, N, D*H_out))
            order = None if packed.sorted_indices is None else packed.sorted_indices.numpy()
            out = pack_padded_sequence(x, lengths, enforce_sorted=order is None)
            return out._replace(sorted_indices=packed.sorted_indices,
                                unsorted_indices=packed.unsorted_indices), self._pack(finals, batched)
        output = x.transpose(0, 1) if batched and self.batch_first else x if batched else x.squeeze(1)
        return output, self._pack(finals, batched)

    def _pack(self, finals: list[State], batched: bool) -> State:
        h_n = mg.stack(finals, dim=0)  # (D*num_layers, N, H_out)
        return h_n if batched else h_n.squeeze(1)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity!r}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    """The Elman RNN over a sequence: RNNCell's equation in every layer and direction.

        h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)      (or relu)

    Args:
        input_size: features of the input x.
        hidden_size: features of the hidden state h.
        num_layers: recurrent layers stacked, each reading the outputs of the one below.
        nonlinearity: "tanh" or "relu".
        bias: whether each layer has bias_ih and bias_hh.
        batch_first: input and output as (N, L, features) instead of (L, N, features).
        dropout: probability of dropout on the outputs of each layer but the last, in training.
        bidirectional: each layer also runs backwards in time (parameters `..._reverse`).

    Shape:
        N batch, L sequence length, D = 2 if bidirectional else 1, H = hidden_size.
        - Input: (L, N, input_size), (N, L, input_size) if batch_first, or (L, input_size)
        - hx: (D * num_layers, N, H), or (D * num_layers, H) unbatched; zeros when None
        - Output: (output, h_n). output: (L, N, D * H), (N, L, D * H) if batch_first, or
          (L, D * H): the last layer's h_t at every t (directions side by side, forward first).
          h_n: the shape of hx, every layer's and direction's final state (the reverse
          direction's is its state after t = 0).

    Attributes:
        weight_ih_l{k}: (H, input_size) for k = 0, else (H, D * H); weight_hh_l{k}: (H, H);
        bias_ih_l{k}, bias_hh_l{k}: (H); and each with the suffix _reverse when bidirectional.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; it must be 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        self._setup(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional)

    def _step(self, gi: Tensor, h: State, w: tuple) -> State:
        return rnn_step(gi, h, w[0], w[1], self.nonlinearity)


class GRU(_RNNBase):
    """The gated recurrent unit over a sequence: GRUCell's equations in every layer and direction.

    Gate order r, z, n, as PyTorch.

    Args:
        input_size: features of the input x.
        hidden_size: features of the hidden state h.
        num_layers: recurrent layers stacked, each reading the outputs of the one below.
        bias: whether each layer has bias_ih and bias_hh.
        batch_first: input and output as (N, L, features) instead of (L, N, features).
        dropout: probability of dropout on the outputs of each layer but the last, in training.
        bidirectional: each layer also runs backwards in time (parameters `..._reverse`).

    Shape:
        As RNN's: N batch, L sequence length, D = 2 if bidirectional else 1, H = hidden_size.
        - Input: (L, N, input_size), (N, L, input_size) if batch_first, or (L, input_size)
        - hx: (D * num_layers, N, H), or (D * num_layers, H) unbatched; zeros when None
        - Output: (output, h_n); output (L, N, D * H) (batch_first: (N, L, D * H); unbatched:
          (L, D * H)), h_n the shape of hx.

    Attributes:
        weight_ih_l{k}: (3H, input_size) for k = 0, else (3H, D * H); weight_hh_l{k}: (3H, H);
        bias_ih_l{k}, bias_hh_l{k}: (3H); and each with the suffix _reverse when bidirectional.
    """

    gates = 3

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False):
        self._setup(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional)

    def _step(self, gi: Tensor, h: State, w: tuple) -> State:
        return gru_step(gi, h, w[0], w[1])


class LSTM(_RNNBase):
    """The long short-term memory over a sequence: LSTMCell's equations in every layer and direction.

    Gate order i, f, g, o, as PyTorch. With proj_size > 0 the hidden state is projected,
    h_t = (o_t * tanh(c_t)) W_hr^T, to proj_size features (the cell state keeps hidden_size).

    Args:
        input_size: features of the input x.
        hidden_size: features of the cell state c (and of h without projection).
        num_layers: recurrent layers stacked, each reading the outputs of the one below.
        bias: whether each layer has bias_ih and bias_hh.
        batch_first: input and output as (N, L, features) instead of (L, N, features).
        dropout: probability of dropout on the outputs of each layer but the last, in training.
        bidirectional: each layer also runs backwards in time (parameters `..._reverse`).
        proj_size: features of the projected h, in [0, hidden_size); 0 for no projection.

    Shape:
        N batch, L sequence length, D = 2 if bidirectional else 1, H = hidden_size,
        P = proj_size if proj_size > 0 else hidden_size.
        - Input: (L, N, input_size), (N, L, input_size) if batch_first, or (L, input_size)
        - hx: a tuple (h_0, c_0) of (D * num_layers, N, P) and (D * num_layers, N, H), without
          the N axis unbatched; zeros when None
        - Output: (output, (h_n, c_n)); output (L, N, D * P) (batch_first: (N, L, D * P);
          unbatched: (L, D * P)), h_n and c_n the shapes of h_0 and c_0.

    Attributes:
        weight_ih_l{k}: (4H, input_size) for k = 0, else (4H, D * P); weight_hh_l{k}: (4H, P);
        bias_ih_l{k}, bias_hh_l{k}: (4H); weight_hr_l{k}: (P, H) when proj_size > 0; and each
        with the suffix _reverse when bidirectional.
    """

    gates = 4

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0):
        self._setup(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size)

    def _states(self, hx: State | None, x: Tensor, input: Tensor, batched: bool) -> list[State]:
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, not {type(hx).__name__}")
        h0, c0 = (None, None) if hx is None else hx
        hs = self._check_state(h0, self.proj_size or self.hidden_size, x, input, batched, "h_0")
        cs = self._check_state(c0, self.hidden_size, x, input, batched, "c_0")
        return list(zip(hs, cs))

    def _step(self, gi: Tensor, state: State, w: tuple) -> State:
        h, c = state
        return lstm_step(gi, h, c, w[0], w[1], w[2])

    def _pack(self, finals: list[State], batched: bool) -> State:
        h_n = super()._pack([h for h, _ in finals], batched)
        c_n = super()._pack([c for _, c in finals], batched)
        return h_n, c_n
