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
# # 11 · Locality, reach, and what an attention map does not say
#
# Two points of the notes that need no training to check, only gradients and a careful
# experiment:
#
# 1. Lecture 10, "Recap: why attention?": a convolution bakes in locality, each unit sees a
#    fixed small window, so "…the **bank** of the … **river**…" needs many layers before
#    "bank" can depend on "river". One attention layer connects every pair of words. We
#    compute the receptive fields and then *measure* them with gradients: d output_i /
#    d input_j is exactly zero until the stack is deep enough.
# 2. Session 07, "Alignment, weights & context": "attention maps are useful for inspecting
#    behavior, but a bright region should not automatically be treated as a complete causal
#    explanation". We build a head whose most-attended word matters *less* to its output
#    than a word it barely looks at, and measure both by masking each word in turn.

# %%
import math

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.viz import show, use_script_backend

HAVE_MATPLOTLIB = use_script_backend()  # draw inline in a notebook, off-screen in a script
mg.manual_seed(0)
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## 1. How far can a convolution see?
#
# A 1-D convolution with kernel size `k` (padded to keep the length, centred) computes output
# `t` from inputs `t - (k-1)/2 … t + (k-1)/2`. Stack `L` of them and the window grows by
# `k - 1` per layer: the **receptive field** is `1 + L (k - 1)` words, reaching `L (k-1)/2`
# words to each side. Two words `n` positions apart are first connected after
# `ceil(n / ((k-1)/2))` layers. In self-attention every query scores every key: one layer,
# any distance.

# %%
sentence = "i sat on the bank all afternoon watching the slow brown river".split()
bank, river = sentence.index("bank"), sentence.index("river")
distance = river - bank
print(f"{len(sentence)} words; 'bank' at {bank}, 'river' at {river}: {distance} apart")


def receptive_field(k: int, layers: int) -> int:
    return 1 + layers * (k - 1)


def layers_needed(k: int, n: int) -> int:
    """The fewest stacked centred convolutions of kernel size k linking words n apart."""
    return math.ceil(n / ((k - 1) // 2))


print(" k   layers for 'bank'-'river'   receptive field then")
needed = {}
for k in (3, 5, 7):
    needed[k] = layers_needed(k, distance)
    print(f"{k:2d}   {needed[k]:24d}   {receptive_field(k, needed[k]):3d} words")
assert needed == {3: 7, 5: 4, 7: 3}

# %% [markdown]
# ### Measured with gradients
#
# `nn.Conv1d` is PyTorch's layer: it reads `(B, C, T)`, channels before time, so the words,
# `(B, T, C)`, are transposed on the way in and out. `padding=(k-1)/2` keeps the length (a
# "same" convolution, centred on each word), and a tanh follows each layer. Inside, a
# convolution is a Linear layer applied to every window of `k` neighbours, one weight matrix
# shared by all positions (tutorial 13 shows the same for images with `nn.Conv2d`);
# autograd differentiates it like any other composition.

# %%
class Conv1d(nn.Module):
    """A centred ("same") 1-D convolution over the time axis, then tanh: `nn.Conv1d` on words.

    Shape: x (B, T, C) -> (B, T, C).
    """

    def __init__(self, channels: int, k: int):
        self.conv = nn.Conv1d(channels, channels, kernel_size=k, padding=(k - 1) // 2)

    def forward(self, x):
        out = self.conv(x.transpose(1, 2))  # (B, C, T): nn.Conv1d wants channels first
        return out.transpose(1, 2).tanh()  # (B, T, C)


# %% [markdown]
# Random words (embeddings) go in; we backpropagate from the output at "bank" alone (a random
# mix of its features: their plain sum would be constant after a LayerNorm) and ask which
# inputs received any gradient: `|d out_bank / d x_j|`, summed over features.


# %%
C, T = 8, len(sentence)
x = mg.randn(1, T, C, requires_grad=True)
mix = mg.randn(C)


def reach(model) -> np.ndarray:
    """|d model(x)[bank] / d x_j| for every word j (summed over the features)."""
    x.grad = None
    out = model(x)  # (1, T, C)
    (out[0, bank] * mix).sum().backward()
    return np.abs(x.grad[0]).sum(-1)  # (T,)


k = 3
convs = [Conv1d(C, k) for _ in range(needed[k])]
rows = []
for depth in range(1, len(convs) + 1):
    stack = nn.Sequential(*convs[:depth])
    rows.append(reach(stack))
    seen = np.flatnonzero(rows[-1])
    cut = ", cut at the sentence's ends" if len(seen) < receptive_field(k, depth) else ""
    print(f"{depth} conv layer(s): 'bank' depends on words {seen.min()}..{seen.max()}"
          f"  ({len(seen)} words: receptive field {receptive_field(k, depth)}{cut})")
conv_reach = np.array(rows)  # (layers, T)
first_layer_reaching_river = 1 + int(np.flatnonzero(conv_reach[:, river])[0])
print("first conv depth at which d out_bank / d x_river != 0:", first_layer_reaching_river)
assert first_layer_reaching_river == needed[k] == 7
assert np.all(conv_reach[: needed[k] - 1, river] == 0)  # exactly zero, not just small

# %% [markdown]
# One self-attention layer (here `nn.TransformerEncoderLayer`, post-norm as in the notes):
# the output at "bank" already depends on every word, "river" included.

# %%
attention_layer = nn.TransformerEncoderLayer(C, nhead=2, dim_feedforward=16, dropout=0.0)
attn_reach = reach(attention_layer)
print("one attention layer: 'bank' depends on", np.count_nonzero(attn_reach), "of", T, "words;",
      f"|d out_bank / d x_river| = {attn_reach[river]:.3g}")
assert np.all(attn_reach > 0)

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    both = np.vstack([conv_reach, attn_reach[None]]) > 0
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    ax.imshow(both, cmap="Greens", aspect="auto")
    ax.set_xticks(range(T), sentence, rotation=45, ha="right")
    ax.set_yticks(range(len(both)), [f"{d} conv" for d in range(1, len(convs) + 1)] + ["1 attention"])
    ax.axvline(river, color="tab:red", lw=1)
    ax.set_title("which words the output at 'bank' depends on (d out / d x != 0)")
    show(fig, "reach")

# %% [markdown]
# That is the notes' contrast: a CNN's receptive field is fixed by the architecture (seven
# kernel-3 layers before "bank" can see "river"), while attention's connections reach any
# distance and depend on the content. The price is the `N x N` score matrix (tutorial 03).
#
# ## 2. A bright attention map is not an explanation
#
# A head's output at one query is `sum_j alpha_j v_j`. The map shows the `alpha_j`; what a
# word passes on is `alpha_j v_j`, and what the output *depends on* is what changes when the
# word is taken away. We build a head by hand for "the film was not good": the query matches
# "the" best, but "the" carries an almost empty value, while "not" and "good" carry large
# values that pull the output in opposite directions and cancel (chosen so, from the weights).
# Then we take each word away in two ways and measure how far the output moves:
#
# - **masking**: the boolean attention mask removes the word before the softmax, and the other
#   weights are renormalised (what a "remove this token" experiment does);
# - **ablating**: the word's value vector is set to zero, the weights are left as they are.

# %%
words = ["the", "film", "was", "not", "good"]
d = 4
query = np.array([2.0, 0.0, 0.0, 0.0])
keys = np.array([[2.0, 0.0, 0.0, 0.0],     # the: the best match
                 [0.5, 0.0, 0.0, 0.0],     # film
                 [0.0, 0.0, 0.0, 0.0],     # was
                 [0.0, 0.0, 0.0, 0.0],     # not
                 [0.5, 0.0, 0.0, 0.0]])    # good
values = np.array([[0.05, 0.0, 0.0, 0.0],  # the: almost nothing to pass on
                   [0.0, 0.0, 0.0, 0.1],   # film
                   [0.0, 0.0, 0.1, 0.0],   # was
                   [0.0, 3.0, 0.0, 0.0],   # not
                   [0.0, 0.0, 0.0, 0.0]])  # good: set below
WORD = {w: j for j, w in enumerate(words)}


def attend(values: np.ndarray, keep: np.ndarray | None = None):
    """One query, one head: the output (d,) and the weights (T,); keep[j] False masks word j."""
    q, k, v = (mg.tensor(a[None, None]) for a in (query[None], keys, values))  # (1, 1, T or 1, d)
    mask = None if keep is None else mg.tensor(keep[None, None, None])  # (1, 1, 1, T)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)  # (1, 1, 1, T)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)  # before the softmax
    weights = scores.softmax(dim=-1)  # (1, 1, 1, T)
    out = F.scaled_dot_product_attention(q, k, v, mask=mask)  # (1, 1, 1, d)
    assert np.allclose(out.numpy(), (weights @ v).numpy())  # the fused kernel agrees
    return out.numpy()[0, 0, 0], weights.numpy()[0, 0, 0]


_, alpha = attend(values)
values[WORD["good"]] = -alpha[WORD["not"]] / alpha[WORD["good"]] * values[WORD["not"]]  # cancels "not"
output, alpha = attend(values)
masked, ablated = [], []
for j in range(len(words)):
    keep = np.ones(len(words), dtype=bool)
    keep[j] = False
    masked.append(float(np.linalg.norm(attend(values, keep)[0] - output)))
    zeroed = values.copy()
    zeroed[j] = 0.0
    ablated.append(float(np.linalg.norm(attend(zeroed)[0] - output)))
masked, ablated = np.array(masked), np.array(ablated)
print("output", output)
print(" word   attention   output change: masked   ablated")
for w, a, m, z in zip(words, alpha, masked, ablated):
    print(f"{w:>5s}   {a:9.3f}   {m:21.3f}   {z:7.3f}")
the, nt = WORD["the"], WORD["not"]
print(f"most attended: 'the' ({alpha[the]:.2f}); masking it moves the output by {masked[the]:.3f}, "
      f"masking 'not' ({alpha[nt]:.2f}) by {masked[nt]:.3f}: {masked[nt] / masked[the]:.1f}x more")
assert int(alpha.argmax()) == the and alpha[the] > 4 * alpha[nt]
assert masked[nt] > 3 * masked[the] and ablated[nt] > 3 * ablated[the]

# %%
if HAVE_MATPLOTLIB:
    fig, axes = plt.subplots(1, 2, figsize=(8, 2.6), layout="constrained")
    axes[0].bar(words, alpha, color="tab:blue")
    axes[0].set_title("attention weight (the bright map)")
    positions = np.arange(len(words))
    axes[1].bar(positions - 0.2, masked, 0.4, color="tab:red", label="masked")
    axes[1].bar(positions + 0.2, ablated, 0.4, color="tab:orange", label="value ablated")
    axes[1].set_xticks(positions, words)
    axes[1].set_title("output change without the word")
    axes[1].legend()
    show(fig, "attention_vs_effect")

# %% [markdown]
# The map says "the"; taking words away says "not" and "good". The weights tell where the
# head *looked*, not what its output depends on: that also depends on the values (ablating a
# word removes exactly `alpha_j v_j`), on what else the query could attend to (masking
# renormalises the others), and, in a real model, on every layer after the head. To claim a
# cause, intervene (mask, ablate, perturb) and measure, as here.
