"""Hypothesis strategies for testing ops: shapes, broadcastable shapes, arrays and tensors.

The test suite uses these, and students can too:

    from hypothesis import given
    from minigrad.testing import arrays, shapes
    @given(arrays(shapes()))
    def test_my_op(x): ...

Finite-difference checks are slow, so shapes stay tiny (sides of at most 3 or 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .tensor import Tensor


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 3) -> st.SearchStrategy:
    """Array shapes, 0-d and size-1 axes included (min_side=0 also draws empty axes)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_shapes(num_shapes: int = 2, min_dims: int = 0, max_dims: int = 3,
                         max_side: int = 3) -> st.SearchStrategy:
    """Tuples of `num_shapes` shapes that broadcast together (leading and size-1 axes)."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, max_side=max_side
    ).map(lambda r: r.input_shapes)


@st.composite
def shape_and_broadcastable(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A shape, and a second shape that broadcasts TO it (leading axes dropped, some axes
    made 1): e.g. a tensor and its mask for `masked_fill`."""
    shape = draw(shapes())
    kept = [s if draw(st.booleans()) else 1 for s in shape]
    return shape, tuple(kept[draw(st.integers(0, len(shape))):])


def arrays(shape: Any, low: float = -3.0, high: float = 3.0, dtype: Any = np.float64,
           away_from_zero: float = 0.0) -> st.SearchStrategy:
    """Finite float arrays with values in [low, high].

    `shape` is a shape or a strategy of shapes. With away_from_zero > 0 the values keep at
    least that distance from 0 (for log, division, sqrt or |x| at its kink).
    """
    elements = st.floats(low, high, allow_nan=False, allow_infinity=False, width=64)
    if away_from_zero > 0:
        elements = elements.filter(lambda v: abs(v) >= away_from_zero)
    return hnp.arrays(dtype=dtype, shape=shape, elements=elements)


def well_conditioned(shape: Any, low: float = 0.5, high: float = 2.0, signed: bool = True,
                     dtype: Any = np.float64) -> st.SearchStrategy:
    """Arrays whose magnitudes lie in [low, high] (either sign when `signed`): safe inputs
    for log, sqrt, division and pow, and far from kinks where finite differences mislead."""
    positive = st.floats(low, high, allow_nan=False, width=64)
    elements = st.one_of(positive, positive.map(lambda v: -v)) if signed else positive
    return hnp.arrays(dtype=dtype, shape=shape, elements=elements)


def distinct(shape: Any, low: float = -3.0, high: float = 3.0, gap: float = 1e-3) -> st.SearchStrategy:
    """Arrays with all values at least `gap` apart (no ties for max, min, sort or relu kinks)."""
    return arrays(shape, low, high).filter(
        lambda a: a.size < 2 or np.diff(np.sort(a, axis=None)).min() >= gap
    )


def tensors(shape: Any, requires_grad: bool = True, **kwargs: Any) -> st.SearchStrategy:
    """Tensors wrapping `arrays(shape, **kwargs)` (float64, requiring grad by default)."""
    return arrays(shape, **kwargs).map(lambda a: Tensor(a, requires_grad=requires_grad))
