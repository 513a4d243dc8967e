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
# # 06 · The RNN encoder-decoder and its bottleneck
#
# Session 07, "From One Context Vector to Dynamic Attention" and "Alignment, Weights &
# Context": before transformers, attention was invented to fix the encoder-decoder RNN.
#
# 1. the fixed-vector bottleneck: the whole source squeezed into one hidden vector, and how
#    little of the first characters survives in it;
# 2. the four alignment functions of the notes (dot, scaled dot, bilinear, additive) computed
#    on the same small example side by side;
# 3. the date task ("tuesday 3 march 1987" -> "1987-03-03") trained with and without
#    attention, with both learning curves in one plot;
# 4. the alignment map of a decoded date: where each output character looked.
#
#     e_tj = align(s_{t-1}, h_j)      a_tj = softmax_j(e_tj)      c_t = sum_j a_tj h_j
#
# Where this departs from the notes: the recurrent cell is a GRU (the notes say "RNN"), the
# attention of the trained model is the additive one (Bahdanau's), and the models are smaller
# and trained for fewer steps than the `minigrad train rnn --preset dates` presets, so that
# the notebook runs in seconds; its figures are therefore lower than the README's.

# %%
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.models.data import SEQ_VOCAB, encode_pairs
from minigrad.models.recipes.translate_rnn import RNNRecipe
from minigrad.models.rnn_seq2seq import RNNConfig, RNNSeq2Seq
from minigrad.models.train import TrainConfig, make_optimizer
from minigrad.viz import show, use_script_backend

# show(fig) draws a figure inline in a notebook; a script draws off-screen and keeps the figures
# only when MINIGRAD_FIGURES names a folder. Without matplotlib the pictures are skipped.
HAVE_MATPLOTLIB = use_script_backend()
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## 1. The fixed-vector bottleneck
#
# `RNNSeq2Seq` (in `minigrad.models.rnn_seq2seq`) is the notes' encoder-decoder: a GRU encoder
# reads the source one character at a time and leaves an *annotation* `h_j` after each; a GRU
# decoder starts from the encoder's last state and writes the target one character at a time.
# With `attention=False` the decoder's context is that last state `h_S` at every step: the
# whole source must fit in one vector of `hidden_size` numbers, whatever its length.

# %%
H = 64  # hidden size: the encoder's state, the decoder's state, and each annotation
config = RNNConfig(vocab_size=SEQ_VOCAB.vocab_size, embed_dim=16, hidden_size=H, attention=False)
mg.manual_seed(0)
plain = RNNSeq2Seq(config)
source = "the 23rd of september 1987"
src, _ = encode_pairs([(source, "")])  # (1, S) character ids
annotations, final, _ = plain.encode(mg.tensor(src))
print(f"source {source!r}: {src.shape[1]} characters")
print(f"annotations h_1..h_S: {annotations.shape} = {annotations.numpy().size} numbers")
print(f"final state h_S:      {final.shape} = {final.numpy().size} numbers, for any source length")
assert annotations.shape == (1, len(source), H) and final.shape == (1, H)
assert np.allclose(final.numpy(), annotations.numpy()[:, -1])  # the last annotation is the final state

# %% [markdown]
# How much of each source character is still in `h_S`? The Jacobian `d h_S / d x_j` says how
# much the final state moves when the embedding `x_j` of character `j` moves. One backward pass
# gives all of it: copy the sentence `H` times into a batch and send the identity matrix as
# the upstream gradient, so row `b` of the batch computes the gradient of unit `b` of `h_S`.
# Below, its size `||d h_S / d x_j||` for every position `j`, for the untrained encoder.


# %%
def final_state_sensitivity(model: RNNSeq2Seq, text: str) -> np.ndarray:
    """||d h_S / d x_j|| (Frobenius) for every source position j: one backward pass."""
    ids, _ = encode_pairs([(text, "")])
    ids = mg.tensor(np.repeat(ids, model.config.hidden_size, axis=0))  # (C, S): C copies
    x = model.embed(ids).detach().requires_grad_()  # (C, S, E), a leaf we differentiate by
    keep = nn.padding_mask(ids, pad=SEQ_VOCAB.pad_id).reshape(ids.shape[0], ids.shape[1], 1)
    _, h_S = model.encoder(x, keep)  # (C, C)
    h_S.backward(np.eye(h_S.shape[0], dtype=np.float32))  # copy b asks for d h_S[b] / d x
    return np.linalg.norm(x.grad, axis=(0, 2))  # (S,): sum over units and embedding features


sens_untrained = final_state_sensitivity(plain, source)
for j in (0, 5, 10, 15, 20, len(source) - 1):
    print(f"  position {j:2d} {source[j]!r}: ||d h_S / d x_j|| = {sens_untrained[j]:.2e}")
assert sens_untrained[0] < 1e-3 * sens_untrained[-1]

# %% [markdown]
# Untrained, the first characters have all but vanished from `h_S`: their influence has passed
# through 25 GRU steps, each of which shrinks it (the vanishing gradient of the RNN lectures).
# Training can teach the GRU's gates to keep what matters, but the space stays `H` numbers,
# and the first characters always have the longest way to go. Attention changes the path:
# the decoder reads every annotation `h_j` directly, weighted by `a_tj`, so a source character
# is never more than one weighted sum away.
#
# ## 2. Four alignment functions on one example
#
# The notes' alignment function scores the decoder state `s` (the query) against each
# annotation `h_j` (the key); the softmax turns the scores into weights; the context is the
# weighted average of the values (here the annotations themselves, in the transformer a
# separate projection). The same small example as Lecture 10's worked example: query
# `s = [1, 1]`, keys `k_A = [1, 1]`, `k_B = [1, -1]`, `k_C = [-1, 1]`, values `v_A = [1, 0]`,
# `v_B = [0, 1]`, `v_C = [1, 1]`.
#
# | alignment | `e_j =` | learned parameters |
# |---|---|---|
# | dot | `s . k_j` | none (needs `len(s) == len(k_j)`) |
# | scaled dot | `s . k_j / sqrt(d_k)` | none |
# | bilinear (Luong's "general") | `s^T W k_j` | `W`, `d_q x d_k` |
# | additive (Bahdanau) | `v^T tanh(W_q s + W_k k_j)` | `W_q`, `W_k`, `v` |
#
# The bilinear and the additive form also work when the query and the keys have different
# sizes (a decoder state and a bidirectional encoder's annotations, say). Their matrices are
# learned; here we set them by hand to small numbers, to compute the scores on paper too.

# %%
s = mg.tensor([[[1.0, 1.0]]])  # (B=1, Tq=1, 2): one query
keys = mg.tensor([[[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]]])  # (1, Tk=3, 2): k_A, k_B, k_C
values = mg.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])  # (1, 3, 2): v_A, v_B, v_C
d_k = keys.shape[-1]

bilinear = nn.BilinearAttention(2, 2)
bilinear.weight.numpy()[...] = [[1.0, 0.0], [0.0, -1.0]]  # W: feature 0 should match, feature 1 differ
additive = nn.AdditiveAttention(2, 2, hidden_dim=2)
additive.w_q.weight.numpy()[...] = np.eye(2)  # W_q = I
additive.w_k.weight.numpy()[...] = np.eye(2)  # W_k = I
additive.v.weight.numpy()[...] = [[1.0, 1.0]]  # v = [1, 1]

results = {}  # name -> (scores, weights, context)
for name, scores in (("dot", s @ keys.transpose(1, 2)),
                     ("scaled dot", s @ keys.transpose(1, 2) / np.sqrt(d_k))):
    weights = scores.softmax(dim=-1)  # (1, 1, 3)
    results[name] = (scores.numpy()[0, 0], weights.numpy()[0, 0], (weights @ values).numpy()[0, 0])
context, weights = bilinear(s, keys, values)  # (1, 1, 2), (1, 1, 3)
scores = (s @ bilinear.weight @ keys.transpose(1, 2)).numpy()[0, 0]  # the layer returns the weights only
results["bilinear"] = (scores, weights.numpy()[0, 0], context.numpy()[0, 0])
context, weights = additive(s, keys, values)
hidden = (additive.w_q(s).unsqueeze(2) + additive.w_k(keys).unsqueeze(1)).tanh()
scores = additive.v(hidden).numpy()[0, 0, :, 0]
results["additive"] = (scores, weights.numpy()[0, 0], context.numpy()[0, 0])

print(f"{'alignment':11s} {'scores e_A, e_B, e_C':>24s} {'weights a_A, a_B, a_C':>24s} {'context c':>16s}")
for name, (e, a, c) in results.items():
    print(f"{name:11s} {np.array2string(e, precision=3):>24s} {np.array2string(a, precision=3):>24s} "
          f"{np.array2string(c, precision=3):>16s}")

# %% [markdown]
# Checked against the formulas, by hand:

# %%
assert np.allclose(results["dot"][0], [2, 0, 0]) and np.allclose(results["scaled dot"][0], [2**0.5, 0, 0])
assert np.allclose(np.round(results["scaled dot"][1], 2), [0.67, 0.16, 0.16])  # Lecture 10's numbers
assert np.allclose(results["bilinear"][0], [0, 2, -2])  # s^T W = [1, -1]: it prefers k_B = [1, -1]
assert np.allclose(results["additive"][0], [2 * np.tanh(2), np.tanh(2), np.tanh(2)])
for _, a, c in results.values():
    assert np.isclose(a.sum(), 1.0) and np.allclose(c, a @ values.numpy()[0])  # weights, weighted average

# %% [markdown]
# What the table says:
#
# * **dot** scores grow with the size of the vectors: its weights ([0.79, 0.11, 0.11]) are
#   sharper than the scaled version's ([0.67, 0.16, 0.16]), the Lecture 10 worked example.
#   With `d_k` in the hundreds, unscaled scores saturate the softmax (tutorial 02).
# * **bilinear** learns *which* features should match: with this `W`, the first feature must
#   agree and the second must differ, so `k_B` wins although `k_A` equals the query. Dot and
#   scaled dot are the special cases `W = I` and `W = I / sqrt(d_k)`:

# %%
for W, twin in ((np.eye(2), "dot"), (np.eye(2) / np.sqrt(2), "scaled dot")):
    bilinear.weight.numpy()[...] = W
    _, w = bilinear(s, keys, values)
    print(f"bilinear with W = {np.round(W[0, 0], 3)} I: weights {w.numpy()[0, 0]}  "
          f"({twin}: {results[twin][1]})")
    assert np.allclose(w.numpy()[0, 0], results[twin][1])

# %% [markdown]
# * **additive** runs a one-hidden-layer network on query and key together; the `tanh`
#   bounds every score by `sum |v_i|` (here 2), so it cannot saturate, however large the
#   inputs. It is the one `RNNSeq2Seq` uses (`nn.AdditiveAttention`), with the decoder's
#   previous state `s_{t-1}` as the query.

# %%
big = mg.tensor([[[100.0, 100.0]]])  # a query 100 times larger
_, w_big = additive(big, keys, values)
e_big = additive.v((additive.w_q(big).unsqueeze(2) + additive.w_k(keys).unsqueeze(1)).tanh()).numpy().ravel()
print("additive scores for a query 100x larger:", e_big, " weights:", w_big.numpy().ravel())
assert np.all(np.abs(e_big) <= np.abs(additive.v.weight.numpy()).sum() + 1e-6)

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(9, 2.3), sharey=True, layout="constrained")
    for ax, (name, (e, a, _)) in zip(axes, results.items()):
        ax.bar(["A", "B", "C"], a, color=["C0", "C1", "C2"])
        ax.set_title(f"{name}\ne = {np.array2string(e, precision=2)}", fontsize=8)
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("attention weight")
    show(fig, "alignment_functions")

# %% [markdown]
# ## 3. The date task, with and without attention
#
# The task (`minigrad.models.data.dates_task`): a date written one of ten ways, to ISO form.
# Test sources never occur in training (a hash of the source decides its split).
#
# Two models that differ only in the `attention` switch: the recipe's presets `dates` and
# `dates-noattn`, at half their width (`hidden_size` 64 instead of 128) and with the same
# budget for both, 300 steps of 32 fresh examples. The recipe (`RNNRecipe`) brings the data,
# the loss (teacher forcing: the decoder reads the true previous character) and greedy decoding.

# %%
recipe = RNNRecipe("dates")
for src_text, tgt_text in recipe.test_pairs[:4]:
    print(f"  {src_text!r:34} -> {tgt_text!r}")

STEPS, BATCH = 300, 32


def train(attention: bool, seed: int = 0) -> tuple[RNNRecipe, list[float], float]:
    """Train one model; returns its recipe, the loss of every step, and the seconds taken."""
    mg.manual_seed(seed)  # the same initial weights for the parts both models have
    cfg = RNNConfig(vocab_size=SEQ_VOCAB.vocab_size, embed_dim=16, hidden_size=H, attention=attention,
                    attention_dim=32)
    rec = RNNRecipe("dates" if attention else "dates-noattn", config=cfg)
    opt, sched = make_optimizer(rec.model, TrainConfig(steps=STEPS, lr=1e-2, min_lr=1e-3, warmup=20,
                                                       weight_decay=0.01))
    rng = np.random.default_rng(seed)  # the same batches for both models
    losses, t0 = [], time.perf_counter()
    for _ in range(STEPS):
        loss = rec.loss(rec.batch("train", rng, BATCH))  # cross-entropy per target character
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(rec.model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return rec, losses, time.perf_counter() - t0


runs = {}
for attention in (True, False):
    runs[attention] = train(attention)
    print(f"attention={attention!s:5}: {STEPS} steps in {runs[attention][2]:.1f} s, "
          f"{runs[attention][0].model.num_parameters()} parameters")

# %% [markdown]
# Exact match on 300 held-out dates (greedy decoding: the whole output must be right), and the
# training loss over the last 20 steps:

# %%
test = recipe.test_pairs[:300]
summary = {}
for attention, (rec, losses, _) in runs.items():
    outputs = rec.translate([s for s, _ in test])
    exact = float(np.mean([out == tgt for out, (_, tgt) in zip(outputs, test)]))
    summary[attention] = (exact, float(np.mean(losses[-20:])))
    print(f"attention={attention!s:5}: exact match {exact:.1%}, "
          f"final training loss {summary[attention][1]:.3f}")
assert summary[True][0] > summary[False][0] + 0.3  # attention learns the task much sooner
assert summary[True][1] < 0.5 * summary[False][1]

# %% [markdown]
# With the same steps, the same data and the same decoder, attention gets most dates right and
# the bottleneck model few. Given more steps the plain RNN catches up on dates this short (the
# README's 300 steps at batch 64 and `hidden_size` 128 give it 92.5%): a date fits in 64 or
# 128 numbers. The bottleneck costs most when the source is long and every part of it matters.
#
# Both learning curves in one plot:

# %%
if HAVE_MATPLOTLIB:
    fig, ax = plt.subplots(figsize=(5.5, 2.8), layout="constrained")
    for attention, label in ((True, "additive attention"), (False, "fixed vector h_S")):
        losses = runs[attention][1]
        ax.plot(losses, lw=0.5, alpha=0.4, color="C0" if attention else "C3")
        ax.plot(np.arange(19, STEPS), np.convolve(losses, np.ones(20) / 20, mode="valid"),
                color="C0" if attention else "C3",
                label=f"{label}: exact match {summary[attention][0]:.0%}")
    ax.set_xlabel("step")
    ax.set_ylabel("training cross-entropy")
    ax.set_yscale("log")
    ax.legend()
    show(fig, "learning_curves")

# %% [markdown]
# And the trained bottleneck model's final state: has it learnt to keep the early characters?

# %%
sens_trained = final_state_sensitivity(runs[False][0].model, source)
print(f"||d h_S / d x_0|| / ||d h_S / d x_last||: untrained {sens_untrained[0] / sens_untrained[-1]:.1e}, "
      f"trained without attention {sens_trained[0] / sens_trained[-1]:.1e}")
assert sens_trained[0] / sens_trained[-1] > 100 * sens_untrained[0] / sens_untrained[-1]

# %% [markdown]
# It has: training taught the GRU's gates to carry the first character through 25 steps. What
# no training changes is the room: 64 numbers for the whole source, and one path through
# every later step. The attention model needs neither: its decoder reads the annotation of the
# character it wants.

# %% [markdown]
# ## 4. The alignment map of a decoded date
#
# `greedy_decode(..., return_attention=True)` returns the weights `a_tj` of every decoding
# step: row `t` is where output character `t` looked in the source. (`nn.record_attention`
# collects the same from any model.)

# %%
model = runs[True][0].model
date = "tuesday 3 march 1987"
ids, _ = encode_pairs([(date, "")])
out, align = model.greedy_decode(ids, max_len=recipe.max_len, return_attention=True)  # (1, L), (1, L, S)
decoded = SEQ_VOCAB.decode(out[0])
align = align[0]  # (L, S): one row per output character, and one for EOS
print(f"{date!r} -> {decoded!r}; alignment map {align.shape}")
year = slice(date.index("1987"), date.index("1987") + 4)
on_year = align[:4, year].sum(1)
for t, ch in enumerate(decoded + "$"):  # "$" marks the EOS step
    print(f"  output {t:2d} {ch!r}: looks most at source {align[t].argmax():2d} "
          f"{date[align[t].argmax()]!r} (weight {align[t].max():.2f})")
print("weight of the year '1987' for the four year digits:", on_year)
assert decoded.startswith("1987-")
assert np.allclose(align.sum(-1), 1.0, atol=1e-5) and np.all(on_year > 0.5)

# %% [markdown]
# The year digits look at the year; the month and the day look further left. The map is not
# the neat diagonal of a word-by-word translation: the order of the fields changes, and a GRU
# annotation `h_j` already carries what came before `j`, so "look at the `7`" can fetch the
# whole year. As the notes warn, a bright cell shows where the weight went, not that this
# character alone caused the output.

# %%
if HAVE_MATPLOTLIB:
    from minigrad.viz import plot_attention

    fig = plot_attention(align, x_tokens=list(date), y_tokens=list(decoded) + ["EOS"],
                         names=["alignment a_tj: output (rows) over source (columns)"])
    show(fig, "alignment_map")
