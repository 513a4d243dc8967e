"""The argument checks the functional forms share: each error names the function, what was
given and, raised inside a module's call, the module (`_where`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad import Tensor
from minigrad.errors import ShapeError
from minigrad.grad_mode import current_scope
from minigrad.viz import describe_scope

_REDUCTIONS = ("mean", "sum", "none")
_CONVERT = {"float32": "x.float()", "float64": "x.double()"}


def _check_reduction(fn: str, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}: reduction must be one of {_REDUCTIONS}, not {reduction!r}")


def _where() -> str:
    """" (in the module blocks.0.fc (Linear))" when raised inside a module call, else "": a student
    then knows which layer got the bad input."""
    scope = current_scope()
    return f" (in the module {describe_scope(scope)})" if scope else ""


def _need_tensor(fn: str, what: str, x: Any) -> None:
    """A TypeError naming fn when `x` is not a Tensor (a numpy array in its place has
    no `_data`, so without this check the error would come from deep inside a kernel)."""
    if not isinstance(x, Tensor):
        kind = (f"a numpy array of shape {x.shape}" if isinstance(x, np.ndarray)
                else f"a {type(x).__name__}")
        raise TypeError(f"{fn}: {what} is {kind}, not a Tensor{_where()}; wrap it with mg.tensor(...)")


def _need_nc_input(fn: str, input: Any) -> None:
    """The input of a per-channel norm: a float Tensor of at least 2 dimensions (N, C, *)."""
    _need_tensor(fn, "the input", input)
    if input.ndim < 2:
        raise ShapeError(f"{fn}: the input needs at least 2 dimensions (N, C, *), got shape "
                         f"{input.shape}{_where()}")
    if input.dtype.kind != "f":
        raise TypeError(f"{fn}: the input has dtype {input.dtype}; convert it with x.float()")


def _int_array(fn: str, what: str, t: Any) -> np.ndarray:
    """The integer array inside `t` (Tensor, array, list or int), or a TypeError naming fn."""
    arr = t._data if isinstance(t, Tensor) else np.asarray(t)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"{fn}: {what} must hold integer ids, not {arr.dtype} "
            "(make them with dtype=minigrad.int64)"
        )
    return arr
