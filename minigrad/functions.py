"""Function forms of the Tensor methods, with PyTorch's names and argument names:
`minigrad.sin(x)` is `x.sin()`, `minigrad.sum(x, dim=1)` is `x.sum(dim=1)`.

Each is one line handing the work to the method, so the two can never disagree. The input may
be anything `as_tensor` takes (a number, a list, an array). Several names (sum, max, min, abs,
all, any, round) are Python builtins too: `minigrad.sum` is PyTorch's, the builtin is untouched.
"""

from __future__ import annotations

from typing import Any

from .creation import as_tensor, maximum
from .tensor import Tensor
from .tensor_shape import Dim

# ----------------------------------------------------------------------------- pointwise math


def exp(input: Any) -> Tensor:
    return as_tensor(input).exp()


def exp2(input: Any) -> Tensor:
    return as_tensor(input).exp2()


def expm1(input: Any) -> Tensor:
    return as_tensor(input).expm1()


def log(input: Any) -> Tensor:
    return as_tensor(input).log()


def log2(input: Any) -> Tensor:
    return as_tensor(input).log2()


def log10(input: Any) -> Tensor:
    return as_tensor(input).log10()


def log1p(input: Any) -> Tensor:
    return as_tensor(input).log1p()


def logaddexp(input: Any, other: Any) -> Tensor:
    return as_tensor(input).logaddexp(other)


def sqrt(input: Any) -> Tensor:
    return as_tensor(input).sqrt()


def rsqrt(input: Any) -> Tensor:
    return as_tensor(input).rsqrt()


def reciprocal(input: Any) -> Tensor:
    return as_tensor(input).reciprocal()


def square(input: Any) -> Tensor:
    return as_tensor(input).square()


def abs(input: Any) -> Tensor:
    return as_tensor(input).abs()


def sin(input: Any) -> Tensor:
    return as_tensor(input).sin()


def cos(input: Any) -> Tensor:
    return as_tensor(input).cos()


def tan(input: Any) -> Tensor:
    return as_tensor(input).tan()


def asin(input: Any) -> Tensor:
    return as_tensor(input).asin()


def acos(input: Any) -> Tensor:
    return as_tensor(input).acos()


def atan(input: Any) -> Tensor:
    return as_tensor(input).atan()


def atan2(input: Any, other: Any) -> Tensor:
    return as_tensor(input).atan2(other)


arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2


def sinh(input: Any) -> Tensor:
    return as_tensor(input).sinh()


def cosh(input: Any) -> Tensor:
    return as_tensor(input).cosh()


def tanh(input: Any) -> Tensor:
    return as_tensor(input).tanh()


def sigmoid(input: Any) -> Tensor:
    return as_tensor(input).sigmoid()


def relu(input: Any) -> Tensor:
    return as_tensor(input).relu()


def erf(input: Any) -> Tensor:
    return as_tensor(input).erf()


def hypot(input: Any, other: Any) -> Tensor:
    return as_tensor(input).hypot(other)


def lerp(input: Any, end: Any, weight: Any) -> Tensor:
    return as_tensor(input).lerp(end, weight)


def sign(input: Any) -> Tensor:
    return as_tensor(input).sign()


def floor(input: Any) -> Tensor:
    return as_tensor(input).floor()


def ceil(input: Any) -> Tensor:
    return as_tensor(input).ceil()


def round(input: Any, *, decimals: int = 0) -> Tensor:
    return as_tensor(input).round(decimals=decimals)


def trunc(input: Any) -> Tensor:
    return as_tensor(input).trunc()


fix = trunc


def frac(input: Any) -> Tensor:
    return as_tensor(input).frac()


def remainder(input: Any, other: Any) -> Tensor:
    return as_tensor(input).remainder(other)


def fmod(input: Any, other: Any) -> Tensor:
    return as_tensor(input).fmod(other)


def clamp(input: Any, min: Any = None, max: Any = None) -> Tensor:
    return as_tensor(input).clamp(min, max)


clip = clamp


def clamp_min(input: Any, min: Any) -> Tensor:
    return as_tensor(input).clamp_min(min)


def clamp_max(input: Any, max: Any) -> Tensor:
    return as_tensor(input).clamp_max(max)


def nan_to_num(input: Any, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    return as_tensor(input).nan_to_num(nan=nan, posinf=posinf, neginf=neginf)


# ----------------------------------------------------------------------------- linear algebra, reductions


def matmul(input: Any, other: Any) -> Tensor:
    return as_tensor(input).matmul(other)


def sum(input: Any, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).sum(dim=dim, keepdim=keepdim)


def mean(input: Any, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).mean(dim=dim, keepdim=keepdim)


def max(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """`x.max(dim, keepdim)`; with a tensor as the second argument, `maximum`, as in PyTorch."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    return as_tensor(input).max(dim=dim, keepdim=keepdim)


def min(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """`x.min(dim, keepdim)`; with a tensor as the second argument, `minimum`, as in PyTorch."""
    if isinstance(dim, Tensor):
        return as_tensor(input).minimum(dim)
    return as_tensor(input).min(dim=dim, keepdim=keepdim)


def softmax(input: Any, dim: int) -> Tensor:
    return as_tensor(input).softmax(dim)


def log_softmax(input: Any, dim: int) -> Tensor:
    return as_tensor(input).log_softmax(dim)


# ----------------------------------------------------------------------------- shape


def reshape(input: Any, shape: Any) -> Tensor:
    return as_tensor(input).reshape(shape)


def transpose(input: Any, dim0: int, dim1: int) -> Tensor:
    return as_tensor(input).transpose(dim0, dim1)


def permute(input: Any, dims: Any) -> Tensor:
    return as_tensor(input).permute(dims)


def unsqueeze(input: Any, dim: int) -> Tensor:
    return as_tensor(input).unsqueeze(dim)


def squeeze(input: Any, dim: Dim = None) -> Tensor:
    return as_tensor(input).squeeze(dim)


# ----------------------------------------------------------------------------- comparison and logic (no grad)


def eq(input: Any, other: Any) -> Tensor:
    return as_tensor(input).eq(other)


def ne(input: Any, other: Any) -> Tensor:
    return as_tensor(input).ne(other)


def lt(input: Any, other: Any) -> Tensor:
    return as_tensor(input).lt(other)


def le(input: Any, other: Any) -> Tensor:
    return as_tensor(input).le(other)


def gt(input: Any, other: Any) -> Tensor:
    return as_tensor(input).gt(other)


def ge(input: Any, other: Any) -> Tensor:
    return as_tensor(input).ge(other)


def isnan(input: Any) -> Tensor:
    return as_tensor(input).isnan()


def isinf(input: Any) -> Tensor:
    return as_tensor(input).isinf()


def isfinite(input: Any) -> Tensor:
    return as_tensor(input).isfinite()


def logical_not(input: Any) -> Tensor:
    return as_tensor(input).logical_not()


def logical_and(input: Any, other: Any) -> Tensor:
    return as_tensor(input).logical_and(other)


def logical_or(input: Any, other: Any) -> Tensor:
    return as_tensor(input).logical_or(other)


def logical_xor(input: Any, other: Any) -> Tensor:
    return as_tensor(input).logical_xor(other)


def all(input: Any, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).all(dim=dim, keepdim=keepdim)


def any(input: Any, dim: Dim = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).any(dim=dim, keepdim=keepdim)


def equal(input: Any, other: Any) -> bool:
    return as_tensor(input).equal(other)


def isclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    return as_tensor(input).isclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    return as_tensor(input).allclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan)


# ------------------------------------------------------------------------- products, running sums, ordering


def prod(input: Any, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).prod(dim=dim, keepdim=keepdim)


def cumsum(input: Any, dim: int) -> Tensor:
    return as_tensor(input).cumsum(dim)


def cumprod(input: Any, dim: int) -> Tensor:
    return as_tensor(input).cumprod(dim)


def sort(input: Any, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
    return as_tensor(input).sort(dim=dim, descending=descending, stable=stable)


def argsort(input: Any, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    return as_tensor(input).argsort(dim=dim, descending=descending, stable=stable)


def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    return as_tensor(input).topk(k, dim=dim, largest=largest, sorted=sorted)


def count_nonzero(input: Any, dim: Dim = None) -> Tensor:
    return as_tensor(input).count_nonzero(dim=dim)
