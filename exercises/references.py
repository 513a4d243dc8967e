"""The reference solutions the grader compares with: the library's own kernels, called the way
each exercise's stub is called."""

from __future__ import annotations

import math

import numpy as np

from minigrad.nn.fused_attention import Attention
from minigrad.nn.kernels import CrossEntropy, LayerNorm, Linear
from minigrad.ops.elementwise import Div, Mul
from minigrad.ops.linalg import MatMul
from minigrad.ops.reduce import Max, Mean, Softmax, Sum
from minigrad.tensor import Tensor


def softmax(x: Tensor) -> Tensor:
    """softmax over the last axis (minigrad.ops.reduce.Softmax)."""
    return Softmax.apply(x, dim=-1)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: np.ndarray | Tensor | None = None,
              scale: float | None = None) -> Tensor:
    """softmax(q k^T / sqrt(d) masked) v through the fused kernel (minigrad.nn.fused_attention);
    `mask` is bool, True = may attend."""
    allowed = None if mask is None else np.asarray(getattr(mask, "data", mask), dtype=bool)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return Attention.apply(q, k, v, allowed=allowed, scale=scale)


def mul(a: Tensor, b: Tensor) -> Tensor:
    return Mul.apply(a, b)


def div(a: Tensor, b: Tensor) -> Tensor:
    return Div.apply(a, b)


def layer_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """Layer norm over the last axis, eps 1e-5 (minigrad.nn.kernels.LayerNorm)."""
    return LayerNorm.apply(x, w, b, ndim=1, eps=1e-5)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return MatMul.apply(a, b)


def reduce_sum(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return Sum.apply(x, dim=dim, keepdim=keepdim)


def reduce_mean(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return Mean.apply(x, dim=dim, keepdim=keepdim)


def reduce_max(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return Max.apply(x, dim=dim, keepdim=keepdim)


def cross_entropy(x: Tensor, t: Tensor) -> Tensor:
    """Mean cross entropy of logits (N, C) against classes (N,) (minigrad.nn.kernels)."""
    return CrossEntropy.apply(x, t)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b (minigrad.nn.kernels.Linear)."""
    return Linear.apply(x, weight) if bias is None else Linear.apply(x, weight, bias)


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    B, T, C = x.shape
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)  # (B, H, T, D)


def merge_heads(x: Tensor) -> Tensor:
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


def multi_head(q: Tensor, k: Tensor, v: Tensor, num_heads: int,
               mask: np.ndarray | Tensor | None = None) -> Tensor:
    """The core of minigrad.nn.MultiheadAttention (without the projections)."""
    heads = [split_heads(t, num_heads) for t in (q, k, v)]
    return merge_heads(attention(*heads, mask=mask))


def additive_attention(query: Tensor, keys: Tensor, values: Tensor, w_q: Tensor, w_k: Tensor, v: Tensor,
                       mask: np.ndarray | Tensor | None = None) -> tuple[Tensor, Tensor]:
    """minigrad.nn.AdditiveAttention with the given weights: (context, weights)."""
    from minigrad.nn import AdditiveAttention

    layer = AdditiveAttention(query.shape[-1], keys.shape[-1], w_q.shape[0])
    layer.w_q.weight, layer.w_k.weight, layer.v.weight = w_q, w_k, v.reshape(1, v.shape[0])
    return layer(query, keys, values, mask=mask)
