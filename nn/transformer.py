"""Transformer blocks: encoder and decoder layers (post-norm or pre-norm), and their stacks.

Post-norm, as in the lecture (and Vaswani et al., 2017):
    Z  = LayerNorm(X + MHA(X))
    X~ = LayerNorm(Z + MLP(Z)),      MLP(Z) = linear2(dropout(activation(linear1(Z))))
Pre-norm (norm_first=True, as in GPT-2; trains deep stacks without warm-up tricks):
    Z  = X + MHA(LayerNorm(X))
    X~ = Z + MLP(LayerNorm(Z))
Masks follow the rule in `minigrad.nn.attention` (True = may attend).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from minigrad import Tensor

from . import functional as F
from .attention import MultiheadAttention
from .layers import Dropout, LayerNorm, Linear
from .module import Module, ModuleList

Activation = str | Callable[[Tensor], Tensor]


def _activation(activation: Activation) -> Callable[[Tensor], Tensor]:
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu  # the exact erf form, as PyTorch's "gelu"
    raise ValueError(f"activation must be 'relu', 'gelu' or a callable, not {activation!r}")


class _Block(Module):
    """What the encoder and decoder layers share: self-attention, the MLP and the options."""

    def _init_common(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
                     activation: Activation, norm_first: bool, layer_norm_eps: float, bias: bool) -> None:
        self.d_model, self.nhead, self.norm_first = d_model, nhead, norm_first
        self.activation_name = activation if isinstance(activation, str) else getattr(
            activation, "__name__", type(activation).__name__)
        self.activation = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def _self_attention(self, x: Tensor, mask: Any, is_causal: bool) -> Tensor:
        return self.self_attn(x, x, x, mask=mask, is_causal=is_causal)  # (B, T, d_model)

    def _mlp(self, x: Tensor) -> Tensor:
        h = self.dropout(self.activation(self.linear1(x)))  # (B, T, dim_feedforward)
        return self.linear2(h)  # (B, T, d_model)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, nhead={self.nhead}, norm_first={self.norm_first}, "
                f"activation={self.activation_name}")


class TransformerEncoderLayer(_Block):
    """Self-attention and a position-wise MLP, each with a residual connection and LayerNorm.

    Args:
        d_model: the model size.
        nhead: the number of attention heads (must divide d_model).
        dim_feedforward: the hidden size of the MLP.
        dropout: on the attention weights, inside the MLP and on both residual branches.
        activation: "relu", "gelu" (exact) or a callable.
        norm_first: pre-norm (True) or post-norm (False, the original and the lecture's).
        layer_norm_eps: eps of the two LayerNorms.
        bias: biases in the Linear layers and LayerNorms.

    Shape:
        - src: (B, T, d_model); src_mask: broadcasting to (B, nhead, T, T)
        - Output: (B, T, d_model)

    Attributes:
        self_attn, linear1, linear2, norm1, norm2, dropout (in the MLP), dropout1, dropout2
        (on the residual branches).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5,
                 bias: bool = True):
        self._init_common(d_model, nhead, dim_feedforward, dropout, activation, norm_first,
                          layer_norm_eps, bias)

    def forward(self, src: Tensor, src_mask: Any = None, is_causal: bool = False) -> Tensor:
        x = src  # (B, T, d_model)
        if self.norm_first:
            x = x + self.dropout1(self._self_attention(self.norm1(x), src_mask, is_causal))
            x = x + self.dropout2(self._mlp(self.norm2(x)))
        else:
            x = self.norm1(x + self.dropout1(self._self_attention(x, src_mask, is_causal)))
            x = self.norm2(x + self.dropout2(self._mlp(x)))
        return x


class TransformerDecoderLayer(_Block):
    """Masked self-attention, cross-attention to the encoder's memory, and a position-wise MLP,
    each with a residual connection and LayerNorm.

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, norm_first, layer_norm_eps, bias:
            as for TransformerEncoderLayer.

    Shape:
        - tgt: (B, T, d_model); memory: (B, S, d_model)
        - tgt_mask: broadcasting to (B, nhead, T, T); memory_mask: to (B, nhead, T, S)
        - Output: (B, T, d_model)

    Attributes:
        self_attn, multihead_attn (cross-attention), linear1, linear2, norm1, norm2, norm3,
        dropout (in the MLP), dropout1, dropout2, dropout3 (on the residual branches).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5,
                 bias: bool = True):
        self._init_common(d_model, nhead, dim_feedforward, dropout, activation, norm_first,
                          layer_norm_eps, bias)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout3 = Dropout(dropout)

    def _cross_attention(self, x: Tensor, memory: Tensor, mask: Any) -> Tensor:
        return self.multihead_attn(x, memory, memory, mask=mask)  # (B, T, d_model)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_is_causal: bool = False) -> Tensor:
        x = tgt  # (B, T, d_model); memory (B, S, d_model)
        if self.norm_first:
            x = x + self.dropout1(self._self_attention(self.norm1(x), tgt_mask, tgt_is_causal))
            x = x + self.dropout2(self._cross_attention(self.norm2(x), memory, memory_mask))
            x = x + self.dropout3(self._mlp(self.norm3(x)))
        else:
            x = self.norm1(x + self.dropout1(self._self_attention(x, tgt_mask, tgt_is_causal)))
            x = self.norm2(x + self.dropout2(self._cross_attention(x, memory, memory_mask)))
            x = self.norm3(x + self.dropout3(self._mlp(x)))
        return x


def _clones(layer_or_factory: Module | Callable[[], Module], num_layers: int) -> ModuleList:
    """num_layers deep copies of a layer (identical at first, as in PyTorch), or num_layers
    calls of a factory (each initialised on its own)."""
    if num_layers < 1:
        raise ValueError(f"num_layers must be at least 1, got {num_layers}")
    if isinstance(layer_or_factory, Module):
        return ModuleList(copy.deepcopy(layer_or_factory) for _ in range(num_layers))
    if callable(layer_or_factory):
        return ModuleList(layer_or_factory() for _ in range(num_layers))
    raise TypeError(f"expected a layer or a function making one, not {type(layer_or_factory).__name__}")


class TransformerEncoder(Module):
    """A stack of encoder layers, then an optional final norm (use one with pre-norm layers).

    Args:
        encoder_layer: a TransformerEncoderLayer, deep-copied num_layers times (the copies
            start identical, as in PyTorch), or a function returning a new layer.
        num_layers: the depth.
        norm: a module applied to the output (e.g. LayerNorm(d_model)), or None.

    Shape:
        - src: (B, T, d_model); mask: broadcasting to (B, nhead, T, T)
        - Output: (B, T, d_model)
    """

    def __init__(self, encoder_layer: Module | Callable[[], Module], num_layers: int,
                 norm: Module | None = None):
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Tensor, mask: Any = None, is_causal: bool = False) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=is_causal)
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """A stack of decoder layers, each attending to the same memory, then an optional norm.

    Args:
        decoder_layer: a TransformerDecoderLayer (deep-copied) or a function returning one.
        num_layers: the depth.
        norm: a module applied to the output, or None.

    Shape:
        - tgt: (B, T, d_model); memory: (B, S, d_model)
        - tgt_mask: to (B, nhead, T, T); memory_mask: to (B, nhead, T, S)
        - Output: (B, T, d_model)
    """

    def __init__(self, decoder_layer: Module | Callable[[], Module], num_layers: int,
                 norm: Module | None = None):
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_is_causal=tgt_is_causal)
        return x if self.norm is None else self.norm(x)
