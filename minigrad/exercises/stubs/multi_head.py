"""Exercise 11 · multi_head: split into heads, attend, merge the heads back.

Multi-head attention runs H attentions side by side on slices of the features. With C features
and H heads, each head gets D = C / H of them:
    split:   (B, T, C) -> (B, T, H, D) -> (B, H, T, D)     reshape, then swap axes 1 and 2
    attend:  each head on its own:  softmax(Q_h K_h^T / sqrt(D), masked) V_h   -> (B, H, T, D)
    merge:   (B, H, T, D) -> (B, T, H, D) -> (B, T, H*D)   swap axes 1 and 2 back, then reshape
The head axis must sit next to T in the middle and come back next to D at the end: a reshape
alone keeps the numbers in memory order and mixes positions of different heads.

Use Tensor operations: `x.reshape(*shape)`, `x.transpose(1, 2)`, and for the attention
`minigrad.nn.functional.scaled_dot_product_attention(q, k, v, mask=mask)` (or your own from
exercise 9 (`attention_forward`)). The mask is bool (True = may attend) and broadcasts to (B, H, Tq, Tk).
Check your work with
    minigrad exercise check multi_head
"""

import minigrad.nn.functional as F  # noqa: F401  (F.scaled_dot_product_attention)
from minigrad import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(B, T, C) -> (B, H, T, D), D = C / H: head h holds features h*D .. (h+1)*D - 1."""
    # Your code.
    raise NotImplementedError


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, D) -> (B, T, H*D): the inverse of split_heads."""
    # Your code.
    raise NotImplementedError


def multi_head_attention(q: Tensor, k: Tensor, v: Tensor, num_heads: int,
                         mask: Tensor | None = None) -> Tensor:
    """q (B, Tq, C), k (B, Tk, C), v (B, Tk, C) -> (B, Tq, C): split, attend per head, merge."""
    # Your code.
    raise NotImplementedError
