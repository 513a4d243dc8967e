"""Random numbers: one global generator for initialisation, dropout and sampling, and
`Generator` objects (torch.Generator) for draws that keep their own stream."""

from __future__ import annotations

from typing import Any

import numpy as np

from .device import check_device

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


class Generator:
    """A random stream of its own, as torch.Generator: `g = Generator().manual_seed(3)`, then
    `randn(2, generator=g)`, `randperm(5, generator=g)` or `DataLoader(..., generator=g)` draw
    from it and leave the global generator alone. Its numbers are numpy's, not torch's."""

    def __init__(self, device: Any = "cpu") -> None:
        check_device(device, "Generator")
        self.device = device
        self._seed = 67280421310721  # torch's default seed of a new Generator
        self.numpy = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from `seed`; returns the generator, as torch's does."""
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"Generator.manual_seed: seed must be an int, got {type(seed).__name__}")
        self._seed = int(seed)
        self.numpy = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy and return the new seed."""
        self._seed = int(np.random.SeedSequence().entropy % 2**63)
        self.numpy = np.random.default_rng(self._seed)
        return self._seed

    def initial_seed(self) -> int:
        """The seed the stream started from."""
        return self._seed

    def get_state(self) -> dict:
        """The stream's state (restore with `set_state`)."""
        return self.numpy.bit_generator.state

    def set_state(self, new_state: dict) -> Generator:
        self.numpy.bit_generator.state = new_state
        return self


def numpy_generator(generator: Generator | np.random.Generator | None, op: str) -> np.random.Generator:
    """The numpy Generator an op draws from: `generator`'s, or the global one when it is None."""
    if generator is None:
        return _generator
    if isinstance(generator, Generator):
        return generator.numpy
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"{op}: generator must be a minigrad.Generator, got {type(generator).__name__}")
