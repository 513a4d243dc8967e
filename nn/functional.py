"""The functional API (`import minigrad.nn.functional as F`): layers as plain functions.

Names and arguments follow `torch.nn.functional`. This module is a facade: each function lives
with its topic and its modules (linear.py, sparse.py, activation.py, normalization.py,
dropout.py, classification.py, losses.py, conv.py, pooling.py, padding.py, batchnorm.py,
bilinear.py, attention/functional.py); they check their arguments (_checks.py) and give errors
that name the function and the shapes.
"""

from .activation import (
    cosine_similarity,
    elu,
    gelu,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    normalize,
    one_hot,
    relu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    tanh,
)
from .attention.functional import (
    attention_reference,
    packed_self_attention,
    scaled_dot_product_attention,
    tiled_attention,
)
from .batchnorm import batch_norm
from .bilinear import bilinear
from .classification import cross_entropy, nll_loss
from .conv import conv1d, conv2d
from .dropout import dropout
from .linear import linear
from .losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    smooth_l1_loss,
)
from .normalization import group_norm, layer_norm
from .padding import pad
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool1d, max_pool2d
from .sparse import embedding

__all__ = [
    "attention_reference", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "linear",
    "log_softmax", "nll_loss", "packed_self_attention", "relu", "scaled_dot_product_attention",
    "sigmoid", "softmax", "tanh", "tiled_attention",
    # activation.py
    "cosine_similarity", "elu", "hardtanh", "leaky_relu", "logsigmoid", "mish", "normalize", "one_hot",
    "silu", "softmin", "softplus",
    # losses.py
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss", "kl_div", "l1_loss",
    "mse_loss", "smooth_l1_loss",
    # padding.py, normalization.py, bilinear.py
    "bilinear", "group_norm", "pad",
    # batchnorm.py
    "batch_norm",
    # conv.py, pooling.py
    "adaptive_avg_pool2d", "avg_pool2d", "conv1d", "conv2d", "max_pool1d", "max_pool2d",
]
