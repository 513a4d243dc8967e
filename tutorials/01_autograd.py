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
# # 01 · Autograd from scratch
#
# What happens when you call `loss.backward()`? This notebook takes minigrad's engine apart:
#
# 1. a `Tensor` and the graph it remembers,
# 2. backward **by hand** against `backward()` on a tiny expression (micrograd's example),
# 3. writing your own op as a `Function`, forward and backward side by side,
# 4. checking it with `mg.gradcheck`, then breaking its backward on purpose and reading the
#    report that names the input and the element,
# 5. `trace_backward`: every step of a backward pass, with broadcasting undone,
# 6. `draw_graph`: the same graph as a picture,
# 7. `explore`: the picture and the trace together, stepped through in a browser.
#
# Run it as a notebook (`jupytext --to notebook tutorials/01_autograd.py`) or as a script
# (`python tutorials/01_autograd.py`); the script checks its own numbers with `assert`.

# %%
import numpy as np

import minigrad as mg
from minigrad.viz import draw_graph, explore, trace_backward

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. A Tensor
#
# A `Tensor` wraps one numpy array (`.numpy()` gives it; `.data` is, as in PyTorch, the values as a
# Tensor cut from the graph). Python numbers become float32; a float64 numpy array keeps its dtype.
# `requires_grad=True` asks the engine to compute `d loss / d tensor` into `.grad` (a Tensor) when
# `backward()` runs.

# %%
x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
print(x)
print("data:", type(x.numpy()).__name__, x.numpy().dtype, x.shape, "| grad before backward:", x.grad)

y = (x * x).sum()  # every op records the node that made its output
print(y, "<- made by", y.grad_fn, "whose inputs are", y.grad_fn.inputs[0].grad_fn)
y.backward()
print("d y / d x = 2x =\n", x.grad)
assert np.array_equal(x.grad, 2 * x.numpy())

# %% [markdown]
# ## 2. Backward by hand vs `backward()`
#
# micrograd's first example: `L = (a * b + c) * f` with `a = 2, b = -3, c = 10, f = -2`.
# Name the intermediates `e = a * b` and `d = e + c`, then walk back from `L` with the chain
# rule, one local derivative at a time:
#
# | node | value | dL/dnode | why |
# |---|---|---|---|
# | L = d * f | -8 | 1 | the start |
# | f | -2 | d = 4 | d(d f)/df = d |
# | d = e + c | 4 | f = -2 | d(d f)/dd = f |
# | c | 10 | dL/dd * 1 = -2 | addition passes the gradient through |
# | e = a * b | -6 | dL/dd * 1 = -2 | the same |
# | a | 2 | dL/de * b = 6 | multiplication swaps the factors |
# | b | -3 | dL/de * a = -4 | |

# %%
a, b, c, f = (mg.tensor(v, requires_grad=True, dtype=mg.float64) for v in (2.0, -3.0, 10.0, -2.0))
e = a * b
d = e + c
L = d * f
e.retain_grad()  # intermediates drop their .grad unless asked to keep it
d.retain_grad()
L.backward()

by_hand = {"L": (L, 1.0), "f": (f, 4.0), "d": (d, -2.0), "c": (c, -2.0), "e": (e, -2.0),
           "a": (a, 6.0), "b": (b, -4.0)}
for name, (t, expected) in by_hand.items():
    got = 1.0 if t is L else float(t.grad)
    print(f"dL/d{name}: by hand {expected:5.1f}   backward() {got:5.1f}")
    assert got == expected
print("L =", L.item())
assert L.item() == -8.0

# %% [markdown]
# The graph `backward()` walked is a chain of nodes, each an instance of an op class, each
# knowing its inputs. Walking it from `L`:

# %%
node, depth = L.grad_fn, 0
while node is not None:
    shown = [t.grad_fn.name if t.grad_fn is not None else f"leaf {t.item():g}" for t in node.inputs]
    print("  " * depth + f"{node.name}  <- {shown}")
    nxt = [t.grad_fn for t in node.inputs if t.grad_fn is not None]
    node, depth = (nxt[0] if nxt else None), depth + 1

# %% [markdown]
# ## 3. Your own op: a `Function`
#
# Every op in minigrad is one class with `forward` and `backward` side by side, on plain numpy
# arrays. `g` is always the upstream gradient `dL/dz`; backward returns one gradient per input.
#
# Our op: the squared difference `z = (a - b)^2`, elementwise. Its local derivatives are
# `dz/da = 2(a - b)` and `dz/db = -2(a - b)`, so by the chain rule `da = g * 2(a - b)` and
# `db = -g * 2(a - b)`. If `a` and `b` have different shapes, numpy broadcasts them in the
# forward; the engine (not the op) sums the gradient back to each input's shape.


# %%
class SquaredDiff(mg.Function):
    """z = (a - b)^2        da = g * 2(a - b),   db = -g * 2(a - b)"""

    @staticmethod
    def forward(ctx, a, b):
        diff = a - b
        ctx.save_for_backward(diff)
        return diff * diff

    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved
        return g * 2 * diff, -g * 2 * diff


def squared_diff(a, b):
    return SquaredDiff.apply(a, b)


p = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
q = mg.tensor([0.5, 1.0, 1.5], requires_grad=True)  # broadcast over the rows of p
z = squared_diff(p, q)
print(z)
z.sum().backward()
print("p.grad =\n", p.grad, "\nq.grad (summed over the broadcast rows) =", q.grad)
assert np.allclose(p.grad, 2 * (p.numpy() - q.numpy()))
assert np.allclose(q.grad, -2 * (p.numpy() - q.numpy()).sum(axis=0))

# %% [markdown]
# ## 4. Check it against finite differences
#
# `mg.gradcheck(fn, inputs)` copies the inputs to float64, contracts the output with a
# **random** upstream gradient `g`, and compares every element of the analytic gradient with
# the central difference `(L(x + eps) - L(x - eps)) / 2 eps` of `L(x) = sum(g * fn(x))`.

# %%
rng = np.random.default_rng(0)
a0, b0 = rng.normal(size=(2, 3)), rng.normal(size=(3,))
print("gradcheck(SquaredDiff):", mg.gradcheck(squared_diff, [a0, b0]))

# %% [markdown]
# ### Break it on purpose
#
# The most common backward bug: forgetting the upstream gradient `g` (returning the local
# derivative only). Seeding backward with `.sum()` would not notice, because then `g` is all
# ones, and `1 * x == x`:


# %%
class SquaredDiffForgetsG(SquaredDiff):
    """The same op (forward inherited) with a bug: backward ignores g."""

    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved
        return 2 * diff, -2 * diff  # should be g * 2 * diff, -g * 2 * diff


def grads_after_sum(op):
    ta, tb = mg.tensor(a0, requires_grad=True), mg.tensor(b0, requires_grad=True)
    op.apply(ta, tb).sum().backward()
    return ta.grad, tb.grad


same = all(np.array_equal(u, w) for u, w in zip(grads_after_sum(SquaredDiff),
                                                  grads_after_sum(SquaredDiffForgetsG)))
print("after .sum().backward() the buggy op's gradients equal the right ones:", same)
assert same

# %% [markdown]
# A random upstream gradient does notice. `gradcheck` raises `GradcheckError` with a report
# naming the input (by the function's parameter name, here `a`), the first wrong element with
# both values, how many elements disagree, the analytic, numeric and difference arrays side by
# side (for small inputs), and a pattern when one fits:

# %%
try:
    mg.gradcheck(lambda a, b: SquaredDiffForgetsG.apply(a, b), [a0, b0])
    raise AssertionError("gradcheck should have failed")
except mg.GradcheckError as err:
    report_forgets_g = str(err)
print(report_forgets_g)
assert "a (input 0, shape (2, 3)) at element (0, 0)" in report_forgets_g


# %% [markdown]
# A bug in the second input only (a lost minus sign in `db`) is reported against `b`, with
# the pattern it shows:


# %%
class SquaredDiffWrongSign(SquaredDiff):
    @staticmethod
    def backward(ctx, g):
        (diff,) = ctx.saved
        return g * 2 * diff, g * 2 * diff  # db should be -g * 2 * diff


try:
    mg.gradcheck(lambda a, b: SquaredDiffWrongSign.apply(a, b), [a0, b0])
    raise AssertionError("gradcheck should have failed")
except mg.GradcheckError as err:
    report_wrong_sign = str(err)
print(report_wrong_sign)
assert "b (input 1, shape (3,)) at element (0,)" in report_wrong_sign

# %% [markdown]
# ## 5. `trace_backward`: the backward pass step by step
#
# `trace_backward(out)` runs `out.backward()` and records every node the engine visits: the
# gradient that reached it (`upstream`) and what it sent to each input. Here `x` is (2, 3) and
# the bias `b` is (3,): the forward broadcast `b` over the two rows, so the backward of `Add`
# sums `b`'s gradient over axis 0. For `y = sum((x + b) * x)`, `dy/db = sum over rows of x`
# = `[1+4, 2+5, 3+6]` = `[5, 7, 9]`.

# %%
x = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
b = mg.tensor([10.0, 20.0, 30.0], requires_grad=True)
y = ((x + b) * x).sum()
trace = trace_backward(y)
print(trace)
print("\nb.grad =", b.grad, "  x.grad =\n", x.grad)
assert [s.op for s in trace] == ["Sum", "Mul", "Add"]
assert trace[2].sent[1].summed_axes == (0,)
assert np.array_equal(b.grad, [5.0, 7.0, 9.0])
assert np.array_equal(x.grad, 2 * x.numpy() + b.numpy())  # x appears twice: the two paths add up

# %% [markdown]
# ## 6. `draw_graph`
#
# The same graph as a picture: ops are boxes, tensors ovals with their shape (tiny ones with
# their values and, after backward, their gradient). In Jupyter the returned object shows
# itself inline; `.save("graph.svg")` writes it (Graphviz's `dot` program renders it; without
# it you still get the DOT source). Here we rebuild the graph (the first backward freed it),
# draw it, and count what is in it rather than writing a file.

# %%
y = ((x + b) * x).sum()
y.backward()
graph = draw_graph(y)
lines = [ln.strip() for ln in graph.body]
ops = [ln for ln in lines if ln.startswith("n") and "->" not in ln]
tensors = [ln for ln in lines if ln.startswith("t") and "->" not in ln]
print(f"draw_graph: {len(ops)} op boxes, {len(tensors)} tensor ovals, "
      f"{sum('->' in ln for ln in lines)} edges")
assert len(ops) == 3 and len(tensors) == 5
graph  # noqa: B018  (the last expression of a cell: Jupyter draws it)

# %% [markdown]
# ### Gradients on every tensor, and names
#
# As in micrograd's drawing, every tensor of a small graph shows its gradient after
# `backward()`, the intermediate ones too: nobody had to call `retain_grad()`. Give a tensor a
# name (`name=` or `t.name = ...`) and the drawing uses it. With `show_values=True` a matrix
# prints as a grid of rows. (On a large graph, run the backward inside
# `minigrad.viz.keep_grads()` to keep the norm of every intermediate gradient.)

# %%
w = mg.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True, name="w")
h = (w * w).sum(dim=1)  # h_i = sum_j w_ij^2
h.name = "h"
loss = (h * mg.tensor([1.0, 2.0], name="c")).sum()
loss.backward()
picture = draw_graph(loss, show_values=True)
label_of_h = next(ln for ln in picture.body if 'label="h\\n' in ln)
print(label_of_h.split('label="')[1].split('" ')[0].replace("\\n", " | "))
assert "grad [1, 2]" in label_of_h  # d loss / d h = c, although h.grad is None
assert h.grad is None and np.allclose(w.grad, 2 * w.numpy() * np.array([[1.0], [2.0]]))
assert any("data [1, -2]\\n[0.5, 3]" in ln for ln in picture.body)  # w as a 2 x 2 grid
picture  # noqa: B018

# %% [markdown]
# ## 7. `explore`: step through backward on the picture
#
# `explore(loss)` runs the backward (through `trace_backward`, so in the engine's own order)
# and returns one self-contained HTML page: in Jupyter it shows itself inline, and
# `page.save("y.html")` writes a file any browser opens offline. Press **next** and the page
# lights up the op being run, the gradient it receives and what it sends to each input; click
# a tensor for its value and gradient; a model's modules are folded into boxes that open on a
# click (`minigrad graph gpt --html gpt.html` does it for a model from the command line).
#
# Our `y = sum((x + b) * x)` uses `x` twice, so `x` gets two gradients, from steps 1 and 2
# (the Mul sends `x + b`, the Add passes on `x`), and the page shows their sum, `2x + b`,
# whose first row is [12, 24, 36].

# %%
y = ((x + b) * x).sum()
page = explore(y)
print(page)
into_x = next(t for t in page.data["tensors"] if t["id"] == page.node_id(x))["contribs"]
total = np.reshape(into_x[-1]["total"]["v"], x.shape)
steps = " and ".join(str(c["from"]) for c in into_x)
print(f"explore: x gets {len(into_x)} gradients, from steps {steps}; their sum, 2x + b, has the first row "
      f"[{', '.join(f'{v:g}' for v in total[0])}]")
assert np.array_equal(total, 2 * x.numpy() + b.numpy())
page  # noqa: B018  (Jupyter shows the page; in a script nothing happens)
