"""The functional API (`import minigrad.nn.functional as F`): layers as plain functions.

Names and arguments follow `torch.nn.functional`. This module is a facade: each function lives
with its topic and its modules (linear.py, sparse.py, activation.py, normalization.py,
dropout.py, classification.py, losses.py, conv.py, pooling.py, padding.py, batchnorm.py,
bilinear.py, upsampling.py, attention/functional.py); they check their arguments (_checks.py) and give errors
that name the function and the shapes.
"""

from .activation import (
    celu,
    celu_,
    cosine_similarity,
    elu,
    elu_,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    normalize,
    one_hot,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_,
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
from .conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d
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
from .normalization import group_norm, layer_norm, local_response_norm, rms_norm
from .padding import pad
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool1d, max_pool2d
from .sparse import embedding
from .upsampling import interpolate

__all__ = [
    "attention_reference", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "linear",
    "log_softmax", "nll_loss", "packed_self_attention", "relu", "scaled_dot_product_attention",
    "sigmoid", "softmax", "tanh", "tiled_attention",
    # activation.py
    "cosine_similarity", "elu", "hardtanh", "leaky_relu", "logsigmoid", "mish", "normalize", "one_hot",
    "silu", "softmin", "softplus",
    "celu", "glu", "hardshrink", "hardsigmoid", "hardswish", "prelu", "relu6", "rrelu", "selu", "softshrink",
    "softsign", "tanhshrink", "threshold",
    "celu_", "elu_", "hardtanh_", "leaky_relu_", "relu_", "rrelu_", "selu_", "threshold_",
    # losses.py
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss", "kl_div", "l1_loss",
    "mse_loss", "smooth_l1_loss",
    # padding.py, normalization.py, bilinear.py
    "bilinear", "group_norm", "local_response_norm", "pad", "rms_norm",
    # batchnorm.py
    "batch_norm",
    # conv.py, pooling.py
    "adaptive_avg_pool2d", "avg_pool2d", "conv1d", "conv2d", "max_pool1d", "max_pool2d",
    "conv_transpose1d", "conv_transpose2d",
    # upsampling.py
    "interpolate",
]
