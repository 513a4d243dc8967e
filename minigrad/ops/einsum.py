"""Einstein summation (einsum) with PyTorch's rules, and its backward as einsums.

The equation is parsed once into explicit subscripts: '...' becomes letters the equation does
not use (aligned from the right, as broadcasting aligns axes), and an implicit output (no
'->') is the '...' axes, then the letters seen exactly once, in alphabetical order (capitals
first), as in PyTorch. A letter of size 1 in one operand broadcasts against the others.
"""

from __future__ import annotations

import string
from typing import Sequence

import numpy as np

from ..autograd import Function
from .promotion import category, promote


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
            raise ValueError(f"einsum: operand {i} has {len(shape)} dimensions (shape {shape}) but its "
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
                raise ValueError(f"einsum: subscript {c} is repeated for operand {i} but the sizes "
                                 f"don't match, {mine[c]} != {s}")
        for c, s in mine.items():
            seen = sizes.setdefault(c, s)
            if seen != s and 1 not in (seen, s):
                raise ValueError(f"einsum: subscript {c} has size {s} for operand {i} (shape {shape}), "
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
    """

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
            r = np.einsum(",".join([out] + others) + "->" + target, g,
                          *[a for j, a in enumerate(xs) if j != i], optimize=len(xs) > 2)
            for k, c in enumerate(unique):  # letters summed within x_i alone: g is constant there
                if c not in known:
                    r = np.expand_dims(r, k)
            r = np.broadcast_to(r, [sizes[c] for c in unique])
            if unique == term:
                grads.append(r.astype(x.dtype, copy=False))
                continue
            dx = np.zeros(x.shape, dtype=x.dtype)
            np.einsum(term + "->" + unique, dx)[...] = r  # the diagonal of dx, as a view
            grads.append(dx)
        return tuple(grads)
