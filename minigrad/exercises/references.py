"""The reference solutions the grader compares with: the library's own kernels, called the way
each exercise's stub is called."""

from __future__ import annotations

import math

import numpy as np

from minigrad.autograd import Function
from minigrad.nn.attention.one_block import Attention
from minigrad.nn.classification import CrossEntropy
from minigrad.nn.linear import LinearOp
from minigrad.nn.normalization import LayerNormOp
from minigrad.ops.arithmetic import Div, Mul
from minigrad.ops.linalg import MatMul
from minigrad.ops.pointwise import SigmoidOp
from minigrad.ops.reduce import Max, Mean, SoftmaxOp, Sum
from minigrad.tensor import Tensor


def softmax(x: Tensor) -> Tensor:
    """softmax over the last axis (minigrad.ops.reduce.SoftmaxOp)."""
    return SoftmaxOp.apply(x, dim=-1)


def attention(q: Tensor, k: Tensor, v: Tensor, mask: np.ndarray | Tensor | None = None,
              scale: float | None = None) -> Tensor:
    """softmax(q k^T / sqrt(d) masked) v through the fused kernel (minigrad.nn.attention.one_block);
    `mask` is bool, True = may attend."""
    allowed = None if mask is None else np.asarray(getattr(mask, "_data", mask), dtype=bool)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return Attention.apply(q, k, v, allowed=allowed, scale=scale)


def mul(a: Tensor, b: Tensor) -> Tensor:
    return Mul.apply(a, b)


def div(a: Tensor, b: Tensor) -> Tensor:
    return Div.apply(a, b)


def layer_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """Layer norm over the last axis, eps 1e-5 (minigrad.nn.normalization.LayerNormOp)."""
    return LayerNormOp.apply(x, w, b, ndim=1, eps=1e-5)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return MatMul.apply(a, b)


def reduce_sum(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return Sum.apply(x, dim=dim, keepdim=keepdim)


def reduce_mean(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return Mean.apply(x, dim=dim, keepdim=keepdim)


def reduce_max(x: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return Max.apply(x, dim=dim, keepdim=keepdim)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) (minigrad.ops.pointwise.SigmoidOp, whose backward is differentiable)."""
    return SigmoidOp.apply(x)


def cross_entropy(x: Tensor, t: Tensor) -> Tensor:
    """Mean cross entropy of logits (N, C) against classes (N,) (minigrad.nn.classification.CrossEntropy)."""
    return CrossEntropy.apply(x, t)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b (minigrad.nn.linear.LinearOp)."""
    return LinearOp.apply(x, weight) if bias is None else LinearOp.apply(x, weight, bias)


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


# ----------------------------------------------------------------------------- conv2d
# Its own numpy (index arrays, one matrix product, np.add.at), not minigrad.nn's convolution:
# the exercise is graded against an independent derivation.


def conv2d_output_size(h: int, w: int, kh: int, kw: int, stride: int, padding: int) -> tuple[int, int]:
    """PyTorch's output size: floor((H + 2 padding - kH) / stride) + 1 along each axis."""
    return (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1


def conv2d_indices(c: int, h: int, w: int, kh: int, kw: int, stride: int,
                   padding: int) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[int, int]]:
    """Index arrays (channel, row, column), each (C*kH*kW, Ho*Wo), into the padded input:
    row (c*kH + i)*kW + j of column h*Wo + w reads x_padded[c, h*stride + i, w*stride + j]."""
    ho, wo = conv2d_output_size(h, w, kh, kw, stride, padding)
    ci, ii, jj = (a.reshape(-1, 1) for a in np.meshgrid(np.arange(c), np.arange(kh), np.arange(kw),
                                                         indexing="ij"))
    oh, ow = (a.reshape(1, -1) for a in np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij"))
    rows, cols = ii + stride * oh, jj + stride * ow
    return (np.broadcast_to(ci, rows.shape), rows, cols), (ho, wo)


class Conv2d(Function):
    """out[n, o, h, w] = b[o] + sum_{c, i, j} wt[o, c, i, j] * x_pad[n, c, s*h + i, s*w + j]

    As one product: out_n = Wt cols_n + b, Wt (O, C*kH*kW), cols_n (C*kH*kW, Ho*Wo) the windows.
    dcols_n = Wt^T g_n, scattered back (added) onto x_pad, then cropped: dx;
    dw = sum_n g_n cols_n^T;  db = sum of g over n, h, w."""

    @staticmethod
    def forward(ctx, x, w, b, *, stride=1, padding=0):
        (n, c, h, wd), (o, cw, kh, kw) = x.shape, w.shape
        if cw != c or b.shape != (o,):
            raise ValueError(f"conv2d reference: input {x.shape}, weight {w.shape}, bias {b.shape}: "
                             "the weight is (out, in, kH, kW) and the bias (out,)")
        index, (ho, wo) = conv2d_indices(c, h, wd, kh, kw, stride, padding)
        if ho < 1 or wo < 1:
            raise ValueError(f"conv2d reference: kernel {(kh, kw)} larger than the padded input "
                             f"{(h + 2 * padding, wd + 2 * padding)}")
        pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
        cols = np.pad(x, pad)[:, index[0], index[1], index[2]]  # (N, C*kH*kW, Ho*Wo)
        ctx.save_for_backward(cols, w)
        ctx.index, ctx.x_shape, ctx.padding = index, x.shape, padding
        return (w.reshape(o, -1) @ cols + b[:, None]).reshape(n, o, ho, wo)

    @staticmethod
    def backward(ctx, g):
        cols, w = ctx.saved
        (n, c, h, wd), p = ctx.x_shape, ctx.padding
        g2 = g.reshape(n, g.shape[1], -1)  # (N, O, Ho*Wo)
        dx_pad = np.zeros((n, c, h + 2 * p, wd + 2 * p))
        np.add.at(dx_pad, (slice(None), *ctx.index), w.reshape(w.shape[0], -1).T @ g2)
        dw = (g2 @ cols.transpose(0, 2, 1)).sum(axis=0).reshape(w.shape)
        return dx_pad[:, :, p:p + h, p:p + wd], dw, g.sum(axis=(0, 2, 3))


def conv2d(x: Tensor, w: Tensor, b: Tensor, stride: int = 1, padding: int = 0) -> Tensor:
    """The 2-D cross-correlation of x (N, C, H, W) with w (O, C, kH, kW), plus b (O,)."""
    return Conv2d.apply(x, w, b, stride=stride, padding=padding)
