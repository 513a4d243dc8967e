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
# # 02 · Attention by hand
#
# Lecture 10 ("Attention & Transformers"), from the worked example on the slide to the
# backward pass of the fused kernel:
#
# 1. the worked example (three tokens, `d_k = 2`) three ways: plain numpy, minigrad tensors
#    step by step, and `F.scaled_dot_product_attention`, with the slide's numbers checked;
# 2. the notes' demo "self-attention from scratch" (five tokens, `d = 16`), full and causal,
#    computed with minigrad and checked against the notes' numpy code;
# 3. why the scores are divided by `sqrt(d_k)`, in numbers;
# 4. the backward pass of attention: the fused kernel against its composed twin;
# 5. the notes' question: why mask **before** the softmax (as `-inf`) rather than zeroing
#    the weights after?
#
# Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
#
# **Where this departs from the notes.** The notes' demo masks by adding `-1e9` to the
# scores; minigrad masks with a boolean mask (True = may attend) as `-inf` before the softmax,
# so a query with nothing to attend to gets zeros (section 5), where adding `-1e9` to every
# score of a row would leave its softmax as it was. The slide rounds
# the output to `[0.83, 0.33]`; exactly it is `[0.836, 0.327]` (section 1).

# %%
import math

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.nn.functional import attention_reference
from minigrad.viz import plot_attention, show, use_script_backend

# show(fig) draws a figure inline in a notebook; a script draws off-screen and keeps the figures
# only when MINIGRAD_FIGURES names a folder. Without matplotlib the pictures are skipped.
HAVE_MATPLOTLIB = use_script_backend()
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. The worked example
#
# Three tokens A, B, C with `d_k = 2`. The query of token A is `q = [1, 1]`; the keys are
# `k_A = [1, 1]`, `k_B = [1, -1]`, `k_C = [-1, 1]` and the values `v_A = [1, 0]`,
# `v_B = [0, 1]`, `v_C = [1, 1]`. The slide's three steps:
#
# 1. scores `q . k_j = [2, 0, 0]`, divided by `sqrt(2)`: `[1.41, 0, 0]`
# 2. softmax: `[e^1.41, 1, 1] / (e^1.41 + 2) = [0.67, 0.16, 0.16]`
# 3. weighted sum of the values: `0.67 v_A + 0.16 v_B + 0.16 v_C`, written `[0.83, 0.33]`;
#    exactly `[0.836, 0.327]`.

# %%
q_A = np.array([1.0, 1.0])
KEYS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]])  # k_A, k_B, k_C
VALUES = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # v_A, v_B, v_C


def worked_example() -> dict:
    """The slide's three steps in plain numpy: scores, scaled scores, weights, output."""
    d_k = q_A.shape[-1]
    scores = KEYS @ q_A  # q . k_j for j = A, B, C
    scaled = scores / np.sqrt(d_k)
    weights = np.exp(scaled) / np.exp(scaled).sum()
    output = weights @ VALUES  # sum_j weights_j v_j
    return {"scores": scores, "scaled": scaled, "weights": weights, "output": output,
            "output_from_rounded_weights": np.round(weights, 2) @ VALUES}


ex = worked_example()
for key, value in ex.items():
    print(f"{key:28s} {value}")

# %% [markdown]
# Each number of the slide, asserted (so running this file checks them):

# %%
assert np.array_equal(ex["scores"], [2.0, 0.0, 0.0])
assert np.array_equal(np.round(ex["scaled"], 2), [1.41, 0.0, 0.0])
assert np.array_equal(np.round(ex["weights"], 2), [0.67, 0.16, 0.16])
assert np.isclose(ex["weights"].sum(), 1.0)
assert np.array_equal(np.round(ex["output"], 3), [0.836, 0.327])

# %% [markdown]
# A note on the slide's `[0.83, 0.33]`: its two entries are rounded differently. The first,
# 0.83, is `0.67 + 0.16` with the rounded weights; the second, 0.33, is the exact 0.327
# rounded. Using the rounded weights throughout gives `[0.83, 0.32]`, and rounding the exact
# output to two places gives `[0.84, 0.33]`. The exact output, `[0.836, 0.327]`, is the one
# the three computations below agree on.

# %%
assert np.isclose(ex["output_from_rounded_weights"][0], 0.83)  # 0.67 * 1 + 0.16 * 0 + 0.16 * 1
assert np.isclose(ex["output_from_rounded_weights"][1], 0.32)  # 0.67 * 0 + 0.16 * 1 + 0.16 * 1
assert np.round(ex["output"][1], 2) == 0.33 and np.round(ex["output"][0], 2) == 0.84
print("slide [0.83, 0.33]: 0.83 from the rounded weights, 0.33 from the exact", ex["output"].round(3))

# %% [markdown]
# Token A attends mostly to itself (0.67): its query matched its own key best, so its output
# is mostly `v_A`.
#
# ### The same with minigrad tensors, step by step
#
# With all three queries at once: `Q` is (3, 2), so `Q K^T` is the (3, 3) matrix of every
# token scoring every token. For the example we only know token A's query, so we use the
# three tokens' keys as their queries too (self-attention with `Q = K`): row 0 is token A.


# %%
def by_minigrad_steps():
    Q = mg.tensor(KEYS)  # (3, 2): queries of A, B, C (q_A = k_A = [1, 1])
    K, V = mg.tensor(KEYS), mg.tensor(VALUES)  # (3, 2) each
    d_k = Q.shape[-1]
    scores = Q @ K.T / math.sqrt(d_k)  # (3, 3)
    weights = scores.softmax(dim=-1)  # each row sums to 1
    return weights, weights @ V  # (3, 3), (3, 2)


W_steps, O_steps = by_minigrad_steps()
print("weights (row i: where token i looks)\n", W_steps.numpy(), "\noutputs\n", O_steps.numpy())
assert np.allclose(W_steps.numpy()[0], ex["weights"]) and np.allclose(O_steps.numpy()[0], ex["output"])
assert np.allclose(W_steps.numpy().sum(-1), 1.0)

# %% [markdown]
# ### And with the fused kernel
#
# `F.scaled_dot_product_attention(q, k, v)` computes the same in one op with a hand-written
# backward; `need_weights=True` also returns the softmax.


# %%
def by_sdpa():
    Q, K, V = mg.tensor(KEYS), mg.tensor(KEYS), mg.tensor(VALUES)
    out, weights = F.scaled_dot_product_attention(Q, K, V, need_weights=True)
    return weights, out


W_fused, O_fused = by_sdpa()
print("token A: weights", W_fused.numpy()[0], "output", O_fused.numpy()[0])
assert np.allclose(W_fused.numpy(), W_steps.numpy()) and np.allclose(O_fused.numpy(), O_steps.numpy())
assert np.array_equal(np.round(W_fused.numpy()[0], 2), [0.67, 0.16, 0.16])
assert np.array_equal(np.round(O_fused.numpy()[0], 3), [0.836, 0.327])

# %% [markdown]
# ### The pipeline as a graph
#
# The composed path names each intermediate (`q k^T`, the `1/sqrt(d_k)` factor, `scores`,
# `weights`), so its graph reads like the slide. The fused kernel is one box; with
# `expand_fused=True` the drawing opens it into the same steps (dashed: they happen inside
# the one op, whose backward is hand-written).

# %%
from minigrad.viz import draw_graph  # noqa: E402

Q = mg.tensor(KEYS[:1], requires_grad=True, name="q (token A)")
K, V = mg.tensor(KEYS, name="K"), mg.tensor(VALUES, name="V")
composed = draw_graph(attention_reference(Q, K, V).sum())
named = [n for n in ("q k^T", "1/sqrt(d_k)", "scores", "weights") if f'label="{n}\\n' in composed.source]
print("named in the composed graph:", named)
assert named == ["q k^T", "1/sqrt(d_k)", "scores", "weights"]
opened = draw_graph(F.scaled_dot_product_attention(Q, K, V).sum(), expand_fused=True)
assert "Softmax over keys" in opened.source and "fused kernel, expanded" in opened.source
opened  # noqa: B018

# %% [markdown]
# ## 2. Demo: self-attention from scratch
#
# The notes' numpy code, line for line (without the plotting), for the five tokens
# "the cat sat on mat" with `d = 16` and random projections `W_q, W_k, W_v`:

# %%
rng = np.random.default_rng(0)
tokens = ["the", "cat", "sat", "on", "mat"]
N, d = len(tokens), 16
X = rng.normal(size=(N, d))
Wq, Wk, Wv = (rng.normal(size=(d, d)) * 0.5 for _ in range(3))
Q, K, V = X @ Wq, X @ Wk, X @ Wv


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


mask = np.triu(np.ones((N, N)), 1) * -1e9  # causal: no peeking ahead
A = softmax(Q @ K.T / np.sqrt(d))  # full self-attention
A_caus = softmax(Q @ K.T / np.sqrt(d) + mask)  # decoder (masked)

# %% [markdown]
# The same with minigrad: the projections as tensor products, the causal mask as a boolean
# mask (True = may attend) applied before the softmax as `-inf`.

# %%
Xt = mg.tensor(X)  # (5, 16) float64: numpy float arrays keep their dtype
Wq_t, Wk_t, Wv_t = (mg.tensor(W, requires_grad=True) for W in (Wq, Wk, Wv))
Qt, Kt, Vt = Xt @ Wq_t, Xt @ Wk_t, Xt @ Wv_t  # (5, 16) each

S = Qt @ Kt.T / math.sqrt(d)  # (5, 5) scores
A_mg = S.softmax(dim=-1)
A_caus_mg = S.masked_fill(~nn.causal_mask(N), -math.inf).softmax(dim=-1)
Y_full, A_sdpa = F.scaled_dot_product_attention(Qt, Kt, Vt, need_weights=True)
Y_caus, A_caus_sdpa = F.scaled_dot_product_attention(Qt, Kt, Vt, is_causal=True, need_weights=True)

for ours in (A_mg.numpy(), A_sdpa.numpy()):
    assert np.allclose(ours, A)
for ours in (A_caus_mg.numpy(), A_caus_sdpa.numpy()):
    assert np.allclose(ours, A_caus)
assert np.allclose(Y_full.numpy(), A @ V) and np.allclose(Y_caus.numpy(), A_caus @ V)
print("full self-attention (row = query, column = key)\n", A.round(2))
print("causal\n", A_caus.round(2))
print("largest difference to the notes' numpy:", float(np.abs(A_caus_sdpa.numpy() - A_caus).max()))

# %% [markdown]
# Row "the" of the causal map can only look at itself (weight 1); every row sums to 1 and
# everything above the diagonal is 0. `nn.record_attention` collects the same maps from any
# model run; here we plot the two we computed with `plot_attention` (one panel per map).

# %%
assert np.allclose(A_caus[0], [1, 0, 0, 0, 0]) and np.allclose(np.triu(A_caus, 1), 0)
if HAVE_MATPLOTLIB:
    fig = plot_attention(np.stack([A_sdpa.numpy(), A_caus_sdpa.numpy()]), x_tokens=tokens,
                         names=["full self-attention", "causal (decoder) mask"])
    show(fig, "attention")
    print("plotted:", [ax.get_title() for ax in fig.axes[:2]])
else:
    print("matplotlib is not installed: pip install 'minigrad[plot]' to draw the maps")

# %% [markdown]
# ## 3. Why scale by `sqrt(d_k)`?
#
# `q . k = sum_i q_i k_i` over `d_k` terms. With entries ~ N(0, 1) each term has variance 1,
# so the dot product has variance about `d_k`, and dividing by `sqrt(d_k)` brings it back to
# about 1:

# %%
rng = np.random.default_rng(0)
print(" d_k   var(q.k)   var(q.k / sqrt(d_k))")
variances = {}
for d_k in (2, 16, 64, 256, 1024):
    qs, ks = rng.normal(size=(10_000, d_k)), rng.normal(size=(10_000, d_k))
    dots = (qs * ks).sum(-1)
    variances[d_k] = (dots.var(), (dots / np.sqrt(d_k)).var())
    print(f"{d_k:5d} {variances[d_k][0]:9.1f} {variances[d_k][1]:12.2f}")
    assert 0.9 * d_k < variances[d_k][0] < 1.1 * d_k and 0.9 < variances[d_k][1] < 1.1

# %% [markdown]
# Large logits saturate the softmax: one weight goes to 1, the rest to 0, and the gradient
# that reaches the scores vanishes (the softmax's Jacobian `diag(a) - a a^T` is 0 at a
# one-hot `a`). Below, 2,000 queries each attend over 8 random keys; we backpropagate a random
# upstream gradient through the softmax with minigrad and measure what reaches the scores.

# %%
print(" d_k  scaling   mean max weight   rows > 0.99   mean |dL/dscores|")
saturation = {}
for d_k in (4, 64, 1024):
    qs, ks = rng.normal(size=(2000, 1, d_k)), rng.normal(size=(2000, 8, d_k))
    raw = (qs @ ks.swapaxes(-1, -2))[:, 0]  # (2000, 8)
    upstream = rng.normal(size=raw.shape)
    for name, z in (("none", raw), ("sqrt(d_k)", raw / np.sqrt(d_k))):
        scores = mg.tensor(z, requires_grad=True)
        weights = scores.softmax(dim=-1)
        weights.backward(upstream)
        top = weights.numpy().max(-1)
        saturation[d_k, name] = (top.mean(), (top > 0.99).mean(), np.abs(scores.grad).mean())
        print(f"{d_k:5d}  {name:9s} {top.mean():12.3f} {(top > 0.99).mean():13.1%} "
              f"{np.abs(scores.grad).mean():16.4f}")
assert saturation[1024, "none"][1] > 0.5 and saturation[1024, "sqrt(d_k)"][1] < 0.01
assert saturation[1024, "none"][2] < 0.25 * saturation[1024, "sqrt(d_k)"][2]

# %% [markdown]
# Unscaled, at `d_k = 1024` most rows are already a hard max and the gradient is a fraction
# of the scaled one; scaled, the picture is the same at every `d_k`. The `sqrt(d_k)` is not
# cosmetic.
#
# ## 4. The backward pass of attention
#
# `F.scaled_dot_product_attention` runs one fused `Function` whose backward is derived by hand
# (read its docstring: `dV = P^T g`, `dS = A * (dA - rowsum(dA * A))`, `dQ = dS K * scale`,
# ...). `attention_reference` composes the same math from tensor ops, each differentiated by
# the engine. On a batch of two sequences with two heads, causal, with a random upstream
# gradient, both give the same gradients:

# %%
rng = np.random.default_rng(1)
q0, k0, v0 = (rng.normal(size=(2, 2, 5, 4)) for _ in range(3))  # (B, H, T, D), float64
g_out = rng.normal(size=(2, 2, 5, 4))


def attention_grads(attend):
    q, k, v = (mg.tensor(a, requires_grad=True) for a in (q0, k0, v0))
    out = attend(q, k, v, is_causal=True)
    out.backward(g_out)
    return out.numpy(), q.grad, k.grad, v.grad


fused = attention_grads(F.scaled_dot_product_attention)
composed = attention_grads(attention_reference)
for name, x1, x2 in zip(("out", "dq", "dk", "dv"), fused, composed):
    print(f"{name}: largest |fused - composed| = {np.abs(x1 - x2).max():.1e}")
    assert np.allclose(x1, x2, rtol=1e-10, atol=1e-12)

# %% [markdown]
# And both against central differences (`gradcheck`, float64, random upstream gradient):

# %%
small = [rng.normal(size=(3, 2)) for _ in range(3)]  # q, k, v: three tokens, d = 2
for attend in (F.scaled_dot_product_attention, attention_reference):
    ok = mg.gradcheck(lambda q, k, v, attend=attend: attend(q, k, v, is_causal=True), small)
    print(f"gradcheck({attend.__name__}, causal): {ok}")
    assert ok

# %% [markdown]
# The gradients of the demo's projection matrices, from the fused kernel and from the
# composed one, agree as well:

# %%
def projection_grads(attend):
    Ws = [mg.tensor(W, requires_grad=True) for W in (Wq, Wk, Wv)]
    attend(Xt @ Ws[0], Xt @ Ws[1], Xt @ Ws[2], is_causal=True).sum().backward()
    return [W.grad for W in Ws]


for name, g1, g2 in zip(("W_q", "W_k", "W_v"), projection_grads(F.scaled_dot_product_attention),
                        projection_grads(attention_reference)):
    print(f"d/d{name}: |grad| = {np.linalg.norm(g1):.4f}, largest difference {np.abs(g1 - g2).max():.1e}")
    assert np.allclose(g1, g2)

# %% [markdown]
# ## 5. Why mask before the softmax (as `-inf`) rather than zeroing weights after?
#
# The notes' hint: what must each row still sum to? Take the demo's scores and try both.

# %%
scores = Q @ K.T / np.sqrt(d)
allowed = np.tril(np.ones((N, N), dtype=bool))  # True = may attend
before = softmax(np.where(allowed, scores, -np.inf))  # mask, then softmax
after = softmax(scores) * allowed  # softmax, then zero the future
print("row sums, masked before:", before.sum(-1))
print("row sums, zeroed after: ", after.sum(-1))
assert np.allclose(before.sum(-1), 1.0)
assert after.sum(-1)[0] < 1.0 and np.isclose(after.sum(-1)[-1], 1.0)

# %% [markdown]
# Zeroing after leaves each row summing to less than 1 (only the last row, which hides
# nothing, still sums to 1): the output is no longer a weighted *average* of the values.
# Worse, the future still leaks in, through the softmax's denominator: the weight token
# "the" gives itself depends on the scores of "cat" ... "mat". Change the last token and
# watch the first output:

# %%
X2 = X.copy()
X2[-1] = rng.normal(size=d)  # a different last token ("mat" -> something else)
Q2, K2, V2 = X2 @ Wq, X2 @ Wk, X2 @ Wv
s2 = Q2 @ K2.T / np.sqrt(d)
before2 = softmax(np.where(allowed, s2, -np.inf))
after2 = softmax(s2) * allowed
change_before = np.abs(before2 @ V2 - before @ V)[:-1].max()
change_after = np.abs(after2 @ V2 - after @ V)[:-1].max()
print(f"outputs of tokens 0..3 moved by {change_before:.1e} (masked before), "
      f"{change_after:.3f} (zeroed after)")
assert change_before == 0.0 and change_after > 0.01

# %% [markdown]
# Renormalising the zeroed rows would fix both, and is exactly softmax over the allowed keys:
# masking before the softmax, as `-inf`, does it in one step (`exp(-inf) = 0`).
#
# The gradients tell the same story. Backpropagate a random upstream gradient through both
# versions, with minigrad, and look at what reaches the scores of future keys (above the
# diagonal): masked before, exactly 0; zeroed after, the future scores still get a gradient,
# because they sit in the denominator.

# %%
assert np.allclose(after / after.sum(-1, keepdims=True), before)
g_w = rng.normal(size=(N, N))
future = ~allowed
S_before = mg.tensor(scores, requires_grad=True)
S_before.masked_fill(mg.tensor(future), -math.inf).softmax(dim=-1).backward(g_w)
S_after = mg.tensor(scores, requires_grad=True)
(S_after.softmax(dim=-1) * mg.tensor(allowed.astype(np.float64))).backward(g_w)
grad_future_before = np.abs(S_before.grad[future]).max()
grad_future_after = np.abs(S_after.grad[future]).max()
print(f"largest gradient on a future score: {grad_future_before:.1f} (masked before), "
      f"{grad_future_after:.3f} (zeroed after)")
assert grad_future_before == 0.0 and grad_future_after > 0.01

# %% [markdown]
# Last, the edge case: a query with nothing left to attend to gets zeros, not NaN
# (`softmax` of a row that is all `-inf` would be 0 / 0).

# %%
nothing = allowed.copy()
nothing[0] = False  # query 0 may attend to nothing
o = F.scaled_dot_product_attention(mg.tensor(Q), mg.tensor(K), mg.tensor(V), mask=nothing)
print("output of a query that may attend to nothing:", o.numpy()[0][:4], "...")
assert np.all(o.numpy()[0] == 0) and np.all(np.isfinite(o.numpy()))
