"""Memory: a training loop does not grow, and the allocator tuning can be switched off."""

import os
import subprocess
import sys
import tracemalloc

import numpy as np

import minigrad as mg
from minigrad.models.gpt import GPT, GPTConfig


def test_no_memory_growth_over_1000_steps():
    mg.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, block_size=8, embed_dim=8, num_heads=2, num_layers=1))
    opt = mg.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.integers(0, 11, (4, 8)))
    y = mg.tensor(rng.integers(0, 11, (4, 8)))

    def step():
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    tracemalloc.start()  # numpy reports its array memory to tracemalloc
    try:
        for _ in range(100):
            step()
        after_100, _ = tracemalloc.get_traced_memory()
        for _ in range(900):
            step()
        after_1000, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Graphs, saved arrays and gradients of old steps must all be gone: allow 64 KiB of noise.
    assert after_1000 - after_100 < 64 * 1024


def test_allocator_tuning_is_on_by_default_and_can_be_switched_off():
    code = "import minigrad.memory as m; print(m.keep_freed_memory())"
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    env = {**os.environ, "MINIGRAD_KEEP_MEMORY": "0"}
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert on.stdout.strip() == ("True" if sys.platform.startswith("linux") else "False")
    assert off.stdout.strip() == "False"
