# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · The encoder-decoder transformer
#
# Session 07, "Transformer Encoder & Decoder Blocks": the encoder reads the whole source with
# bidirectional self-attention; the decoder reads the target so far with *masked* (causal)
# self-attention, reads the source through *cross-attention*, and a linear-softmax head scores
# the next token. Tutorial 06 built the same idea from RNNs; here attention is all there is.
#
# 1. the model and its three attentions, with their shapes: encoder self-attention S x S,
#    decoder self-attention T x T (causal), cross-attention N x M = T x S;
# 2. the causal decoder mask: a later target token cannot change an earlier prediction;
# 3. training on the reversal task ("3141592653" -> "3562951413") in a few seconds;
# 4. greedy decoding against beam search;
# 5. the cross-attention map as the notes' alignment picture: output t looks at source S-1-t.
#
# Where this departs from the notes: the layers are pre-norm (`x + MHA(LN(x))`, the
# `norm_first=True` default of `Seq2SeqConfig`, which trains small models at a high learning
# rate without warm-up tricks), while the notes' layer is post-norm (`LN(x + MHA(x))`, tutorial
# 03); positions are the sinusoids of the original paper; and the model is smaller and trained
# shorter than the `minigrad train seq2seq --preset reverse` preset.

# %%
import math
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.models.data import SEQ_VOCAB, encode_pairs
from minigrad.models.recipes.translate import Seq2SeqRecipe
from minigrad.models.seq2seq import Seq2SeqConfig
from minigrad.models.train import TrainConfig, make_optimizer
from minigrad.viz import show, use_script_backend

# show(fig) draws a figure inline in a notebook; a script draws off-screen and keeps the figures
# only when MINIGRAD_FIGURES names a folder. Without matplotlib the pictures are skipped.
HAVE_MATPLOTLIB = use_script_backend()
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
mg.manual_seed(0)  # initial weights
np.set_printoptions(precision=3, suppress=True, linewidth=110)

# %% [markdown]
# ## 1. The model and its three attentions
#
# `Seq2Seq` (`minigrad.models.seq2seq`) stacks `nn.TransformerEncoderLayer`s and
# `nn.TransformerDecoderLayer`s. Two layers each, 32 features, 2 heads; the recipe
# (`Seq2SeqRecipe`) brings the task, the loss and the decoding. One vocabulary of characters
# serves both sides, with PAD = 0, BOS = 1 (start of the target), EOS = 2 (end).

# %%
config = Seq2SeqConfig(vocab_size=SEQ_VOCAB.vocab_size, block_size=16, embed_dim=32, num_heads=2,
                       num_layers=2)
recipe = Seq2SeqRecipe("reverse", config=config)
model = recipe.model
print(f"{model.num_parameters()} parameters")
for src_text, tgt_text in recipe.test_pairs[:3]:
    print(f"  {src_text!r:16} -> {tgt_text!r}")

# %% [markdown]
# During training the decoder reads the target shifted right (BOS first) and predicts it
# shifted left (EOS last), all positions at once: *teacher forcing*.
#
# Take a source of M = 12 characters and the first N = 5 tokens of the decoder's input, and
# record every attention the model computes (`nn.record_attention`):

# %%
pair = ("271828182845", "548281828172")
src, tgt = encode_pairs([pair])  # (1, M), (1, 1 + M + 1): BOS, target, EOS
tgt_in = tgt[:, :5]  # (1, N): BOS and the first four target characters
M, N = src.shape[1], tgt_in.shape[1]
with nn.record_attention(model) as maps:
    logits = model(mg.tensor(src), mg.tensor(tgt_in))
print("logits:", logits.shape, " (B, N, V): a next-token score at every target position")
for name in maps.names():
    print(f"  {name:34s} {maps.weights(name).shape}")
B, H = 1, config.num_heads
for layer in range(config.num_layers):
    assert maps.weights(f"encoder.layers.{layer}.self_attn").shape == (B, H, M, M)
    assert maps.weights(f"decoder.layers.{layer}.self_attn").shape == (B, H, N, N)
    assert maps.weights(f"decoder.layers.{layer}.multihead_attn").shape == (B, H, N, M)

# %% [markdown]
# The notes' shapes: in the cross-attention the queries come from the decoder,
# `Q` (N x d_k), and the keys and values from the encoder's output (the *memory*),
# `K` (M x d_k), so `Q K^T` is N x M: one row per target position, one column per source
# character. By hand, for the first decoder layer and head 0 (the pre-norm layer normalises
# its input first, `norm2` before the cross-attention):

# %%
memory, src_mask = model.encode(mg.tensor(src))  # (1, M, C), (1, 1, 1, M)
layer0 = model.decoder.layers[0]
with mg.no_grad():
    x = model.embed(mg.tensor(tgt_in))  # (1, N, C)
    h = layer0.norm1(x)
    x = x + layer0.self_attn(h, h, h, mask=nn.causal_mask(N), need_weights=False)[0]
    cross = layer0.multihead_attn
    D = cross.head_dim
    Q = cross.q_proj(layer0.norm2(x)).numpy()[0, :, :D]  # (N, d_k): head 0's queries
    K = cross.k_proj(memory).numpy()[0, :, :D]  # (M, d_k): head 0's keys
    scores = Q @ K.T / math.sqrt(D)  # (N, M)
    A = np.exp(scores - scores.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
print(f"Q {Q.shape} @ K^T {K.T.shape} -> attention matrix {A.shape} (N x M)")
assert Q.shape == (N, D) and K.shape == (M, D) and A.shape == (N, M)
assert np.allclose(A, maps.weights("decoder.layers.0.multihead_attn")[0, 0], atol=1e-5)

# %% [markdown]
# ## 2. The causal decoder mask
#
# The decoder's self-attention gets `nn.causal_mask(N)` (True = may attend): position t sees
# positions 0..t. The mask is applied before the softmax, as `-inf`, so everything above the
# diagonal gets weight exactly 0 and each row still sums to 1. The encoder's self-attention
# has no causal mask: the whole source is known.

# %%
print(nn.causal_mask(N).numpy().astype(int))
dec_self = maps.weights("decoder.layers.0.self_attn")[0, 0]  # (N, N)
enc_self = maps.weights("encoder.layers.0.self_attn")[0, 0]  # (M, M)
print("decoder self-attention, head 0:\n", dec_self)
assert np.all(np.triu(dec_self, 1) == 0) and np.allclose(dec_self.sum(-1), 1, atol=1e-5)
assert np.all(enc_self > 0)  # every source character sees every other one

# %% [markdown]
# What the mask buys: the model trains on every target position at once, yet the prediction
# at position t cannot peek at the target tokens after t, the very ones it is asked to
# predict. Change the last two decoder inputs and the first three predictions stay the same:

# %%
changed = tgt_in.copy()
changed[0, 3:] = SEQ_VOCAB.encode("00")
with mg.no_grad():
    before = model(mg.tensor(src), mg.tensor(tgt_in)).numpy()
    after = model(mg.tensor(src), mg.tensor(changed)).numpy()
moved = np.abs(after - before).max(-1)[0]  # (N,): the largest change at each position
print("largest logit change at positions 0..4:", moved)
assert np.all(moved[:3] == 0) and np.all(moved[3:] > 0)

# %% [markdown]
# The source has a mask of its own: in a batch, shorter sources are padded with PAD, and the
# padding mask (`nn.padding_mask`, shape (B, 1, 1, M)) hides those positions from the encoder's
# self-attention and from the cross-attention. Padded positions get weight 0:

# %%
batch_src, batch_tgt = encode_pairs([pair, ("12345678", "87654321")])  # the second is padded
with nn.record_attention(model) as padded:
    model(mg.tensor(batch_src), mg.tensor(batch_tgt[:, :-1]))
cross_w = padded.weights("decoder.layers.1.multihead_attn")  # (2, H, T, M)
print("source 2:", batch_src[1], "-> cross-attention on its 4 PAD positions:",
      cross_w[1, :, :, 8:].max())
assert np.all(cross_w[1, :, :, 8:] == 0) and np.allclose(cross_w.sum(-1), 1, atol=1e-5)

# %% [markdown]
# ## 3. Training on reversal
#
# Reversal needs the cross-attention to find, for output t, the source character M-1-t: a
# pure alignment problem. 400 steps of 32 fresh examples; we stop half-way to compare the
# decoders on a half-trained model.

# %%
STEPS, BATCH = 400, 32
opt, sched = make_optimizer(model, TrainConfig(steps=STEPS, lr=3e-3, min_lr=3e-4, warmup=30,
                                               weight_decay=0.01))
data_rng = np.random.default_rng(0)
test = recipe.test_pairs[:200]  # held out: these sources never occur in training
test_src, _ = encode_pairs(test)
losses = []


def train_until(step: int) -> None:
    t0 = time.perf_counter()
    while len(losses) < step:
        loss = recipe.loss(recipe.batch("train", data_rng, BATCH))  # teacher-forced cross-entropy
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    print(f"step {len(losses)}: training loss {np.mean(losses[-20:]):.3f} ({time.perf_counter() - t0:.1f} s)")


def compare_decoders(beam_size: int = 4) -> dict:
    """Exact match and mean log-probability of greedy and beam outputs on the 200 test sources."""
    found = {}
    decoders = {"greedy": lambda s: model.greedy_decode(s, max_len=recipe.max_len),
                f"beam {beam_size}": lambda s: model.beam_search(s, beam_size, max_len=recipe.max_len)}
    for name, decode in decoders.items():
        t0 = time.perf_counter()
        out = decode(test_src)  # (200, L)
        seconds = time.perf_counter() - t0
        exact = float(np.mean([SEQ_VOCAB.decode(row) == tgt for row, (_, tgt) in zip(out, test)]))
        logp = model.score(test_src, out)  # (200,): log P(output | source), EOS included
        found[name] = dict(out=out, exact=exact, logp=logp, seconds=seconds)
        print(f"  {name:7s}: exact match {exact:6.1%}, mean log P(output) {logp.mean():7.3f}, "
              f"{seconds:.2f} s")
    return found


train_until(STEPS // 2)

# %% [markdown]
# ## 4. Greedy decoding and beam search
#
# Greedy decoding appends the single most likely token at every step. It can paint itself into
# a corner: a token that looks best now may lead to a worse sequence overall. Beam search
# (`model.beam_search`) keeps the K most likely prefixes at every step, scored by their summed
# log-probability, and returns the best finished one; K = 1 is greedy. On the half-trained
# model:

# %%
half = compare_decoders()
g, b = half["greedy"], half["beam 4"]
better, worse = int((b["logp"] > g["logp"] + 1e-4).sum()), int((b["logp"] < g["logp"] - 1e-4).sum())
print(f"beam found a more likely output for {better} sources, a less likely one for {worse}")
assert b["logp"].mean() >= g["logp"].mean() and better > worse and b["exact"] >= g["exact"]

# %% [markdown]
# Beam search is a better search, not a better model: it finds outputs the model itself rates
# more likely, at K times the work per step. Where the model is unsure, that helps; one source
# where the two differ:

# %%
differ = np.flatnonzero(b["logp"] > g["logp"] + 1e-4)
right = [SEQ_VOCAB.decode(b["out"][j]) == test[j][1] != SEQ_VOCAB.decode(g["out"][j]) for j in differ]
i = int(differ[np.argmax(right)])  # one that beam search gets right and greedy wrong, if any
print(f"source {test[i][0]!r}, target {test[i][1]!r}")
print(f"  greedy: {SEQ_VOCAB.decode(g['out'][i])!r}  log P = {g['logp'][i]:.3f}")
print(f"  beam 4: {SEQ_VOCAB.decode(b['out'][i])!r}  log P = {b['logp'][i]:.3f}")

# %% [markdown]
# And once the model has finished training:

# %%
train_until(STEPS)
final = compare_decoders()
assert final["greedy"]["exact"] >= 0.9 and final["beam 4"]["exact"] >= 0.9
assert np.mean(losses[-20:]) < 0.1 * np.mean(losses[:20])

# %% [markdown]
# Trained, the model is sure of itself and the two decoders (almost always) agree: beam search
# matters most where the model's distribution is flat.

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 2.6), layout="constrained")
    ax.plot(losses, lw=0.6, label="train (one batch)")
    ax.plot(np.arange(19, STEPS), np.convolve(losses, np.ones(20) / 20, mode="valid"), label="mean of 20")
    ax.axvline(STEPS // 2, color="gray", ls=":", label="greedy vs beam, half-way")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.legend()
    show(fig, "loss")

# %% [markdown]
# ## 5. The cross-attention map: the alignment picture
#
# The notes' alignment picture for translation puts the output on one axis, the source on the
# other, and lights up where each output word looked. Here: decode a source, then run the
# model once, teacher-forced, on its own output, recording the cross-attention of every layer.

# %%
digits = "3141592653"
src1, _ = encode_pairs([(digits, "")])
out = model.greedy_decode(src1, max_len=recipe.max_len)  # (1, L): the reversed digits and EOS
decoded = SEQ_VOCAB.decode(out[0])
dec_in = np.concatenate([[[SEQ_VOCAB.bos_id]], out[:, :-1]], axis=1)  # BOS + output, shifted right
with nn.record_attention(model) as maps:
    model.eval()
    model(mg.tensor(src1), mg.tensor(dec_in))
last = maps.weights(f"decoder.layers.{config.num_layers - 1}.multihead_attn")[0]  # (H, N, M)
print(f"{digits!r} -> {decoded!r}; last layer's cross-attention {last.shape} (heads, N, M)")
mirror = len(digits) - 1 - np.arange(len(digits))  # output t should look at source M-1-t
for h in range(last.shape[0]):
    looks = last[h, :len(digits)].argmax(-1)
    print(f"  head {h}: output t looks most at source {looks}; on the mirror {np.mean(looks == mirror):.0%}")
best = max(np.mean(last[h, :len(digits)].argmax(-1) == mirror) for h in range(last.shape[0]))
assert decoded == digits[::-1] and best >= 0.8

# %% [markdown]
# The anti-diagonal: output 0 looks at the last source character, output 1 at the one before,
# and so on; the heads share the work (one may look a step ahead or behind and the residual
# stream combines them). For reversal the alignment is a single mirror line; for a real
# translation it is roughly diagonal with the jumps and swaps word order asks for (tutorial
# 06's dates jump between the fields).

# %%
if HAVE_MATPLOTLIB:
    from minigrad.viz import plot_attention

    fig = plot_attention({f"layer {i}": maps.weights(f"decoder.layers.{i}.multihead_attn")[0]
                          for i in range(config.num_layers)},
                         x_tokens=list(digits), y_tokens=list(decoded) + ["EOS"],
                         title="cross-attention: output (rows) over source (columns)")
    show(fig, "cross_attention")
