"""Every model exported with to_torch computes what minigrad computes: outputs and every
parameter gradient, for the training forward (the loss) and the forward that returns logits,
at the example's batch size and at another one."""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
from minigrad.export import to_torch  # noqa: E402
from minigrad.models.bert import BERT, IGNORE, BERTConfig  # noqa: E402
from minigrad.models.gpt import GPT, GPTConfig  # noqa: E402
from minigrad.models.rnn_seq2seq import RNNConfig, RNNSeq2Seq  # noqa: E402
from minigrad.models.seq2seq import Seq2Seq, Seq2SeqConfig  # noqa: E402
from minigrad.models.vit import ViT, ViTConfig  # noqa: E402

V = 20


def ids(rng, B, T, pad=False):
    """(B, T) token ids; with pad, every row but the first ends in a few PAD (0) tokens."""
    x = rng.integers(3, V, (B, T))
    if pad:
        for b in range(1, B):
            x[b, T - 1 - b % (T - 1):] = 0
    return x


def bert_batch(rng, B, T=8):
    labels = np.full((B, T), IGNORE)
    labels[:, 2] = rng.integers(3, V, B)
    labels[0, 5] = 4
    return ids(rng, B, T, pad=True), rng.integers(0, 2, (B, T)), labels, rng.integers(0, 2, B)


# (model factory, method, batch maker, float64 possible). Tiny configs keep the suite fast.
MODELS = [
    pytest.param(lambda: GPT(GPTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=2)),
                 "loss", lambda r, B: (ids(r, B, 8), ids(r, B, 8)), True, id="gpt-loss"),
    pytest.param(lambda: GPT(GPTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1)),
                 "forward", lambda r, B: (ids(r, B, 6),), True, id="gpt-logits"),
    pytest.param(lambda: BERT(BERTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1,
                                         dropout=0.0)),
                 "loss", bert_batch, True, id="bert-loss"),
    pytest.param(lambda: BERT(BERTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1,
                                         dropout=0.0)),
                 "forward", lambda r, B: bert_batch(r, B)[:2], True, id="bert-logits"),
    pytest.param(lambda: Seq2Seq(Seq2SeqConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2,
                                               num_layers=1)),
                 "loss", lambda r, B: (ids(r, B, 6, True), ids(r, B, 5), ids(r, B, 5, True)), True,
                 id="seq2seq-loss"),
    pytest.param(lambda: Seq2Seq(Seq2SeqConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2,
                                               num_layers=1, norm_first=False, learned_positions=True)),
                 "forward", lambda r, B: (ids(r, B, 6, True), ids(r, B, 5)), True,
                 id="seq2seq-postnorm-logits"),
    pytest.param(lambda: ViT(ViTConfig(embed_dim=16, num_heads=2, num_layers=1, mlp_ratio=2)),
                 "loss", lambda r, B: (r.standard_normal((B, 1, 8, 8)), r.integers(0, 10, B)), True,
                 id="vit-loss"),
    pytest.param(lambda: ViT(ViTConfig(embed_dim=16, num_heads=2, num_layers=1, mlp_ratio=2)),
                 "forward", lambda r, B: (r.standard_normal((B, 1, 8, 8)),), True, id="vit-logits"),
    # The RNN runs in float32 only: its initial state is made with mg.zeros (float32).
    pytest.param(lambda: RNNSeq2Seq(RNNConfig(vocab_size=V, embed_dim=8, hidden_size=16, attention_dim=8)),
                 "loss", lambda r, B: (ids(r, B, 5, True), ids(r, B, 4), ids(r, B, 4, True)), False,
                 id="rnn-loss"),
    pytest.param(lambda: RNNSeq2Seq(RNNConfig(vocab_size=V, embed_dim=8, hidden_size=16, attention=False)),
                 "forward", lambda r, B: (ids(r, B, 5, True), ids(r, B, 4)), False, id="rnn-noattn-logits"),
]


def _cast(arrays, dtype):
    return [a.astype(dtype) if a.dtype.kind == "f" else a.astype(np.int64) for a in arrays]


def run_both(model, exported, method, arrays, seed=0):
    """Outputs and parameter gradients of minigrad and of the export, on the same inputs and
    the same random upstream gradient (summed over the outputs, for models returning two)."""
    model.zero_grad()
    exported.zero_grad()
    fn = model if method == "forward" else getattr(model, method)
    out = fn(*[mg.tensor(a) for a in arrays])
    outs = out if isinstance(out, tuple) else (out,)
    tout = exported(*[torch.from_numpy(a) for a in arrays])
    touts = tout if isinstance(tout, tuple) else (tout,)
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(o.shape).astype(o.dtype) for o in outs]
    sum((o * mg.tensor(g)).sum() for o, g in zip(outs, gs)).backward()
    sum((o * torch.from_numpy(g)).sum() for o, g in zip(touts, gs)).backward()
    tparams = dict(exported.named_parameters())
    grads = {n: (p.grad, None if tparams[n].grad is None else tparams[n].grad.numpy())
             for n, p in model.named_parameters()}
    return [(o.numpy(), t.detach().numpy()) for o, t in zip(outs, touts)], grads


def assert_same(pairs, grads, tol):
    for mine, theirs in pairs:
        np.testing.assert_allclose(theirs, mine, rtol=tol, atol=tol)
    for name, (mine, theirs) in grads.items():
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            np.testing.assert_allclose(theirs, mine, rtol=tol, atol=tol, err_msg=name)


CASES = [pytest.param(*m.values[:3], dtype, tol, id=f"{m.id}-{np.dtype(dtype).name}")
         for m in MODELS for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-5))
         if m.values[3] or dtype == np.float32]


@pytest.mark.parametrize("make, method, batch, dtype, tol", CASES)
def test_outputs_and_gradients_equal_minigrad(make, method, batch, dtype, tol):
    mg.manual_seed(0)
    model = make().to(dtype)
    rng = np.random.default_rng(0)
    exported = to_torch(model, *_cast(batch(rng, 2), dtype), method=method)
    assert list(exported.state_dict()) == list(model.state_dict())
    for B in (2, 3):  # the example's batch size, then another
        pairs, grads = run_both(model, exported, method, _cast(batch(rng, B), dtype), seed=B)
        assert_same(pairs, grads, tol)


def test_gpt_exports_static_and_other_lengths_are_refused():
    """GPT's training forward is a fixed program (no re-tracing per call); a sequence length
    other than the example's gets an error that says what the example fixed."""
    mg.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1))
    rng = np.random.default_rng(0)
    x = ids(rng, 2, 8)
    exported = to_torch(gpt, x, x, method="loss")  # one array passed twice is two inputs
    assert not exported.dynamic
    y = ids(rng, 3, 8)
    np.testing.assert_allclose(exported(torch.from_numpy(y), torch.from_numpy(y[::-1].copy())).item(),
                               gpt.loss(mg.tensor(y), mg.tensor(y[::-1].copy())).item(), rtol=1e-5)
    with pytest.raises(ValueError, match=r"traced for \(B, 8\).*sequence length"):
        exported(torch.from_numpy(ids(rng, 2, 6)), torch.from_numpy(ids(rng, 2, 6)))


@pytest.mark.parametrize("make, method, batch", [m.values[:3] for m in MODELS],
                         ids=[m.id for m in MODELS])
def test_other_sequence_lengths_are_refused(make, method, batch):
    """Static or traced again per call, every export checks the non-batch dimensions."""
    mg.manual_seed(0)
    rng = np.random.default_rng(0)
    example = batch(rng, 2)
    exported = to_torch(make(), *example, method=method)
    longer = [np.concatenate([a, a], axis=1) if a.ndim > 1 else a for a in batch(rng, 2)]
    with pytest.raises(ValueError, match="the example fixes every dimension except the leading batch"):
        exported(*[torch.from_numpy(a) for a in longer])


def test_seq2seq_padding_masks_follow_the_inputs():
    """The source padding mask is computed with numpy from the ids: the export re-derives it
    for every call (dynamic), so padding in a new batch is hidden, not the example's."""
    mg.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1))
    rng = np.random.default_rng(0)
    exported = to_torch(model, ids(rng, 2, 6), ids(rng, 2, 5))  # no padding in the example
    assert exported.dynamic
    src, tgt = ids(rng, 3, 6, pad=True), ids(rng, 3, 5)
    pairs, _ = run_both(model, exported, "forward", [src, tgt])
    assert_same(pairs, {}, 1e-5)


def test_trained_in_torch_comes_back_to_minigrad():
    """A few AdamW steps in torch, then the weights load into the minigrad model, which then
    computes the same loss as the torch module."""
    from minigrad.export import state_dict_from_torch

    mg.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1))
    rng = np.random.default_rng(0)
    exported = to_torch(gpt, ids(rng, 4, 8), ids(rng, 4, 8), method="loss")
    opt = torch.optim.AdamW(exported.parameters(), lr=1e-2)
    x, y = ids(rng, 4, 8), ids(rng, 4, 8)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = exported(torch.from_numpy(x), torch.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    gpt.load_state_dict(state_dict_from_torch(exported.state_dict(), gpt))
    with torch.no_grad():
        expected = exported(torch.from_numpy(x), torch.from_numpy(y)).item()
    assert gpt.loss(mg.tensor(x), mg.tensor(y)).item() == pytest.approx(expected, rel=1e-5)


def test_dropout_follows_train_and_eval():
    """The trace keeps the dropout ops; torch drops in train() and not in eval(), where the
    export equals minigrad's eval forward."""
    mg.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=V, block_size=8, embed_dim=16, num_heads=2, num_layers=1, dropout=0.5))
    rng = np.random.default_rng(0)
    x = ids(rng, 2, 8)
    gpt.eval()
    exported = to_torch(gpt, x)
    assert gpt.training is False  # the model's mode is left as it was
    assert any(n.op.__name__ == "DropoutOp" for n in exported.program.nodes)
    exported.eval()
    with torch.no_grad():
        np.testing.assert_allclose(exported(torch.from_numpy(x)), gpt(mg.tensor(x)), atol=1e-5)
        exported.train()
        a, b = exported(torch.from_numpy(x)), exported(torch.from_numpy(x))
    assert not torch.allclose(a, b)  # fresh dropout masks each call
