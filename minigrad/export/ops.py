"""The torch twin of every minigrad `Function`: `TORCH_OPS` maps the op's class to a callable
taking torch tensors (the op's inputs, in order) and the op's options as keywords.

Each entry computes what the minigrad op computes, edge cases included (a fully masked
attention row gives zeros, not NaN; a cross-entropy mean over only ignored rows is 0), so an
exported model is the same function, and torch's autograd gives the same gradients.
Ops that draw random numbers (`RANDOM_OPS`) also get `training=`, the torch module's mode.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as TF

import minigrad.nn.activation as activation
import minigrad.nn.attention.one_block as one_block
import minigrad.nn.attention.packed as packed
import minigrad.nn.attention.tiled as tiled
import minigrad.nn.classification as classification
import minigrad.nn.dropout as dropout
import minigrad.nn.linear as linear
import minigrad.nn.losses as losses
import minigrad.nn.normalization as normalization
import minigrad.nn.sparse as sparse
from minigrad.autograd import Function
from minigrad.ops import table

from .twins_arithmetic import ARITHMETIC_TWINS
from .twins_conv import CONV_TWINS
from .twins_dtype import DTYPE_TWINS, torch_dtype  # noqa: F401  (torch_dtype: the exporters' too)
from .twins_indexing import INDEXING_TWINS
from .twins_linalg import LINALG_TWINS
from .twins_nn import NN_TWINS
from .twins_ordering import ORDERING_TWINS
from .twins_pointwise import POINTWISE_TWINS
from .twins_reduce import REDUCE_TWINS, _softmax
from .twins_rounding import ROUNDING_TWINS
from .twins_shape import SHAPE_TWINS
from .twins_statistics import STATISTICS_TWINS

# ----------------------------------------------------------------------------- nn kernels


def _cross_entropy(x: torch.Tensor, target: torch.Tensor, *, ignore_index: int = -100,
                   reduction: str = "mean", label_smoothing: float = 0.0) -> torch.Tensor:
    """Class ids along the last axis; the mean divides by max(rows kept, 1), as minigrad."""
    C = x.shape[-1]
    t = target.reshape(-1).long()
    flat = TF.cross_entropy(x.reshape(-1, C), t, ignore_index=ignore_index, reduction="none",
                            label_smoothing=label_smoothing)
    if reduction == "none":
        return flat.reshape(target.shape)
    total = flat.sum()
    if reduction == "sum":
        return total
    return total / (t != ignore_index).sum().clamp(min=1).to(total.dtype)


def _layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, *,
                ndim: int = 1, eps: float = 1e-5) -> torch.Tensor:
    return TF.layer_norm(x, tuple(x.shape[x.dim() - ndim:]), weight, bias, eps)


def _dropout(x: torch.Tensor, *, p: float = 0.5, training: bool = True) -> torch.Tensor:
    return TF.dropout(x, p, training)


def _embedding(idx: torch.Tensor, weight: torch.Tensor, *, padding_idx: int | None = None) -> torch.Tensor:
    return TF.embedding(idx.long(), weight, padding_idx)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None, *,
               allowed: torch.Tensor | None = None, scale: float, dropout_p: float = 0.0,
               training: bool = True) -> torch.Tensor:
    """torch's scaled_dot_product_attention where it computes minigrad's function: a causal
    mask becomes is_causal (the fast kernels), a boolean mask is passed as it is (True = may
    attend in both). A float bias, or a row with no key allowed (torch gives NaN there,
    minigrad zeros), takes the written-out path."""
    p = dropout_p if training else 0.0
    Tq, Tk = q.shape[-2], k.shape[-2]
    if bias is None:
        if allowed is None:
            return TF.scaled_dot_product_attention(q, k, v, dropout_p=p, scale=scale)
        if allowed.dim() == 2 and Tq == Tk and torch.equal(allowed, _tril(Tq, allowed.device)):
            return TF.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True, scale=scale)
        if bool(allowed.any(-1).all()):
            return TF.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p, scale=scale)
    s = (q * scale) @ k.transpose(-2, -1)  # (..., Tq, Tk)
    if bias is not None:
        s = s + bias
    if allowed is not None:
        s = s.masked_fill(~allowed, -torch.inf)
    a = _softmax(s, dim=-1)
    return TF.dropout(a, p, training=p > 0) @ v


def _tiled_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None, *,
                     allowed: torch.Tensor | None = None, causal_offset: int | None = None, scale: float,
                     block_q: int = 0, block_k: int = 0) -> torch.Tensor:
    """The tiled kernel computes the same attention (tiles are minigrad's memory trick, not
    part of the function); `causal_offset` allows key j for query i when j <= i + offset."""
    if causal_offset is not None:
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril(causal_offset)
        allowed = causal if allowed is None else allowed & causal
    return _attention(q, k, v, bias, allowed=allowed, scale=scale, dropout_p=0.0, training=False)


def _packed_attention(qkv: torch.Tensor, bias: torch.Tensor | None = None, *, heads: int,
                      allowed: torch.Tensor | None = None, causal: bool = False, scale: float,
                      dropout_p: float = 0.0, training: bool = True) -> torch.Tensor:
    """Split qkv (B, T, 3E) into heads, attend as `_attention`, merge the heads again."""
    B, T, E = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    q, k, v = qkv.reshape(B, T, 3, heads, E // heads).permute(2, 0, 3, 1, 4)
    if causal:
        allowed = _tril(T, qkv.device) if allowed is None else allowed & _tril(T, qkv.device)
    o = _attention(q, k, v, bias, allowed=allowed, scale=scale, dropout_p=dropout_p, training=training)
    return o.transpose(1, 2).reshape(B, T, E)


_TRIL: dict[tuple, torch.Tensor] = {}


def _tril(T: int, device: torch.device) -> torch.Tensor:
    key = (T, str(device))
    if key not in _TRIL:
        _TRIL[key] = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    return _TRIL[key]


# ----------------------------------------------------------------------------- the table

TORCH_OPS: dict[type[Function], Callable[..., torch.Tensor]] = {
    # an in-place op with no gradient (y.eq_(0)) on a tensor in a graph (minigrad/ops/table.py)
    table.Overwritten: lambda x, *, values: x * 0 + torch.as_tensor(values, device=x.device),
    # the nn kernels
    linear.LinearOp: TF.linear,
    classification.CrossEntropy: _cross_entropy,
    normalization.LayerNormOp: _layer_norm,
    activation.GELUOp: lambda x, *, approximate="none": TF.gelu(x, approximate=approximate),
    dropout.DropoutOp: _dropout,
    sparse.EmbeddingOp: _embedding,
    one_block.Attention: _attention,
    tiled.TiledAttention: _tiled_attention,
    packed.PackedAttention: _packed_attention,
    activation.SoftplusOp: lambda x, *, beta=1.0, threshold=20.0: TF.softplus(x, beta, threshold),
    activation.ELUOp: lambda x, *, alpha=1.0, scale=1.0, input_scale=1.0: torch.ops.aten.elu(
        x, alpha, scale, input_scale),
    losses.BinaryCrossEntropy: lambda p, y: TF.binary_cross_entropy(p, y, reduction="none"),
    # binary_cross_entropy(sigmoid(x), y) as one op: torch's own BCE of the replayed sigmoid p
    losses.SigmoidBinaryCrossEntropy: lambda x, y, p: TF.binary_cross_entropy(p, y, reduction="none"),
}

# Ops whose torch twin draws random numbers and must know whether the module is training.
RANDOM_OPS: frozenset[type[Function]] = frozenset({dropout.DropoutOp, one_block.Attention,
                                                   packed.PackedAttention})

# The twins of the core's ops live beside this file, one file per kind of op, named as the kind's
# module in minigrad/ops/ (twins_pointwise.py for ops/pointwise.py); the twins of the nn layers
# added with the recurrent and normalisation modules and of convolution, pooling and batch norm
# too.
for twins in (ARITHMETIC_TWINS, POINTWISE_TWINS, ROUNDING_TWINS, REDUCE_TWINS, ORDERING_TWINS,
              STATISTICS_TWINS, SHAPE_TWINS, INDEXING_TWINS, LINALG_TWINS, DTYPE_TWINS, NN_TWINS, CONV_TWINS):
    TORCH_OPS.update(twins)
