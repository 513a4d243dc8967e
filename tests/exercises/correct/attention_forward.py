"""A correct attention_forward, written out from Tensor ops as the stub asks.

    S = Q K^T / sqrt(d),   S_ij = -inf where mask_ij is False,   O = softmax(S) V
"""

import math

from minigrad import Tensor


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
    """softmax(q k^T / sqrt(d), masked before the softmax) v"""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
    if mask is not None:  # True = may attend: fill the forbidden keys, before the softmax
        scores = scores.masked_fill(~mask, -math.inf)
    weights = scores.softmax(dim=-1)  # each row sums to 1 (a row with no allowed key is all 0)
    return weights @ v  # (..., Tq, dv)
