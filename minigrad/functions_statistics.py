"""Function forms of the statistics and reduction methods, with PyTorch's names and argument
names: `minigrad.median(x, 0)` is `x.median(0)`. Each is one line handing the work to the method."""

from __future__ import annotations

from typing import Any

import numpy as np

from .creation import as_tensor
from .tensor import Tensor
from .tensor_shape import Dim
from .tensor_statistics import MedianResult


def median(input: Any, dim: int | None = None, keepdim: bool = False) -> Tensor | MedianResult:
    return as_tensor(input).median(dim, keepdim)


def norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    return as_tensor(input).norm(p, dim, keepdim, dtype)


def multinomial(input: Any, num_samples: int, replacement: bool = False, *,
                generator: np.random.Generator | None = None) -> Tensor:
    return as_tensor(input).multinomial(num_samples, replacement, generator=generator)


def amax(input: Any, dim: Dim = (), keepdim: bool = False) -> Tensor:
    return as_tensor(input).amax(dim, keepdim)


def amin(input: Any, dim: Dim = (), keepdim: bool = False) -> Tensor:
    return as_tensor(input).amin(dim, keepdim)


def argmax(input: Any, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).argmax(dim, keepdim)


def argmin(input: Any, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return as_tensor(input).argmin(dim, keepdim)


def logsumexp(input: Any, dim: Dim, keepdim: bool = False) -> Tensor:
    return as_tensor(input).logsumexp(dim, keepdim)


def var(input: Any, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    return as_tensor(input).var(dim, unbiased, keepdim, correction=correction)


def std(input: Any, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    return as_tensor(input).std(dim, unbiased, keepdim, correction=correction)
