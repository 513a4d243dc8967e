"""The torch twin of every minigrad `Function`: `TORCH_OPS` maps the op's class to a callable
taking torch tensors (the op's inputs, in order) and the op's options as keywords.

Each entry computes what the minigrad op computes, edge cases included (a fully masked
attention row gives zeros, not NaN; a cross-entropy mean over only ignored rows is 0), so an
exported model is the same function, and torch's autograd gives the same gradients.
Ops that draw random numbers (`RANDOM_OPS`) also get `training=`, the torch module's mode.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as TF

import minigrad.nn.activation as activation
import minigrad.nn.attention.one_block as one_block
import minigrad.nn.attention.packed as packed
import minigrad.nn.attention.tiled as tiled
import minigrad.nn.kernels as kernels
import minigrad.nn.losses as losses
from minigrad.autograd import Function
from minigrad.ops import elementwise as ew
from minigrad.ops import linalg, ordering, pointwise, reduce, rounding, shape

from .twins_conv import CONV_TWINS
from .twins_indexing import INDEXING_TWINS
from .twins_nn import NN_TWINS
from .twins_statistics import STATISTICS_TWINS

# ----------------------------------------------------------------------------- helpers


def torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a numpy dtype (float64 -> torch.float64, ...)."""
    return torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype


def _dims(x: torch.Tensor, dim: Any) -> tuple[int, ...]:
    """minigrad's `dim` (None, int or tuple) as a tuple of axes; None and () mean every axis."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return tuple(range(x.dim()))
    return (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)


def _clamp(x: torch.Tensor, *bounds: torch.Tensor, low: bool = True, high: bool = True) -> torch.Tensor:
    """Clip's twin. x is broadcast first (torch's clamp backward fails when a tensor bound is
    larger than x); the bounds are left as they are, so a 0-d bound does not promote x."""
    x = x.expand(torch.broadcast_shapes(x.shape, *(b.shape for b in bounds)))
    return torch.clamp(x, bounds[0] if low else None, bounds[-1] if high else None)


def _reduce(fn: Callable) -> Callable:
    """A reduction over minigrad's dims; over the no axes of a 0-d x every reduction but var
    leaves x unchanged."""
    def op(x: torch.Tensor, *, dim: Any = None, keepdim: bool = False, **kw: Any) -> torch.Tensor:
        dims = _dims(x, dim)
        if not dims:  # a 0-d x
            if fn in (torch.var, torch.std):  # squared deviations (0) over n - correction = 1 - c
                zero = x - x
                var = zero * zero / torch.tensor(float(max(1 - kw["correction"], 0)), dtype=x.dtype)
                return var if fn is torch.var else var.sqrt()
            return x + 0  # a new tensor, as the op's output
        return fn(x, dim=dims, keepdim=keepdim, **kw)
    return op


def _softmax(x: torch.Tensor, *, dim: int = -1) -> torch.Tensor:
    """softmax with minigrad's edge rule: a row that is all -inf gives zeros (torch: NaN)."""
    m = x.detach().amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros((), dtype=m.dtype, device=m.device))
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones((), dtype=s.dtype, device=s.device), s)


def _index(index: Any, device: torch.device) -> Any:
    """minigrad's GetItem index (numpy's rules) as torch reads it. Integer arrays become int64;
    with an index array present, numpy broadcasts an integer with the arrays while torch
    selects it first, so such integers go in as one-element arrays; negative steps refused."""
    parts = index if isinstance(index, tuple) else (index,)
    arrays = any(isinstance(p, torch.Tensor) and p.dim() for p in parts)
    out = []
    for p in parts:
        if isinstance(p, torch.Tensor) and p.dtype != torch.bool:
            p = p.long()
        elif isinstance(p, int) and not isinstance(p, bool) and arrays:
            p = torch.tensor([p], device=device)
        elif isinstance(p, slice) and p.step is not None and p.step < 0:
            raise ValueError(f"getitem: torch has no negative slice steps ({p}); use flip in the model")
        out.append(p)
    return tuple(out) if isinstance(index, tuple) else out[0]


def _masked_fill(x: torch.Tensor, mask: torch.Tensor, fill: torch.Tensor | None = None, *,
                 value: float | None = None) -> torch.Tensor:
    """Put `value` (a number) or `fill` (a 0-d tensor, which then gets a gradient) where mask is True."""
    if fill is None:
        return x.masked_fill(mask.bool(), value)
    return torch.where(mask.bool(), fill, x)


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


def _gather_sorted(x: torch.Tensor, *, indices: Any, dim: int) -> torch.Tensor:
    """The values of sort / topk; a 0-d input is one element along dim 0, as in minigrad."""
    idx = torch.as_tensor(indices, device=x.device)
    if x.ndim == 0:
        return x.reshape(1)[idx.reshape(-1)].reshape(idx.shape)
    return torch.take_along_dim(x, idx, dim)


# ----------------------------------------------------------------------------- the table

TORCH_OPS: dict[type[Function], Callable[..., torch.Tensor]] = {
    # arithmetic and unary math
    ew.Add: lambda a, b: a + b,
    ew.Sub: lambda a, b: a - b,
    ew.Mul: lambda a, b: a * b,
    ew.Div: lambda a, b: a / b,
    ew.Neg: lambda x: -x,
    ew.Pow: lambda a, b: torch.pow(a, b),
    ew.Exp: torch.exp,
    ew.Log: torch.log,
    ew.Sqrt: torch.sqrt,
    ew.Abs: torch.abs,
    ew.Tanh: torch.tanh,
    ew.Sigmoid: torch.sigmoid,
    ew.ReLU: torch.relu,
    ew.Maximum: torch.maximum,  # a tie splits the gradient in halves in both
    ew.Minimum: torch.minimum,
    ew.Clip: _clamp,
    ew.Where: lambda cond, a, b: torch.where(cond.bool(), a, b),
    ew.MaskedFill: _masked_fill,
    # pointwise math (integers never reach these: the Tensor methods convert them to float first)
    pointwise.Sin: torch.sin,
    pointwise.Cos: torch.cos,
    pointwise.Tan: torch.tan,
    pointwise.Asin: torch.asin,
    pointwise.Acos: torch.acos,
    pointwise.Atan: torch.atan,
    pointwise.Sinh: torch.sinh,
    pointwise.Cosh: torch.cosh,
    pointwise.Expm1: torch.expm1,
    pointwise.Log1p: torch.log1p,
    pointwise.Log2: torch.log2,
    pointwise.Log10: torch.log10,
    pointwise.Erf: torch.erf,
    pointwise.Atan2: torch.atan2,
    pointwise.Hypot: torch.hypot,
    pointwise.LogAddExp: torch.logaddexp,
    rounding.Sign: torch.sign,
    rounding.Floor: torch.floor,
    rounding.Ceil: torch.ceil,
    rounding.Round: lambda x, *, decimals=0: torch.round(x, decimals=decimals),
    rounding.Trunc: torch.trunc,
    rounding.Remainder: torch.remainder,
    rounding.Fmod: torch.fmod,
    rounding.RoundedDivide: lambda a, b, *, mode="floor": torch.div(a, b, rounding_mode=mode),
    # linear algebra and casts
    linalg.MatMul: torch.matmul,
    linalg.Cast: lambda x, *, dtype: x.to(torch_dtype(dtype)),
    # reductions
    reduce.Sum: _reduce(torch.sum),
    reduce.Mean: _reduce(torch.mean),
    reduce.Max: _reduce(torch.amax),  # tied maxima share the gradient in both
    reduce.Min: _reduce(torch.amin),
    reduce.Var: _reduce(torch.var),
    reduce.Std: _reduce(torch.std),  # gradient 0 on a constant slice in both
    reduce.LogSumExp: _reduce(torch.logsumexp),
    reduce.Softmax: _softmax,
    reduce.LogSoftmax: lambda x, *, dim=-1: torch.log_softmax(x, dim),
    # products, running sums, sorted values (ops/ordering.py)
    ordering.Prod: lambda x, *, dim=None, keepdim=False: (
        torch.prod(x) if dim is None else torch.prod(x, dim, keepdim=keepdim)),
    ordering.CumSum: lambda x, *, dim: torch.cumsum(x, dim),
    ordering.CumProd: lambda x, *, dim: torch.cumprod(x, dim),
    ordering.GatherSorted: _gather_sorted,
    # shape
    shape.Reshape: lambda x, *, shape: x.reshape(shape),
    shape.Permute: lambda x, *, dims: torch.permute(x, tuple(dims)),
    shape.Expand: lambda x, *, shape: torch.broadcast_to(x, tuple(shape)),
    shape.GetItem: lambda x, *, index: x[_index(index, x.device)],
    shape.Cat: lambda *xs, dim=0: torch.cat(xs, dim),
    shape.Stack: lambda *xs, dim=0: torch.stack(xs, dim),
    # nn kernels
    kernels.Linear: TF.linear,
    kernels.CrossEntropy: _cross_entropy,
    kernels.LayerNorm: _layer_norm,
    kernels.GELU: lambda x, *, approximate="none": TF.gelu(x, approximate=approximate),
    kernels.Dropout: _dropout,
    kernels.Embedding: _embedding,
    one_block.Attention: _attention,
    tiled.TiledAttention: _tiled_attention,
    packed.PackedAttention: _packed_attention,
    activation.SoftplusOp: lambda x, *, beta=1.0, threshold=20.0: TF.softplus(x, beta, threshold),
    activation.ELUOp: lambda x, *, alpha=1.0: TF.elu(x, alpha),
    losses.BinaryCrossEntropy: lambda p, y: TF.binary_cross_entropy(p, y, reduction="none"),
    # binary_cross_entropy(sigmoid(x), y) as one op: torch's own BCE of the replayed sigmoid p
    losses.SigmoidBinaryCrossEntropy: lambda x, y, p: TF.binary_cross_entropy(p, y, reduction="none"),
}

# Ops whose torch twin draws random numbers and must know whether the module is training.
RANDOM_OPS: frozenset[type[Function]] = frozenset({kernels.Dropout, one_block.Attention,
                                                   packed.PackedAttention})

# The twins of the indexing ops, of the nn layers added with the recurrent and normalisation
# modules, of the statistics reductions and of convolution, pooling and batch norm live in
# their own files beside this one.
TORCH_OPS.update(INDEXING_TWINS)
TORCH_OPS.update(NN_TWINS)
TORCH_OPS.update(STATISTICS_TWINS)
TORCH_OPS.update(CONV_TWINS)
