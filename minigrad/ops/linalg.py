"""Matrix multiplication for 1-D, 2-D and batched operands, and dtype casts."""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from .promotion import category, promote


def _T(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


class MatMul(Function):
    """z = a @ b        da = g @ b^T,  db = a^T @ g   (over the last two axes)

    As in numpy, a 1-D `a` is a row vector and a 1-D `b` a column vector, and leading
    (batch) axes broadcast; the engine sums the gradient back over broadcast batch axes.
    """

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is not b.dtype:
            a, b = _matmul_operands(a, b)
        _check_matmul(a.shape, b.shape)
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        needs = ctx.needs_input_grad
        if a.ndim == 1 and b.ndim == 1:  # dot product: g is a scalar
            return (g * b if needs[0] else None), (g * a if needs[1] else None)
        # Treat vectors as 1-row / 1-column matrices, then drop that axis again.
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = np.expand_dims(g2, -2)
        if b.ndim == 1:
            g2 = np.expand_dims(g2, -1)
        da = db = None
        if needs[0]:
            da = g2 @ _T(b2)
            if a.ndim == 1:
                da = da.squeeze(-2)
        if needs[1]:
            if b.ndim == 2 and a2.ndim > 2:
                # (B, T, k) @ (k, m): one (k, B*T) @ (B*T, m) product instead of B of them
                k = a2.shape[-1]
                db = a2.reshape(-1, k).T @ g2.reshape(-1, g2.shape[-1])
            else:
                db = _T(a2) @ g2
            if b.ndim == 1:
                db = db.squeeze(-1)
        return da, db


def _matmul_operands(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Operands of different dtypes: an integer or bool one beside a float one is refused, as
    PyTorch refuses it (numpy would silently make int64 @ float32 a float64 product; an
    integer operand is usually a forgotten .float()). Two float widths promote by the one
    rule (float32 @ float64 is float64), where PyTorch refuses: a deliberate difference, so
    that a float64 input runs through a float32 layer for a gradient check."""
    if category(a.dtype) != category(b.dtype):
        raise TypeError(
            f"matmul: {a.shape} {a.dtype} @ {b.shape} {b.dtype}: an integer or bool operand "
            "cannot multiply a float one; convert it first (x.float(), or x.to(w.dtype))"
        )
    return promote(a, b)


def _check_matmul(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    """Raise a readable error for operands that numpy's matmul would reject."""
    if len(sa) == 0 or len(sb) == 0:
        raise ValueError(f"matmul: {sa} @ {sb}: both operands need at least one dimension")
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        raise ValueError(f"matmul: {sa} @ {sb}: inner dimensions {ka} and {kb} differ")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: {sa} @ {sb}: batch dimensions {sa[:-2]} and {sb[:-2]} do not broadcast"
        ) from None


class Cast(Function):
    """z = x converted to dtype       dx = g converted back to x's dtype"""

    @staticmethod
    def forward(ctx, x, *, dtype):
        ctx.in_dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g.astype(ctx.in_dtype)
