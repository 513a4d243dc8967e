"""A correct additive_attention, written out from Tensor ops as the stub asks.

    e_ij = v . tanh(W_q q_i + W_k k_j),   e_ij = -inf where mask_ij is False,
    a_ij = softmax_j(e_ij),               c_i = sum_j a_ij values_j
"""

import math

from minigrad import Tensor


def additive_attention(query: Tensor, keys: Tensor, values: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor,
                       mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Bahdanau attention: returns (context (B, Tq, Dv), weights (B, Tq, Tk))."""
    q = (query @ w_q.transpose(0, 1)).unsqueeze(2)  # (B, Tq, 1, hidden)
    k = (keys @ w_k.transpose(0, 1)).unsqueeze(1)  # (B, 1, Tk, hidden)
    scores = (q + k).tanh() @ v  # every (query, key) pair, the hidden axis contracted: (B, Tq, Tk)
    if mask is not None:  # True = may attend: fill the forbidden keys, before the softmax
        scores = scores.masked_fill(~mask, -math.inf)
    weights = scores.softmax(dim=-1)  # over the keys (a row with no allowed key is all 0)
    return weights @ values, weights
