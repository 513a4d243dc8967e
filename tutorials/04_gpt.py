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
# # 04 · A tiny GPT
#
# Lecture 10, "Putting it together: GPT": embed tokens + positions, a stack of masked
# (causal) transformer layers, a linear-softmax head giving the next-token distribution;
# trained to predict the next token, and generating by sampling and feeding the output back.
#
# Here a character-level GPT (`minigrad.models.gpt`, one page to read top-down) learns from a
# small piece of the docstrings of Python's standard library, in a few seconds on one CPU thread
# (2.2 s of CPU on a 2-core AMD EPYC VM, measured with `benchmarks/tutorial_times.py`). Then we
# sample with temperature and top-k, check that the KV cache gives the same tokens, and look
# at the attention maps of a layer.
#
# (`minigrad train gpt` trains the bigger "quick" model on the whole corpus, with checkpoints
# and a progress bar; this notebook writes the loop out.)
#
# **Where this departs from the notes.** The notes' transformer layer is post-norm,
# `Z = LayerNorm(X + MHA(X))`; this GPT (like GPT-2) is **pre-norm**, `Z = X + MHA(LayerNorm(X))`,
# with one more LayerNorm before the head: tutorial 10 shows the difference and why both
# exist. Its MLP uses GELU (GPT-2's tanh form) where the notes draw a generic MLP, its
# positions are learned vectors rather than the fixed sinusoids of tutorial 03, and the output
# head shares its weights with the token embedding (weight tying, as in GPT-2).

# %%
import math
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.models.data import CharTokenizer, stdlib_corpus, train_val_split
from minigrad.models.gpt import GPT, GPTConfig
from minigrad.models.train import TrainConfig, make_optimizer
from minigrad.viz import plot_attention, show, use_script_backend

# show(fig) draws a figure inline in a notebook; a script draws off-screen and keeps the figures
# only when MINIGRAD_FIGURES names a folder. Without matplotlib the pictures are skipped.
HAVE_MATPLOTLIB = use_script_backend()
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
mg.manual_seed(0)  # initialisation and sampling
np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## The data
#
# `stdlib_corpus()` collects the docstrings of the running Python's standard library (parsed
# once, then cached); we keep the first 200,000 characters. The tokenizer has one token per
# character; the validation text is the tail, cut at a docstring boundary.

# %%
text = stdlib_corpus()[:200_000]
tokenizer = CharTokenizer.from_text(text)
train_text, val_text = train_val_split(text, val_fraction=0.1)
train_ids = np.array(tokenizer.encode(train_text), dtype=np.int64)
val_ids = np.array(tokenizer.encode(val_text), dtype=np.int64)
print(f"{len(text):,} characters, vocabulary of {tokenizer.vocab_size}; "
      f"{len(train_ids):,} to train on, {len(val_ids):,} to validate")
print(repr(text[:160]))

# %% [markdown]
# A training example is a window of `block_size` characters, `x`, and the same window shifted
# by one, `y`: at every position the model predicts the next character, so one window gives
# `block_size` predictions at once (the causal mask keeps position t from seeing t + 1).

# %%
config = GPTConfig(vocab_size=tokenizer.vocab_size, block_size=48, embed_dim=48, num_heads=4, num_layers=2)
data_rng = np.random.default_rng(1)


def get_batch(ids: np.ndarray, batch_size: int, rng: np.random.Generator = data_rng):
    starts = rng.integers(0, len(ids) - config.block_size - 1, size=batch_size)
    x = np.stack([ids[s:s + config.block_size] for s in starts])  # (B, T)
    y = np.stack([ids[s + 1:s + config.block_size + 1] for s in starts])  # (B, T): next characters
    return mg.tensor(x), mg.tensor(y)


x, y = get_batch(train_ids, 2)
print("x:", repr(tokenizer.decode(x.numpy()[0])), "\ny:", repr(tokenizer.decode(y.numpy()[0])))

# %% [markdown]
# ## The model and the loop
#
# Two pre-norm blocks, 4 heads, 48 features. Untrained, the model should be about as unsure
# as a uniform guess over the vocabulary: a loss near `ln(V)`.

# %%
model = GPT(config)
print(model.num_parameters(), "parameters")


@mg.no_grad()
def val_loss(num_batches: int = 8) -> float:
    rng = np.random.default_rng(0)  # the same validation batches every time
    model.eval()
    losses = [model.loss(*get_batch(val_ids, 32, rng)).item() for _ in range(num_batches)]
    model.train()
    return float(np.mean(losses))


start_val = val_loss()
print(f"validation loss before training: {start_val:.3f}   (ln V = {math.log(config.vocab_size):.3f})")
assert abs(start_val - math.log(config.vocab_size)) < 0.1

# %% [markdown]
# AdamW with weight decay on the matrices, a warm-up then cosine learning rate, gradient
# clipping: the shared training loop's settings (`make_optimizer`), with the loop written out.

# %%
steps = 300
opt, sched = make_optimizer(model, TrainConfig(steps=steps, lr=3e-3, min_lr=3e-4, warmup=30))
losses = []
t0, cpu0 = time.perf_counter(), time.process_time()  # wall clock, and this process's CPU
for step in range(steps):
    xb, yb = get_batch(train_ids, 16)
    loss = model.loss(xb, yb)  # mean cross-entropy of the next character
    opt.zero_grad()
    loss.backward()
    optim.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    losses.append(loss.item())
    if (step + 1) % 50 == 0:
        print(f"step {step + 1:3d}: train loss {np.mean(losses[-50:]):.3f}  lr {sched.get_last_lr()[0]:.1e}")
seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
end_val = val_loss()
print(f"{steps} steps in {seconds:.1f} s ({cpu:.1f} s of CPU); validation loss {start_val:.3f} -> "
      f"{end_val:.3f}")
assert np.mean(losses[-50:]) < np.mean(losses[:50]) - 1.0 and end_val < start_val - 1.0

# %% [markdown]
# The loss curve (drawn when matplotlib is installed):

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    curve, ax = plt.subplots(figsize=(5, 2.6), layout="constrained")
    ax.plot(losses, lw=0.8, label="train (one batch)")
    ax.plot(np.convolve(losses, np.ones(25) / 25, mode="valid"), label="train (mean of 25)")
    ax.axhline(end_val, color="gray", ls="--", label=f"validation {end_val:.2f}")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.legend()
    show(curve, "loss")

# %% [markdown]
# ## Sampling
#
# `generate` feeds each sampled character back in. The temperature divides the logits:
# below 1 it sharpens the distribution (0 takes the argmax), above 1 it flattens it; `top_k`
# keeps only the k most likely characters. Every draw goes through minigrad's one global
# generator, so `manual_seed` makes a sample repeat.

# %%
prompt = "Return the "
prompt_ids = np.array([tokenizer.encode(prompt)])


def sample(temperature, top_k=None, seed=0, use_cache=True, n=80):
    mg.manual_seed(seed)
    out = model.generate(prompt_ids, n, temperature=temperature, top_k=top_k, use_cache=use_cache)
    return out[0]


for temperature, top_k in ((0.0, None), (0.5, None), (1.0, None), (1.0, 5)):
    text_out = tokenizer.decode(sample(temperature, top_k))
    print(f"--- temperature {temperature}, top_k {top_k}:\n{text_out!r}")

# %% [markdown]
# ## The KV cache gives the same tokens
#
# Without a cache, every new character recomputes the keys and values of the whole prefix.
# With one, each layer keeps them, and a step runs a single query against the cache. The
# tokens are the same, greedy and sampled with the same seed. The cache is preallocated and
# written in place, so a step reads the S cached rows and copies none of them
# (`benchmarks/generation.py`, 256 tokens after a 64-token prompt: with the cache, 1.2x the
# tokens per second of no cache at the `tiny` preset, 1.8x at `quick`, 2.6x at `small`).

# %%
timings = {}
for use_cache in (True, False):
    t0 = time.perf_counter()
    greedy = sample(0.0, use_cache=use_cache, n=36)
    timings[use_cache] = time.perf_counter() - t0
    sampled = sample(0.8, top_k=10, seed=3, use_cache=use_cache, n=36)
    if use_cache:
        greedy_cached, sampled_cached = greedy, sampled
print("greedy, cache vs none:  same tokens:", np.array_equal(greedy, greedy_cached))
print("sampled, cache vs none: same tokens:", np.array_equal(sampled, sampled_cached))
print(f"36 greedy characters: {timings[True] * 1000:.0f} ms with the cache, "
      f"{timings[False] * 1000:.0f} ms without")
assert np.array_equal(greedy, greedy_cached) and np.array_equal(sampled, sampled_cached)

# %% [markdown]
# The logits themselves agree to float32 rounding: the last position's logits from one full
# forward pass, and from the prompt followed by one cached step.

# %%
ids = mg.tensor(np.array([tokenizer.encode("Return the value")]))
with mg.no_grad():
    model.eval()
    full = model(ids).numpy()[:, -1]  # (1, V)
    caches = model.new_caches()  # one nn.KVCache per block
    model(ids[:, :-1], caches)  # fills the caches with the first 15 characters
    stepped = model(ids[:, -1:], caches, start=ids.shape[1] - 1).numpy()[:, -1]  # one new query
print("largest |full - cached| logit difference:", float(np.abs(full - stepped).max()))
assert np.allclose(full, stepped, atol=1e-4)

# %% [markdown]
# ## Attention maps
#
# `nn.record_attention(model)` collects the weights of every attention run inside the block,
# named by module path, even though the model asks the fused kernel for none. Each is
# (B, H, T, T) and causal: nothing above the diagonal.

# %%
probe = "Return the number of items."
with nn.record_attention(model) as maps:
    model(mg.tensor(np.array([tokenizer.encode(probe)])))
print(maps)
first = maps.weights("blocks.0.attn")[0]  # (H, T, T)
assert maps.names() == ["blocks.0.attn", "blocks.1.attn"] and first.shape == (4, len(probe), len(probe))
assert np.all(np.triu(first, 1) == 0) and np.allclose(first.sum(-1), 1.0, atol=1e-5)
print("head 0 of blocks.0.attn, the last query:", first[0, -1].round(2))

# %%
if HAVE_MATPLOTLIB:
    fig = plot_attention({name: maps.weights(name)[0] for name in maps.names()}, x_tokens=list(probe))
    show(fig, "gpt_attention")
    print("plotted", len(fig.axes) - 1, "heads")  # and one colour bar
