"""A GPT training step on several threads: the same as on one, to the bit wherever the work is
minigrad's own (attention by heads and batch rows, GELU's chunks), and within rounding where the
linear layers' products are split (OpenBLAS's last bit depends on a call's rows)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.models.gpt import GPT, GPTConfig
from minigrad.testing import split_threads

# block_size 40: the tiled kernel takes it once its thresholds are lowered (`step`)
SHORT = GPTConfig(vocab_size=11, block_size=12, embed_dim=16, num_heads=2, num_layers=2, activation="tanh")
LONG = GPTConfig(vocab_size=11, block_size=40, embed_dim=16, num_heads=2, num_layers=2, activation="tanh")


@pytest.fixture
def split_everything():
    """split_everything(n, products): minigrad.testing.split_threads for the rest of the test."""
    blocks = []

    def use(threads: int, products: bool) -> None:
        while blocks:
            blocks.pop().__exit__(None, None, None)
        blocks.append(split_threads(threads, row_block=5, products=products))
        blocks[-1].__enter__()

    yield use
    while blocks:
        blocks.pop().__exit__(None, None, None)


def step(config: GPTConfig, monkeypatch) -> tuple[float, list[np.ndarray]]:
    """Loss and parameters after two Adam steps from seed 0; the tiled kernel takes sequences
    of 13 tokens or more."""
    from minigrad.nn.attention import dispatch, tiled

    monkeypatch.setattr(dispatch, "TILED_MIN_SCORES", 1)
    monkeypatch.setattr(dispatch, "TILED_MIN_LENGTH", 13)
    calls = []
    by_heads = tiled._by_heads
    monkeypatch.setattr(tiled, "_by_heads", lambda *a, **k: calls.append(1) or by_heads(*a, **k))
    mg.manual_seed(0)
    model = GPT(config)
    opt = mg.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(1)
    x = rng.integers(0, config.vocab_size, (3, config.block_size))
    y = (x + 1) % config.vocab_size
    for _ in range(2):
        loss = model.loss(mg.tensor(x), mg.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert bool(calls) == (config.block_size >= 13)  # the kernel meant to run ran
    return loss.item(), [p.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("config", [SHORT, LONG], ids=["one-block", "tiled"])
def test_the_step_is_bit_identical_for_any_thread_count_when_products_stay_whole(
        config, split_everything, monkeypatch):
    split_everything(1, products=False)
    loss1, params1 = step(config, monkeypatch)
    for n in (2, 3):
        split_everything(n, products=False)
        loss_n, params_n = step(config, monkeypatch)
        assert loss_n == loss1
        for a, b in zip(params1, params_n):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("config", [SHORT, LONG], ids=["one-block", "tiled"])
def test_split_products_change_the_step_only_by_rounding(config, split_everything, monkeypatch):
    split_everything(1, products=True)
    loss1, params1 = step(config, monkeypatch)
    split_everything(2, products=True)
    loss2, params2 = step(config, monkeypatch)
    assert abs(loss2 - loss1) <= 1e-5 * abs(loss1)
    for a, b in zip(params1, params2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
