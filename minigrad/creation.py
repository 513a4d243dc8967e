"""Functions that make tensors: from data, filled, random, ranges (joining them is in ops/shape.py)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .device import check_device
from .errors import ArgumentError, ShapeError
from .random import numpy_generator
from .tensor import Tensor, to_array


def _shape(size: tuple, op: str) -> tuple[int, ...]:
    """`size` (sizes, or one sequence of them) as a shape, or an error naming op and size."""
    shape = tuple(size[0]) if len(size) == 1 and hasattr(size[0], "__iter__") else size
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, (bool, np.bool_)):
            raise TypeError(f"{op}: sizes must be integers, got {s!r} in {tuple(shape)}")
        if s < 0:
            raise ShapeError(f"{op}: sizes must not be negative, got {s} in {tuple(shape)}")
    return tuple(int(s) for s in shape)


def _made(data: np.ndarray, requires_grad: bool) -> Tensor:
    return Tensor(data, requires_grad=requires_grad)


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           name: str | None = None) -> Tensor:
    """A new leaf tensor holding a copy of `data` (float32 for Python numbers and lists).

    `name` labels it in graph drawings (the same as setting `t.name` later).
    """
    check_device(device, "tensor")
    t = _made(np.array(to_array(data, dtype), copy=True), requires_grad)
    t.name = name
    return t


def zeros(*size: Any, dtype: Any = np.float32, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of the given size filled with 0 (float32 unless dtype says otherwise)."""
    check_device(device, "zeros")
    return _made(np.zeros(_shape(size, "zeros"), dtype=dtype), requires_grad)


def ones(*size: Any, dtype: Any = np.float32, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of the given size filled with 1 (float32 unless dtype says otherwise)."""
    check_device(device, "ones")
    return _made(np.ones(_shape(size, "ones"), dtype=dtype), requires_grad)


def _fill_dtype(fill_value: Any) -> np.dtype:
    """torch.full's dtype for a fill and no dtype: bool for a bool, int64 for an int, float32
    for a float, complex64 for a complex (numpy scalars count as the Python number they hold)."""
    if isinstance(fill_value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(fill_value, (int, np.integer)):
        return np.dtype(np.int64)
    if isinstance(fill_value, (complex, np.complexfloating)):
        return np.dtype(np.complex64)
    return np.dtype(np.float32)


def full(size: Sequence[int], fill_value: float, *, dtype: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`; without a dtype, as torch.full: int64 for
    an int fill, bool for a bool, float32 for a float (`full((2,), 1.0)`, not `1`, for floats)."""
    check_device(device, "full")
    dtype = _fill_dtype(fill_value) if dtype is None else dtype
    return _made(np.full(_shape((size,), "full"), fill_value, dtype=dtype), requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """As torch.empty: a tensor of `size` whose values are not to be relied on (here zeros)."""
    check_device(device, "empty")
    return _made(np.zeros(_shape(size, "empty"), dtype=dtype or np.float32), requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """`steps` values evenly spaced from start to end, both included (float32 unless `dtype`).

    For an integer dtype start and end are truncated to integers first and the values, computed
    in float64, truncated toward zero, as torch.linspace does; where a value lands within
    rounding of an integer, torch's vectorised kernel can give the integer below instead.
    """
    check_device(device, "linspace")
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, (bool, np.bool_)):
        raise TypeError(f"linspace: steps must be an int, not {steps!r}")
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    start, end = (float(getattr(v, "_data", v)) for v in (start, end))  # 0-d tensors too
    if dtype is not None and np.dtype(dtype).kind in "biu":
        start, end = float(int(start)), float(int(end))
    values = np.linspace(start, end, int(steps), dtype=np.float64)
    return _made(values.astype(dtype or np.float32), requires_grad)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory and dtype, as torch.from_numpy: changing one
    changes the other."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected an np.ndarray, got {type(ndarray).__name__}")
    if ndarray.dtype.kind not in "biufc":
        raise TypeError(f"from_numpy: cannot make a tensor from an array of {ndarray.dtype}; "
                        "supported are bool, integer, float and complex arrays")
    return Tensor._make(ndarray, None)


def eye(n: int, m: int | None = None, *, dtype: Any = np.float32, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The n x m identity matrix (m = n by default)."""
    check_device(device, "eye")
    return _made(np.eye(n, m, dtype=dtype), requires_grad)


def randn(*size: Any, generator: Any = None, dtype: Any = np.float32, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the global generator (see `manual_seed`) or `generator`."""
    check_device(device, "randn")
    rng = numpy_generator(generator, "randn")
    return _made(rng.standard_normal(_shape(size, "randn")).astype(dtype), requires_grad)


def rand(*size: Any, generator: Any = None, dtype: Any = np.float32, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from the global generator or `generator`."""
    check_device(device, "rand")
    return _made(numpy_generator(generator, "rand").random(_shape(size, "rand")).astype(dtype), requires_grad)


def randint(low: int, high: Any = None, size: Sequence[int] | None = None, *, generator: Any = None,
            dtype: Any = np.int64, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high), int64, from the global generator or
    `generator`; as torch, also randint(high, size), low 0."""
    check_device(device, "randint")
    if size is None:
        if high is None:
            raise TypeError("randint: expected (low, high, size) or (high, size)")
        low, high, size = 0, low, high
    if not low < high:
        raise ArgumentError(f"randint: expected low < high, got low={low}, high={high}")
    rng = numpy_generator(generator, "randint")
    values = rng.integers(low, high, _shape((size,), "randint"), dtype=np.int64)
    return _made(values.astype(dtype), requires_grad)


def randperm(n: int, *, generator: Any = None, dtype: Any = np.int64, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64), from the global generator or `generator`."""
    check_device(device, "randperm")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"randperm: n must be a non-negative int, got {n!r}")
    return _made(numpy_generator(generator, "randperm").permutation(int(n)).astype(dtype), requires_grad)


def arange(start: float, end: float | None = None, step: float = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """Like torch.arange: int64 when every argument is an int, else float32."""
    check_device(device, "arange")
    if end is None:
        start, end = 0, start
    if dtype is None:  # numpy integers count as ints (np.int64(4), a shape entry)
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                   for v in (start, end, step))
        dtype = np.int64 if ints else np.float32
    if step == 0:
        raise ArgumentError(f"arange: step must be nonzero, got arange({start}, {end}, {step})")
    if (end - start) * step < 0:
        raise ArgumentError(f"arange: the step {step} goes away from end: arange({start}, {end}, {step}) "
                            "would never reach it")
    return _made(np.arange(start, end, step, dtype=dtype), requires_grad)


def _like(input: Tensor, fill: Any, dtype: Any, requires_grad: bool) -> Tensor:
    return _made(np.full(input.shape, fill, dtype=dtype or input.dtype), requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Zeros of input's shape (and dtype, unless dtype is given)."""
    check_device(device, "zeros_like")
    return _like(input, 0, dtype, requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones of input's shape (and dtype, unless dtype is given)."""
    check_device(device, "ones_like")
    return _like(input, 1, dtype, requires_grad)


def full_like(input: Tensor, fill_value: float, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """fill_value in input's shape (and dtype, unless dtype is given)."""
    check_device(device, "full_like")
    return _like(input, fill_value, dtype, requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """As torch.empty_like: input's shape and dtype (or `dtype`), values not to be relied on (zeros)."""
    check_device(device, "empty_like")
    return _like(input, 0, dtype, requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Standard normal samples in input's shape and dtype."""
    check_device(device, "randn_like")
    return randn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) in input's shape and dtype."""
    check_device(device, "rand_like")
    return rand(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`data` itself if it is a Tensor, else a constant tensor (no copy of numpy arrays); cast to
    `dtype` when given, as torch.as_tensor."""
    check_device(device, "as_tensor")
    t = data if isinstance(data, Tensor) else Tensor(data)
    return t if dtype is None or np.dtype(dtype) == t.dtype else t.to(dtype)

