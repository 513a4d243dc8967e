"""One global random generator for initialisation, dropout and sampling."""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the global generator, so that runs repeat exactly."""
    global _generator
    _generator = np.random.default_rng(seed)
    return _generator


def generator() -> np.random.Generator:
    """The global numpy Generator (every random draw in minigrad goes through it)."""
    return _generator


def get_rng_state() -> dict:
    """The generator's state, for checkpoints (restore with `set_rng_state`)."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    _generator.bit_generator.state = state
