"""The private names several attention modules share, each defined once: the kernels' array helpers
(`_T`, the one column helper `_with_column`, `_LOG2E` for exp2), the causal mask as an array
(`_causal`), dropout's multipliers, the default scale and its name, the batch-first check of the
layers, and what a kernel's node keeps for its drawing (`Drawing`). A private name belongs to
one module and is imported from it alone (the tiled kernel's grid `_Tiles` from tiles.py, the
recorder `_record` from maps.py); only the names here are imported outside the package
(nn/transformer.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from minigrad.random import generator

_LOG2E = math.log2(math.e)  # exp(x) = 2**(x log2(e)): the kernels' exp2 (tiles.py, one_block.py)

# A boolean mask of at most this many entries stays on the node, so that a drawing with
# show_values can recompute the weights of a small attention (drawing.py).
SMALL_MASK = 4096


@dataclass(frozen=True)
class Drawing:
    """What an attention kernel's node keeps for its drawing and for a reader, never for backward
    (`ctx.drawing`, read by drawing.py): whether a mask applied (a boolean mask or the causal
    rule), whether it was the causal rule, the dropout probability, the mask itself when it has at
    most SMALL_MASK entries (else None), and which kernel ran (the packed op runs the one-block or
    the tiled one)."""

    masked: bool
    causal: bool = False
    dropout_p: float = 0.0
    small_mask: np.ndarray | None = None
    kernel: type | None = None

    @classmethod
    def of(cls, allowed: np.ndarray | None, *, causal: bool = False, dropout_p: float = 0.0,
           kernel: type | None = None) -> Drawing:
        small = allowed if allowed is not None and allowed.size <= SMALL_MASK else None
        return cls(allowed is not None or causal, causal, dropout_p, small, kernel)


def _T(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


def _with_column(x: np.ndarray, column, transposed: bool = False) -> np.ndarray:
    """[x, column]: x (..., T, f) with one more feature, a constant or a (..., T, 1) array
    (leading axes broadcast); a subtraction is folded into a matmul by it:
    [X, -c] [Y, 1]^T = X Y^T - c.

    transposed: [x, column]^T (or x^T for column None) as a contiguous (..., f (+ 1), T) array:
    numpy multiplies batches of small matrices about 2x faster from it than from a transposed view.
    """
    if transposed:
        out = np.empty(x.shape[:-2] + (x.shape[-1] + (column is not None), x.shape[-2]), x.dtype)
        out[..., :x.shape[-1], :] = _T(x)
        if column is not None:
            out[..., -1, :] = column
        return out
    lead = x.shape[:-1] if np.isscalar(column) else np.broadcast_shapes(x.shape[:-1], column.shape[:-1])
    out = np.empty(lead + (x.shape[-1] + 1,), x.dtype)
    out[..., :-1] = x
    out[..., -1:] = column
    return out


def _causal(tq: int, tk: int, offset: int = 0) -> np.ndarray:
    """(Tq, Tk) bool, True where key j <= query i + offset (0: top-left aligned, like torch.tril;
    Tk - Tq: the last query on the last key, as with a KV cache)."""
    return np.tri(tq, tk, k=offset, dtype=bool)


def _dropout_keep(shape: tuple[int, ...], p: float, dtype: Any) -> np.ndarray:
    """Inverted-dropout multipliers: 1/(1-p) with probability 1-p, else 0 (global generator).

    Both attention paths draw through here, so after the same `manual_seed` they drop the
    same weights and can be compared with dropout on.
    """
    if p >= 1:
        return np.zeros(shape, dtype=dtype)
    keep = generator().random(shape, dtype=np.float32) >= p  # as kernels.Dropout draws
    return keep * np.dtype(dtype).type(1.0 / (1.0 - p))


def _default_scale(d: int) -> float:
    """1 / sqrt(d); 1 for d = 0, where every score is an empty sum, 0, whatever the scale (the
    softmax is then uniform and the output the mean of the values, as in PyTorch)."""
    return 1.0 / math.sqrt(d) if d > 0 else 1.0


def _scale_name(scale: float, d: int) -> str:
    """`1/sqrt(d_k)` when the scale is the usual one, else its value."""
    return "1/sqrt(d_k)" if d > 0 and math.isclose(scale, _default_scale(d)) else f"scale {scale:.4g}"
