"""Filling: the in-place fills torch code writes (fill_, zero_, copy_, uniform_, normal_,
bernoulli_, exponential_, detach_) and the `new_*` methods that make a tensor of this one's
dtype.

A fill is an in-place op like any other (`Tensor._take_result`): refused on a leaf that requires
grad outside `no_grad`, it bumps the version counter, and inside a forward the tensor becomes the
fill's output, so the values it held before get a zero gradient (and copy_'s source gets the
gradient of the values it gave), as in PyTorch.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import creation
from ..random import numpy_generator
from ..tensor import Tensor
from .table import method, op

_EVERYWHERE = np.ones((), dtype=np.bool_)  # a mask that broadcasts to any shape


def _fill_with(self: Tensor, values: np.ndarray, op: str) -> Tensor:
    """Write `values` (an array of self's shape, no gradient) into self, as the op `op`."""
    cleared = self.masked_fill(_EVERYWHERE, 0)  # the old values' gradient: zero
    return self._take_result(cleared + Tensor._make(values.astype(self.dtype, copy=False), None), op)


@op
def fill_(self, value: float | Tensor) -> Tensor:
    """Set every element to `value` (a number or a 0-d tensor, which then gets the summed
    gradient of every element), in place; returns self."""
    return self._take_result(self.masked_fill(_EVERYWHERE, value), "fill_")


@op
def zero_(self) -> Tensor:
    """Set every element to zero, in place; returns self."""
    return self._take_result(self.masked_fill(_EVERYWHERE, 0), "zero_")


@method
def copy_(self, other: Any, non_blocking: bool = False) -> Tensor:
    """Write other's values into self, in place (other broadcasts to self's shape and is cast
    to self's dtype); other gets the gradient of the values it gave. Returns self."""
    src = other if isinstance(other, Tensor) else creation.as_tensor(other)
    try:
        fits = np.broadcast_shapes(src.shape, self.shape) == self.shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"copy_: the source of shape {src.shape} does not broadcast to {self.shape}")
    cleared = self.masked_fill(_EVERYWHERE, 0)
    return self._take_result(cleared + src.to(self.dtype).expand(*self.shape), "copy_")


@method
def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with numbers drawn uniformly from [from_, to), in place."""
    rng = numpy_generator(generator, "uniform_")
    return _fill_with(self, rng.uniform(from_, to, self.shape), "uniform_")


@method
def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with numbers drawn from the normal distribution N(mean, std**2), in place."""
    if std < 0:
        raise RuntimeError(f"normal_: std must be non-negative, got {std}")
    rng = numpy_generator(generator, "normal_")
    return _fill_with(self, rng.normal(mean, std, self.shape), "normal_")


@method
def bernoulli_(self, p: float = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 1 (probability p) or 0, in place."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_: p must be in [0, 1], got {p}")
    rng = numpy_generator(generator, "bernoulli_")
    return _fill_with(self, rng.random(self.shape) < p, "bernoulli_")


@method
def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with numbers drawn from the exponential distribution of rate `lambd`, in place."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_: lambd must be positive, got {lambd}")
    rng = numpy_generator(generator, "exponential_")
    return _fill_with(self, rng.exponential(1.0 / lambd, self.shape), "exponential_")


@op
def detach_(self) -> Tensor:
    """Cut this tensor from the graph, in place: it becomes a leaf that requires no grad."""
    self._node, self.requires_grad = None, False
    return self


# ----------------------------------------------------------------------------- new tensors


def _size(size: tuple, op: str) -> tuple[int, ...]:
    """torch's two spellings of a size: new_zeros(2, 3) and new_zeros((2, 3))."""
    if len(size) == 1 and isinstance(size[0], (Sequence, np.ndarray, Tensor)):
        size = tuple(size[0])
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in size):
        raise TypeError(f"{op}: a size is non-negative ints, got {size!r}")
    return tuple(int(n) for n in size)


@method
def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros of `size`, in this tensor's dtype unless `dtype` is given."""
    return creation.zeros(_size(size, "new_zeros"), dtype=dtype or self.dtype, device=device,
                          requires_grad=requires_grad)


@method
def new_ones(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones of `size`, in this tensor's dtype unless `dtype` is given."""
    return creation.ones(_size(size, "new_ones"), dtype=dtype or self.dtype, device=device,
                         requires_grad=requires_grad)


@method
def new_empty(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` whose values are not to be relied on, in this tensor's dtype unless
    `dtype` is given."""
    return creation.empty(_size(size, "new_empty"), dtype=dtype or self.dtype, device=device,
                          requires_grad=requires_grad)


@method
def new_full(self, size: Sequence[int], fill_value: float, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """`fill_value` in a tensor of `size`, in this tensor's dtype unless `dtype` is given."""
    return creation.full(_size((size,), "new_full"), fill_value, dtype=dtype or self.dtype, device=device,
                         requires_grad=requires_grad)


@method
def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of `data`, in this tensor's dtype unless `dtype` is given."""
    data = data.detach().numpy() if isinstance(data, Tensor) else data
    return creation.tensor(data, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)
