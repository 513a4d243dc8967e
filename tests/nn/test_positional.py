"""Positional encodings: the sinusoidal formula, the learned table, offsets and length errors."""

import math

import numpy as np
import pytest
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.positional import sinusoidal_table


@pytest.mark.parametrize("d", [pytest.param(6, id="even-d"), pytest.param(5, id="odd-d"),
                               pytest.param(1, id="d=1")])
def test_sinusoidal_table_is_the_original_formula(d):
    pe = sinusoidal_table(7, d)
    for pos in range(7):
        for col in range(d):
            i = col // 2  # columns 2i (sine) and 2i+1 (cosine) share the frequency
            angle = pos / 10000 ** (2 * i / d)
            expected = math.sin(angle) if col % 2 == 0 else math.cos(angle)
            assert pe[pos, col] == pytest.approx(expected, abs=1e-12)


def test_sinusoidal_known_values():
    pe = sinusoidal_table(3, 4)
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1])
    np.testing.assert_allclose(pe[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])


def test_sinusoidal_adds_fixed_table_with_offset_and_has_no_parameters():
    mg.manual_seed(0)
    enc = nn.SinusoidalPositionalEncoding(4, max_len=10)
    x = mg.randn(2, 3, 4)
    table = sinusoidal_table(10, 4).astype(np.float32)
    np.testing.assert_array_equal(enc(x).numpy(), x.numpy() + table[:3])
    np.testing.assert_array_equal(enc(x, offset=5).numpy(), x.numpy() + table[5:8])
    assert list(enc.parameters()) == [] and enc.state_dict() == {}
    xd = mg.randn(1, 2, 4, dtype=np.float64, requires_grad=True)
    out = enc(xd)
    assert out.dtype == np.float64
    out.backward(np.full(out.shape, 2.0))
    np.testing.assert_array_equal(xd.grad, 2.0)  # d(x + p)/dx = 1


@pytest.mark.parametrize(
    "make", [pytest.param(lambda: nn.SinusoidalPositionalEncoding(4, max_len=3), id="sinusoidal"),
             pytest.param(lambda: nn.LearnedPositionalEmbedding(3, 4), id="learned")],
)
def test_too_long_sequences_and_wrong_width_are_clear_errors(make):
    enc = make()
    assert enc(mg.randn(2, 3, 4)).shape == (2, 3, 4)
    with pytest.raises(ValueError, match=r"positions 0..3 do not fit max_len=3 \(sequence length 4"):
        enc(mg.randn(2, 4, 4))
    with pytest.raises(ValueError, match="offset 2"):
        enc(mg.randn(2, 2, 4), offset=2)
    with pytest.raises(ValueError, match=r"\(\*, T, 4\), got \(2, 3, 5\)"):
        enc(mg.randn(2, 3, 5))


def test_learned_positional_embedding_gradcheck_and_table():
    mg.manual_seed(0)
    enc = nn.LearnedPositionalEmbedding(5, 3)
    assert enc.weight.shape == (5, 3) and abs(enc.weight.numpy().std() - 0.02) < 0.02
    assert [n for n, _ in enc.named_parameters()] == ["weight"]
    x = np.random.default_rng(0).standard_normal((2, 3, 3))
    assert gradcheck_module(enc, x, offset=1)


def test_learned_rows_outside_the_sequence_get_no_gradient():
    enc = nn.LearnedPositionalEmbedding(6, 2)
    out = enc(mg.randn(3, 2, 2), offset=1)
    out.backward(np.ones(out.shape, dtype=np.float32))
    np.testing.assert_array_equal(enc.weight.grad[[0, 3, 4, 5]], 0)
    np.testing.assert_array_equal(enc.weight.grad[1:3], 3)  # summed over the batch of 3
