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
# # 03 · The transformer layer
#
# From attention to the block that GPT, BERT and ViT stack (Lecture 10, "The transformer
# layer", and Session 07, "Transformer Encoder & Decoder Blocks"):
#
# 1. the post-norm layer of the notes, `Z = LN(X + MHA(X))`, `X~ = LN(Z + MLP(Z))`, written
#    by hand from `nn` parts and checked against `nn.TransformerEncoderLayer`;
# 2. multi-head attention by hand: the shapes, head by head;
# 3. permutation equivariance without positions, and how sinusoidal positions break it;
# 4. causal masking in a decoder layer: later tokens cannot change earlier outputs;
# 5. cross-attention: `Q` (N x d_k) and `K` (M x d_k) give an N x M attention matrix;
# 6. the catch: the attention matrix is N x N, so cost grows as O(N^2).
#
# **Where this departs from the notes.** The layer here is the notes' post-norm layer; the
# models of tutorials 04 and 09 (GPT, ViT) use the pre-norm variant instead (tutorial 10). The
# notes write the projections as `Q = X W^(q)` without a bias; `nn.Linear` stores its weight
# as (out, in), PyTorch's layout, computes `X W^T + b`, and has a bias unless `bias=False`.
# The notes leave the MLP's activation open; here it is ReLU (PyTorch's default).

# %%
import math
import time
import tracemalloc

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

mg.manual_seed(0)  # one global generator: every layer below starts from the same weights each run
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. The post-norm transformer layer, by hand
#
#     Z  = LayerNorm(X + MHA(X))         attention mixes tokens
#     X~ = LayerNorm(Z + MLP(Z))         the MLP processes each token on its own
#
# Written with the parts of `minigrad.nn`, naming them as `nn.TransformerEncoderLayer` does
# (`self_attn`, `linear1`, `linear2`, `norm1`, `norm2`) so the two can share a state dict.


# %%
class PostNormLayer(nn.Module):
    """The lecture's transformer layer: residual + LayerNorm around MHA and around an MLP."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int):
        self.self_attn = nn.MultiheadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def mlp(self, z: Tensor) -> Tensor:
        return self.linear2(F.relu(self.linear1(z)))  # (B, T, d_model), token by token

    def forward(self, x: Tensor, mask=None, is_causal: bool = False) -> Tensor:
        a = self.self_attn(x, x, x, mask=mask, is_causal=is_causal, need_weights=False)[0]  # (B, T, d_model)
        z = self.norm1(x + a)  # (B, T, d_model)
        return self.norm2(z + self.mlp(z))  # (B, T, d_model)


B, T, d_model, nhead, d_ff = 2, 6, 16, 4, 32
mine = PostNormLayer(d_model, nhead, d_ff)
library = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=d_ff, dropout=0.0, norm_first=False)
library.load_state_dict(mine.state_dict())  # the same weights, by name
print(sorted(mine.state_dict()) == sorted(library.state_dict()), "-", len(mine.state_dict()), "tensors")

X = mg.randn(B, T, d_model)
ours, theirs = mine(X), library(X)
print("output", ours.shape, "largest difference:", float(np.abs(ours.numpy() - theirs.numpy()).max()))
assert np.allclose(ours.numpy(), theirs.numpy(), atol=1e-6)

# %% [markdown]
# The output has the shape of the input, so layers stack. After `LayerNorm` (weight 1, bias 0
# at the start) each token's features have mean 0 and variance 1:

# %%
values = ours.numpy()
print("per-token mean", values.mean(-1).round(4)[0], "\nper-token var ", values.var(-1).round(3)[0])
assert np.allclose(ours.numpy().mean(-1), 0, atol=1e-5) and np.allclose(ours.numpy().var(-1), 1, atol=1e-3)

# %% [markdown]
# ## 2. Multi-head attention, head by head
#
# `MultiheadAttention(d_model=16, num_heads=4)` projects `X` to `Q, K, V` (16 features each),
# splits them into 4 heads of `D = 4` features, runs scaled dot-product attention in each
# head, concatenates the heads and applies the output projection. By hand, one head at a time:

# %%
mha = mine.self_attn
H, D = mha.num_heads, mha.head_dim
x = X.numpy()[0]  # (T, d_model): the first sequence
Q, K, V = (x @ p.weight.numpy().T + p.bias.numpy() for p in (mha.q_proj, mha.k_proj, mha.v_proj))  # (T, 16)
heads, maps = [], []
for h in range(H):
    cols = slice(h * D, (h + 1) * D)
    Qh, Kh, Vh = Q[:, cols], K[:, cols], V[:, cols]  # (T, D) each
    Ah = Tensor(Qh @ Kh.T / math.sqrt(D)).softmax(-1).numpy()  # (T, T): this head's attention
    heads.append(Ah @ Vh)  # (T, D)
    maps.append(Ah)
concat = np.concatenate(heads, axis=-1)  # (T, H * D) = (T, d_model)
by_hand = concat @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy()  # (T, d_model)
print(f"x {x.shape} -> Q, K, V {Q.shape} -> {H} heads of Q_h {Qh.shape}, A_h {Ah.shape}, "
      f"A_h V_h {heads[0].shape} -> concat {concat.shape} -> out {by_hand.shape}")

# weights: (B, H, T, T), one map per head (average_attn_weights=True, the default, averages them)
out, weights = mha(X, X, X, need_weights=True, average_attn_weights=False)
print("module: out", out.shape, "weights", weights.shape)
assert np.allclose(out.numpy()[0], by_hand, atol=1e-5)
assert np.allclose(weights.numpy()[0], np.stack(maps), atol=1e-6)

# %% [markdown]
# Splitting `d_model` across the heads keeps the cost of one wide head: the projections are
# the same four 16 x 16 matrices whatever the number of heads, which must divide `d_model`:

# %%
for h in (1, 2, 4, 8):
    size = nn.MultiheadAttention(d_model, h).num_parameters()
    print(f"{h} heads of {d_model // h:2d} features: {size} parameters")
try:
    nn.MultiheadAttention(d_model, 3)
except ValueError as err:
    print("3 heads:", err)

# %% [markdown]
# ## 3. Permutation equivariance, and positions
#
# Attention sees a set: shuffle the tokens and the outputs shuffle the same way. The MLP and
# LayerNorm act on each token alone, so the whole layer is permutation-equivariant. In float64
# the two agree to rounding:

# %%
layer = library.double()  # float64 parameters, for a comparison to ~1e-15
X64 = X.double()
perm = np.array([3, 0, 5, 1, 4, 2])
shuffled_then_layer = layer(X64[:, perm]).numpy()
layer_then_shuffled = layer(X64).numpy()[:, perm]
gap_no_pos = float(np.abs(shuffled_then_layer - layer_then_shuffled).max())
print("no positions:   layer(shuffle(X)) - shuffle(layer(X)) =", f"{gap_no_pos:.1e}")
assert gap_no_pos < 1e-12

# %% [markdown]
# Adding a position vector to each token, `x~_n = x_n + p_n` (here the fixed sinusoids of
# Vaswani et al.), puts the order into the data: a token now looks different at another
# position, and the equivariance is gone.

# %%
pe = nn.SinusoidalPositionalEncoding(d_model, max_len=64)
with_pos_shuffled = layer(pe(X64[:, perm])).numpy()
with_pos_then_shuffled = layer(pe(X64)).numpy()[:, perm]
gap_pos = float(np.abs(with_pos_shuffled - with_pos_then_shuffled).max())
print("with positions: layer(PE(shuffle(X))) - shuffle(layer(PE(X))) =", f"{gap_pos:.3f}")
assert gap_pos > 0.1

# %% [markdown]
# So, without positions, "dog bites man" = "man bites dog": pool the layer's outputs into one
# sentence vector and the two sentences cannot be told apart. With positions they can.

# %%
vocab = {"dog": 0, "bites": 1, "man": 2}
emb = nn.Embedding(len(vocab), d_model).double()


def sentence_vector(words, positions):
    x = emb(mg.tensor([[vocab[w] for w in words]], dtype=mg.int64))  # (1, 3, d_model)
    if positions:
        x = pe(x)
    return layer(x).numpy().mean(axis=1)[0]  # (d_model,): average over the tokens


for positions in (False, True):
    a = sentence_vector("dog bites man".split(), positions)
    b = sentence_vector("man bites dog".split(), positions)
    print(f"positions={positions!s:5}: |v(dog bites man) - v(man bites dog)| = {np.linalg.norm(a - b):.2e}")
    assert (np.linalg.norm(a - b) < 1e-12) != positions

# %% [markdown]
# ## 4. Causal masking in a decoder layer
#
# A decoder block (`nn.TransformerDecoderLayer`) has masked self-attention over the tokens
# generated so far, cross-attention to the encoder's output (`memory`), and the MLP. The
# causal mask stops position t from reading positions after t, so changing the later tokens
# leaves the outputs at earlier positions exactly as they were:

# %%
decoder = nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=d_ff, dropout=0.0)
S = 4  # source (encoder) length
memory = mg.randn(1, S, d_model)  # (1, S, d_model)
tgt = mg.randn(1, T, d_model)  # (1, T, d_model)
changed = tgt.numpy().copy()
changed[:, 3:] = np.random.default_rng(0).normal(size=(1, T - 3, d_model))  # new tokens 3..5
changed = mg.tensor(changed)

for causal in (True, False):
    before = decoder(tgt, memory, tgt_is_causal=causal).numpy()
    after = decoder(changed, memory, tgt_is_causal=causal).numpy()
    moved = np.abs(after - before).max(axis=-1)[0]  # (T,): how far each position's output moved
    print(f"causal={causal!s:5}: change per position {moved.round(4)}")
    if causal:
        assert np.all(moved[:3] == 0) and np.all(moved[3:] > 0)
    else:
        assert np.all(moved[:3] > 0)

# %% [markdown]
# ## 5. Cross-attention: N queries, M keys
#
# The attention matrix has one row per query and one column per key. With
# `Q` in R^(N x d_k) and `K` in R^(M x d_k) (the notes' shapes), `Q K^T` is N x M: in
# cross-attention the N decoder positions ask, the M encoder positions answer.

# %%
N_q, M_k, d_k, d_v = 3, 5, 8, 6
q = mg.randn(N_q, d_k)  # decoder states
k, v = mg.randn(M_k, d_k), mg.randn(M_k, d_v)  # encoder annotations
context, A = F.scaled_dot_product_attention(q, k, v, need_weights=True)
print(f"Q {q.shape}, K {k.shape}, V {v.shape} -> attention {A.shape}, context {context.shape}")
assert A.shape == (N_q, M_k) and context.shape == (N_q, d_v) and np.allclose(A.numpy().sum(-1), 1)

# %% [markdown]
# Inside the decoder layer, `nn.record_attention` shows both attentions: the self-attention is
# T x T (and causal), the cross-attention T x S.

# %%
with nn.record_attention(decoder) as recorded:
    decoder(tgt, memory, tgt_is_causal=True)
for r in recorded:
    print(f"{r.name:15s} weights {r.weights.shape}   (B, H, Tq, Tk)")
self_w, cross_w = recorded.weights("self_attn"), recorded.weights("multihead_attn")
assert self_w.shape == (1, nhead, T, T) and np.all(np.triu(self_w[0, 0], 1) == 0)
assert cross_w.shape == (1, nhead, T, S)

# %% [markdown]
# ## 6. The catch: O(N^2)
#
# `Q K^T` is N x N. Doubling the context quadruples the attention matrix, and the work to fill
# it. We time one head of attention as the notes write it, returning its weights
# (`need_weights=True`, d = 64, float32), and measure the peak memory it allocates (numpy
# reports its allocations to `tracemalloc`). Timings vary from machine to machine and run to
# run; the memory does not. (Asked for the output only, minigrad computes long sequences with
# a tiled kernel that never stores the N x N matrix, tutorial 12; the work stays O(N^2).)

# %%
mg.set_num_threads(1)  # more threads cost more than they save at these sizes, and make timings noisy
rng = np.random.default_rng(0)
print("    N   attention matrix   peak memory   time (ms)")
cost = {}
for n in (256, 512, 1024, 2048):
    qkv = [mg.tensor(rng.normal(size=(1, 1, n, 64)).astype(np.float32)) for _ in range(3)]
    with mg.no_grad():
        F.scaled_dot_product_attention(*qkv, need_weights=True)  # warm up
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(*qkv, need_weights=True)
            times.append(time.perf_counter() - t0)
        tracemalloc.start()
        F.scaled_dot_product_attention(*qkv, need_weights=True)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    cost[n] = (n * n * 4, peak, min(times))
    print(f"{n:5d} {n * n * 4 / 2**20:12.1f} MiB {peak / 2**20:10.1f} MiB {1000 * min(times):10.2f}")
for n in (512, 1024, 2048):
    half = cost[n // 2]
    print(f"N {n // 2} -> {n}: memory x{cost[n][1] / half[1]:.1f}, time x{cost[n][2] / half[2]:.1f}")
assert cost[2048][1] > 3.5 * cost[1024][1]  # quadratic: about 4x per doubling

# %% [markdown]
# This is why "context window" is a headline number. The fused kernel already avoids some
# (T, T) temporaries in its backward (it computes `rowsum(dA * A)` as `rowsum(g * O)`), but the
# weights themselves are N x N. An RNN is O(N), but sequential.
