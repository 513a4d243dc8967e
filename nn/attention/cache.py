"""The KV cache of generation (`KVCache`): the keys and values a self-attention layer has seen,
written in place by the packed kernel (packed.py) and owned by `nn.MultiheadAttention`.
"""

from __future__ import annotations

import numpy as np

from minigrad.errors import ShapeError


class KVCache:
    """The keys and values a self-attention layer has seen, so that generating one more token
    costs one query against them instead of recomputing the whole prefix.

    Each call of the layer with the cache writes its T new keys and values (B, H, T, D) after
    the `length` cached ones, in place, and attends to all of them: the new queries see every
    cached key and, among the new ones, those at or before their own position (the causal mask
    with offset `length`, the tiled kernel's `causal_offset`).

    Args:
        capacity: the most positions it will hold (a model's context length). The buffers are
            then allocated once, at the first write; without it they grow geometrically from
            `MIN_ROWS` rows, so a step still writes in place and copies the cached rows only
            when the buffer doubles.

    Attributes:
        k, v: the buffers (B, H, rows, D), None before the first write; rows >= length.
        length: how many positions are filled.
    """

    # Rows of the first buffer without a capacity: a short prompt and its first few tokens fit
    # without a regrowth, and 16 rows of (B, H, D) cost nothing next to one step's matmuls.
    MIN_ROWS = 16

    def __init__(self, capacity: int | None = None):
        if capacity is not None and capacity < 1:
            raise ValueError(f"KVCache: capacity must be a positive number of positions, got {capacity}")
        self.capacity = capacity
        self.k: np.ndarray | None = None
        self.v: np.ndarray | None = None
        self.length = 0

    def append(self, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write the new keys and values (B, H, T, D) after the cached ones; return views of all
        (B, H, length, D). No copy of the cached rows per step (re-concatenating them made a
        step O(length) copies)."""
        n, T = self.length, k.shape[2]
        if n and self.k.shape[:2] != k.shape[:2]:  # else numpy's broadcast error, naming nothing
            raise ShapeError(
                f"KVCache: the KV cache holds {self.k.shape[0]} rows of the batch, got {k.shape[0]} "
                f"(and {self.k.shape[1]} heads, got {k.shape[1]}); start a new cache for another batch")
        if self.capacity is not None and n + T > self.capacity:
            raise ValueError(f"KVCache: {n} cached positions and {T} new ones pass its capacity "
                             f"{self.capacity}; start a new cache (or give a larger capacity)")
        if self.k is None or self.k.shape[2] < n + T or self.k.shape[:2] != k.shape[:2]:
            if self.capacity is not None:
                rows = self.capacity
            else:
                rows = max(n + T, 2 * (0 if self.k is None else self.k.shape[2]), self.MIN_ROWS)
            new_k = np.empty(k.shape[:2] + (rows,) + k.shape[3:], dtype=k.dtype)
            new_v = np.empty(v.shape[:2] + (rows,) + v.shape[3:], dtype=v.dtype)
            if n:
                new_k[:, :, :n], new_v[:, :, :n] = self.k[:, :, :n], self.v[:, :, :n]
            self.k, self.v = new_k, new_v
        self.k[:, :, n:n + T] = k
        self.v[:, :, n:n + T] = v
        self.length = n + T
        return self.k[:, :, :n + T], self.v[:, :, :n + T]

    def __repr__(self) -> str:
        return f"KVCache(length={self.length}, capacity={self.capacity})"
