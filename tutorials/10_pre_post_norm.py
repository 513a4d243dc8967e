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
# # 10 · Pre-norm and post-norm
#
# Lecture 10's transformer layer puts the LayerNorm **after** each residual sum (post-norm,
# as in "Attention Is All You Need"):
#
#     Z  = LayerNorm(X + MHA(X))
#     X~ = LayerNorm(Z + MLP(Z))
#
# The GPT of tutorial 04 (and GPT-2, ViT, most models since 2019) puts it **before** each
# sub-layer, on the branch only (pre-norm), and adds one LayerNorm at the very end:
#
#     Z  = X + MHA(LayerNorm(X))
#     X~ = Z + MLP(LayerNorm(Z))
#
# Same parts, different wiring. `nn.TransformerEncoderLayer(..., norm_first=True)` is
# pre-norm, `norm_first=False` (the default, as in PyTorch) post-norm. This notebook shows
# what the wiring changes: the size of the residual stream, the gradients at initialisation
# in a 12-layer stack, and training with and without a learning-rate warm-up.

# %%
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
from minigrad.models.data import CharTokenizer, stdlib_corpus
from minigrad.viz import show, use_script_backend

HAVE_MATPLOTLIB = use_script_backend()  # draw inline in a notebook, off-screen in a script
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## 1. The two layers, side by side
#
# The library layer against the equations written out, for both settings:

# %%
mg.manual_seed(0)
d = 16
x = mg.randn(2, 5, d)


def by_equations(layer: nn.TransformerEncoderLayer, x):
    def mha(h):
        return layer.self_attn(h, h, h, need_weights=False)[0]

    def mlp(h):
        return layer.linear2(layer.linear1(h).relu())

    if layer.norm_first:  # pre-norm
        z = x + mha(layer.norm1(x))
        return z + mlp(layer.norm2(z))
    z = layer.norm1(x + mha(x))  # post-norm
    return layer.norm2(z + mlp(z))


for norm_first in (False, True):
    layer = nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=32, dropout=0.0, norm_first=norm_first)
    diff = float(np.abs(layer(x).numpy() - by_equations(layer, x).numpy()).max())
    print(f"norm_first={norm_first!s:5}: library vs equations, largest difference {diff:.1e}")
    assert diff < 1e-5

# %% [markdown]
# In post-norm, the path from a layer's input to its output passes through the LayerNorm:
# there is no clean identity path from the loss back to the first layer. In pre-norm, the
# residual stream `X -> X + f(LN(X)) -> ...` is never normalised: each layer only *adds* to
# it, and the gradient reaches every layer through the sum unchanged.
#
# ## 2. A 12-layer stack at initialisation
#
# A small character-level language model (token + position embeddings, `L` layers, a linear
# head; causal self-attention), built either way, and one batch of the docstrings of Python's
# standard library (the corpus of tutorial 04). We measure, for every layer, the size of the
# residual stream that enters it (mean vector norm per token) and the gradient norm of all of
# its parameters.

# %%
text = stdlib_corpus()[:100_000]
tokenizer = CharTokenizer.from_text(text)
ids = np.array(tokenizer.encode(text), dtype=np.int64)
V, T, D = tokenizer.vocab_size, 32, 32


class TinyLM(nn.Module):
    """Embeddings, L encoder layers with a causal mask, a final LayerNorm (pre-norm only), a head.

    Shape: idx (B, T) int -> logits (B, T, V).
    """

    def __init__(self, norm_first: bool, num_layers: int):
        self.tok = nn.Embedding(V, D)
        self.pos = nn.LearnedPositionalEmbedding(T, D)
        self.layers = [nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.0, norm_first=norm_first)
                       for _ in range(num_layers)]
        # pre-norm leaves the stream un-normalised: normalise once before the head
        self.norm = nn.LayerNorm(D) if norm_first else None
        self.head = nn.Linear(D, V)

    def forward(self, idx, streams=None):
        h = self.pos(self.tok(idx))  # (B, T, D)
        for layer in self.layers:
            if streams is not None:
                h.retain_grad()
                streams.append(h)  # the stream entering this layer
            h = layer(h, is_causal=True)
        if self.norm is not None:
            h = self.norm(h)
        return self.head(h)  # (B, T, V)

    def loss(self, idx, targets, streams=None):
        return F.cross_entropy(self(idx, streams).reshape(-1, V), targets.reshape(-1))


def get_batch(rng: np.random.Generator, batch_size: int = 16):
    starts = rng.integers(0, len(ids) - T - 1, size=batch_size)
    x = np.stack([ids[s:s + T] for s in starts])  # (B, T)
    y = np.stack([ids[s + 1:s + T + 1] for s in starts])  # (B, T): the next characters
    return mg.tensor(x), mg.tensor(y)


def at_initialisation(norm_first: bool, num_layers: int = 12, seed: int = 0):
    mg.manual_seed(seed)
    model = TinyLM(norm_first, num_layers)
    streams = []
    model.loss(*get_batch(np.random.default_rng(seed)), streams).backward()
    size = [float(np.linalg.norm(s.numpy(), axis=-1).mean()) for s in streams]
    grad = [float(np.sqrt(sum((p.grad ** 2).sum() for p in layer.parameters()))) for layer in model.layers]
    return np.array(size), np.array(grad)


init = {nf: at_initialisation(nf) for nf in (False, True)}
for nf, name in ((False, "post-norm"), (True, "pre-norm")):
    size, grad = init[nf]
    print(f"{name}: stream size entering layers 1..12  {size.round(2)}")
    print(f"{name}: gradient norm of layers 1..12      {grad.round(3)}")

# %% [markdown]
# What the numbers say:
#
# - **Post-norm**: every layer hands on a normalised stream, so after layer 1 its size is
#   `sqrt(D)` = 5.66 per token at every depth.
# - **Pre-norm**: each layer adds its output to the stream, which grows with depth; the
#   last layers' outputs are a smaller fraction of a bigger sum, and their gradients are
#   smaller than post-norm's.
#
# At initialisation, in a stack this small, the gradient norms of both stay within a factor of
# 3 across the 12 layers: neither vanishes. (Xiong et al., 2020, "On Layer
# Normalization in the Transformer Architecture", show that post-norm's gradients near the
# output are large at initialisation for wide, deep models, which is why post-norm needs a
# learning-rate warm-up; pre-norm's shrink like 1/sqrt(L).)

# %%
post_size, post_grad = init[False]
pre_size, pre_grad = init[True]
assert np.allclose(post_size[1:], np.sqrt(D), rtol=1e-3)  # LayerNorm's output: norm sqrt(D)
assert np.all(np.diff(pre_size) > 0) and pre_size[-1] > 1.4 * pre_size[0]  # the stream grows
last = slice(-4, None)
print(f"last four layers: post-norm gradients are {post_grad[last].mean() / pre_grad[last].mean():.2f}x "
      "pre-norm's")
assert post_grad[last].mean() > 1.3 * pre_grad[last].mean()

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 2.8), layout="constrained")
    layers = np.arange(1, 13)
    for nf, name in ((False, "post-norm"), (True, "pre-norm")):
        axes[0].plot(layers, init[nf][0], "o-", label=name)
        axes[1].plot(layers, init[nf][1], "o-", label=name)
    axes[0].set(xlabel="layer", ylabel="stream size per token", title="residual stream at init")
    axes[1].set(xlabel="layer", ylabel="gradient norm", title="gradient of each layer at init")
    axes[1].set_ylim(bottom=0)
    axes[0].legend()
    show(fig, "init")

# %% [markdown]
# ## 3. Training: the learning rate, and a warm-up
#
# Six layers, 200 steps of AdamW on batches of 8 windows of 32 characters. At a small
# learning rate (1e-3) the two train alike. At 1e-2 **without warm-up**, the post-norm stack
# trains worse; a linear warm-up over the first 50 steps (the original transformer's recipe)
# brings it back. The pre-norm stack needs no warm-up: that robustness is why GPT-2 and most
# later models moved the norm in front, while the notes' (and BERT's) post-norm layer is the
# original design, which normalises every layer's output.


# %%
def train(norm_first: bool, lr: float, warmup: int = 0, steps: int = 200, seed: int = 0) -> list[float]:
    mg.manual_seed(seed)
    model = TinyLM(norm_first, num_layers=6)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = np.random.default_rng(seed)
    losses = []
    for step in range(steps):
        for group in opt.param_groups:  # linear warm-up, then constant
            group["lr"] = lr * min(1.0, (step + 1) / warmup) if warmup else lr
        loss = model.loss(*get_batch(rng, batch_size=8))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


t0 = time.perf_counter()
runs = {
    ("post-norm", 1e-3, 0): train(False, 1e-3),
    ("pre-norm", 1e-3, 0): train(True, 1e-3),
    ("post-norm", 1e-2, 0): train(False, 1e-2),
    ("pre-norm", 1e-2, 0): train(True, 1e-2),
    ("post-norm", 1e-2, 50): train(False, 1e-2, warmup=50),
}
final = {key: float(np.mean(losses[-20:])) for key, losses in runs.items()}
print(f"{len(runs)} runs of 200 steps in {time.perf_counter() - t0:.0f} s; mean loss of the last 20 steps:")
for (name, lr, warmup), value in final.items():
    print(f"  {name:9s} lr {lr:.0e}  warm-up {warmup:2d} steps: {value:.3f}")
assert abs(final["post-norm", 1e-3, 0] - final["pre-norm", 1e-3, 0]) < 0.1  # alike at a small lr
assert final["post-norm", 1e-2, 0] > final["pre-norm", 1e-2, 0] + 0.5  # post-norm suffers
assert final["post-norm", 1e-2, 50] < final["post-norm", 1e-2, 0] - 0.5  # warm-up helps it

# %%
if HAVE_MATPLOTLIB:
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    smooth = np.ones(10) / 10
    for (name, lr, warmup), losses in runs.items():
        style = "--" if lr == 1e-3 else "-"
        label = f"{name}, lr {lr:.0e}" + (f", warm-up {warmup}" if warmup else "")
        ax.plot(np.convolve(losses, smooth, mode="valid"), style, label=label)
    ax.set(xlabel="step", ylabel="cross-entropy (mean of 10)", title="6 layers, AdamW")
    ax.legend(fontsize=8)
    show(fig, "training")

# %% [markdown]
# So both exist for a reason. Post-norm (the notes, Vaswani et al. 2017, BERT) keeps every
# layer's output, and so the stream, normalised, and trains well with a warm-up; pre-norm
# (GPT-2 onwards, ViT, this project's GPT and ViT) keeps an identity path through the whole
# stack, grows the stream instead, needs a final LayerNorm before the head, and tolerates a
# larger learning rate from the first step.
