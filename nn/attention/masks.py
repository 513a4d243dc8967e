"""The masks of attention, in the rule stated in `minigrad.nn.attention` (True = may attend):
building one (`causal_mask`, `padding_mask`), applying one (`masked_softmax`), the errors and
warnings for a mask of the wrong kind (`mask_dtype_error`, `check_float_mask`), and PyTorch's
masks in minigrad's rule (`from_torch_masks`, `combine_masks`).

PyTorch's `F.scaled_dot_product_attention` agrees with minigrad's rule. PyTorch's
`nn.MultiheadAttention` and transformer layers use the opposite sense for bool masks: in
`attn_mask`, `key_padding_mask`, `src_mask`, `tgt_mask`, `memory_mask` (and the stacks' `mask`),
True means **masked out**. minigrad accepts those keywords with PyTorch's meaning, turns them
into its own rule here, and keeps its own `mask=` (MultiheadAttention) and `attend_mask=`
(transformer layers and stacks) for the lecture's convention.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError

from .._checks import _need_tensor
from .helpers import _causal

# ----------------------------------------------------------------------------- building and applying


def causal_mask(T: int, S: int | None = None) -> Tensor:
    """(T, S) bool, True where key j <= query i: each position sees itself and the past.

    S defaults to T. For T != S the mask is aligned top-left (tril(ones(T, S))), as in PyTorch.
    """
    return Tensor(_causal(T, T if S is None else S))


def padding_mask(lengths_or_tokens: Any, pad: int | None = None, max_len: int | None = None) -> Tensor:
    """A key-padding mask (B, 1, 1, T), True at real tokens, False at padding.

    Args:
        lengths_or_tokens: either the lengths of the B sequences (1-D, ints), or a (B, T)
            tensor of token ids padded with `pad`.
        pad: the padding id; give it exactly when passing tokens.
        max_len: with lengths, the padded length T (default: the longest length).

    Returns:
        a bool Tensor (B, 1, 1, T) that broadcasts against the weights (B, H, Tq, T).
    """
    data = np.asarray(getattr(lengths_or_tokens, "_data", lengths_or_tokens))
    if data.dtype.kind not in "iu":
        raise TypeError(f"padding_mask: expected integer lengths or token ids, not {data.dtype}")
    if pad is not None:
        if data.ndim != 2:
            raise ShapeError(f"padding_mask: tokens must have shape (B, T), got {data.shape}")
        if max_len is not None:
            raise ValueError("padding_mask: max_len goes with lengths; tokens already give T")
        keep = data != pad
    else:
        if data.ndim != 1:
            raise ShapeError(
                f"padding_mask: lengths must be 1-D, got shape {data.shape} "
                "(for a (B, T) tensor of token ids pass pad=<padding id>)"
            )
        longest = int(data.max(initial=0))
        T = longest if max_len is None else max_len
        if longest > T or (data.size and data.min() < 0):
            raise ValueError(f"padding_mask: lengths {data.tolist()} must lie in [0, max_len={T}]")
        keep = np.arange(T) < data[:, None]
    return Tensor(keep[:, None, None, :])


def masked_softmax(scores: Tensor, mask: Any = None, name: str = "masked_softmax") -> Tensor:
    """softmax over the last axis of `scores` (..., Tq, Tk) after applying `mask` (the rule above)."""
    _need_tensor(name, "scores", scores)
    if mask is None:
        return scores.softmax(dim=-1)
    m = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
    try:
        shape = np.broadcast_shapes(m.shape, scores.shape)
    except ValueError:
        shape = None
    if shape != scores.shape:
        raise ShapeError(
            f"{name}: mask of shape {m.shape} does not broadcast to the scores' shape {scores.shape}"
        )
    if m.dtype == np.bool_:
        scores = scores.masked_fill(~m, -math.inf)
    elif m.dtype.kind == "f":
        check_float_mask(name, m)
        scores = scores + m
    else:
        raise TypeError(mask_dtype_error(name, m.dtype))
    return scores.softmax(dim=-1)


_MASK_ADVICE = ("use a bool mask (True = may attend, e.g. mask == 1) or a float mask with -inf where "
                "attending is forbidden and 0 elsewhere")


def mask_dtype_error(name: str, dtype: Any) -> str:
    """The error for a mask that is neither bool nor float (an int 0/1 mask, say)."""
    return (f"{name}: the mask must be bool (True = may attend) or float (added to the scores), "
            f"not {dtype}; {_MASK_ADVICE}")


def check_float_mask(name: str, mask: Tensor) -> None:
    """Warn (once per process, by the default warning filter) when a float mask holds only 0s
    and 1s: it is added to the scores, so it forbids nothing (a causal model then sees the
    future); it was almost surely meant as a bool mask. A learnable bias is not checked. Two
    passes over the mask (min and max) settle almost every mask; only one within [0, 1] costs
    a third."""
    if mask.requires_grad or mask.size == 0:
        return
    d = mask._data
    if d.max() == 1 and d.min() >= 0 and ((d == 0) | (d == 1)).all():
        warnings.warn(f"{name}: the float mask holds only 0s and 1s; it is added to the scores, so "
                      f"it masks nothing: {_MASK_ADVICE}", UserWarning, stacklevel=2)


# ----------------------------------------------------------------------------- PyTorch's masks


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
            m = Tensor(np.where(m._data, 0.0, -math.inf).astype(dtype))
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
            raise ShapeError(f"{name}: {attn_name} must have shape (Tq, Tk) = {(Tq, Tk)} or "
                             f"(B * num_heads, Tq, Tk) = {(B * H, Tq, Tk)}, as in PyTorch, got {m.shape}")
        masks.append(_flipped(name, attn_name, m))
    if key_padding_mask is not None:
        m = _as_tensor(key_padding_mask)
        if m.shape != (B, Tk):
            raise ShapeError(f"{name}: {padding_name} must have shape (B, Tk) = {(B, Tk)}, "
                             f"True at the padded keys, got {m.shape}")
        masks.append(_flipped(name, padding_name, m).reshape(B, 1, 1, Tk))
    return combine_masks(*masks)
