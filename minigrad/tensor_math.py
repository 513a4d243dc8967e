"""Tensor methods for math: elementwise functions and reductions.

They live in a base class of Tensor, `MathMethods`, only to keep tensor.py short; every one
is written out here and hands the work to an op in `minigrad.ops`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .ops.elementwise import Abs, Clip, Exp, Log, MaskedFill, Maximum, Minimum, ReLU, Sigmoid, Sqrt, Tanh
from .ops.reduce import LogSoftmax, LogSumExp, Max, Mean, Min, Softmax, Std, Sum, Var
from .tensor_shape import Dim

if TYPE_CHECKING:
    from .tensor import Tensor


def variance_options(op: str, dim: Any, unbiased: Any, keepdim: Any, correction: Any) -> dict:
    """torch's arguments of var and std as the op's (dim, keepdim, correction).

    torch has three forms: var(dim, unbiased=True, keepdim=False), var(dim=None, *,
    correction=1, keepdim=False) and var(unbiased) (a bool first); unbiased=True is
    correction 1 (divide by n - 1), False correction 0 (divide by n)."""
    if isinstance(dim, (bool, np.bool_)):  # x.var(False): the unbiased form
        if unbiased is not None:
            raise TypeError(f"{op}: got a bool dim ({dim}) and unbiased={unbiased!r}; the dims are "
                            "ints, and a lone bool is unbiased")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: give unbiased={unbiased!r} or correction={correction!r}, not both")
    if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"{op}: unbiased (the second positional argument, as in torch) must be a bool, "
                        f"not {unbiased!r}; for another divisor pass correction={unbiased!r}")
    if correction is None:
        correction = 0 if unbiased is False or unbiased is np.False_ else 1
    elif isinstance(correction, (bool, np.bool_)) or not isinstance(correction, (int, float, np.number)):
        raise TypeError(f"{op}: correction must be a number (n - correction divides), not {correction!r}")
    return {"dim": dim, "keepdim": bool(keepdim), "correction": correction}


class MathMethods:
    """The math methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    shape: tuple[int, ...]

    # ------------------------------------------------------------------ elementwise math

    def _floating(self) -> Tensor:
        """An integer or bool tensor as float32 (PyTorch's default float dtype), for the
        transcendental functions, which give a float for an integer input, as in PyTorch."""
        if self.data.dtype.kind in "fc":
            return self
        return self.float()

    def _float_only(self, op: str) -> None:
        """Reductions that average refuse integers, as PyTorch does (the mean of int64 has no
        int64 result)."""
        if self.data.dtype.kind not in "fc":
            raise TypeError(f"{op}: the input is {self.data.dtype}, not a floating-point tensor; "
                            f"convert it first with .float()")

    def exp(self) -> Tensor:
        return Exp.apply(self._floating())

    def log(self) -> Tensor:
        return Log.apply(self._floating())

    def sqrt(self) -> Tensor:
        return Sqrt.apply(self._floating())

    def abs(self) -> Tensor:
        return Abs.apply(self)

    def tanh(self) -> Tensor:
        return Tanh.apply(self._floating())

    def sigmoid(self) -> Tensor:
        return Sigmoid.apply(self._floating())

    def relu(self) -> Tensor:
        return ReLU.apply(self)

    def clip(self, min: float | Tensor | None = None, max: float | Tensor | None = None) -> Tensor:
        """Limit every value to [min, max]. A bound is a number or a tensor that broadcasts
        against self (and then gets its gradient); the result dtype follows the one rule
        (`int_tensor.clip(0.5, 1.5)` is float32, as in PyTorch)."""
        if min is None and max is None:
            raise ValueError("clip: give at least one of min and max")
        bounds = [self._other(b, fill="clip") for b in (min, max) if b is not None]
        try:
            return Clip.apply(self, *bounds, low=min is not None, high=max is not None)
        except ValueError:
            shapes = ", ".join(str(b.shape) for b in bounds)
            raise ValueError(f"clip: bounds of shape {shapes} do not broadcast against the "
                             f"input of shape {self.shape}") from None

    clamp = clip

    def maximum(self, other: Any) -> Tensor:
        return self._binary(Maximum, self, self._other(other))

    def minimum(self, other: Any) -> Tensor:
        return self._binary(Minimum, self, self._other(other))

    def masked_fill(self, mask: Any, value: float | Tensor) -> Tensor:
        """Put `value` where `mask` is True (mask broadcasts to self's shape).

        `value` is a number, or a 0-d tensor that then gets the gradients of the places it
        filled, summed (as in PyTorch)."""
        m = mask if isinstance(mask, MathMethods) else self._make(np.asarray(mask), None)
        if m.dtype != np.bool_:
            raise TypeError(f"masked_fill: the mask must be boolean, not {m.dtype}")
        try:
            fits = np.broadcast_shapes(m.shape, self.shape) == self.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"masked_fill: mask of shape {m.shape} does not broadcast to {self.shape}")
        if isinstance(value, MathMethods):  # a Tensor: a graph input, so that it gets a gradient
            if value.ndim != 0:
                raise ValueError(f"masked_fill: a tensor value must be 0-d, not of shape {value.shape}")
            return MaskedFill.apply(self, m, value)
        return MaskedFill.apply(self, m, value=value)

    # ------------------------------------------------------------------ reductions

    def sum(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        return Sum.apply(self, dim=dim, keepdim=keepdim)

    def mean(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        self._float_only("mean")
        return Mean.apply(self, dim=dim, keepdim=keepdim)

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """x.max(): the largest value, a tensor (tied maxima share the gradient).
        x.max(dim): a named tuple (values, indices), as PyTorch; see `_extreme`.
        x.max(other_tensor) is `maximum`, as in PyTorch."""
        if hasattr(dim, "data"):
            return self.maximum(dim)
        if dim is None:
            return Max.apply(self)
        return self._extreme(dim, keepdim, "max")

    def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """x.min(): the smallest value; x.min(dim): a named tuple (values, indices)."""
        if hasattr(dim, "data"):
            return self.minimum(dim)
        if dim is None:
            return Min.apply(self)
        return self._extreme(dim, keepdim, "min")

    def amax(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        """The largest values over dim (one, several or all), ties sharing the gradient."""
        return Max.apply(self, dim=dim, keepdim=keepdim)

    def amin(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        """The smallest values over dim (one, several or all), ties sharing the gradient."""
        return Min.apply(self, dim=dim, keepdim=keepdim)

    def var(self, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: float | None = None) -> Tensor:
        """Variance over dim, dividing by n - correction; torch's arguments: var(dim, unbiased,
        keepdim) or var(dim, correction=..., keepdim=...) (unbiased=True, the default, is
        correction=1; False is 0), and var(False) (see `variance_options`)."""
        self._float_only("var")
        return Var.apply(self, **variance_options("var", dim, unbiased, keepdim, correction))

    def std(self, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: float | None = None) -> Tensor:
        """Standard deviation over dim, with var's arguments; a constant slice gets gradient 0,
        as in PyTorch."""
        self._float_only("std")
        return Std.apply(self, **variance_options("std", dim, unbiased, keepdim, correction))

    def logsumexp(self, dim: Dim = None, keepdim: bool = False) -> Tensor:
        return LogSumExp.apply(self, dim=dim, keepdim=keepdim)

    def softmax(self, dim: int = -1) -> Tensor:
        return Softmax.apply(self, dim=dim)

    def log_softmax(self, dim: int = -1) -> Tensor:
        return LogSoftmax.apply(self, dim=dim)
