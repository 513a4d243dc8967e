"""Shared pieces of the op tests in tests/core: the input domains of the op tables (each returns
a function of a shape giving a strategy of float64 arrays, declared in the table row of the op it
feeds), and the constants and helpers that more than one test file uses."""

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.testing import arrays, well_conditioned


def values(low=-3.0, high=3.0):
    """Any finite value in [low, high]."""
    return lambda shape: arrays(shape, low, high)


def positive(low=0.5, high=2.0):
    """Magnitudes in [low, high], positive: log, sqrt and fractional powers."""
    return lambda shape: well_conditioned(shape, low, high, signed=False)


def nonzero(low=0.5, high=2.0):
    """Magnitudes in [low, high], either sign: divisors."""
    return lambda shape: well_conditioned(shape, low, high)


def avoiding(*kinks, gap=1e-2):
    """Values in [-3, 3] at least `gap` away from each kink (where finite differences mislead)."""
    return lambda shape: arrays(shape).filter(
        lambda a: all(np.all(np.abs(a - k) >= gap) for k in kinks)
    )


def grid(offset):
    """Integers in [-3, 2] plus `offset`: two grids with different offsets never tie."""
    elements = st.integers(-3, 2).map(lambda v: float(v) + offset)
    return lambda shape: hnp.arrays(np.float64, shape, elements=elements)


def off_steps(offset=0.0, low=-3.0, high=3.0, gap=1e-2):
    """Values at least `gap` from every integer + offset (the jumps of floor, round, frac...),
    where finite differences see a step instead of the zero gradient."""
    def far(a):
        d = np.abs((a - offset) - np.round(a - offset))
        return bool(np.all(d >= gap))
    return lambda shape: arrays(shape, low, high).filter(far)


# ----------------------------------------------------------------------------- shared inputs

INF, NAN = np.inf, np.nan

# The int64 input of the dtype tables (test_ops_pointwise.py, test_ops_rounding.py) and of the
# never-NaN test of test_ops_logic.py.
INT = np.array([-7, -1, 0, 3, 8])

# The inputs of the needs_input_grad tests of the two-input ops (pointwise, rounding).
A, B = np.array([[0.5, -1.5, 2.0]]), np.array([[1.25], [-0.75]])

# The input of the error tables (test_ops_indexing.py, test_ops_linalg.py).
X = mg.tensor(np.ones((2, 3)))


# ----------------------------------------------------------------------------- PyTorch
# (test_creation_dtype.py and test_ops_dtype.py compare with PyTorch where it is installed)


def _torch():
    return pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


def torch_dtype_name(t):
    return str(t.dtype).removeprefix("torch.")
