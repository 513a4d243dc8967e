"""Exercise 12 · positional_encoding: the sinusoidal table of "Attention Is All You Need".

Attention is permutation-equivariant: shuffle the tokens and the outputs just shuffle too, so
"dog bites man" = "man bites dog". The lecture adds a position vector to each embedding,
    x~_t = x_t + p_t
and the original transformer's p_t are fixed sinusoids. For position pos and i = 0, 1, ...:
    PE[pos, 2i]     = sin(pos / 10000^(2i / d))
    PE[pos, 2i + 1] = cos(pos / 10000^(2i / d))
Each pair of columns is a sine and a cosine of one frequency, from one turn per 2*pi positions
(i = 0) down to one per 2*pi * 10000 positions, so every position gets a distinct code.
With an odd d the last column is a sine (its cosine partner would be column d).

Write `sinusoidal_table(max_len, d)` (numpy, float64, shape (max_len, d)) and
`add_positions(x, table)`: x (..., T, d) plus the table's first T rows (a Tensor operation,
so the gradient reaches x). Check your work with
    minigrad exercise check positional_encoding
"""

import numpy as np  # noqa: F401  (for your table)

from minigrad import Tensor


def sinusoidal_table(max_len: int, d: int) -> np.ndarray:
    """PE (max_len, d): sines in the even columns, cosines in the odd ones."""
    # Your code.
    raise NotImplementedError


def add_positions(x: Tensor, table: np.ndarray) -> Tensor:
    """x (..., T, d) + table[:T]."""
    # Your code.
    raise NotImplementedError
