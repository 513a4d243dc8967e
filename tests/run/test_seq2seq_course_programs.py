"""Two sequence-to-sequence programs written as courses hand them out, run unchanged with torch
and under `minigrad run`: "The Annotated Transformer" on its copy task, and the PyTorch
tutorial's GRU encoder with a Bahdanau attention decoder. torch runs first and writes the
initial weights; minigrad loads them; the 50 losses, the greedy tokens, the parameter count,
the final weights' checksum and the first backward's gradient of one parameter must agree.

The tolerances are float32's: both run in float32, and the two libraries sum in different
orders (BLAS blocking, softmax and layer norm reductions), so each step's values differ in
their last bits, about 1e-7 relative; over 50 Adam steps the losses (about 2) drift apart by
under 1e-6 here, so atol 1e-5 keeps a factor of ten in hand. The checksums leave out the
biases whose gradient is zero in exact arithmetic (the keys' bias of each attention, the
score bias Va.bias): softmax ignores a shift shared by every score, so their gradient is
rounding noise, which Adam scales up to steps of size lr, and no two libraries agree on it.

Both runs get OMP_NUM_THREADS=1: torch's results then do not depend on the thread count, and
on a shared machine its thread pool starts in no time."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

PROGRAMS = os.path.join(os.path.dirname(__file__), "programs")
STEPS = 50


def _both_runs(tmp_path, name):
    program, init = os.path.join(PROGRAMS, name), str(tmp_path / "init.npz")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    runs = []
    for cmd in ([sys.executable], [sys.executable, "-m", "minigrad", "run"]):  # torch first: it writes init
        done = subprocess.run(cmd + [program, init, str(STEPS)], capture_output=True, text=True, cwd=tmp_path,
                              env=env)
        assert done.returncode == 0, f"{' '.join(cmd[1:]) or 'python'} {name} failed:\n{done.stderr}"
        runs.append(json.loads(done.stdout))
    assert os.path.exists(init)
    return runs


def _agree(theirs, ours):
    assert len(ours["losses"]) == STEPS and ours["losses"][-1] < ours["losses"][0]
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=0, atol=1e-5)
    assert ours["tokens"] == theirs["tokens"]
    assert ours["params"] == theirs["params"]
    assert ours["checksum"] == pytest.approx(theirs["checksum"], rel=1e-5)
    assert ours["grad_name"] == theirs["grad_name"]
    assert np.abs(theirs["grad"]).max() > 1e-3  # a gradient well above atol, so rtol counts
    np.testing.assert_allclose(ours["grad"], theirs["grad"], rtol=1e-4, atol=1e-6)


def test_the_annotated_transformer_trains_on_the_copy_task_as_under_torch(tmp_path):
    """clones() by deepcopy, the a_2/b_2 LayerNorm with the unbiased std, MultiHeadedAttention's
    view/transpose/contiguous, the sin/cos buffer, the Batch masks (`&` of bool masks, uint8
    subsequent_mask), LabelSmoothing (clone, fill_, scatter_, a column set to 0, nonzero,
    index_fill_) into KLDivLoss(reduction="sum"), Adam(betas=(0.9, 0.98), eps=1e-9) with the
    warm-up rate() in a LambdaLR, and greedy_decode (torch.max over dim 1, type_as, fill_ with
    a 0-d tensor)."""
    pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    theirs, ours = _both_runs(tmp_path, "annotated_transformer.py")
    _agree(theirs, ours)
    np.testing.assert_allclose(ours["lrs"], theirs["lrs"], rtol=1e-12)  # LambdaLR's rate(): float64 on both
    assert len(ours["tokens"]) == 8 and ours["tokens"][0] == 1  # the start symbol, then 7 greedy steps


def test_the_tutorials_gru_seq2seq_with_attention_trains_as_under_torch(tmp_path):
    """EncoderRNN's nn.GRU(batch_first=True), BahdanauAttention (Wa, Ua, Va; squeeze(2).unsqueeze(1),
    softmax, bmm), AttnDecoderRNN with teacher forcing and topk(1) greedy decoding, NLLLoss over
    log_softmax, two Adam optimizers, a TensorDataset of torch.LongTensor in a DataLoader with
    a sampler of its own, and evaluate() under no_grad()."""
    pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    theirs, ours = _both_runs(tmp_path, "seq2seq_gru.py")
    _agree(theirs, ours)
    assert ours["targets"] == theirs["targets"] and len(ours["tokens"]) == 4
    assert all(1 <= len(words) <= 8 for words in ours["tokens"])  # MAX_LENGTH steps, cut at EOS
