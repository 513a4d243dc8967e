"""Attention layers: multi-head scaled dot-product (`MultiheadAttention`), additive (Bahdanau)
and bilinear attention. Their masks follow the rule stated in `minigrad.nn.attention` (masks.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor, cat
from minigrad.errors import ShapeError

from .. import init as nn_init
from ..linear import Linear, linear
from ..module import Module, Parameter
from . import functional as AF
from .cache import KVCache
from .functional import attention_reference
from .maps import _record, _recorders
from .masks import combine_masks, from_torch_masks, masked_softmax

# ----------------------------------------------------------------------------- multi-head


class MultiheadAttention(Module):
    """Multi-head attention: h heads of scaled dot-product attention side by side.

        head_i = softmax(Q_i K_i^T / sqrt(D) + mask) V_i,   Q_i = query W_q,i ...
        MHA(query, key, value) = concat(head_1, ..., head_h) W_o

    The projections are four Linear layers; q_proj, k_proj and v_proj map to embed_dim,
    which is split into num_heads heads of D = embed_dim / num_heads features. Weights start
    with xavier_uniform_ and zero biases, as PyTorch's (separate-weight) MultiheadAttention.

    Args:
        embed_dim: E, the model size (of query, and of the output).
        num_heads: H; must divide embed_dim.
        dropout: dropout probability on the attention weights (training only).
        bias: whether the four projections have biases.
        kdim, vdim: feature sizes of key and value (default: embed_dim), for cross-attention.
        batch_first: True (minigrad's default: (B, T, E)) or False for torch's default layout,
            time first: query, key, value and the output (T, B, E); masks and weights as below.
        fused: use the fused attention kernel (True) or the composed `attention_reference`
            (False; slower, to compare or to differentiate through the weights). An
            attribute, so it can be switched on a built model. Fused self-attention (query,
            key and value the same tensor) stacks the three projection weights into one
            product and splits the heads inside one op (`F.packed_self_attention`): the
            same numbers in fewer steps.
        init: "xavier" (xavier_uniform_ weights, zero biases, as PyTorch) or "linear" (each
            projection keeps `Linear`'s own initialisation, for a model that sets its weights
            itself, as GPT does: it then draws exactly what four Linear layers draw).

    Generation: `forward(x, x, x, is_causal=True, cache=KVCache(...))` writes the new keys and
    values into the cache and attends to everything it holds (see `KVCache`), one packed op
    per step, under `mg.no_grad()`.

    Shape:
        - query: (B, Tq, E); key: (B, Tk, kdim); value: (B, Tk, vdim)
        - mask: (Tq, Tk), (B, Tq, Tk) or (B or 1, H or 1, Tq, Tk), bool or float (a 2-D mask
          is always (Tq, Tk); for key padding use `padding_mask`, which gives (B, 1, 1, Tk))
        - key_padding_mask (PyTorch's): (B, Tk); attn_mask (PyTorch's): (Tq, Tk) or (B * H, Tq, Tk)
        - Output: (B, Tq, E); weights (with need_weights): (B, Tq, Tk), or (B, H, Tq, Tk) per
          head with average_attn_weights=False
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = True, *, fused: bool = True,
                 init: str = "xavier"):
        self.batch_first = bool(batch_first)
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}"
            )
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        if init not in ("xavier", "linear"):
            raise ValueError(f"MultiheadAttention: init must be 'xavier' or 'linear', got {init!r}")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.dropout, self.fused = dropout, fused
        self.q_proj = Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = Linear(self.kdim, embed_dim, bias=bias)
        self.v_proj = Linear(self.vdim, embed_dim, bias=bias)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if init == "xavier":
            for proj in (self.q_proj, self.k_proj, self.v_proj):
                nn_init.xavier_uniform_(proj.weight)
            for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
                if proj.bias is not None:
                    nn_init.zeros_(proj.bias)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None, average_attn_weights: bool = True,
                is_causal: bool = False, *, mask: Any = None, cache: KVCache | None = None) -> Any:
        """Attend from each query position to the key/value positions; see the class Shape.
        With a `cache` (self-attention only), to the cached positions too; see `KVCache`.

        PyTorch's arguments keep PyTorch's meaning: in `key_padding_mask` (B, Tk) and
        `attn_mask` ((Tq, Tk) or (B * H, Tq, Tk)) a bool True is masked out (minigrad's own
        `mask=` says where a query may attend). Returns (output, weights), as PyTorch: the
        weights averaged over the heads unless average_attn_weights=False, and None with
        need_weights=False, which is also the fast path (the fused kernels; with weights the
        composed `attention_reference` runs, so the returned weights are differentiable, as in
        PyTorch). A layer that only wants the output calls `attn(x, x, x, need_weights=False)[0]`.
        """
        time_major = not self.batch_first and isinstance(query, Tensor) and query.ndim == 3
        if time_major:  # (T, B, E) in and out, as torch's batch_first=False; the weights are (B, ...)
            query, key, value = _batch_major(query, key, value)
        out, weights = self._forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                                     average_attn_weights, is_causal, mask, cache)
        return (out.transpose(0, 1) if time_major else out), weights

    def _forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any, need_weights: bool,
                 attn_mask: Any, average_attn_weights: bool, is_causal: bool, mask: Any,
                 cache: KVCache | None) -> tuple[Tensor, Tensor | None]:
        B, Tq, Tk = self._check(query, key, value)
        H = self.num_heads
        if key_padding_mask is not None or attn_mask is not None:
            Ts = Tk if cache is None else cache.length + Tk
            mask = combine_masks(self._mask(mask, (B, H, Tq, Ts)), from_torch_masks(
                "MultiheadAttention", attn_mask, key_padding_mask, B, H, Tq, Ts))
        out = self._attend(query, key, value, mask, is_causal, bool(need_weights), cache, B, Tq, Tk)
        if not need_weights:
            return out, None
        out, weights = out  # (B, Tq, E), (B, H, Tq, Tk)
        return out, (weights.mean(1) if average_attn_weights else weights)

    def _attend(self, query: Tensor, key: Tensor, value: Tensor, mask: Any, is_causal: bool,
                need_weights: bool, cache: KVCache | None, B: int, Tq: int, Tk: int) -> Any:
        H, D = self.num_heads, self.head_dim
        self_attention = query is key is value and isinstance(query, Tensor)
        packs = self_attention and self.kdim == self.vdim == self.embed_dim
        if cache is not None and not (packs and self.fused):
            raise ValueError(
                "MultiheadAttention: a KV cache is for fused self-attention: pass the same tensor as "
                "query, key and value, with fused=True and kdim = vdim = embed_dim")
        fast = self.fused and not (need_weights and cache is None)  # returned weights stay in the graph
        if fast and packs:
            return self._packed(query, mask, is_causal, need_weights, cache)
        q = self.q_proj(query).reshape(B, Tq, H, D).transpose(1, 2)  # (B, H, Tq, D)
        k = self.k_proj(key).reshape(B, Tk, H, D).transpose(1, 2)  # (B, H, Tk, D)
        v = self.v_proj(value).reshape(B, Tk, H, D).transpose(1, 2)  # (B, H, Tk, D)
        mask = self._mask(mask, (B, H, Tq, Tk))
        attend = AF.scaled_dot_product_attention if fast else attention_reference
        out = attend(q, k, v, mask=mask, is_causal=is_causal,
                     dropout_p=self.dropout if self.training else 0.0, need_weights=need_weights)
        out, weights = out if need_weights else (out, None)  # (B, H, Tq, D), (B, H, Tq, Tk)
        out = self.out_proj(out.transpose(1, 2).reshape(B, Tq, self.embed_dim))  # (B, Tq, E)
        return (out, weights) if need_weights else out

    def _packed(self, x: Tensor, mask: Any, is_causal: bool, need_weights: bool,
                cache: KVCache | None) -> Tensor | tuple[Tensor, Tensor]:
        """Self-attention, computed as `forward` does but packed: q, k and v come from one
        product with the three weights stacked, and one op splits and merges the heads
        (`F.packed_self_attention`, looked up in its module at each call so the exercises can
        swap it):
        fewer, bigger steps, the same numbers."""
        B, T, _ = x.shape
        S, options = T, {}
        if cache is not None:  # passed only when given: a swapped-in function need not know it
            S, options = cache.length + T, {"cache": cache}
        projections = (self.q_proj, self.k_proj, self.v_proj)
        weight = cat([p.weight for p in projections])  # (3E, E)
        bias = None if self.q_proj.bias is None else cat([p.bias for p in projections])
        out = AF.packed_self_attention(linear(x, weight, bias), self.num_heads,
                                      mask=self._mask(mask, (B, self.num_heads, T, S)), is_causal=is_causal,
                                      dropout_p=self.dropout if self.training else 0.0,
                                      need_weights=need_weights, **options)
        out, weights = out if need_weights else (out, None)  # (B, T, E), (B, H, T, T)
        out = self.out_proj(out)
        return (out, weights) if need_weights else out

    def _check(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[int, int, int]:
        name = "MultiheadAttention"
        for label, t, size in (("query", query, self.embed_dim), ("key", key, self.kdim),
                               ("value", value, self.vdim)):
            if t.ndim != 3 or t.shape[-1] != size:
                raise ShapeError(f"{name}: {label} must have shape (B, T, {size}), got {t.shape}")
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ShapeError(
                f"{name}: query {query.shape}, key {key.shape} and value {value.shape} must share "
                "the batch size B, and key and value the length Tk"
            )
        return query.shape[0], query.shape[1], key.shape[1]

    def _mask(self, mask: Any, weights: tuple[int, int, int, int]) -> Tensor | None:
        """The mask as a tensor that broadcasts to the weights (B, H, Tq, Tk), or an error."""
        if mask is None:
            return None
        m = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
        if m.ndim == 3:  # (B, Tq, Tk): one mask per sequence, shared by the heads
            m = m.unsqueeze(1)
        ok = m.ndim in (2, 4)
        if ok:
            try:
                ok = np.broadcast_shapes(m.shape, weights) == weights
            except ValueError:
                ok = False
        if not ok:
            raise ShapeError(
                f"MultiheadAttention: mask of shape {getattr(mask, 'shape', m.shape)} does not "
                f"broadcast to the attention weights (B, H, Tq, Tk) = {weights}; give (Tq, Tk), "
                "(B, Tq, Tk) or (B, H, Tq, Tk), or padding_mask(...) for key padding"
            )
        return m

    def extra_repr(self) -> str:
        first = "" if self.batch_first else ", batch_first=False"
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}{first}"


def _batch_major(*xs: Any) -> tuple:
    """(T, B, E) tensors as (B, T, E); the same tensor passed twice stays one (self-attention)."""
    seen: dict[int, Any] = {}
    for x in xs:
        if id(x) not in seen:
            seen[id(x)] = x.transpose(0, 1) if isinstance(x, Tensor) else x
    return tuple(seen[id(x)] for x in xs)


# ----------------------------------------------------------------------------- single-head scores


def _single_head_mask(mask: Any) -> Any:
    """Drop the head axis of a (B, 1, Tq or 1, Tk) mask, such as padding_mask's."""
    if mask is not None and getattr(mask, "ndim", np.ndim(mask)) == 4 and mask.shape[1] == 1:
        m = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
        return m.squeeze(1)
    return mask


def _check_qkv(name: str, query: Tensor, keys: Tensor, values: Tensor, dq: int, dk: int) -> None:
    if query.ndim != 3 or query.shape[-1] != dq:
        raise ShapeError(f"{name}: query must have shape (B, Tq, {dq}), got {query.shape}")
    if keys.ndim != 3 or keys.shape[-1] != dk:
        raise ShapeError(f"{name}: keys must have shape (B, Tk, {dk}), got {keys.shape}")
    if values.ndim != 3 or values.shape[:2] != keys.shape[:2] or keys.shape[0] != query.shape[0]:
        raise ShapeError(
            f"{name}: values {values.shape} must be (B, Tk, Dv) with B and Tk of keys "
            f"{keys.shape} and B of query {query.shape}"
        )


class AdditiveAttention(Module):
    """Additive (Bahdanau) attention: score(q, k) = v^T tanh(W_q q + W_k k).

        e_ij = v^T tanh(W_q q_i + W_k k_j),  a_i = softmax_j(e_ij + mask),  c_i = sum_j a_ij v_j

    Args:
        query_dim: Dq, the size of a query (e.g. the decoder state).
        key_dim: Dk, the size of a key (e.g. an encoder annotation).
        hidden_dim: the size of the tanh layer.

    Shape:
        - query: (B, Tq, Dq); keys: (B, Tk, Dk); values: (B, Tk, Dv)
        - mask: broadcasting to (B, Tq, Tk) (a (B, 1, 1, Tk) padding_mask works too)
        - Output: context (B, Tq, Dv) and weights (B, Tq, Tk)

    Attributes:
        w_q: Linear(query_dim, hidden_dim, bias=False); w_k: Linear(key_dim, hidden_dim,
        bias=False); v: Linear(hidden_dim, 1, bias=False).
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int):
        self.query_dim, self.key_dim, self.hidden_dim = query_dim, key_dim, hidden_dim
        self.w_q = Linear(query_dim, hidden_dim, bias=False)
        self.w_k = Linear(key_dim, hidden_dim, bias=False)
        self.v = Linear(hidden_dim, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """W_k keys (B, Tk, hidden): compute it once when the same keys meet many queries, as at
        every step of an RNN decoder, and pass it to forward as `projected_keys`."""
        return self.w_k(keys)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Any = None,
                projected_keys: Tensor | None = None) -> tuple[Tensor, Tensor]:
        _check_qkv("AdditiveAttention", query, keys, values, self.query_dim, self.key_dim)
        q = self.w_q(query).unsqueeze(2)  # (B, Tq, 1, hidden)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        k = projected_keys.unsqueeze(1)  # (B, 1, Tk, hidden)
        scores = self.v((q + k).tanh()).squeeze(-1)  # (B, Tq, Tk)
        weights = masked_softmax(scores, _single_head_mask(mask), "AdditiveAttention")
        if _recorders:  # nn.record_attention is open
            _record(weights._data, "AdditiveAttention")
        return weights @ values, weights  # (B, Tq, Dv), (B, Tq, Tk)

    def extra_repr(self) -> str:
        return f"query_dim={self.query_dim}, key_dim={self.key_dim}, hidden_dim={self.hidden_dim}"


class BilinearAttention(Module):
    """Bilinear (multiplicative, Luong "general") attention: score(q, k) = q^T W k.

    Args:
        query_dim: Dq.
        key_dim: Dk.

    Shape:
        - query: (B, Tq, Dq); keys: (B, Tk, Dk); values: (B, Tk, Dv)
        - mask: broadcasting to (B, Tq, Tk) (a (B, 1, 1, Tk) padding_mask works too)
        - Output: context (B, Tq, Dv) and weights (B, Tq, Tk)

    Attributes:
        weight: (query_dim, key_dim), starting as xavier_uniform_.
    """

    def __init__(self, query_dim: int, key_dim: int):
        self.query_dim, self.key_dim = query_dim, key_dim
        self.weight = Parameter(np.zeros((query_dim, key_dim), dtype=np.float32))
        nn_init.xavier_uniform_(self.weight)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Any = None) -> tuple[Tensor, Tensor]:
        _check_qkv("BilinearAttention", query, keys, values, self.query_dim, self.key_dim)
        scores = (query @ self.weight) @ keys.transpose(1, 2)  # (B, Tq, Tk)
        weights = masked_softmax(scores, _single_head_mask(mask), "BilinearAttention")
        if _recorders:  # nn.record_attention is open
            _record(weights._data, "BilinearAttention")
        return weights @ values, weights  # (B, Tq, Dv), (B, Tq, Tk)

    def extra_repr(self) -> str:
        return f"query_dim={self.query_dim}, key_dim={self.key_dim}"
