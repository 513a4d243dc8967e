"""minigrad.nn: modules, layers, attention and transformer blocks built on minigrad tensors."""

from . import attention_drawing, functional, init
from .attention import (
    AdditiveAttention,
    BilinearAttention,
    MultiheadAttention,
    causal_mask,
    masked_softmax,
    padding_mask,
)
from .attention_maps import AttentionMaps, AttentionRecord, record_attention
from .layers import GELU, Dropout, Embedding, Identity, LayerNorm, Linear, ReLU, Sigmoid, Softmax, Tanh
from .module import Module, ModuleList, Parameter, Sequential, evaluating
from .packed_attention import KVCache
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .recurrent import GRUCell, RNNCell
from .transformer import (
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "GELU", "AdditiveAttention", "AttentionMaps", "AttentionRecord", "BilinearAttention", "Dropout",
    "Embedding", "GRUCell", "Identity", "KVCache", "LayerNorm", "LearnedPositionalEmbedding", "Linear",
    "Module", "ModuleList", "MultiheadAttention", "Parameter", "RNNCell", "ReLU", "Sequential", "Sigmoid",
    "SinusoidalPositionalEncoding", "Softmax", "Tanh", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer", "causal_mask", "evaluating", "functional", "init",
    "masked_softmax", "padding_mask", "record_attention",
]

attention_drawing.register_attention_drawings()  # draw_graph(expand_fused=True) draws attention as its steps
