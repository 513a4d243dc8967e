"""Variable-length sequences for the recurrent layers, as torch.nn.utils.rnn: padding a list of
sequences into one tensor, and packing a padded batch so that `nn.RNN` / `nn.GRU` / `nn.LSTM`
stop each sequence at its own length.

    padded = pad_sequence([a, b, c])                         # (T, B, *), zeros after each end
    packed = pack_padded_sequence(padded, lengths, enforce_sorted=False)
    out, h_n = gru(packed)                                   # h_n: each sequence's last real step
    out, lengths = pad_packed_sequence(out)

A PackedSequence holds, as torch's, the steps of every sequence time step by time step
(`data`: at step t the sequences longer than t, longest first), `batch_sizes` (how many
sequences step t has), and the order that sorts the batch by length (`sorted_indices`) and its
inverse. Packing and unpacking are Tensor ops (indexing and concatenation), so gradients flow
through them.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

import minigrad as mg
from minigrad import Tensor
from minigrad.errors import ShapeError

__all__ = ["PackedSequence", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "pad_sequence",
           "unpack_sequence", "unpad_sequence"]


class PackedSequence(NamedTuple):
    """A batch of sequences of different lengths, packed time step by time step (see the module
    docstring); made by `pack_padded_sequence` or `pack_sequence`, never by hand."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def lengths(self) -> np.ndarray:
        """Each sequence's length, in the batch's original order."""
        sizes = self.batch_sizes.numpy()
        by_length = (sizes[None, :] > np.arange(sizes[0])[:, None]).sum(1)  # longest first
        return by_length if self.unsorted_indices is None else by_length[self.unsorted_indices.numpy()]

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The data moved or cast as `Tensor.to`; the indices stay."""
        return self._replace(data=self.data.to(*args, **kwargs))

    @property
    def is_cuda(self) -> bool:
        return False


def _lengths(lengths: Any, batch: int, fn: str) -> np.ndarray:
    n = np.asarray(lengths.numpy() if isinstance(lengths, Tensor) else lengths)
    if n.ndim != 1 or n.dtype.kind not in "iu":
        raise ValueError(f"{fn}: lengths must be a 1-d list or tensor of integers, got {n!r}")
    if n.shape[0] != batch:
        raise ShapeError(f"{fn}: got {n.shape[0]} lengths for a batch of {batch} sequences")
    if n.size and n.min() < 1:
        raise ValueError(f"{fn}: every length must be at least 1, got {n.tolist()}")
    return n.astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) whose sequence b is
    lengths[b] long. With enforce_sorted the lengths must be in decreasing order (torch's
    rule for ONNX); otherwise the batch is sorted here and the order kept in the result."""
    fn = "pack_padded_sequence"
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ShapeError(f"{fn}: input must be a tensor of at least 2 dimensions, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    x = input.transpose(0, 1) if batch_first else input  # (T, B, *)
    n = _lengths(lengths, x.shape[1], fn)
    if n.size and n.max() > x.shape[0]:
        raise ShapeError(f"{fn}: a length {int(n.max())} is longer than the input's {x.shape[0]} steps")
    if enforce_sorted:
        if np.any(np.diff(n) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                               "pack_sequence to sidestep this requirement if you do not need ONNX "
                               "exportability.")
        order = None
    else:
        order = np.argsort(-n, kind="stable")
    return _pack(x, n, order)


def _pack(x: Tensor, lengths: np.ndarray, order: np.ndarray | None) -> PackedSequence:
    """x (T, B, *) packed: step t holds the sorted batch's first batch_sizes[t] rows."""
    sorted_x = x if order is None else x[:, order]
    n = lengths if order is None else lengths[order]
    sizes = (n[None, :] > np.arange(int(n[0]) if n.size else 0)[:, None]).sum(1)
    data = mg.cat([sorted_x[t, :int(b)] for t, b in enumerate(sizes)], dim=0)
    if order is None:
        return PackedSequence(data, mg.tensor(sizes.astype(np.int64)))
    return PackedSequence(data, mg.tensor(sizes.astype(np.int64)), mg.tensor(order.astype(np.int64)),
                          mg.tensor(np.argsort(order).astype(np.int64)))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *), the lengths as an int64
    tensor), in the batch's original order; T is the longest length, or total_length."""
    fn = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{fn}: expected a PackedSequence, not {type(sequence).__name__}")
    sizes = sequence.batch_sizes.numpy()
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"{fn}: expected total_length to be at least the length of the longest "
                             f"sequence ({steps}), but got total_length={total_length}")
        steps = total_length
    data, batch = sequence.data, int(sizes[0]) if len(sizes) else 0
    starts = np.concatenate([[0], np.cumsum(sizes)])
    pad = mg.full((batch, *data.shape[1:]), padding_value, dtype=data.dtype)
    rows = []
    for t in range(steps):
        b = int(sizes[t]) if t < len(sizes) else 0
        here = data[int(starts[t]):int(starts[t]) + b]
        rows.append(here if b == batch else mg.cat([here, pad[b:]], dim=0))
    out = mg.stack(rows, dim=0)  # (T, B, *), the sorted batch
    if sequence.unsorted_indices is not None:
        out = out[:, sequence.unsorted_indices.numpy()]
    lengths = mg.tensor(sequence.lengths().astype(np.int64))
    return (out.transpose(0, 1) if batch_first else out), lengths


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (T, B, *) ((B, T, *) with batch_first), T the
    longest L_i, padded with padding_value after each sequence (before it with
    padding_side="left")."""
    fn = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise ValueError(f"{fn}: padding_side must be 'left' or 'right', not {padding_side!r}")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise ValueError(f"{fn}: received an empty list of sequences")
    trailing = {tuple(s.shape[1:]) for s in seqs if isinstance(s, Tensor)}
    if len(trailing) != 1 or any(not isinstance(s, Tensor) or s.ndim == 0 for s in seqs):
        raise ShapeError(f"{fn}: every sequence must be a tensor (L, *) with the same trailing shape, got "
                         f"{[getattr(s, 'shape', type(s).__name__) for s in seqs]}")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        fill = mg.full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype)
        padded.append(mg.cat([s, fill] if padding_side == "right" else [fill, s], dim=0))
    return mg.stack(padded, dim=0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """pack_padded_sequence of pad_sequence(sequences), with their lengths."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The list of sequences of a padded batch, each cut to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)  # (B, T, *)
    n = _lengths(lengths, x.shape[0], "unpad_sequence")
    return [x[b, :int(k)] for b, k in enumerate(n)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences of a PackedSequence, in the batch's original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
