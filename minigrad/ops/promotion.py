"""The one dtype rule for every op that combines inputs: PyTorch's type promotion.

Where numpy and PyTorch differ, minigrad follows PyTorch, so that a student's dtypes carry
over: int64 with float32 is float32 (numpy: float64), a 0-d tensor never widens a tensor of
its own kind (float32[n] * float64 0-d is float32), and a Python number only sets the kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# bool < integer < floating < complex: the order PyTorch calls "categories".
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
# The dtype a Python number of each category takes when it raises the category of a result
# (PyTorch's defaults: int64, and float32 as the default float).
_DEFAULT = {0: np.dtype(np.bool_), 1: np.dtype(np.int64), 2: np.dtype(np.float32),
            3: np.dtype(np.complex64)}


def category(dtype: np.dtype) -> int:
    return _CATEGORY[dtype.kind]


def _tier(dtypes: list[np.dtype]) -> tuple[int, np.dtype | None]:
    """(highest category, result dtype) of operands of one tier: within a tier only the
    operands of the highest category count (int64 with float32 is float32)."""
    if not dtypes:
        return -1, None
    top = max(category(d) for d in dtypes)
    return top, np.result_type(*[d for d in dtypes if category(d) == top])


def result_type(*operands: Any) -> np.dtype:
    """The dtype of an op combining `operands` (arrays, numpy scalars, Python numbers).

    PyTorch's rule, in three tiers: tensors with dimensions decide; a 0-d tensor (array)
    counts only when its category is higher than theirs; a Python number counts only when
    its category is higher still, and then gives the default dtype of that category.
        int64[n] + float32[n] -> float32       float32[n] + float64 0-d -> float32
        int64[n] + float64 0-d -> float64      int32[n] + 2.5 -> float32     bool[n] + 1 -> int64
    """
    dims, zeros, scalars = [], [], []
    for x in operands:
        if isinstance(x, np.ndarray):
            (dims if x.ndim else zeros).append(x.dtype)
        elif isinstance(x, np.generic):
            zeros.append(x.dtype)
        elif isinstance(x, (bool, int, float, complex)):
            scalars.append(_python_category(x))
        else:
            raise TypeError(f"result_type: cannot combine a {type(x).__name__} with tensors")
    cat, dtype = _tier(dims)
    zcat, zdtype = _tier(zeros)
    if zcat > cat:
        cat, dtype = zcat, zdtype
    if scalars and max(scalars) > cat:
        cat = max(scalars)
        dtype = _DEFAULT[cat]
    return dtype


def _python_category(x: Any) -> int:
    if isinstance(x, bool):
        return 0
    if isinstance(x, int):
        return 1
    return 2 if isinstance(x, float) else 3


def scalar_dtype(dtype: np.dtype, value: Any) -> np.dtype:
    """The dtype a Python number takes beside a tensor of `dtype`: the tensor's own dtype when
    the number's category is not higher (`index + 1` stays int32, `x * 0.5` float32), else
    the default dtype of the number's category (`int_tensor * 0.5` is float32)."""
    cat = _python_category(value)
    return dtype if cat <= category(dtype) else _DEFAULT[cat]


# The Python ints PyTorch converts to a tensor's integer dtype: those of int64 or uint64.
_PYTHON_INT_RANGE = (-(2**63), 2**64 - 1)


def scalar_array(dtype: np.dtype, value: Any, fill: str | None = None) -> np.ndarray:
    """A Python number as the 0-d array it is beside a tensor of `dtype` (of `scalar_dtype`).

    A Python int that takes an integer dtype too narrow for it is wrapped into that dtype, two's
    complement (value mod 2**bits), as PyTorch does for the binary ops, arithmetic, bitwise and
    comparisons alike: `int32 | 0xFFFFFFFF` is `int32 | -1`, `int8 + 300` is `int8 + 44`,
    `uint8 | 256` is `uint8 | 0`, `int32 < 2**32` is `int32 < 0`. PyTorch takes ints in
    [-2**63, 2**64) only; an int beyond is refused. Where the number is a value to write (the
    bounds of clamp, the values of where: `fill` names the op), PyTorch refuses an int out of
    the dtype's range instead of wrapping it, and so does this.
    """
    target = scalar_dtype(dtype, value)
    if target.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(target)
        if not info.min <= value <= info.max:
            if fill is not None:
                raise OverflowError(f"{fill}: the value {value} cannot be converted to {target} without "
                                    f"overflow (it lies outside [{info.min}, {info.max}])")
            low, high = _PYTHON_INT_RANGE
            if not low <= value <= high:
                raise OverflowError(f"the Python int {value} is too big to convert to {target} (PyTorch "
                                    f"takes ints in [-2**63, 2**64), wrapped to the tensor's dtype)")
            bits = 8 * target.itemsize
            value %= 2**bits
            if target.kind == "i" and value >= 2 ** (bits - 1):
                value -= 2**bits
    return np.asarray(value, dtype=target)


def promote(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays converted to their `result_type` (no copy for those that already have it)."""
    first = arrays[0].dtype
    if all(a.dtype == first for a in arrays):  # the common case: nothing to decide
        return arrays
    dtype = result_type(*arrays)
    return tuple(a if a.dtype == dtype else a.astype(dtype) for a in arrays)


def true_div_operands(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`promote`, and two integer (or bool) arrays become float32, the default float dtype:
    in PyTorch an integer divided by an integer is float32 (numpy: float64)."""
    a, b = promote(a, b)
    if a.dtype.kind in "iub":
        return a.astype(np.float32), b.astype(np.float32)
    return a, b
