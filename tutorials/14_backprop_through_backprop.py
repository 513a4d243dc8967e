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
# # 14 · Backprop through backprop
#
# The backward pass is itself a computation: multiplications, sums, an `exp` here and there.
# So it can be recorded as a graph and differentiated again. `backward(create_graph=True)` and
# `autograd.grad(..., create_graph=True)` do that: every gradient they give is a Tensor with a
# graph of its own. This notebook uses it five ways:
#
# 1. a Hessian-vector product by hand, against `autograd.functional.hvp`;
# 2. the second derivative of the softmax inside attention, by hand and by `hessian`;
# 3. a gradient penalty: the norm of an input gradient as part of the loss;
# 4. Newton's method on a tiny logistic regression;
# 5. the backward pass drawn as a graph, and what `gradgradcheck` says about an op whose
#    backward forgot a term.

# %%
import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.autograd import functional as AF
from minigrad.viz import draw_graph

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. A Hessian-vector product, by hand
#
# Take f(x) = ½ xᵀAx + Σ sin(x_i) with a symmetric A. Its gradient is ∇f = Ax + cos(x) and its
# Hessian H = A − diag(sin x), so H v = Av − sin(x) ⊙ v. Autograd finds H v without ever
# forming H: the gradient ∇f is built as a graph (`create_graph=True`), and the gradient of
# ∇f · v is H v, one more backward pass. For x = [0.5, −1, 2] and v = [1, 0, −1]:

# %%
A = mg.tensor([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 1.0]], dtype=mg.float64)
x = mg.tensor([0.5, -1.0, 2.0], dtype=mg.float64, requires_grad=True)
v = mg.tensor([1.0, 0.0, -1.0], dtype=mg.float64)


def f(x):
    return 0.5 * (x * (A @ x)).sum() + x.sin().sum()


(grad,) = mg.autograd.grad(f(x), x, create_graph=True)  # ∇f, with a graph
(hv_autograd,) = mg.autograd.grad((grad * v).sum(), x)  # ∇(∇f · v) = H v
hv_hand = A.numpy() @ v.numpy() - np.sin(x.numpy()) * v.numpy()
_, hv_functional = AF.hvp(f, x, v)
print("H v by hand:           ", hv_hand)
print("H v by two backwards:  ", hv_autograd.numpy())
print("H v by functional.hvp: ", hv_functional.numpy())
assert np.allclose(hv_autograd.numpy(), hv_hand, rtol=1e-14) and np.allclose(hv_functional.numpy(), hv_hand)
H = AF.hessian(f, x)
print("the whole Hessian:\n", H.numpy())
assert np.allclose(H.numpy(), A.numpy() - np.diag(np.sin(x.numpy())))

# %% [markdown]
# The first entry is 2 · 1 + 1 · 0 + 0 · (−1) − sin(0.5) · 1 = 2 − 0.4794 = 1.5206. A full
# Hessian costs one backward pass per entry of x (`hessian` builds it row by row); H v costs two
# passes whatever the size, which is why optimisers and analyses of curvature use it.

# %% [markdown]
# ## 2. The second derivative of the softmax inside attention
#
# Attention's weights are p = softmax(s) of a row of scores. The first derivative is the
# Jacobian ∂p_i/∂s_j = p_i(δ_ij − p_j), the matrix tutorial 05 builds its backward from. One more
# derivative of p_i:
#
#     ∂²p_i / ∂s_j ∂s_k = p_i (δ_ij − p_j)(δ_ik − p_k) − p_i p_j (δ_jk − p_k)
#
# For the scores s = [2, 1, 0.1] (the weights of the worked example of tutorial 02 come from a
# row like it), the Hessian of the first weight p_0:

# %%
s = mg.tensor([2.0, 1.0, 0.1], dtype=mg.float64)
p = s.softmax(-1).numpy()
eye = np.eye(3)
i = 0
by_hand = (p[i] * np.outer(eye[i] - p, eye[i] - p)
           - p[i] * p[:, None] * (eye - p[None, :]))
by_autograd = AF.hessian(lambda s: s.softmax(-1)[0], s).numpy()
print("p =", p)
print("Hessian of p_0 by hand:\n", by_hand)
print("by autograd.functional.hessian:\n", by_autograd)
assert np.allclose(by_hand, by_autograd, rtol=1e-13, atol=1e-15)
print(f"row sums: {np.abs(by_autograd.sum(axis=1)).max():.1e} (adding one constant to every score "
      "changes nothing)")
print(f"d2 p_0 / d s_0^2 = {by_autograd[0, 0]:.4f}")

# %% [markdown]
# p_0 is 0.6590, and ∂²p_0/∂s_0² = p_0(1 − p_0)(1 − 2p_0) = −0.0715: past p_0 = ½ the weight
# saturates, so raising its score helps it less and less. Each row of the Hessian sums to zero,
# because softmax does not change when every score moves by the same amount.
#
# Inside attention the same curvature reaches the query: the output o = softmax(q Kᵀ/√d) V is
# a smooth function of q, and its Hessian with respect to q is what a second-order analysis of
# a layer reads. `gradgradcheck` compares it, entry by entry, with finite differences of the
# first derivative:

# %%
rng = np.random.default_rng(0)
q = mg.tensor(rng.standard_normal((1, 2, 4)), requires_grad=True)
k = mg.tensor(rng.standard_normal((1, 3, 4)), requires_grad=True)
val = mg.tensor(rng.standard_normal((1, 3, 4)), requires_grad=True)
ok = mg.gradgradcheck(lambda q, k, val: F.attention_reference(q, k, val), [q, k, val])
print("gradgradcheck of attention with respect to q, k and v:", ok)
assert ok

# %% [markdown]
# ## 3. A gradient penalty
#
# A loss may contain a gradient. A WGAN-GP critic, for instance, is trained to keep the norm of
# its gradient with respect to its input near 1: loss = mean(critic(x)) + λ (|∇ₓ critic| − 1)².
# Training on that loss differentiates the input gradient with respect to the weights, which is
# backprop through backprop. A small critic, 80 steps of Adam on the penalty alone (λ = 1):

# %%
mg.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
critic.double()
points = mg.tensor(np.random.default_rng(1).standard_normal((64, 2)), dtype=mg.float64)
opt = mg.optim.Adam(critic.parameters(), lr=0.02)


def penalty():
    xs = points.detach().requires_grad_()
    (g,) = mg.autograd.grad(critic(xs).sum(), xs, create_graph=True)  # one gradient per point
    return ((g * g).sum(1).sqrt() - 1).pow(2).mean(), g


before, g = penalty()
norms_before = (g * g).sum(1).sqrt()
for _ in range(80):
    loss, _ = penalty()
    opt.zero_grad()
    loss.backward()  # through the input gradient, into the weights
    opt.step()
after, g = penalty()
norms_after = (g * g).sum(1).sqrt()
print(f"penalty: {before.item():.4f} before, {after.item():.4f} after 80 steps")
print(f"input-gradient norms: mean {norms_before.mean().item():.3f} before, "
      f"{norms_after.mean().item():.3f} after")
assert after.item() < before.item() / 10

# %% [markdown]
# The penalty, 0.3785 at the start, is 0.0005 to 0.005 after the 80 steps: the critic's input
# gradient now has a norm close to 1 at every point (the mean of the norms goes from 0.389 to
# about 1.00). `loss.backward()` went through the graph of `g`, so every parameter
# got the gradient of a gradient.

# %% [markdown]
# ## 4. Newton's method
#
# Gradient descent steps along −∇L; Newton's method steps by −H⁻¹∇L, the minimum of the local
# quadratic model, and near the minimum the error squares at every step. On a logistic
# regression with two weights and eight points, the Hessian is 2 × 2:

# %%
features = mg.tensor([[1.0, 2.0], [2.0, 1.0], [-1.0, -1.5], [-2.0, 0.5],
                      [0.5, 1.5], [1.5, -0.5], [-0.5, -2.0], [-1.5, 1.0]], dtype=mg.float64)
labels = mg.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0], dtype=mg.float64)  # no line separates them


def nll(w):
    return F.binary_cross_entropy_with_logits(features @ w, labels)


w = mg.zeros(2, dtype=mg.float64)
print("step  loss      |gradient|")
for step in range(5):
    (gw,) = mg.autograd.grad(nll(w.requires_grad_()), w)
    print(f"{step:4d}  {nll(w).item():.6f}  {np.linalg.norm(gw.numpy()):.2e}")
    Hw = AF.hessian(nll, w.detach()).numpy()
    w = mg.tensor(w.detach().numpy() - np.linalg.solve(Hw, gw.numpy()))
final_newton = nll(w).item()

w_gd = mg.zeros(2, dtype=mg.float64)
for _ in range(5):
    (gw,) = mg.autograd.grad(nll(w_gd.requires_grad_()), w_gd)
    w_gd = (w_gd - 1.0 * gw).detach()
print(f"after 5 steps: Newton {final_newton:.6f}, gradient descent (lr 1) {nll(w_gd).item():.6f}")
assert final_newton < nll(w_gd).item()

# %% [markdown]
# The gradient's norm goes 2.58e-01, 1.61e-02, 2.79e-04, 1.01e-07: the number of correct digits
# roughly doubles at each step, the mark of Newton's method. After five steps the loss is
# 0.623874, where gradient descent with a step of 1 is still at 0.624683.

# %% [markdown]
# ## 5. The backward pass, drawn
#
# With `create_graph=True` the gradient is an ordinary Tensor with a graph, so every tool of
# tutorial 01 takes it: `draw_graph(x.grad)` draws the backward pass of y = Σ x sin x as the ops
# that computed dy/dx = sin x + x cos x (a Cos, a Mul, a Sin and an Add, beside the forward's
# Sin), and `explore(x.grad.sum())` steps through the backward of the backward;
# `minigrad graph gpt --grad-of blocks.0.attn.q_proj.weight` draws a model's.

# %%
x = mg.tensor([0.5, -1.0, 2.0], dtype=mg.float64, requires_grad=True)
y = (x * x.sin()).sum()
y.backward(create_graph=True)
picture = draw_graph(x.grad)
boxes = sorted({ln.split('label="')[1].split("\\n")[0].split('"')[0] for ln in picture.body
                if "shape=box" in ln})
by_hand = np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy())
print("x.grad =", x.grad.numpy(), " (sin x + x cos x =", by_hand, ")")
print("the ops of the backward pass:", ", ".join(boxes))
assert np.allclose(x.grad.numpy(), by_hand)
picture  # noqa: B018

# %% [markdown]
# ### When a backward forgets a term
#
# Exercise 16 (`double_backward`) asks for a backward that can itself be differentiated. A
# classic mistake is to treat a factor as a constant: for y = x³ the backward 3x²·g is right,
# but written with x detached it gives the right first derivative and a second derivative of 0.
# `gradcheck` cannot see it; `gradgradcheck` names the input and the element:

# %%


class CubeDetached(mg.Function):
    """y = x ** 3, with a backward whose x is cut from the graph."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        x = x.detach() if isinstance(x, mg.Tensor) else x  # the mistake
        return 3 * x * x * g


x = mg.tensor([1.0, 2.0], requires_grad=True)
print("gradcheck:", mg.gradcheck(lambda x: CubeDetached.apply(x), [x]))
try:
    mg.gradgradcheck(lambda x: CubeDetached.apply(x), [x])
except mg.GradcheckError as report:
    print(str(report).splitlines()[0])
    print(str(report).splitlines()[-1])
