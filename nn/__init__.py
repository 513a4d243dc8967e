"""minigrad.nn: modules, layers, attention and transformer blocks built on minigrad tensors."""

from . import functional, init, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .attention import (
    AdditiveAttention,
    BilinearAttention,
    KVCache,
    MultiheadAttention,
    causal_mask,
    masked_softmax,
    padding_mask,
)
from .attention.maps import AttentionMaps, AttentionRecord, record_attention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .bilinear import Bilinear
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, Parameter, evaluating
from .normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool1d, MaxPool2d
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .recurrent import GRUCell, LSTMCell, RNNCell
from .recurrent_layers import GRU, LSTM, RNN
from .sparse import Embedding
from .transformer import (
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "GELU", "AdditiveAttention", "AttentionMaps", "AttentionRecord", "BilinearAttention", "Dropout",
    "Embedding", "GRUCell", "Identity", "KVCache", "LayerNorm", "LearnedPositionalEmbedding", "Linear",
    "Module", "ModuleList", "MultiheadAttention", "Parameter", "RNNCell", "ReLU", "Sequential", "Sigmoid",
    "SinusoidalPositionalEncoding", "Softmax", "Tanh", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer", "causal_mask", "evaluating", "functional", "init",
    "masked_softmax", "padding_mask", "record_attention",
    # activations and losses
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "ELU", "Hardtanh", "HuberLoss", "KLDivLoss", "L1Loss",
    "LeakyReLU", "LogSigmoid", "LogSoftmax", "MSELoss", "Mish", "NLLLoss", "SiLU", "SmoothL1Loss", "Softmin",
    "Softplus",
    "CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "PReLU", "RReLU", "ReLU6", "SELU", "Softmax2d",
    "Softshrink", "Softsign", "Tanhshrink", "Threshold",
    # containers and shape
    "Flatten", "ModuleDict", "ParameterDict", "ParameterList", "Unflatten",
    # submodules
    "utils",
    # recurrent layers
    "GRU", "LSTM", "LSTMCell", "RNN",
    # normalization and bilinear layers
    "Bilinear", "GroupNorm", "LocalResponseNorm", "RMSNorm",
    # batch normalization
    "BatchNorm1d", "BatchNorm2d",
    # convolution and pooling layers
    "AdaptiveAvgPool2d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d",
    # upsampling layers
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
    "ConvTranspose1d", "ConvTranspose2d",
]
