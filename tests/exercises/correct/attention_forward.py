"""A correct attention_forward: the library's scaled_dot_product_attention."""

import minigrad.nn.functional as F


def attention(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, mask=mask)
