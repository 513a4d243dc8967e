"""Two more GPTs as courses hand them out, each run unchanged by python with torch and by
`minigrad run`: a minGPT-style model with its Trainer and sorting demo (programs/mingpt.py) and
a GPT in the style of a build-an-LLM-from-scratch book (programs/llm_book_gpt.py). torch runs
first and writes the initial weights; minigrad loads them; the two JSON reports must agree:
the 50 losses to float32 rounding, the greedy tokens and the parameter count exactly, the final
weights' checksum to 1e-5 and one parameter's first gradient elementwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

PROGRAMS = os.path.join(os.path.dirname(__file__), "programs")
STEPS = 50


def run_both(tmp_path, name):
    """The program's report under torch, then under `minigrad run`, from the same initial weights."""
    program, init = os.path.join(PROGRAMS, name), str(tmp_path / "init.npz")
    reports = []
    for cmd in ([sys.executable], [sys.executable, "-m", "minigrad", "run"]):
        done = subprocess.run(cmd + [program, init, str(STEPS)], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, f"{' '.join(cmd[1:]) or 'python'} {name}:\n{done.stderr[-3000:]}"
        reports.append(json.loads(done.stdout))
    return reports


def assert_same_training(theirs, ours):
    assert len(ours["losses"]) == STEPS and ours["losses"][-1] < ours["losses"][0] - 0.5
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=0, atol=1e-5)
    assert ours["tokens"] == theirs["tokens"]
    assert ours["params"] == theirs["params"]
    assert ours["checksum"] == pytest.approx(theirs["checksum"], rel=1e-5)
    grad, want = np.array(ours["grad"]), np.array(theirs["grad"])
    assert grad.shape == want.shape and np.abs(want).max() > 1e-4  # a gradient, not zeros
    np.testing.assert_allclose(grad, want, rtol=1e-4, atol=1e-6)


def test_a_mingpt_style_program_trains_as_under_torch(tmp_path):
    """minGPT's model.py, trainer.py and sorting demo: the causal `bias` buffer and masked_fill,
    ModuleDicts reached by attributes (the MLP called through a lambda), configure_optimizers'
    decay / no-decay sets by module type and parameter name, AdamW with betas, the Trainer's
    callbacks over a DataLoader (an explicit index order: torch's and minigrad's shuffles draw
    differently), clip_grad_norm_, and generate(do_sample=False). The gradient is c_attn's
    weight in the first block after the first backward."""
    pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    theirs, ours = run_both(tmp_path, "mingpt.py")
    assert_same_training(theirs, ours)
    assert len(ours["tokens"]) == 12 and ours["tokens"][:6] == [11, 3, 7, 0, 3, 5]
    assert ours["scores"] == theirs["scores"]  # eval_split: whole sorted answers right, train and test


def test_an_llm_book_style_program_trains_as_under_torch(tmp_path):
    """The book's GPTDatasetV1 and DataLoader, MultiHeadAttention with the `mask` buffer filled in
    place with -inf, its own LayerNorm (var with unbiased=False) and tanh GELU, FeedForward as
    nn.Sequential, calc_loss_batch on flatten(0, 1), train_model_simple with evaluate_model under
    eval() and no_grad(), generate_text_simple, the top-k generate (a batch of two compares
    `idx_next == None`), torch.save / torch.load of the weights and of model and optimizer, and
    the appendix's warmup-and-cosine loop after the reload. The gradient is the first block's
    W_query weight after the first backward."""
    pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    theirs, ours = run_both(tmp_path, "llm_book_gpt.py")
    assert_same_training(theirs, ours)
    for key in ("top_k_tokens", "batch_tokens", "reloaded_tokens", "samples", "tokens_seen", "lrs"):
        assert ours[key] == theirs[key], key
    assert ours["reloaded_tokens"] == ours["tokens"] and len(ours["batch_tokens"]) == 2
    for key in ("train_losses", "val_losses", "resumed_losses", "resumed_val"):
        assert len(ours[key]) == len(theirs[key]) > 0, key
        np.testing.assert_allclose(ours[key], theirs[key], rtol=0, atol=1e-5, err_msg=key)
    assert ours["resumed_losses"][0] < ours["losses"][0] - 0.5  # the reload kept the training
