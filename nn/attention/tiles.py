"""The block grid of the tiled attention kernel (tiled.py): `_Tiles`, which tiles to visit and
each tile's masked scores, in exp2's units (helpers._LOG2E)."""

from __future__ import annotations

import math

import numpy as np

from minigrad.errors import ShapeError

from .helpers import _LOG2E

_SKIP = False  # a block whose every score is masked: not computed at all


class _Tiles:
    """The block grid of one attention call: which tiles to visit, and each tile's masked scores."""

    def __init__(self, lead, tq, tk, bias, allowed, causal_offset, block_q, block_k, dtype):
        if block_q < 1 or block_k < 1:
            raise ShapeError(f"tiled attention: block sizes must be positive, got ({block_q}, {block_k})")
        self.lead, self.tq, self.tk, self.bq, self.bk = lead, tq, tk, block_q, block_k
        self.dtype = dtype
        self.offset = causal_offset
        self.shapes: tuple = ()  # q, k and v's shapes, kept by `tiled_forward` for the gradients
        self.bias_shape = None if bias is None else bias.shape
        self._buffers: list = [None, None]  # two tiles' worth, reused by every tile (no malloc churn)
        self._views: dict = {}  # (which buffer, shape): its view
        self._diagonals: dict = {}  # the causal part of a tile's mask, by its shape and offset
        nd = len(lead) + 2  # pad the masks to lead + (Tq or 1, Tk or 1), to slice them per tile
        self.bias = None if bias is None else bias.astype(dtype, copy=False).reshape(
            (1,) * (nd - bias.ndim) + bias.shape)
        self.allowed = None if allowed is None else allowed.reshape(
            (1,) * (nd - allowed.ndim) + allowed.shape)

    def query_blocks(self):
        return [(i0, min(i0 + self.bq, self.tq)) for i0 in range(0, self.tq, self.bq)]

    def key_blocks(self, i0, i1):
        """Key blocks that queries i0..i1-1 may see: with a causal offset, none past i1 - 1 + offset."""
        end = self.tk if self.offset is None else max(0, min(self.tk, i1 + self.offset))
        return [(j0, min(j0 + self.bk, end)) for j0 in range(0, end, self.bk)]

    def query_blocks_seeing(self, j0):
        """Query blocks that may see key j0 or later: with a causal offset, those whose last
        query i1 - 1 has i1 - 1 + offset >= j0."""
        return [(i0, i1) for i0, i1 in self.query_blocks()
                if self.offset is None or i1 - 1 + self.offset >= j0]

    def scores(self, q_blk, kt_blk, i0, i1, j0, j1):
        """S_IJ = Q_I K_J^T (+ bias_IJ), -inf where masked, as (N, bq, bk); None if all masked."""
        masked = self._mask(i0, i1, j0, j1)
        if masked is _SKIP:
            return None
        s = np.matmul(q_blk, kt_blk, out=self.buffer(0, q_blk.shape[:2] + kt_blk.shape[2:]))
        if self.bias is not None or masked is not None:
            s4 = s.reshape(self.lead + s.shape[1:])  # a view that broadcasts against the masks
            if self.bias is not None:
                s4 += _cut(self.bias, i0, i1, j0, j1)
            if masked is not None:
                hidden, c0 = masked
                np.copyto(s4[..., c0 - j0:], -np.inf, where=hidden)
        return s

    def exp_scores(self, q_blk, kt_blk, i0, i1, j0, j1):
        """exp(S_IJ - r_I), 0 where masked, as (N, bq, bk), for q_blk = [Q_I * scale, -r_I] * log2(e);
        None if all masked.

        The steps of `scores` then exp, arranged to be fast: the matmul gives (S_IJ - r_I) log2(e),
        and np.exp2 of that is exp(S_IJ - r_I). On a (4, 128, 128) tile, np.exp2 took 0.2-0.3 ns a
        number against np.exp's 0.4 (float32; 0.8 against 1.2 in float64), one thread. But
        np.exp2 is slow on -inf (2.5 ns), so masked entries are set to 0 after it instead of -inf
        before (an overflow there is overwritten too).
        """
        masked = self._mask(i0, i1, j0, j1)
        if masked is _SKIP:
            return None
        s = np.matmul(q_blk, kt_blk, out=self.buffer(0, q_blk.shape[:2] + kt_blk.shape[2:]))
        if self.bias is not None:
            s4 = s.reshape(self.lead + s.shape[1:])  # a view that broadcasts against the bias
            s4 += _cut(self.bias, i0, i1, j0, j1) * s.dtype.type(_LOG2E)
        np.exp2(s, out=s)
        if masked is not None:
            hidden, c0 = masked
            np.copyto(s.reshape(self.lead + s.shape[1:])[..., c0 - j0:], 0, where=hidden)
        return s

    def key_tile(self, blocks: list[np.ndarray], j0: int, j1: int) -> np.ndarray:
        """Keys j0..j1-1 (within one key block) of `_append_t`'s blocks (tiled.py), as (N, f + 1, j1 - j0)."""
        block = blocks[j0 // self.bk]
        return block if j1 - j0 == block.shape[2] else block[:, :, :j1 - j0]

    def first_scores(self, q_blk, kf, i0, i1):
        """S_i0 for the rows of q_blk (N, bq, 1), when key 0 is allowed for every query (no bool
        mask, diagonal at or above it) and finite: the reference `_fixed_reference`
        (tiled.py) sums against; else -inf (for a head, when one of its S_i0 is not
        finite)."""
        m = np.full(q_blk.shape[:2] + (1,), -np.inf, q_blk.dtype)
        if self.allowed is not None or (self.offset is not None and self.offset < 0) or self.tk == 0:
            return m
        s0 = q_blk @ kf[:, :1].transpose(0, 2, 1)  # (N, bq, 1)
        if self.bias is not None:
            s04 = s0.reshape(self.lead + s0.shape[1:])
            s04 += _cut(self.bias, i0, i1, 0, 1)
        s0[~np.isfinite(s0).all(axis=(1, 2))] = -np.inf  # per head: no reference there
        return s0

    def splits_heads(self) -> bool:
        """Whether `heads` may cut the grid: more than one head, and masks the same for all."""
        masks = [x for x in (self.bias, self.allowed) if x is not None]
        return math.prod(self.lead) > 1 and all(math.prod(x.shape[:-2]) == 1 for x in masks)

    def heads(self, a: int, b: int) -> _Tiles:
        """The grid of heads a..b-1 alone (with buffers of its own, for another thread); only
        when `splits_heads`."""
        bias, allowed = (None if x is None else x.reshape(x.shape[-2:]) for x in (self.bias, self.allowed))
        part = _Tiles((b - a,), self.tq, self.tk, bias, allowed, self.offset, self.bq, self.bk, self.dtype)
        part._diagonals = self._diagonals  # the causal tiles' masks: the same for every head
        return part

    def buffer(self, which, shape):
        """A contiguous array of `shape` (at most one tile) in reusable buffer 0 or 1."""
        view = self._views.get((which, shape))  # a few shapes recur: keep their views too
        if view is None:
            if self._buffers[which] is None:
                size = shape[0] * min(self.bq, self.tq) * min(self.bk, self.tk)
                self._buffers[which] = np.empty(size, self.dtype)
            view = self._views[which, shape] = self._buffers[which][:math.prod(shape)].reshape(shape)
        return view

    def release(self):
        """Drop the tile buffers (between forward and backward, and after backward)."""
        self._buffers, self._views = [None, None], {}

    def _mask(self, i0, i1, j0, j1):
        """(hidden, c0): the tile's bool mask (True = masked) over its columns c0..j1-1 (those
        before c0 are all allowed); None when the tile allows everything, _SKIP when it allows
        nothing."""
        mask = c0 = None
        if self.offset is not None:
            if j0 > i1 - 1 + self.offset:
                return _SKIP
            if j1 - 1 > i0 + self.offset:  # the diagonal crosses the tile, from column i0 + offset + 1
                c0 = max(j0, i0 + self.offset + 1)
                if self.allowed is None:  # the same few shapes recur along the diagonal: keep them
                    key = (i1 - i0, j1 - c0, i0 + self.offset - c0)
                    if key not in self._diagonals:
                        self._diagonals[key] = np.arange(c0, j1) > np.arange(i0, i1)[:, None] + self.offset
                    return self._diagonals[key], c0
                mask = np.arange(c0, j1) <= np.arange(i0, i1)[:, None] + self.offset
        if self.allowed is not None:
            tile = _cut(self.allowed, i0, i1, j0, j1)
            if not tile.any():
                return _SKIP
            if not tile.all():
                if mask is not None:  # both: widen the causal part to the whole tile
                    tile = tile & (np.arange(j0, j1) <= np.arange(i0, i1)[:, None] + self.offset)
                mask, c0 = tile, j0
                if not mask.any():
                    return _SKIP
        return None if mask is None else (~mask, c0)

    def add_bias_grad(self, dbias, ds, i0, i1, j0, j1):
        """dbias_IJ += dS_IJ, summed over the axes the bias was broadcast along."""
        ds4 = ds.reshape(self.lead + ds.shape[1:])
        target = _cut(dbias, i0, i1, j0, j1)
        axes = tuple(a for a, (t, s) in enumerate(zip(target.shape, ds4.shape)) if t == 1 and s != 1)
        target += ds4.sum(axis=axes, keepdims=True) if axes else ds4


def _cut(x: np.ndarray, i0: int, i1: int, j0: int, j1: int) -> np.ndarray:
    """The (i0:i1, j0:j1) tile of a mask padded to lead + (Tq or 1, Tk or 1); size-1 axes stay."""
    rows = slice(None) if x.shape[-2] == 1 else slice(i0, i1)
    cols = slice(None) if x.shape[-1] == 1 else slice(j0, j1)
    return x[..., rows, cols]
