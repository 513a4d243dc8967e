"""Matrix multiplication for 1-D, 2-D and batched operands, and dtype casts."""

from __future__ import annotations

import string
from typing import Any, Sequence

import numpy as np

from ..autograd import Function
from ..creation import as_tensor
from ..errors import ShapeError
from ..tensor import Tensor
from . import either
from .promotion import category, promote
from .table import function, method, op


def _T(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


class MatMul(Function):
    """z = a @ b        da = g @ b^T,  db = a^T @ g   (over the last two axes)

    As in numpy, a 1-D `a` is a row vector and a 1-D `b` a column vector, and leading
    (batch) axes broadcast; the engine sums the gradient back over broadcast batch axes.
    """

    differentiable_backward = True  # see graph_backward.py

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
            g2 = either.expand_dims(g2, (-2,))
        if b.ndim == 1:
            g2 = either.expand_dims(g2, (-1,))
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


@method
def __matmul__(self, other: Any) -> Tensor:
    return MatMul.apply(self, self._other(other))


@method
def __rmatmul__(self, other: Any) -> Tensor:
    return MatMul.apply(self._other(other), self)


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
        raise ShapeError(f"matmul: {sa} @ {sb}: both operands need at least one dimension")
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        raise ShapeError(f"matmul: {sa} @ {sb}: inner dimensions {ka} and {kb} differ")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ShapeError(
            f"matmul: {sa} @ {sb}: batch dimensions {sa[:-2]} and {sb[:-2]} do not broadcast"
        ) from None


# ----------------------------------------------------------------------------- einsum


def _terms(equation: str, n: int) -> tuple[list[str], str | None]:
    """The operands' subscripts and the output's (None when implicit), '...' kept as '.'."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n:
        more = "more" if n > len(terms) else "fewer"
        raise ValueError(f"einsum: {more} operands ({n}) were given than the equation {equation!r} "
                         f"specifies ({len(terms)})")
    out = rhs if arrow else None
    for term in terms + ([out] if arrow else []):
        bare = term.replace("...", ".")
        if bare.count(".") > 1 or (bare.count(".") == 1 and "..." not in term):
            raise ValueError(f"einsum: {term!r} in {equation!r} may hold one '...' and no other dots")
        for c in bare:
            if c != "." and c not in string.ascii_letters:
                raise ValueError(f"einsum: invalid subscript {c!r} in {equation!r}; subscripts must "
                                 "be in [a-zA-Z]")
    return [t.replace("...", ".") for t in terms], None if out is None else out.replace("...", ".")


def parse(equation: str, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str, dict[str, int]]:
    """(operand subscripts, output subscripts, size of each letter), '...' made explicit."""
    terms, out = _terms(equation, len(shapes))
    spare = [c for c in string.ascii_letters if c not in equation]
    lengths = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        k = len(shape) - (len(term) - term.count("."))
        if k < 0 or (k > 0 and "." not in term):
            named = len(term) - term.count(".")
            raise ShapeError(f"einsum: operand {i} has {len(shape)} dimensions (shape {shape}) but its "
                             f"subscripts {term.replace('.', '...')!r} name {named}"
                             + ("" if "." in term else " and no '...' was given"))
        lengths.append(k if "." in term else 0)
    ell = "".join(spare[:max(lengths, default=0)])
    terms = [t.replace(".", ell[len(ell) - k:]) for t, k in zip(terms, lengths)]
    if out is None:
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    else:
        out = out.replace(".", ell)  # no '...' in the output: its axes are summed
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"einsum: output subscript {c} appears more than once in {equation!r}")
            if not any(c in t for t in terms):
                raise ValueError(f"einsum: output subscript {c} does not appear in any operand of "
                                 f"{equation!r}")
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        mine: dict[str, int] = {}
        for c, s in zip(term, shape):
            if mine.setdefault(c, s) != s:
                raise ShapeError(f"einsum: subscript {c} is repeated for operand {i} but the sizes "
                                 f"don't match, {mine[c]} != {s}")
        for c, s in mine.items():
            seen = sizes.setdefault(c, s)
            if seen != s and 1 not in (seen, s):
                raise ShapeError(f"einsum: subscript {c} has size {s} for operand {i} (shape {shape}), "
                                 f"which does not broadcast with the size {seen} seen before")
            sizes[c] = max(seen, s) if 1 in (seen, s) else s
    return terms, out, sizes


def _unique(term: str) -> str:
    return "".join(dict.fromkeys(term))


class Einsum(Function):
    """z = einsum(equation, x_1, ..., x_n)
    dx_i = einsum(out, x_1 .. x_n without x_i -> subscripts of x_i) of g with the others

    A letter of x_i that appears nowhere else (summed in x_i alone) is broadcast back; a letter
    repeated in x_i (a diagonal, `ii->i`, or a trace, `ii->`) gets its gradient on that
    diagonal only (written through np.einsum's writable diagonal view of zeros).

    Under create_graph each dx is an einsum op of g and the other operands (graph_saved gives
    them promoted and broadcast, as forward saved them), a diagonal placed by a constant mask.
    """

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def graph_saved(ctx, *tensors):
        """The operands as forward saved them (promoted, size-1 letters broadcast), as ops."""
        found = []
        for t, a in zip(tensors[:-1], ctx.saved):
            t = t if t.dtype == a.dtype else t.to(a.dtype)
            found.append(t if t.shape == a.shape else t.expand(a.shape))
        return tuple(found)

    @staticmethod
    def forward(ctx, *xs, equation):
        if len({category(x.dtype) for x in xs}) > 1:
            raise TypeError(f"einsum: operands of dtypes {', '.join(str(x.dtype) for x in xs)} mix "
                            "integer or bool with float; convert them first (x.float())")
        xs = promote(*xs) if len(xs) > 1 else xs
        terms, out, sizes = parse(equation, [x.shape for x in xs])
        full = [tuple(sizes[c] for c in t) for t in terms]  # size-1 letters broadcast
        xs = [x if x.shape == f else np.broadcast_to(x, f) for x, f in zip(xs, full)]
        ctx.terms, ctx.out, ctx.sizes = terms, out, sizes
        ctx.save_for_backward(*xs)
        return np.einsum(",".join(terms) + "->" + out, *xs, optimize=len(xs) > 2)

    @staticmethod
    def backward(ctx, g):
        xs, terms, out, sizes = ctx.saved, ctx.terms, ctx.out, ctx.sizes
        grads = []
        for i, (x, term) in enumerate(zip(xs, terms)):
            if not ctx.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [t for j, t in enumerate(terms) if j != i]
            known = set(out).union(*others)
            unique = _unique(term)
            target = "".join(c for c in unique if c in known)
            rest = [a for j, a in enumerate(xs) if j != i]
            if not isinstance(g, Tensor):
                r = np.einsum(",".join([out] + others) + "->" + target, g, *rest, optimize=len(xs) > 2)
            else:  # create_graph: the einsum as an op
                r = Einsum.apply(g, *rest, equation=",".join([out] + others) + "->" + target)
            for k, c in enumerate(unique):  # letters summed within x_i alone: g is constant there
                if c not in known:
                    r = either.expand_dims(r, (k,))
            r = either.broadcast_to(r, tuple(sizes[c] for c in unique))
            if unique == term:
                grads.append(either.astype(r, x.dtype))
                continue
            if isinstance(g, Tensor):
                grads.append(_on_diagonal(r, term, unique, x.shape, x.dtype))
                continue
            dx = np.zeros(x.shape, dtype=x.dtype)
            np.einsum(term + "->" + unique, dx)[...] = r  # the diagonal of dx, as a view
            grads.append(dx)
        return tuple(grads)


def _on_diagonal(r: Tensor, term: str, unique: str, shape: tuple[int, ...], dtype) -> Tensor:
    """r (over the letters of `unique`) on the diagonal of zeros of `shape` (over `term`, a
    letter repeated), as ops: r with a size-1 axis at each repeat, broadcast, then masked."""
    first = set()
    spread = []
    for c in term:
        spread.append(-1 if c not in first else 1)
        first.add(c)
    r = either.astype(r, dtype).reshape(tuple(r.shape[unique.index(c)] if s == -1 else 1
                                              for c, s in zip(term, spread)))
    mask = np.zeros(shape, bool)
    np.einsum(term + "->" + unique, mask)[...] = True
    return either.where(mask, r.expand(shape), np.zeros((), dtype=dtype))


@function
def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation: `einsum("bij,bjk->bik", a, b)` is a batched matmul, `"ii->"` a
    trace, `"ii->i"` a diagonal, `"i,j->ij"` an outer product, `"...ij->...ji"` a transpose of
    the last two axes. Without '->' the output is the '...' axes, then the letters seen once,
    in alphabetical order. The operands may also come as one list: einsum(eq, [a, b])."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string, not {type(equation).__name__}")
    return Einsum.apply(*[as_tensor(x) for x in operands], equation=equation)


# ----------------------------------------------------------------------------- methods


@op
def outer(self, vec2: Any) -> Tensor:
    """out[i, j] = self[i] * vec2[j], for two 1-d tensors (PyTorch's reshape and multiply)."""
    other = self._other(vec2)
    for name, t in (("self", self), ("vec2", other)):
        if t.ndim != 1:
            raise ShapeError(f"outer: expected 1-D argument {name}, but got {t.ndim}-D (shape {t.shape})")
    return self.reshape(-1, 1) * other


@op
def mm(self, mat2: Any) -> Tensor:
    """The matrix product of two 2-d tensors (no broadcasting; matmul has it)."""
    other = self._other(mat2)
    for name, t in (("self", self), ("mat2", other)):
        if t.ndim != 2:
            raise ShapeError(f"mm: {name} must be a matrix, not of shape {t.shape}")
    if self.shape[1] != other.shape[0]:
        raise ShapeError(f"mm: mat1 and mat2 shapes cannot be multiplied "
                         f"({self.shape[0]}x{self.shape[1]} and {other.shape[0]}x{other.shape[1]})")
    return self @ other


@op
def bmm(self, mat2: Any) -> Tensor:
    """The products of two equal batches of matrices, (b, n, m) and (b, m, p) (no broadcasting)."""
    other = self._other(mat2)
    for name, t in (("batch1", self), ("batch2", other)):
        if t.ndim != 3:
            raise ShapeError(f"bmm: {name} must be a 3D tensor, not of shape {t.shape}")
    want = [self.shape[0], self.shape[2]]
    if list(other.shape[:2]) != want:
        raise ShapeError(f"bmm: expected size for first two dimensions of batch2 tensor to be: "
                         f"{want} but got: {list(other.shape[:2])} (batch1 {self.shape})")
    return self @ other


@op
def matmul(self, other: Any) -> Tensor:
    return self @ other
