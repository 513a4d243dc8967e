"""Padding, as `torch.nn.functional.pad`: a constant (which crops where a pad is negative),
reflect, replicate and circular, with torch's pad tuple (the last dimension first).

The constant pad is one Function (the input is placed into a filled array, and the gradient
is the slice where it went). The other modes gather along each padded dimension with an index
array (`x[..., idx]`): GetItem's backward scatter-adds the gradient of every copy of an
element back to it, which is exactly the gradient of a reflection or a replication.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.errors import ShapeError
from minigrad.ops.shape import PutAt

from ._checks import _need_tensor, _where

_MODES = ("constant", "reflect", "replicate", "circular")


def _placement(shape: tuple[int, ...], pad: tuple[int, ...]) -> tuple[tuple, tuple, tuple[int, ...]]:
    """(source slices of x, destination slices in z, z's shape) for a constant pad: along each
    padded dimension the kept part of x (a negative pad drops elements) goes after the
    positive pad before it."""
    src, dst, out = [slice(None)] * len(shape), [slice(None)] * len(shape), list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        kept = shape[d] - max(-before, 0) - max(-after, 0)
        if kept < 0:
            raise ShapeError(f"pad: pad {pad} crops dimension {d} of an input of shape {shape} "
                             f"to a negative size ({shape[d] + before + after})")
        src[d] = slice(max(-before, 0), max(-before, 0) + kept)
        dst[d] = slice(max(before, 0), max(before, 0) + kept)
        out[d] = shape[d] + before + after
    return tuple(src), tuple(dst), tuple(out)


class ConstantPad(Function):
    """z = x with pad[2i] elements of `value` before and pad[2i + 1] after along the i-th
    dimension from the last (a negative pad drops that many elements instead)

    dx = the slice of g where x's kept elements went (zero for the dropped ones)
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): the kept part
        of x (a slice) placed into zeros (PutAt, whose backward is the slice again), plus the
        constant `value` around it."""
        shape = ctx.out_shape
        z = PutAt.apply(x[ctx.src], index=ctx.dst, shape=shape)
        if ctx.value == 0:
            return z
        fill = np.full(shape, ctx.value, dtype=x.dtype)
        fill[ctx.dst] = 0
        return z + Tensor._make(fill, None)

    @staticmethod
    def forward(ctx, x, *, pad, value):
        src, dst, shape = _placement(x.shape, pad)
        ctx.shape, ctx.src, ctx.dst = x.shape, src, dst
        ctx.out_shape, ctx.value = shape, value
        z = np.full(shape, value, dtype=x.dtype)
        z[dst] = x[src]
        return z

    @staticmethod
    def backward(ctx, g):
        dx = np.zeros(ctx.shape, dtype=g.dtype)
        dx[ctx.src] = g[ctx.dst]
        return dx


# ----------------------------------------------------------------------------- gathering modes
# For a dimension of size n padded by (before, after), the index in x of each output element
# (before + n + after of them; a negative pad crops, as in torch).


def _reflect(n: int, before: int, after: int) -> np.ndarray:
    """... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...: mirrored at the edge elements (not repeating them)."""
    i = np.abs(np.arange(-before, n + after))
    return np.where(i > n - 1, 2 * (n - 1) - i, i)


def _replicate(n: int, before: int, after: int) -> np.ndarray:
    """0 0 | 0 1 ... n-1 | n-1 n-1: the edge elements repeated."""
    return np.clip(np.arange(-before, n + after), 0, n - 1)


def _circular(n: int, before: int, after: int) -> np.ndarray:
    """n-2 n-1 | 0 1 ... n-1 | 0 1: wrapped around; torch crops the negative pads first and
    wraps around what is left."""
    start, stop = max(-before, 0), n - max(-after, 0)
    kept = stop - start
    return np.arange(-max(before, 0), kept + max(after, 0)) % kept + start


def _is_int(p: Any) -> bool:
    return isinstance(p, (int, np.integer)) and not isinstance(p, bool)


_SOURCES = {"reflect": _reflect, "replicate": _replicate, "circular": _circular}


def _check_gather(mode: str, shape: tuple[int, ...], pad: tuple[int, ...]) -> None:
    """torch's rules for the non-constant modes: 1 to 3 padded dimensions after one or two
    leading ones ((C, W) or (N, C, W) for a pad of 2), pads smaller than the size (reflect)
    or at most the size (circular), and nothing to pad from in an empty dimension."""
    k = len(pad) // 2
    if not 1 <= k <= 3 or len(shape) not in (k + 1, k + 2):
        want = "a pad of 2, 4 or 6" if not 1 <= k <= 3 else f"a {k + 1}-d or {k + 2}-d input"
        raise ShapeError(f"pad: mode {mode!r} pads the last 1 to 3 dimensions of a (C, ...) or (N, C, ...) "
                         f"input and needs {want}; got pad {pad} and an input of shape {shape}{_where()}")
    for i in range(k):
        d, before, after = len(shape) - 1 - i, pad[2 * i], pad[2 * i + 1]
        n = shape[d]
        if mode == "reflect" and (before >= n or after >= n):
            raise ShapeError(f"pad: reflect pads must be smaller than the size of the dimension they pad; "
                             f"got pad ({before}, {after}) for dimension {d} of an input of shape {shape}")
        if mode == "circular" and (before > n or after > n):
            raise ShapeError(f"pad: circular pads of at most the size of the dimension they pad (wrapping "
                             f"around once); got pad ({before}, {after}) for dimension {d} of an input of "
                             f"shape {shape}")
        if n == 0 or n - max(-before, 0) - max(-after, 0) <= 0:
            raise ShapeError(f"pad: mode {mode!r} needs elements to pad from; dimension {d} of an input "
                             f"of shape {shape} has none left with pad ({before}, {after})")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad (or, with negative pads, crop) the last len(pad) // 2 dimensions of input.

    `pad` lists (before, after) pairs from the last dimension backwards, as torch:
    (left, right) pads the last dimension, (left, right, top, bottom) the last two.

    Modes:
        "constant": `value` (0 when None) outside; any number of dimensions; a negative pad crops.
        "reflect": mirrored at the edge element, which is not repeated: [2 1 | 0 1 2 | 1 0];
            each pad smaller than its dimension.
        "replicate": the edge repeated, [0 0 | 0 1 2 | 2 2].
        "circular": wrapped around, [1 2 | 0 1 2 | 0 1]; each pad at most its dimension.
        The last three pad 1 to 3 dimensions of an (C, *) or (N, C, *) input and take no value.

    Shape:
        input: (*, d_k, ..., d_1); output: (*, d_k + pad[2k-2] + pad[2k-1], ..., d_1 + pad[0] + pad[1]).
    """
    _need_tensor("pad", "the input", input)
    if not isinstance(pad, (tuple, list)) or not all(_is_int(p) for p in pad):
        raise TypeError(f"pad: pad must be a tuple of ints, not {pad!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise ValueError(f"pad: the padding length must be divisible by 2, got pad {pad}")
    if len(pad) // 2 > input.ndim:
        raise ShapeError(f"pad: pad {pad} pads {len(pad) // 2} dimensions, but the input of shape "
                         f"{input.shape} has {input.ndim}{_where()}")
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {_MODES}, not {mode!r}")
    if mode == "constant":
        return ConstantPad.apply(input, pad=pad, value=0 if value is None else value)
    if value is not None and value != 0:
        raise ValueError(f"pad: mode {mode!r} takes no value (got value={value}); use mode='constant'")
    _check_gather(mode, input.shape, pad)
    out: Any = input
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        idx = _SOURCES[mode](input.shape[d], pad[2 * i], pad[2 * i + 1]).astype(np.int64)
        out = out[(slice(None),) * d + (idx,)]
    return out
