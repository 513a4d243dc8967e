"""Transformer blocks: encoder and decoder layers (post-norm or pre-norm), and their stacks.

Post-norm, as in the lecture (and Vaswani et al., 2017):
    Z  = LayerNorm(X + MHA(X))
    X~ = LayerNorm(Z + MLP(Z)),      MLP(Z) = linear2(dropout(activation(linear1(Z))))
Pre-norm (norm_first=True, as in GPT-2; trains deep stacks without warm-up tricks):
    Z  = X + MHA(LayerNorm(X))
    X~ = Z + MLP(LayerNorm(Z))
minigrad's own `attend_mask=` follows the rule in `minigrad.nn.attention` (True = may attend).
PyTorch's mask arguments (`src_mask`, `tgt_mask`, `memory_mask`, the stacks' `mask`, and the
`*_key_padding_mask`s) keep PyTorch's meaning, True = masked out (see attention/masks.py).
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from minigrad import Tensor

from . import functional as F
from .attention import MultiheadAttention
from .attention.masks import combine_masks, from_torch_masks
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

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
                     activation: Activation, norm_first: bool, layer_norm_eps: float, bias: bool,
                     batch_first: bool) -> None:
        self.batch_first = bool(batch_first)  # False: (T, B, d_model) in and out, as torch's default
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
        return self.self_attn(x, x, x, mask=mask, is_causal=is_causal,
                              need_weights=False)[0]  # (B, T, d_model)

    def _masks(self, attend_mask: Any, torch_mask: Any, padding: Any, x: Tensor, keys: Tensor,
               names: tuple[str, str]) -> Any:
        return _masks(self, attend_mask, torch_mask, padding, x, keys, names)

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
        layer_norm_eps: eps of the two LayerNorms.
        batch_first: True (minigrad's default, (B, T, d_model)) or False (torch's default:
            src and the output (T, B, d_model); the masks as below).
        norm_first: pre-norm (True) or post-norm (False, the original and the lecture's).
        bias: biases in the Linear layers and LayerNorms.

    Shape:
        - src: (B, T, d_model); attend_mask (True = may attend): broadcasting to (B, nhead, T, T)
        - src_mask (PyTorch's, True = masked out): (T, T) or (B * nhead, T, T);
          src_key_padding_mask (PyTorch's, True = padding): (B, T)
        - Output: (B, T, d_model)

    Attributes:
        self_attn, linear1, linear2, norm1, norm2, dropout (in the MLP), dropout1, dropout2
        (on the residual branches).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, bias: bool = True):
        self._init_common(d_model, nhead, dim_feedforward, dropout, activation, norm_first,
                          layer_norm_eps, bias, batch_first)

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False, *, attend_mask: Any = None) -> Tensor:
        x = _layout_swap(self, src)  # (B, T, d_model)
        mask = self._masks(attend_mask, src_mask, src_key_padding_mask, x, x,
                           ("src_mask", "src_key_padding_mask"))
        if self.norm_first:
            x = x + self.dropout1(self._self_attention(self.norm1(x), mask, is_causal))
            x = x + self.dropout2(self._mlp(self.norm2(x)))
        else:
            x = self.norm1(x + self.dropout1(self._self_attention(x, mask, is_causal)))
            x = self.norm2(x + self.dropout2(self._mlp(x)))
        return _layout_swap(self, x)  # back to the layer's layout


class TransformerDecoderLayer(_Block):
    """Masked self-attention, cross-attention to the encoder's memory, and a position-wise MLP,
    each with a residual connection and LayerNorm.

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first, bias: as for TransformerEncoderLayer.

    Shape:
        - tgt: (B, T, d_model); memory: (B, S, d_model)
        - attend_mask (True = may attend): to (B, nhead, T, T); memory_attend_mask: to
          (B, nhead, T, S)
        - PyTorch's (True = masked out): tgt_mask (T, T) or (B * nhead, T, T), memory_mask
          (T, S) or (B * nhead, T, S), tgt_key_padding_mask (B, T), memory_key_padding_mask (B, S)
        - Output: (B, T, d_model)

    Attributes:
        self_attn, multihead_attn (cross-attention), linear1, linear2, norm1, norm2, norm3,
        dropout (in the MLP), dropout1, dropout2, dropout3 (on the residual branches).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = True,
                 norm_first: bool = False, bias: bool = True):
        self._init_common(d_model, nhead, dim_feedforward, dropout, activation, norm_first,
                          layer_norm_eps, bias, batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout3 = Dropout(dropout)

    def _cross_attention(self, x: Tensor, memory: Tensor, mask: Any, is_causal: bool) -> Tensor:
        return self.multihead_attn(x, memory, memory, mask=mask, is_causal=is_causal,
                                   need_weights=False)[0]  # (B, T, d_model)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False, *, attend_mask: Any = None,
                memory_attend_mask: Any = None) -> Tensor:
        x, memory = _layout_swap(self, tgt), _layout_swap(self, memory)  # (B, T / S, d_model)
        self_mask = self._masks(attend_mask, tgt_mask, tgt_key_padding_mask, x, x,
                                ("tgt_mask", "tgt_key_padding_mask"))
        cross_mask = self._masks(memory_attend_mask, memory_mask, memory_key_padding_mask, x, memory,
                                 ("memory_mask", "memory_key_padding_mask"))
        if self.norm_first:
            x = x + self.dropout1(self._self_attention(self.norm1(x), self_mask, tgt_is_causal))
            x = x + self.dropout2(self._cross_attention(self.norm2(x), memory, cross_mask, memory_is_causal))
            x = x + self.dropout3(self._mlp(self.norm3(x)))
        else:
            x = self.norm1(x + self.dropout1(self._self_attention(x, self_mask, tgt_is_causal)))
            x = self.norm2(x + self.dropout2(self._cross_attention(x, memory, cross_mask, memory_is_causal)))
            x = self.norm3(x + self.dropout3(self._mlp(x)))
        return _layout_swap(self, x)  # back to the layer's layout


def _layout_swap(layer: Module, x: Tensor) -> Tensor:
    """x as (B, T, d_model) from a time-major (batch_first=False) layer's (T, B, d_model), or
    back (the same swap); batch-first layers and unbatched inputs pass as they are."""
    return x if layer.batch_first or x.ndim != 3 else x.transpose(0, 1)


def _masks(owner: Module, attend_mask: Any, torch_mask: Any, padding: Any, x: Tensor, keys: Tensor,
           names: tuple[str, str]) -> Any:
    """minigrad's attend_mask combined with PyTorch's (mask, key padding mask) pair, as one
    mask in minigrad's sense; the number of heads is that of `owner` (a layer, or a stack's
    first layer), needed only for PyTorch's (B * nhead, T, S) layout."""
    if torch_mask is None and padding is None:
        return attend_mask
    B, T, S = x.shape[0], x.shape[1], keys.shape[1]
    layer = owner.layers[0] if hasattr(owner, "layers") else owner
    H = getattr(layer, "nhead", 1)
    masks = from_torch_masks(type(owner).__name__, torch_mask, padding, B, H, T, S, *names)
    if attend_mask is not None and not isinstance(attend_mask, Tensor):
        attend_mask = Tensor(attend_mask)
    return combine_masks(attend_mask, masks)


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
        enable_nested_tensor, mask_check: torch's switches for its padded fast path; accepted,
            with nothing to switch (the result is the same either way).

    Shape:
        - src: (B, T, d_model) ((T, B, d_model) for layers made with batch_first=False);
          attend_mask (True = may attend): broadcasting to (B, nhead, T, T)
        - PyTorch's (True = masked out): mask (T, T) or (B * nhead, T, T), src_key_padding_mask (B, T)
        - Output: src's shape
    """

    def __init__(self, encoder_layer: Module | Callable[[], Module], num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True, mask_check: bool = True):
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None, *, attend_mask: Any = None) -> Tensor:
        x, first = src, _layout_swap(self.layers[0], src)  # the layers take their own layout
        attend_mask = _masks(self, attend_mask, mask, src_key_padding_mask, first, first,
                             ("mask", "src_key_padding_mask"))  # once, for every layer
        for layer in self.layers:
            x = layer(x, attend_mask=attend_mask, is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """A stack of decoder layers, each attending to the same memory, then an optional norm.

    Args:
        decoder_layer: a TransformerDecoderLayer (deep-copied) or a function returning one.
        num_layers: the depth.
        norm: a module applied to the output, or None.

    Shape:
        - tgt: (B, T, d_model); memory: (B, S, d_model)
        - the masks: as for TransformerDecoderLayer
        - Output: (B, T, d_model)
    """

    def __init__(self, decoder_layer: Module | Callable[[], Module], num_layers: int,
                 norm: Module | None = None):
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False, *,
                attend_mask: Any = None, memory_attend_mask: Any = None) -> Tensor:
        first, mem = _layout_swap(self.layers[0], tgt), _layout_swap(self.layers[0], memory)  # (B, T, .)
        x = tgt
        attend_mask = _masks(self, attend_mask, tgt_mask, tgt_key_padding_mask, first, first,
                             ("tgt_mask", "tgt_key_padding_mask"))
        memory_attend_mask = _masks(self, memory_attend_mask, memory_mask, memory_key_padding_mask, first,
                                    mem, ("memory_mask", "memory_key_padding_mask"))
        for layer in self.layers:
            x = layer(x, memory, tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal,
                      attend_mask=attend_mask, memory_attend_mask=memory_attend_mask)
        return x if self.norm is None else self.norm(x)
