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
# # 05 · Attention backward, graded
#
# Exercises 9 and 10 (`attention_forward`, `attention_backward`) of `minigrad exercise`:
# write scaled dot-product attention, then its backward pass by hand, and let the grader check
# each attempt. This notebook walks through both:
#
# 1. the forward (exercise 9 (`attention_forward`)) with a boolean mask, and what the grader
#    says about a classic mistake: masking **after** the softmax, which `gradcheck` cannot see;
# 2. the backward (exercise 10 (`attention_backward`)) derived line by line;
# 3. three classic backward mistakes and the grader's diagnosis of each: the missing row-sum
#    term, a transposed dK (in the square case, where the shapes agree), and a backward that
#    ignores the upstream gradient (which `.sum().backward()` hides);
# 4. a correct backward passing every check, and how to train the tiny GPT with it.
#
# On the command line the same exercises are
#
# ```
# minigrad exercise start attention_backward     # writes ./exercises/attention_backward.py
# minigrad exercise check attention_backward     # grades it; --train trains the tiny GPT with it
# ```
#
# (from a folder of your own: in the repository `./exercises` is the grader's code, so there add
# `--dir my_exercises` to both commands).
#
# In a notebook, `check(task, your_object)` grades an object you defined in a cell. Here the
# passing "student" code is the library's own kernel, so the notebook does not hand out the
# solution: replace it with yours.

# %%
import math

import numpy as np

import minigrad as mg
from minigrad import Function
from minigrad.exercises import check

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. The forward, and masking after the softmax
#
# S = Q K^T / sqrt(d),  S_ij = -inf where the mask is False,  A = softmax(S),  O = A V.
#
# A first attempt zeroes the forbidden weights after the softmax. Its backward is whatever the
# engine derives from the forward, so `gradcheck` is happy:


# %%
def attention_mask_after(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # too late: the row was already normalised
    return weights @ v


rng = np.random.default_rng(0)
q0, k0, v0 = (rng.normal(size=(4, 3)) for _ in range(3))
causal = mg.tensor(np.tri(4, dtype=bool))
print("gradcheck:", mg.gradcheck(lambda q, k, v: attention_mask_after(q, k, v, causal), [q0, k0, v0]))

# %% [markdown]
# The grader also checks the forward's properties: each row of weights sums to 1 (with
# `v = 1` the output is the row sums), and no output depends on a later token. Both fail,
# and the diagnosis names the mistake:

# %%
report = check("attention_forward", attention_mask_after)
assert not report.passed and report.diagnosis == ["mask_after_softmax"]

# %% [markdown]
# Masking the scores with `-inf` before the softmax fixes both. (Written out here, since the
# forward is the lecture's four lines; exercise 9 (`attention_forward`) asks for exactly this.)


# %%
def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)  # exp(-inf) = 0: no weight at all
    return scores.softmax(dim=-1) @ v  # (..., Tq, dv)


report = check("attention_forward", attention)
assert report.passed

# %% [markdown]
# ## 2. The backward, line by line
#
# Go through the forward in reverse, with g = dL/dO:
#
# | forward | backward |
# |---|---|
# | O = A V | dV = A^T g,  dA = g V^T |
# | A = softmax(S), row by row | dS = A * (dA - rowsum(dA * A)) |
# | S = Q K^T c,  c = 1/sqrt(d) | dQ = dS K c,  dK = dS^T Q c |
#
# The middle line is where the work is. One row a = softmax(s) has the Jacobian
# da_j/ds_k = a_j ([j = k] - a_k): every weight depends on every score of its row. So
# dL/ds_k = sum_j g_j a_j ([j = k] - a_k) = a_k (g_k - sum_j g_j a_j): the upstream gradient
# minus its A-weighted average over the row, times A. Masked scores have A = 0, so dS = 0
# there: the mask needs no line of its own.
#
# The exercise gives the forward as a `Function`; the backward is yours. To try attempts
# quickly we subclass it and override only `backward`:


# %%
class AttentionForward(Function):
    """The forward of exercise 10 (`attention_backward`, given in the stub); the subclasses
    below add a backward."""

    @staticmethod
    def forward(ctx, q, k, v, *, mask=None):
        c = 1.0 / math.sqrt(q.shape[-1])
        s = q @ k.swapaxes(-1, -2) * c
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        a = e / np.where(total == 0, 1.0, total)
        ctx.save_for_backward(q, k, v, a)
        ctx.c = c
        return a @ v


# %% [markdown]
# ## 3. Three classic mistakes
#
# **The row-sum term left out**: dS = A * dA treats the softmax as if each weight depended on
# its own score only.


# %%
class MissingRowsum(AttentionForward):
    @staticmethod
    def backward(ctx, g):
        q, k, v, a = ctx.saved
        ds = a * (g @ v.swapaxes(-1, -2))  # the rowsum(dA * A) term is missing
        return ds @ k * ctx.c, ds.swapaxes(-1, -2) @ q * ctx.c, a.swapaxes(-1, -2) @ g


report = check("attention_backward", MissingRowsum)
assert report.diagnosis == ["missing_rowsum_term"]

# %% [markdown]
# **A transposed dK.** With Tq = Tk = d, (dS Q)^T has the same shape as dS^T Q, so no shape
# error warns; the grader's worked case is square on purpose, and the numbers show the
# transpose (the diagonal agrees, the rest is mirrored).


# %%
class TransposedDK(AttentionForward):
    @staticmethod
    def backward(ctx, g):
        q, k, v, a = ctx.saved
        da = g @ v.swapaxes(-1, -2)
        ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
        dk = (ds @ q * ctx.c).swapaxes(-1, -2)  # wrong: dK = dS^T Q c
        return ds @ k * ctx.c, dk, a.swapaxes(-1, -2) @ g


report = check("attention_backward", TransposedDK)
assert report.diagnosis == ["transposed_grad"]

# %% [markdown]
# **The upstream gradient ignored**: a backward computed with ones where g belongs. With
# `out.sum().backward()` the upstream gradient *is* ones, so that test passes:


# %%
class IgnoresG(AttentionForward):
    @staticmethod
    def backward(ctx, g):
        q, k, v, a = ctx.saved
        g = np.ones_like(g)  # the bug
        da = g @ v.swapaxes(-1, -2)
        ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
        return ds @ k * ctx.c, ds.swapaxes(-1, -2) @ q * ctx.c, a.swapaxes(-1, -2) @ g


qt, kt, vt = (mg.tensor(x, requires_grad=True) for x in (q0, k0, v0))
IgnoresG.apply(qt, kt, vt).sum().backward()
qr, kr, vr = (mg.tensor(x, requires_grad=True) for x in (q0, k0, v0))
mg.nn.functional.scaled_dot_product_attention(qr, kr, vr).sum().backward()
print("under .sum().backward() dQ agrees with the library's:", np.allclose(qt.grad, qr.grad))
assert np.allclose(qt.grad, qr.grad) and np.allclose(vt.grad, vr.grad)

# %% [markdown]
# The grader draws a random, non-uniform upstream gradient, and recognises the numbers as
# "the reference's for g = ones":

# %%
report = check("attention_backward", IgnoresG)
assert report.diagnosis == ["ignores_upstream_grad"]

# %% [markdown]
# ## 4. A correct backward, and the GPT it trains
#
# Here the library's fused kernel stands in for your backward (`minigrad.nn.attention.one_block`
# has the derivation above in its docstring, and a trick: rowsum(dA * A) = rowsum(g * O), so
# no (Tq, Tk) temporary is needed). Replace `backward` with your own and rerun the cell.
#
# Then `check("attention_backward", MyAttention, train=True)` (or `minigrad exercise check
# attention_backward --train`) swaps your op into the tiny GPT, trains it for 200 steps next
# to the library's own run (same seed, same batches), and prints both loss curves: with a
# right backward they agree to float precision, and the grader says "the loss curves agree".
# It is left out here to keep the notebook quick; the test suite runs it.

# %%
from minigrad.nn.attention.one_block import Attention as LibraryAttention  # noqa: E402


class MyAttention(AttentionForward):
    @staticmethod
    def backward(ctx, g):
        q, k, v, a = ctx.saved  # your backward goes here; the library's, for the demo:
        lib = LibraryAttention()  # it keeps q, k, v, A, dropout's keep, O, and A's row sums
        lib.saved = (q, k, v, a, None, a @ v, None)  # (row sums None: A is already normalised)
        lib.scale, lib.needs_input_grad = ctx.c, (True,) * 3
        return LibraryAttention.backward(lib, g)


report = check("attention_backward", MyAttention)
assert report.passed
