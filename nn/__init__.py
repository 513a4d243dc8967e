"""minigrad.nn: modules, layers, attention and transformer blocks built on minigrad tensors."""

from . import functional, init
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
from .module import Module, ModuleList, Parameter, Sequential
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .recurrent import GRUCell, RNNCell
from .transformer import (
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
