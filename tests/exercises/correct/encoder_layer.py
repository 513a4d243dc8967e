"""A correct encoder_layer, written out as the stub asks (post-norm, ReLU):

    Z  = LayerNorm1(X + MHA(X, X, X))
    X~ = LayerNorm2(Z + linear2(relu(linear1(Z))))
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
        a = self.self_attn(x, x, x, mask=mask, need_weights=False)[0]  # (B, T, d_model)
        z = self.norm1(x + a)  # attention, residual, norm: (B, T, d_model)
        h = self.linear1(z).relu()  # (B, T, dim_feedforward)
        return self.norm2(z + self.linear2(h))  # the MLP, residual, norm: (B, T, d_model)
