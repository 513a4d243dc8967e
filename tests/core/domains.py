"""Input domains of the op tables in tests/core: each returns a function of a shape giving a
strategy of float64 arrays, declared in the table row of the op it feeds."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

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
