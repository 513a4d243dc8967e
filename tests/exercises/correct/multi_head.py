"""A correct multi_head, written out from Tensor ops: the heads split and merged by hand, each
head attended with F.scaled_dot_product_attention (which the stub offers for that step)."""

import minigrad.nn.functional as F
from minigrad import Tensor


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """(B, T, C) -> (B, T, H, D) -> (B, H, T, D): head h holds features h*D .. (h+1)*D - 1."""
    B, T, C = x.shape
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, D) -> (B, T, H, D) -> (B, T, H*D): position t is concat(head_1[t], ..., head_H[t])."""
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


def multi_head_attention(q: Tensor, k: Tensor, v: Tensor, num_heads: int,
                         mask: Tensor | None = None) -> Tensor:
    """q (B, Tq, C), k (B, Tk, C), v (B, Tk, C) -> (B, Tq, C): split, attend per head, merge."""
    qh, kh, vh = (split_heads(t, num_heads) for t in (q, k, v))  # each with its own length
    return merge_heads(F.scaled_dot_product_attention(qh, kh, vh, mask=mask))  # scale 1/sqrt(D)
