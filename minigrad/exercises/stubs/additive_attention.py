"""Exercise 13 · additive_attention: Bahdanau's alignment score, for the RNN decoder.

An RNN decoder at step i attends over the encoder's annotations k_j (the keys, also the
values): it scores each one against its state q_i with a small network, normalises the scores
with a softmax, and takes the weighted average as its context:
    e_ij = v . tanh(W_q q_i + W_k k_j)          one number per (query, key) pair
    e_ij = -inf where mask_ij is False            (True = may attend; before the softmax)
    a_ij = softmax_j(e_ij)                        each row sums to 1
    c_i  = sum_j a_ij values_j
Shapes: query (B, Tq, Dq) (Tq = 1 for one decoder step), keys (B, Tk, Dk), values (B, Tk, Dv);
w_q (hidden, Dq), w_k (hidden, Dk), v (hidden,); mask: bool, broadcasting to (B, Tq, Tk).
Returns (context (B, Tq, Dv), weights (B, Tq, Tk)).
A query with no allowed key gets weights 0 and context 0 (minigrad's softmax of a row that is
all -inf gives 0, not nan).

Use Tensor operations: `x @ w.transpose(0, 1)` projects the last axis, `x.unsqueeze(dim)`
adds a size-1 axis so that (B, Tq, 1, hidden) + (B, 1, Tk, hidden) broadcasts to every pair,
`.tanh()`, `t @ v` with a 1-D v contracts the last axis, `masked_fill`, `softmax(dim=-1)`.
Check your work with
    minigrad exercise check additive_attention
"""

import math  # noqa: F401  (math.inf)

from minigrad import Tensor


def additive_attention(query: Tensor, keys: Tensor, values: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor,
                       mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Bahdanau attention: returns (context, weights)."""
    # Your code.
    raise NotImplementedError
