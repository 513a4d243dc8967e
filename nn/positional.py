"""Positional encodings: attention sees a set, so order is added to the embeddings.

Both modules add one vector per position to x (B, T, d): x~_t = x_t + p_t. The sinusoidal
table is fixed (Vaswani et al., 2017); the learned one is a Parameter (as in GPT and BERT).
"""

from __future__ import annotations

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError

from . import init
from .module import Module, Parameter


def _check(name: str, x: Tensor, d_model: int, max_len: int, offset: int) -> int:
    """The sequence length T of x (*, T, d_model), checked against max_len."""
    if x.ndim < 2 or x.shape[-1] != d_model:
        raise ShapeError(f"{name}: expected input of shape (*, T, {d_model}), got {x.shape}")
    t = x.shape[-2]
    if offset < 0 or offset + t > max_len:
        raise ValueError(
            f"{name}: positions {offset}..{offset + t - 1} do not fit max_len={max_len} "
            f"(sequence length {t}, offset {offset}); build the module with a larger max_len"
        )
    return t


def sinusoidal_table(max_len: int, d_model: int) -> np.ndarray:
    """PE (max_len, d_model): PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same).

    With an odd d_model the last column is a sine (its cosine partner would be column d).
    """
    pos = np.arange(max_len, dtype=np.float64)[:, None]  # (max_len, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # 2i = 0, 2, 4, ...
    angle = pos / 10000.0 ** (two_i / d_model)  # (max_len, ceil(d / 2))
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe


class SinusoidalPositionalEncoding(Module):
    """Add the fixed sinusoidal table of "Attention Is All You Need" to the input.

    Each pair of columns (2i, 2i+1) is a sine and cosine of wavelength 2*pi * 10000^(2i/d),
    so every position gets a distinct code and p_{t+k} is a linear function of p_t. The table
    is a plain array, not a Parameter: it has no gradient and is not in the state dict.

    Args:
        d_model: feature size d.
        max_len: the longest sequence (plus offset) the table covers.

    Shape:
        x: (*, T, d_model) with T + offset <= max_len; output: the same shape.
    """

    def __init__(self, d_model: int, max_len: int = 5000):
        self.d_model, self.max_len = d_model, max_len
        self.pe = sinusoidal_table(max_len, d_model).astype(np.float32)  # (max_len, d_model)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x + PE[offset : offset + T]; offset > 0 continues a sequence (e.g. with a KV cache)."""
        t = _check("SinusoidalPositionalEncoding", x, self.d_model, self.max_len, offset)
        return x + Tensor(self.pe[offset: offset + t].astype(x.dtype, copy=False))

    def extra_repr(self) -> str:
        return f"{self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(Module):
    """Add a learned vector per position: x_t + weight[t].

    The table starts as N(0, 0.02^2), as in GPT-2, and is trained with the model.

    Args:
        max_len: the number of positions (the longest sequence).
        d_model: feature size d.

    Shape:
        x: (*, T, d_model) with T + offset <= max_len; output: the same shape.
        weight: (max_len, d_model).
    """

    def __init__(self, max_len: int, d_model: int):
        self.max_len, self.d_model = max_len, d_model
        self.weight = Parameter(np.zeros((max_len, d_model), dtype=np.float32))
        init.normal_(self.weight, 0.0, 0.02)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x + weight[offset : offset + T] (the rows past the sequence get no gradient)."""
        t = _check("LearnedPositionalEmbedding", x, self.d_model, self.max_len, offset)
        return x + self.weight[offset: offset + t]

    def extra_repr(self) -> str:
        return f"{self.max_len}, {self.d_model}"

