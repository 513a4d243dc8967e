"""Tensor methods that change the dtype: to, float, double, long.

They live in a base class of Tensor, `DtypeMethods`, only to keep tensor.py short. A cast to a
float dtype is the differentiable `Cast` op; a cast to an integer or boolean dtype leaves the
graph (such tensors never require grad).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .ops.linalg import Cast

if TYPE_CHECKING:
    from .tensor import Tensor


class DtypeMethods:
    """The dtype methods of Tensor (see tensor.py for the rest)."""

    __slots__ = ()
    data: np.ndarray
    dtype: np.dtype
    _make: Any

    def to(self, dtype: Any) -> Tensor:
        if self.dtype == np.dtype(dtype):
            return self  # type: ignore[return-value]
        if np.dtype(dtype).kind not in "fc":  # integer and boolean tensors never require grad
            return self._make(self.data.astype(dtype), None)
        return Cast.apply(self, dtype=dtype)

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def long(self) -> Tensor:
        return self.to(np.int64)
