"""A correct encoder_layer: the library's nn.TransformerEncoderLayer (post-norm, ReLU)."""

import minigrad.nn as nn


class EncoderLayer(nn.TransformerEncoderLayer):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__(d_model, nhead, dim_feedforward, dropout=0.0)

    def forward(self, x, mask=None):
        return super().forward(x, attend_mask=mask)
