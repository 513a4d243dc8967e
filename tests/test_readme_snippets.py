"""Every ```python block of README.md runs, in order, in one namespace, so the examples cannot
drift from the code. A block that uses names the README leaves to the reader (`model`, `loss`,
`x`, `y`) gets them from a short setup below, keyed by the block's first line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

# first line of a block -> the code that gives it what README leaves to the reader
SETUP = {
    "from minigrad.export import": """
import torch
from minigrad.models.gpt import GPT, GPTConfig
mg.manual_seed(0)
gpt = GPT(GPTConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2, num_layers=1))
idx = mg.tensor(np.random.default_rng(0).integers(0, 20, (2, 8)))
x, y = (torch.tensor(np.random.default_rng(1).integers(0, 20, (2, 8))) for _ in range(2))
""",
    "from minigrad.viz import detect_anomaly": """
from minigrad.models.gpt import GPT, GPTConfig
mg.manual_seed(0)
model = GPT(GPTConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2, num_layers=1))
x, y = (mg.tensor(np.random.default_rng(s).integers(0, 20, (2, 8))) for s in (0, 1))
loss = model.loss(x, y)
loss.backward()
""",
    "from minigrad.viz import keep_grads": "loss = model.loss(x, y)\n",
    "import minigrad.nn as nn\n\nwith nn.record_attention": """
text = "hello"
idx = mg.tensor(np.array([[7, 4, 11, 11, 14]]))
""",
}
NEEDS = {  # first line of a block -> what it needs beyond the test extras
    "from minigrad.export import": "torch",
}


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _setup_for(block: str) -> str:
    return next((code for key, code in SETUP.items() if block.startswith(key)), "")


def test_readme_has_the_examples_this_file_sets_up():
    blocks = _blocks()
    assert len(blocks) >= 5
    for key in SETUP:
        assert any(b.startswith(key) for b in blocks), f"README has no block starting {key!r}"


@pytest.mark.requires_dot  # a block saves a drawing
def test_every_readme_python_block_runs(tmp_path, monkeypatch):
    for block in _blocks():
        for key, extra in NEEDS.items():
            if block.startswith(key):
                pytest.importorskip(extra, reason=f"needs the {extra} extra: pip install 'minigrad[{extra}]'")
    monkeypatch.chdir(tmp_path)  # blocks write their pictures to the current folder
    import minigrad as mg

    mg.manual_seed(0)
    ns: dict = {"np": np, "mg": mg}
    for i, block in enumerate(_blocks()):
        code = _setup_for(block) + block
        try:
            exec(compile(code, f"README.md python block {i + 1}", "exec"), ns)
        except Exception as e:  # name the block, whose text the traceback does not show
            raise AssertionError(f"README python block {i + 1} fails:\n{block}") from e
    # What the blocks promise in their comments:
    assert ns["out"].shape == (2, 10, 64) and ns["weights"].shape == (2, 10, 10)
    assert ns["per_head"].shape == (2, 4, 10, 10)
    assert ns["layer"].self_attn.q_proj.weight.grad.shape == (64, 64)
    assert (tmp_path / "gpt_graph.svg").exists() and (tmp_path / "attention.png").exists()


def test_the_mul_example_is_a_working_op():
    """The README's `Mul`, taken from the README itself: forward, backward and gradcheck."""
    import minigrad as mg

    (block,) = [b for b in _blocks() if "class Mul(mg.Function)" in b]
    ns: dict = {"mg": mg}
    exec(block, ns)
    a = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = mg.tensor([0.5, -1.0], requires_grad=True)
    out = ns["Mul"].apply(a, b)
    out.backward(np.ones((2, 2), np.float32))
    assert np.array_equal(out.numpy(), [[0.5, -2.0], [1.5, -4.0]])
    assert np.array_equal(a.grad, [[0.5, -1.0], [0.5, -1.0]]) and np.array_equal(b.grad, [4.0, 6.0])
    assert mg.gradcheck(ns["Mul"].apply, [a, b])
