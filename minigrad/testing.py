"""Hypothesis strategies for testing ops: shapes, broadcastable shapes, arrays, tensors, the
`dim` argument of reductions, attention cases (q, k, v and a mask) and 2-d pooling cases; and
`split_threads`, for testing kernels' parallel paths on tiny inputs.

The test suite uses these, and students can too:

    from hypothesis import given
    from minigrad.testing import arrays, shapes
    @given(arrays(shapes()))
    def test_my_op(x): ...

Finite-difference checks are slow, so shapes stay tiny (sides of at most 3 or 4). Needs
hypothesis, the `test` extra: pip install "minigrad[test]".
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as e:
    raise ImportError(
        'minigrad.testing needs hypothesis, which is not installed: pip install "minigrad[test]"'
    ) from e

from .creation import tensor
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
    least that distance from 0 (for log, division, sqrt or |x| at its kink). Subnormal numbers
    are left out: products such as g * b / z underflow in them differently from one library to
    the next (the extremes have tests of their own).
    """
    elements = st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)
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


def on_grid(shape: Any, values: Any, dtype: Any = np.float64) -> st.SearchStrategy:
    """Arrays whose entries are drawn from `values` only: ties, values exactly on a bound
    (clip's kinks), NaN. Random floats almost never land there, so bugs there survive."""
    return hnp.arrays(dtype=dtype, shape=shape, elements=st.sampled_from(list(values)))


def tensors(shape: Any, requires_grad: bool = True, **kwargs: Any) -> st.SearchStrategy:
    """Tensors wrapping `arrays(shape, **kwargs)` (float64, requiring grad by default)."""
    return arrays(shape, **kwargs).map(lambda a: Tensor(a, requires_grad=requires_grad))


@st.composite
def dims(draw: Any, ndim: int, single: bool = False) -> Any:
    """A `dim` argument for a tensor of `ndim` dimensions, as minigrad's reductions take it:
    None, (), one axis, or a tuple of distinct axes, negative ones included. With `single`,
    one axis only (for ops that take one, as softmax)."""
    n = max(ndim, 1)
    one = st.integers(-n, n - 1)
    if single:
        return draw(one)
    options = [st.none(), st.just(()), one]
    if ndim:
        options.append(st.lists(one, min_size=1, max_size=ndim, unique_by=lambda d: d % ndim).map(tuple))
    return draw(st.one_of(*options))


# ----------------------------------------------------------------------------- attention


def masks(shapes: Sequence[tuple[int, ...]], bool_elements: Any = None) -> st.SearchStrategy:
    """No mask (None), a bool mask (True = may attend; elements from `bool_elements`, any when
    None) or a float mask in [-2, 2] added to the scores, of one of `shapes`."""
    shape = st.sampled_from(list(shapes))
    bools = shape.flatmap(lambda s: hnp.arrays(np.bool_, s, elements=bool_elements))
    floats = shape.flatmap(lambda s: arrays(s, -2, 2))
    return st.one_of(st.none(), bools, floats)


@st.composite
def attention_cases(draw: Any, max_len: int = 3, max_dim: int = 3) -> tuple:
    """(q, k, v, mask, is_causal): float64 arrays of shapes (..., Tq, D), (..., Tk, D) and
    (..., Tk, Dv) whose leading axes broadcast together, Tq and Tk up to `max_len`, D and Dv up
    to `max_dim`; a mask of shape (Tq, Tk), (1, Tk), (Tq, 1), (1, Tq, Tk) or (2, 1, Tq, Tk), or
    none, a bool one hiding about one key in three (so some rows hide every key); is_causal."""
    lead_q, lead_k, lead_v = draw(broadcastable_shapes(3, max_dims=2, max_side=2))
    tq, tk = draw(st.integers(1, max_len)), draw(st.integers(1, max_len))
    d, dv = draw(st.integers(1, max_dim)), draw(st.integers(1, max_dim))
    q = draw(arrays(lead_q + (tq, d), -2, 2))
    k = draw(arrays(lead_k + (tk, d), -2, 2))
    v = draw(arrays(lead_v + (tk, dv), -2, 2))
    shapes = [(tq, tk), (1, tk), (tq, 1), (1, tq, tk), (2, 1, tq, tk)]
    mask = draw(masks(shapes, st.sampled_from([True, True, False])))
    return q, k, v, mask, draw(st.booleans())


def attention_grads(fn: Callable[..., Tensor], q: np.ndarray, k: np.ndarray, v: np.ndarray,
                    mask: np.ndarray | None, g: np.ndarray, **options: Any) -> tuple[np.ndarray, list]:
    """Run `fn(q, k, v, mask=mask, **options)` on tensors and backward with upstream `g`.

    Returns the output array and the gradients of q, k, v, and of a float mask (a bool mask
    has none): compare two attentions by comparing what this returns for each.
    """
    ts = [tensor(a, requires_grad=True) for a in (q, k, v)]
    m = None if mask is None else tensor(mask, requires_grad=mask.dtype.kind == "f")
    out = fn(*ts, mask=m, **options)
    out.backward(g)
    grads = [t._grad for t in ts] + ([m._grad] if m is not None and m.requires_grad else [])
    return out._data, grads


@st.composite
def pool_cases(draw: Any, dilate: bool = True, max_kernel: int = 3, max_stride: int = 3,
               max_dilation: int = 2, max_extra: int = 3, max_batch: int = 2) -> tuple:
    """(x shape, kernel, stride, padding, dilation, ceil_mode) of a valid 2-d pool: padding at
    most half the kernel (PyTorch's limit), each spatial side at least the dilated kernel minus
    the padding, plus up to `max_extra`; batch and channels up to `max_batch`."""
    kernel = tuple(draw(st.integers(1, max_kernel)) for _ in range(2))
    stride = tuple(draw(st.integers(1, max_stride)) for _ in range(2))
    dilation = tuple(draw(st.integers(1, max_dilation)) if dilate else 1 for _ in range(2))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    spatial = tuple(max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, max_extra))
                    for k, d, p in zip(kernel, dilation, padding))
    shape = (draw(st.integers(1, max_batch)), draw(st.integers(1, max_batch))) + spatial
    return shape, kernel, stride, padding, dilation, draw(st.booleans())


@contextlib.contextmanager
def split_threads(n: int, row_block: int = 3, products: bool = True) -> Iterator[None]:
    """Inside the block, n threads that split work whatever its size (products too, in blocks of
    `row_block` rows, unless products=False), so that tiny test inputs take the parallel paths
    of minigrad.runtime.parallel; after it, one thread and the thresholds as they were."""
    from .runtime import parallel

    saved = parallel.MIN_ELEMENTS, parallel.MIN_PRODUCT, parallel.ROW_BLOCK
    parallel.MIN_ELEMENTS, parallel.ROW_BLOCK = 0, row_block
    parallel.MIN_PRODUCT = 0 if products else 2**62
    try:
        parallel.set_threads(n)
        yield
    finally:
        parallel.MIN_ELEMENTS, parallel.MIN_PRODUCT, parallel.ROW_BLOCK = saved
        parallel.set_threads(1)
