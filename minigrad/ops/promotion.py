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
