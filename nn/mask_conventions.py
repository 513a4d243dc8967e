"""PyTorch's attention masks in minigrad's rule.

minigrad's rule (see `minigrad.nn.attention`): a bool mask is True where a query **may
attend**; a float mask is added to the scores. `F.scaled_dot_product_attention` in PyTorch
agrees. PyTorch's `nn.MultiheadAttention` and transformer layers use the opposite sense for
bool masks: in `attn_mask`, `key_padding_mask`, `src_mask`, `tgt_mask`, `memory_mask` (and the
stacks' `mask`), True means **masked out**. minigrad accepts those keywords with PyTorch's
meaning, turns them into its own rule here, and keeps its own `mask=` (MultiheadAttention)
and `attend_mask=` (transformer layers and stacks) for the lecture's convention.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minigrad import Tensor


def _as_tensor(m: Any) -> Tensor:
    return m if isinstance(m, Tensor) else Tensor(np.asarray(m))


def _flipped(name: str, what: str, m: Tensor) -> Tensor:
    """A PyTorch mask in minigrad's sense: bool True (masked out) becomes False (may not
    attend); a float mask is added to the scores in both, so it stays as it is."""
    if m.dtype == np.bool_:
        return ~m
    if m.dtype.kind == "f":
        return m
    raise TypeError(f"{name}: {what} must be bool (True = masked out, as in PyTorch) or float "
                    f"(added to the scores), not {m.dtype}")


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """One mask in minigrad's sense that a key passes only if it passes every given mask:
    bool masks are and-ed; with a float mask, a bool one becomes 0 / -inf and they add."""
    given = [m for m in masks if m is not None]
    if len(given) <= 1:
        return given[0] if given else None
    floats = [m for m in given if m.dtype.kind == "f"]
    if not floats:
        out = given[0]
        for m in given[1:]:
            out = out & m
        return out
    dtype = floats[0].dtype
    total = None
    for m in given:
        if m.dtype == np.bool_:
            m = Tensor(np.where(m.data, 0.0, -math.inf).astype(dtype))
        total = m if total is None else total + m
    return total


def from_torch_masks(name: str, attn_mask: Any, key_padding_mask: Any, B: int, H: int, Tq: int,
                     Tk: int, attn_name: str = "attn_mask",
                     padding_name: str = "key_padding_mask") -> Tensor | None:
    """PyTorch's attn_mask ((Tq, Tk), or (B * H, Tq, Tk) as PyTorch lays it out) and
    key_padding_mask ((B, Tk)) as one minigrad mask that broadcasts to (B, H, Tq, Tk)."""
    masks = []
    if attn_mask is not None:
        m = _as_tensor(attn_mask)
        if m.shape == (B * H, Tq, Tk):
            m = m.reshape(B, H, Tq, Tk)
        elif m.shape != (Tq, Tk):
            raise ValueError(f"{name}: {attn_name} must have shape (Tq, Tk) = {(Tq, Tk)} or "
                             f"(B * num_heads, Tq, Tk) = {(B * H, Tq, Tk)}, as in PyTorch, got {m.shape}")
        masks.append(_flipped(name, attn_name, m))
    if key_padding_mask is not None:
        m = _as_tensor(key_padding_mask)
        if m.shape != (B, Tk):
            raise ValueError(f"{name}: {padding_name} must have shape (B, Tk) = {(B, Tk)}, "
                             f"True at the padded keys, got {m.shape}")
        masks.append(_flipped(name, padding_name, m).reshape(B, 1, 1, Tk))
    return combine_masks(*masks)
