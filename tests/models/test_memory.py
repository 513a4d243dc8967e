"""Memory: a training loop does not grow, and the allocator tuning can be switched off."""

import gc
import os
import subprocess
import sys
import tracemalloc

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.viz  # noqa: F401
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
        gc.collect()  # empties CPython's free lists of tuples, floats, ... (kept blocks, not leaks)
        after_100, _ = tracemalloc.get_traced_memory()
        gc.disable()  # and nothing waits for the cycle collector: a step makes no reference cycle
        for _ in range(900):
            step()
        assert gc.collect() == 0
        after_1000, _ = tracemalloc.get_traced_memory()
    finally:
        gc.enable()
        tracemalloc.stop()
    # Graphs, saved arrays and gradients of old steps must all be gone: allow 64 KiB of noise.
    assert after_1000 - after_100 < 64 * 1024


def test_keeping_every_loss_keeps_no_activations():
    """`losses.append(loss)` keeps each step's graph, but after backward the graph holds
    shapes and names, not the activations (it grew by about 4 MiB a step on this MLP)."""
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = mg.optim.SGD(model.parameters(), lr=1e-3)
    x = mg.randn(256, 64)
    y = mg.tensor(np.random.default_rng(0).integers(0, 10, 256))
    losses = []

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)

    tracemalloc.start()
    try:
        for _ in range(10):
            step()
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(50):
            step()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One step's activations are over 1 MiB; what a kept graph holds is a few KiB.
    assert (after - before) / 50 < 16 * 1024


def test_a_kept_loss_still_draws_and_names_its_graph():
    mg.manual_seed(0)
    lin = nn.Linear(3, 200)
    loss = lin(mg.randn(4, 3)).relu().sum()
    loss.backward()
    node = loss.grad_fn
    (kept,) = node.inputs  # the ReLU output: (4, 200), too big to keep its values
    assert kept.shape == (4, 200) and not kept.values_kept and kept.grad_fn is not None
    dot = mg.viz.draw_graph(loss).source
    assert "4, 200" in dot or "4×200" in dot or "(4, 200)" in dot


def test_allocator_tuning_is_on_by_default_and_can_be_switched_off():
    code = "import minigrad.memory as m; print(m.keep_freed_memory())"
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    env = {**os.environ, "MINIGRAD_KEEP_MEMORY": "0"}
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert on.stdout.strip() == ("True" if sys.platform.startswith("linux") else "False")
    assert off.stdout.strip() == "False"
