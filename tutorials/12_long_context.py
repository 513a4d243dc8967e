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
# # 12 · Long context: attention without the T x T matrix
#
# Tutorial 03 ended on the catch: `Q K^T` is T x T, so memory and time grow as O(T^2). The
# time is the price of comparing every query with every key. The memory is not: nothing forces
# us to hold the whole attention matrix at once. This is FlashAttention's idea (Dao et al.,
# 2022), written here in numpy:
#
# 1. the **online softmax**: a softmax over a row computed block by block, on a tiny example;
# 2. the tiled kernel against the reference, values and gradients;
# 3. what the backward pass keeps (O and one number per row, never A) and how it gets A back;
# 4. the causal mask as skipped tiles;
# 5. both kernels' time and memory as T grows, and the curve.

# %%
import time
import tracemalloc

import numpy as np

import minigrad as mg
from minigrad.nn.attention.one_block import Attention
from minigrad.nn.attention.tiles import _Tiles
from minigrad.nn.functional import attention_reference, tiled_attention
from minigrad.viz import show, use_script_backend

HAVE_MATPLOTLIB = use_script_backend()  # draw inline in a notebook, off-screen in a script
mg.set_num_threads(1)  # more threads cost more than they save at these sizes, and make timings noisy
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. The online softmax
#
# One query's scores `s_1 ... s_n`. The softmax is `a_j = exp(s_j - m) / l` with the row's max
# `m` (subtracted so exp cannot overflow) and `l = sum_j exp(s_j - m)`. Both look at the whole
# row. But if we have only seen the first blocks, we can keep a *running* max `m` and a running
# sum `l` taken against it; when a later block brings a larger max `m'`, every term summed so
# far was `exp(s - m)` and should have been `exp(s - m')`: multiplying by `c = exp(m - m')`
# fixes all of them at once, because `exp(s - m) exp(m - m') = exp(s - m')`.
#
#     m' = max(m, max of the block)
#     l  = exp(m - m') l + sum over the block of exp(s - m')
#
# The output `sum_j a_j v_j` is a sum too, and gets the same treatment: `acc = c acc +
# sum_block exp(s - m') v`. At the end `o = acc / l`.

# %%
scores = np.array([1.0, 3.0, 2.0, 5.0, 0.0, 4.0])
values = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0], [1.0, -1.0]])
m, total, acc = -np.inf, 0.0, np.zeros(2)  # m, l and acc of the text
print("block   scores      m'     c = exp(m - m')    l        acc")
for start in range(0, len(scores), 2):  # blocks of two keys
    s, v = scores[start:start + 2], values[start:start + 2]
    m_new = max(m, s.max())
    c = np.exp(m - m_new)  # 0 for the first block: nothing summed yet
    p = np.exp(s - m_new)
    total = c * total + p.sum()
    acc = c * acc + p @ v
    m = m_new
    print(f"{start // 2 + 1:4d}   {s}   {m:4.1f}   {c:14.4f}   {total:7.4f}   {acc}")
online = acc / total

weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()  # the usual softmax
print("online:", online, "  all at once:", weights @ values)
assert np.allclose(online, weights @ values)
assert np.isclose(m + np.log(total), np.log(np.exp(scores).sum()))  # L = m + log l, the log-sum-exp

# %% [markdown]
# The second block's 5 raised the max from 3: everything summed so far was scaled by
# `c = exp(3 - 5) = 0.1353`. The third block's largest score, 4, did not (`c = 1`). The result
# is exactly the softmax, without ever holding more than one block of the row; and
# `L = m + log l` is the row's log-sum-exp, the one number per row that backward will need.
#
# ## 2. The tiled kernel
#
# `tiled_attention` does this for whole blocks of queries at once: tiles of `block_q` queries x
# `block_k` keys, for every batch and head together (`np.matmul` on (B*H, block, block)
# arrays), so the Python loop runs over tiles only. The docstrings of `tiled_forward` and
# `tiled_backward` (in `minigrad/nn/attention/tiled.py`) derive both step by step. With tiles of
# 3 x 4 on 10 tokens (not a multiple of either), against the composed reference, in float64:

# %%
rng = np.random.default_rng(0)
q, k, v = (mg.tensor(rng.standard_normal((2, 3, 10, 8)), requires_grad=True) for _ in range(3))
g = rng.standard_normal((2, 3, 10, 8))  # an upstream gradient
tiled = tiled_attention(q, k, v, is_causal=True, block_size=(3, 4))
tiled.backward(g)
tiled_grads = [t.grad.clone() for t in (q, k, v)]
for t in (q, k, v):
    t.grad = None
reference = attention_reference(q, k, v, is_causal=True)
reference.backward(g)
print("largest difference, output:", np.abs(tiled.numpy() - reference.numpy()).max())
for name, mine, t in zip("qkv", tiled_grads, (q, k, v)):
    print(f"largest difference, d{name}:", np.abs(mine - t.grad).max())
    assert np.allclose(mine, t.grad, rtol=1e-10, atol=1e-12)
assert np.allclose(tiled.numpy(), reference.numpy(), rtol=1e-10, atol=1e-12)

# %% [markdown]
# ## 3. What the backward pass keeps
#
# The untiled kernel saves the weights `A` (B, H, T, T) for backward. The tiled one saves its
# inputs, the output `O` and, per query row, the log-sum-exp `L = m + log l`. From these the
# backward pass recomputes any tile of `A` exactly, `A_IJ = exp(Q_I K_J^T * scale - L_I)`, and
# the softmax rule needs one more number per row, `D_i = rowsum(dO_i * O_i)` (tutorial 02's
# backward shows why it equals `sum_j dA_ij A_ij`). Here are the arrays each node keeps:

# %%
T = 256
qkv = [mg.randn(1, 4, T, 32, requires_grad=True) for _ in range(3)]
for name, out in [("untiled", Attention.apply(*qkv, scale=32 ** -0.5)),
                  ("tiled", tiled_attention(*qkv))]:
    kept = [a.shape for a in out._node.saved if isinstance(a, np.ndarray)]
    print(f"{name:8s} saves {kept}")
    largest = max(int(np.prod(s)) for s in kept)
    assert (largest >= 4 * T * T) == (name == "untiled")

# %% [markdown]
# (The tiled kernel keeps q, k, v flattened to (B*H, T, d), then O and L.) Backward then walks
# the same tiles as forward, in another order: key blocks outside, query blocks inside, so that
# each key block's dK and dV add up in two small arrays. Per tile it needs two more
# (block_q, block_k) arrays, never a (T, T) one.
#
# ## 4. The causal mask as skipped tiles
#
# With `is_causal`, query i may see key j only if j <= i. A tile whose keys all come after all
# its queries would be all `-inf`, `exp(-inf) = 0`: it adds nothing to `l` or `acc`, so the
# kernel never computes it, in either pass. Only the tiles on the diagonal need the mask. For
# 16 tokens in tiles of 4 x 4 (`#` computed and masked, `o` computed, `.` skipped):

# %%
grid = _Tiles((1,), 16, 16, None, None, 0, 4, 4, np.float32)
visited = 0
for i0, i1 in grid.query_blocks():
    row = ""
    for j0 in range(0, 16, 4):
        seen = any(j0 == b0 for b0, _ in grid.key_blocks(i0, i1))
        row += " " + (". " if not seen else "# " if grid._mask(i0, i1, j0, j0 + 4) else "o ")
        visited += seen
    print(row)
print(f"{visited} of 16 tiles computed")
assert visited == 10

# %% [markdown]
# As the tiles get small against T, the computed fraction approaches one half: causal
# attention costs half of full attention.
#
# ## 5. Time and memory as T grows
#
# Forward and backward of causal attention with (B, H, d) = (1, 4, 32), float32, one thread:
# the untiled kernel (`Attention`, which `F.scaled_dot_product_attention` uses for short
# sequences) against the tiled one. Peak memory comes from `tracemalloc` (numpy reports its
# allocations to it): everything the call allocates, output and gradients included. Timings
# depend on the machine and its load; the memory does not.


# %%
def fwd_bwd(kernel, q, k, v, g):
    ts = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    if kernel == "tiled":
        out = tiled_attention(*ts, is_causal=True)
    else:
        T = q.shape[-2]
        out = Attention.apply(*ts, allowed=np.tri(T, T, dtype=bool), scale=32 ** -0.5)
    out.backward(g)


Ts = [128, 256, 512, 1024]
cost = {"untiled": {}, "tiled": {}}
print("     T   untiled ms   tiled ms   untiled MiB   tiled MiB")
for T in Ts:
    q, k, v, g = (rng.standard_normal((1, 4, T, 32)).astype(np.float32) for _ in range(4))
    for kernel in cost:
        fwd_bwd(kernel, q, k, v, g)  # warm up
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fwd_bwd(kernel, q, k, v, g)
            times.append(time.perf_counter() - t0)
        tracemalloc.start()
        fwd_bwd(kernel, q, k, v, g)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        cost[kernel][T] = (1000 * min(times), peak / 2**20)
    (ut, um), (tt, tm) = cost["untiled"][T], cost["tiled"][T]
    print(f"{T:6d} {ut:12.1f} {tt:10.1f} {um:13.1f} {tm:11.1f}")

# %% [markdown]
# Doubling T doubles the tiled kernel's memory (inputs-sized arrays: O, the gradients, the
# copies it works on) and quadruples the untiled kernel's (A and its temporaries are T x T):

# %%
for kernel, c in cost.items():
    growth = c[1024][1] / c[512][1]
    print(f"{kernel:8s} memory at T=1024 / at T=512: {growth:.1f}x")
assert cost["untiled"][1024][1] / cost["untiled"][512][1] > 3
assert cost["tiled"][1024][1] / cost["tiled"][512][1] < 2.5
assert cost["tiled"][1024][1] < cost["untiled"][1024][1] / 2

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    for kernel, c in cost.items():
        left.plot(Ts, [c[T][0] for T in Ts], "o-", label=kernel)
        right.plot(Ts, [c[T][1] for T in Ts], "o-", label=kernel)
    for ax, label in ((left, "forward + backward, ms"), (right, "peak memory, MiB")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length T")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle("causal attention, (B, H, d) = (1, 4, 32), float32, one thread")
    show(fig, "scaling")

# %% [markdown]
# On a log-log plot a straight line of slope 2 is O(T^2), of slope 1 O(T). The time of both
# stays O(T^2), since every allowed score is still computed (twice for the tiled kernel:
# backward recomputes them), but the tiled kernel's tiles stay in the processor's cache while
# the untiled kernel streams T x T arrays through memory several times, so for long sequences
# the tiled kernel is also the faster one (the README's `benchmarks/attention_scaling.py` table:
# at T = 1024, 11.3 ms against 24.0 ms for the one-pass kernel; the table above is your
# machine's). For short ones `A` fits in cache and the single block wins:
# `F.scaled_dot_product_attention` switches to the tiled kernel from 2^18 scores
# (B * H * Tq * Tk) on, when both lengths are at least 129, and keeps the untiled one whenever
# it needs `A` itself (dropout on the weights, `need_weights=True`, `nn.record_attention`).
#
# `python benchmarks/attention_scaling.py` extends the table to T = 4096 and compares with
# PyTorch's `scaled_dot_product_attention`, each kernel's memory measured in its own process.
