"""Tensor.shape and Tensor.size() are a Size, as torch.Size: a tuple with numel(), whose
slices and sums are Sizes too; it prints as the tuple it is."""

import json

import numpy as np
import pytest

import minigrad as mg


def test_size_is_a_tuple_with_numel():
    x = mg.ones(2, 3, 4)
    assert isinstance(x.shape, mg.Size) and isinstance(x.shape, tuple)
    assert x.shape == (2, 3, 4) and x.size() == x.shape and x.size(1) == 3 and x.size(-1) == 4
    assert x.shape.numel() == 24 == x.numel() and mg.ones(()).shape.numel() == 1
    assert mg.zeros(0, 5).shape.numel() == 0
    assert isinstance(x.shape[1:], mg.Size) and x.shape[1:] == (3, 4) and type(x.shape[0]) is int
    assert isinstance(x.shape + (5,), mg.Size) and x.shape + (5,) == (2, 3, 4, 5)
    assert repr(x.shape) == "(2, 3, 4)" and json.dumps(x.shape) == "[2, 3, 4]"
    assert np.zeros(x.shape).shape == (2, 3, 4) and mg.zeros(x.shape[1:]).shape == (3, 4)
    B, T, C = x.size()  # unpacks as a tuple
    assert (B, T, C) == (2, 3, 4)


def test_size_against_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    a = np.zeros((2, 1, 5))
    mine, theirs = mg.tensor(a).shape, torch.tensor(a).shape
    assert mine == theirs and mine.numel() == theirs.numel()
    assert mine[1:] == theirs[1:] and type(mine[1:]).__name__ == type(theirs[1:]).__name__ == "Size"
    assert mg.Size([3, 4]) == torch.Size([3, 4]) and mg.Size([3, 4]).numel() == torch.Size([3, 4]).numel()
