"""minigrad.Generator (torch.Generator) and the draws that take one: a stream of its own that
repeats from its seed and leaves the global generator alone; randperm."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.random import generator


def test_a_generator_repeats_from_its_seed_and_leaves_the_global_stream_alone():
    mg.manual_seed(0)
    expected = generator().standard_normal(3)
    mg.manual_seed(0)
    g = mg.Generator().manual_seed(7)
    first = [mg.randn(4, generator=g), mg.rand(2, generator=g), mg.randint(0, 9, (5,), generator=g),
             mg.randperm(6, generator=g), mg.ones(4).multinomial(2, generator=g)]
    np.testing.assert_array_equal(generator().standard_normal(3), expected)  # untouched
    assert g.initial_seed() == 7
    g.manual_seed(7)
    again = [mg.randn(4, generator=g), mg.rand(2, generator=g), mg.randint(0, 9, (5,), generator=g),
             mg.randperm(6, generator=g), mg.ones(4).multinomial(2, generator=g)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_state_round_trips_and_seed_reseeds():
    g = mg.Generator()
    state = g.get_state()
    a = mg.rand(3, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(mg.rand(3, generator=g).numpy(), a.numpy())
    s = g.seed()
    assert g.initial_seed() == s and isinstance(s, int)


def test_randperm_is_a_permutation_of_int64():
    p = mg.randperm(10)
    assert p.dtype is mg.int64 and sorted(p.tolist()) == list(range(10))
    assert mg.randperm(0).shape == (0,) and mg.randperm(3, dtype=mg.float32).dtype is mg.float32


@pytest.mark.parametrize("call, error, message", [
    (lambda: mg.randperm(-1), ValueError, "randperm: n must be a non-negative int, got -1"),
    (lambda: mg.Generator().manual_seed(1.5), TypeError, "Generator.manual_seed: seed must be an int"),
    (lambda: mg.Generator(device="cuda"), RuntimeError, "cuda"),
    (lambda: mg.randn(2, generator=np.float32(1)), TypeError,
     "randn: generator must be a minigrad.Generator"),
    (lambda: mg.randint(5, 5, (2,)), ValueError, "randint: expected low < high, got low=5, high=5"),
])
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
