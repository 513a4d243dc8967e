"""Cache-sized pieces and BLAS-backed sums, which the fused kernels of linear.py,
normalization.py and activation.py share: how a large array is cut (PIECE elements per piece or
block of rows, CHUNK elements per numpy call on a thread) and row means and column sums as
matrix-vector products."""

from __future__ import annotations

import numpy as np

from minigrad.runtime.parallel import run_spans

# Elementwise kernels make several passes over their arrays. Once the arrays outgrow the core's
# L2 cache (a few MiB), every pass reads them from memory again; done piece by piece, each
# pass after the first finds its piece in cache. GELU (tanh) of (2, 1024, 512) float32, one
# thread, forward + backward: 4.8 ms at once, 3.0 ms in pieces of 2**16 elements (2**14: 3.8,
# 2**15: 3.3, 2**17: 3.2); of (16, 64, 256): 0.90 ms and 0.72 ms. Layer norm's row blocks are
# PIECE elements too.
PIECE = 2**16
# GELU's chunks: on two threads, every numpy call of a chunk also hands the GIL between the
# threads, and on the VM of the README a hand-off can cost tens of microseconds. GELU (tanh)
# of (2, 1024, 512), forward + backward, best of 5: one thread 8.9 ms in chunks of 2**18
# elements, 9.4 in chunks of 2**16; two threads 6.0 and 11.3 ms.
CHUNK = 2**18


def col_sums(a: np.ndarray) -> np.ndarray:
    """a.sum(axis=0) of a 2-D array as ones @ a: BLAS reads a once, about 4x faster than
    numpy's strided reduction down the columns."""
    return np.ones(a.shape[0], dtype=a.dtype) @ a


def row_means(a: np.ndarray) -> np.ndarray:
    """a.mean(axis=1, keepdims=True) of a 2-D array as a @ (ones / n): a matrix-vector product,
    about 4x faster than numpy's sum over short rows."""
    return (a @ np.full(a.shape[1], 1.0 / max(a.shape[1], 1), dtype=a.dtype))[:, None]


def exact_row_means(a: np.ndarray) -> np.ndarray:
    """`row_means(a)`, exactly a0 for a row of n values a0.

    The matrix-vector product rounds: of 768 values of 123456.789 in float32 it is off by an
    ulp, and layer norm's x_hat then ulp / sqrt(eps) = 0.98 instead of 0. So the rows that may
    be constant, those whose first and last values are equal (every constant row, and few
    others), are averaged again as a0 + mean(a - a0), a0 the first value: the same number, but
    a constant row's a - a0 is exactly 0. Other rows cost one comparison."""
    m = row_means(a)
    if a.shape[1]:
        rows = np.flatnonzero(a[:, 0] == a[:, -1])
        if rows.size:
            a0 = a[rows, :1]
            m[rows] = a0 + row_means(a[rows] - a0)
    return m


def row_blocks(a: np.ndarray) -> list[slice]:
    """Blocks of rows of a 2-D array of about PIECE elements each (one block if it is small)."""
    rows = max(1, PIECE // max(a.shape[1], 1))
    return [slice(r, r + rows) for r in range(0, max(a.shape[0], 1), rows)]


def by_pieces(fn, inputs: tuple[np.ndarray, ...], outputs: tuple[np.ndarray, ...]) -> None:
    """fn(*input pieces, *output pieces) over matching pieces of same-size arrays: flat views
    of contiguous arrays, so the pieces are contiguous too (0-d arrays are one piece). The
    pieces are independent, so large arrays are spread over the threads (minigrad.runtime.parallel),
    in runs of PIECE-sized pieces for balance; each thread does its run CHUNK elements at a
    time. fn is elementwise, so the cut changes no result."""
    flat = [a.reshape(-1) for a in inputs + outputs]
    size = flat[0].size

    def run(start: int, stop: int) -> None:
        lo, hi = start * PIECE, min(stop * PIECE, size)
        for i in range(lo, max(hi, lo + 1), CHUNK):  # (a 0-d array: one chunk of 1)
            fn(*(a[i:min(i + CHUNK, hi)] for a in flat))

    run_spans(run, [min(PIECE, size - i) for i in range(0, max(size, 1), PIECE)])
