"""Exercise 9 · attention_forward: scaled dot-product attention with a mask.

    S = Q K^T / sqrt(d)              d: the size of a query (the last axis of q)
    S_ij = -inf where mask_ij is False         (True = query i may attend to key j)
    A = softmax(S)                   over the keys (the last axis); each row sums to 1
    O = A V

The mask is applied to the scores, before the softmax, as -inf: exp(-inf) = 0, so a forbidden
key gets weight exactly 0 and the allowed weights of the row still sum to 1. A row with no
allowed key at all gives weights 0 and output 0 (minigrad's softmax returns 0 for a row that is
all -inf, not nan).

Shapes: q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv) -> O (..., Tq, dv); the mask is a bool
Tensor broadcasting to (..., Tq, Tk), or None. Write it with Tensor operations (the engine
then does the backward for you): `a @ b`, `x.transpose(-2, -1)`, `x.masked_fill(m, value)`
(fills where m is True; `~mask` flips a bool mask), `x.softmax(dim=-1)`, `math.sqrt`.
Check your work with
    minigrad exercise check attention_forward          (add --train to train a GPT with it)
"""

import math  # noqa: F401  (for math.sqrt and math.inf)

from minigrad import Tensor


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> Tensor:
    """softmax(q k^T / sqrt(d), masked before the softmax) v"""
    # Your code: return O, a Tensor of shape (..., Tq, dv).
    raise NotImplementedError
