"""Exercise 14 · encoder_layer: the post-norm transformer layer of the lecture.

One layer mixes the tokens with self-attention, then processes each token with a two-layer
MLP; each part has a residual connection and a layer norm after it (post-norm, as in the
lecture and "Attention Is All You Need"):
    Z  = LayerNorm1(X + MHA(X, X, X))
    X~ = LayerNorm2(Z + MLP(Z)),          MLP(Z) = linear2(relu(linear1(Z)))
The parts are built for you in __init__ (they are the library's versions of what you wrote:
Linear in exercise 8 (`linear_layer`), layer norm in exercise 7 (`layer_norm_backward`),
multi-head attention in exercises 9 to 11 (`attention_forward`, `attention_backward`,
`multi_head`)). Write forward.

Shapes: x (B, T, d_model) -> (B, T, d_model); mask: bool (True = may attend), broadcasting to
(B, nhead, T, T), or None; pass it on as `self.self_attn(x, x, x, mask=mask, need_weights=False)[0]`
(attention returns (output, weights), as torch's does; need_weights=False leaves the weights
out, as None). Use Tensor operations (`+`, `.relu()`). Check your work with
    minigrad exercise check encoder_layer
"""

import minigrad.nn as nn
from minigrad import Tensor


class EncoderLayer(nn.Module):
    """Post-norm: Z = LN1(X + MHA(X)),  X~ = LN2(Z + linear2(relu(linear1(Z))))"""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int):
        self.self_attn = nn.MultiheadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        # Your code.
        raise NotImplementedError
