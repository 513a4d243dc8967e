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
# # 09 · The Vision Transformer
#
# Lecture 10, "Encoders, decoders, and vision": *cut the image into patches, treat them as
# tokens: no convolution at all*; and the full circle to Lecture 9: *ViT throws away
# convolution's built-in image bias and relearns it from data, viable only with large-scale
# pretraining.*
#
# Here `minigrad.models.vit` (one page, read it top-down) classifies scikit-learn's 8x8
# handwritten digits (1437 to train on, 360 to test on, shipped with scikit-learn):
#
# 1. a digit cut into patches, and the patches as a sequence of tokens;
# 2. the class token and the learned positions: the model's shapes;
# 3. training, in a few seconds on one CPU thread (2.0 s of CPU on a 2-core AMD EPYC VM,
#    measured with `benchmarks/tutorial_times.py`);
# 4. where the class token looks: its attention over the patches, drawn on the image;
# 5. the image bias the ViT has to learn: without positions it sees a bag of patches, and
#    with fewer images it learns much less.
#
# (`minigrad train vit` trains the "quick" preset with the shared loop, checkpoints and a
# progress bar; this notebook writes the loop out. The model is pre-norm, like the GPT of
# tutorial 04: tutorial 10 compares that with the notes' post-norm layer.)

# %%
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.models.data import load_digits_split
from minigrad.models.train import TrainConfig, make_optimizer
from minigrad.models.vit import ViT, ViTConfig, patchify
from minigrad.viz import show, use_script_backend

HAVE_MATPLOTLIB = use_script_backend()  # draw inline in a notebook, off-screen in a script
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
np.set_printoptions(precision=3, suppress=True)

x_train, y_train, x_test, y_test = load_digits_split()  # (N, 8, 8) in [0, 1], labels 0..9
x_train, x_test = x_train[:, None], x_test[:, None]  # (N, 1, 8, 8): one channel
print("train", x_train.shape, "test", x_test.shape)

# %% [markdown]
# ## 1. Patches as tokens
#
# With patches of 2 x 2 pixels an 8 x 8 digit becomes a 4 x 4 grid of 16 patches, numbered
# row by row. `patchify` flattens each patch into a vector of 4 numbers: the image is now a
# sequence of 16 "words" of size 4, which one shared Linear layer embeds, as GPT embeds
# characters.

# %%
p = 2
digit = x_test[:1]  # (1, 1, 8, 8)
patches = patchify(mg.tensor(digit), p).numpy()  # (1, 16, 4)
print("label", y_test[0], "-> patches", patches.shape)
print("patch 5 (row 1, column 1):", patches[0, 5], "= pixels [2:4, 2:4]", digit[0, 0, 2:4, 2:4].ravel())
assert patches.shape == (1, 16, 4)
assert np.array_equal(patches[0, 5], digit[0, 0, 2:4, 2:4].ravel())

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8, 2.8), layout="constrained")
    grid = fig.add_gridspec(4, 6 + 16, width_ratios=[1.5] * 2 + [1] * 4 + [0.5] * 16)
    ax = fig.add_subplot(grid[:, :2])
    ax.imshow(digit[0, 0], cmap="gray_r", vmin=0, vmax=1)
    ax.set_title(f"a {y_test[0]}, 8 x 8")
    for i in range(16):  # the 4 x 4 grid of patches, pulled apart
        sub = fig.add_subplot(grid[i // 4, 2 + i % 4])
        sub.imshow(patches[0, i].reshape(p, p), cmap="gray_r", vmin=0, vmax=1)
        sub.set_title(str(i), fontsize=7, pad=1)
    for i in range(16):  # and as a sequence of 16 tokens of 4 numbers each
        sub = fig.add_subplot(grid[:, 6 + i])
        sub.imshow(patches[0, i][:, None], cmap="gray_r", vmin=0, vmax=1)
        sub.set_title(str(i), fontsize=6, pad=1)
    for sub in fig.axes:
        sub.set_xticks([])
        sub.set_yticks([])
    fig.suptitle("an image, its 16 patches, and the patches as a sequence of tokens")
    show(fig, "patches")

# %% [markdown]
# ## 2. Class token and learned positions
#
# In front of the 16 patch vectors the model puts one more, the **class token**: a learned
# vector, the same for every image, that attends to the patches in every layer; the head reads
# only its final vector (BERT's [CLS]). Then a **learned position vector** is added to each of
# the 17 slots: attention by itself sees a set (tutorial 03), and the positions are the only
# thing that tells patch 0 (top left) from patch 15 (bottom right).

# %%
config = ViTConfig(image_size=8, patch_size=p, embed_dim=32, num_heads=2, num_layers=2, mlp_ratio=2)
mg.manual_seed(0)
model = ViT(config)
print(model.num_parameters(), "parameters;", config.num_patches, "patches + 1 class token")
print("class token", model.cls_token.shape, " positions", model.pos_emb.weight.shape)
tokens = model.patch_embed(mg.tensor(x_test[:2]))  # (B, N, C)
print("patch embeddings of 2 images:", tokens.shape, "-> logits", model(mg.tensor(x_test[:2])).shape)
assert model.pos_emb.weight.shape == (17, 32) and tokens.shape == (2, 16, 32)

# %% [markdown]
# ## 3. Training
#
# AdamW with a short warm-up and a cosine decay (`make_optimizer`, the shared loop's
# settings), batches of 32 images, 600 steps. `train_vit` is reused below for the
# experiments, so it takes the training images and whether to use positions.


# %%
def train_vit(images: np.ndarray, labels: np.ndarray, positions: bool = True, steps: int = 600,
              seed: int = 0) -> tuple[ViT, list[float]]:
    mg.manual_seed(seed)
    model = ViT(config)
    if not positions:  # a bag of patches: the position vectors are zero and never learn
        model.pos_emb.weight.numpy()[:] = 0.0
        model.pos_emb.weight.requires_grad = False
    train_config = TrainConfig(steps=steps, lr=1e-2, min_lr=1e-3, warmup=20, weight_decay=0.05)
    opt, sched = make_optimizer(model, train_config)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        idx = rng.integers(0, len(labels), size=32)
        loss = model.loss(mg.tensor(images[idx]), mg.tensor(labels[idx]))
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return model, losses


def accuracy(model: ViT, images: np.ndarray = x_test, labels: np.ndarray = y_test) -> float:
    return float((model.predict(mg.tensor(images)) == labels).mean())


t0, cpu0 = time.perf_counter(), time.process_time()  # wall clock, and this process's CPU
model, losses = train_vit(x_train, y_train)
full_accuracy = accuracy(model)
seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
print(f"600 steps in {seconds:.1f} s ({cpu:.1f} s of CPU); loss {np.mean(losses[:20]):.2f} -> "
      f"{np.mean(losses[-20:]):.2f}; test accuracy {full_accuracy:.3f} (360 images, chance 0.1)")
assert full_accuracy > 0.85

# %% [markdown]
# ## 4. Where does the class token look?
#
# `nn.record_attention` collects every attention map of a forward pass, (B, H, T, T) per
# layer. Row 0 is the class token's query; its 16 weights on the patches (the 17th goes to
# itself), averaged over the heads, form a 4 x 4 map that we stretch over the 8 x 8 image.
# We record the maps of all 360 test images and ask, in each layer, what share of the class
# token's attention goes to patches with ink (a pixel sum above 0.5) rather than blank ones.

# %%
with nn.record_attention(model) as maps:
    predicted = model.predict(mg.tensor(x_test))
print(maps.names())
ink = patchify(mg.tensor(x_test), p).numpy().sum(-1) > 0.5  # (360, 16): patches with ink
cls_maps, share_on_ink = {}, {}
for layer, name in enumerate(maps.names(), start=1):
    weights = maps.weights(name)  # (360, H, 17, 17)
    assert weights.shape == (360, 2, 17, 17) and np.allclose(weights.sum(-1), 1.0, atol=1e-5)
    cls_maps[layer] = weights[:, :, 0, 1:].mean(1)  # (360, 16): the class token's query, mean of heads
    share_on_ink[layer] = float(((cls_maps[layer] * ink).sum(1) / cls_maps[layer].sum(1)).mean())
    print(f"layer {layer}: {share_on_ink[layer]:.0%} of the class token's patch attention is on ink; "
          f"largest weight on one patch {cls_maps[layer].max(1).mean():.2f} (mean over images)")
print(f"({ink.mean():.0%} of the patches have ink)")
print("first test image, layer 1:\n", cls_maps[1][0].reshape(4, 4).round(2))
assert share_on_ink[1] > ink.mean() + 0.1  # the first layer looks at the strokes

# %%
if HAVE_MATPLOTLIB:
    fig, axes = plt.subplots(3, 6, figsize=(8, 4.3), layout="constrained")
    for i in range(6):
        axes[0, i].imshow(x_test[i, 0], cmap="gray_r")
        axes[0, i].set_title(f"{y_test[i]} -> {predicted[i]}", fontsize=8)
        for row, layer in ((1, 1), (2, 2)):
            heat = np.kron(cls_maps[layer][i].reshape(4, 4), np.ones((p, p)))  # one value per patch
            axes[row, i].imshow(heat, cmap="magma", vmin=0, vmax=cls_maps[layer][:6].max())
            axes[row, i].contour(x_test[i, 0], levels=[0.5], colors="cyan", linewidths=0.8)
    axes[1, 0].set_ylabel("layer 1")
    axes[2, 0].set_ylabel("layer 2")
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("the class token's attention over the patches (mean of the heads; cyan: the strokes)")
    show(fig, "cls_attention")

# %% [markdown]
# In the first layer the class token gathers from the patches with strokes; in the second its
# attention is spread over the whole grid, blank patches included: by then every patch token
# has already mixed in information from the others. As tutorial 11 shows, such maps say where
# the model looked, not by themselves why it predicted what it did.
#
# ## 5. The image bias a ViT has to learn
#
# A CNN knows from its architecture which pixels are neighbours and that a stroke means the
# same anywhere (locality and weight sharing: Lecture 9). The ViT knows neither: apart from
# the patch embedding, its only knowledge of the layout comes from the **learned** position
# vectors, which start random. Two experiments make that visible.
#
# **Without positions** every patch is a token in a set: a model with no position vectors
# cannot tell a digit from the same patches shuffled, so its prediction does not change
# (measured on the test images, patches shuffled by one random permutation).


# %%
def shuffle_patches(images: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Images with their 2 x 2 patches moved: patch i of the result is patch order[i]."""
    B = len(images)
    grid = images.reshape(B, 1, 4, p, 4, p).transpose(0, 1, 2, 4, 3, 5).reshape(B, 1, 16, p, p)
    grid = grid[:, :, order]  # (B, 1, 16, p, p)
    return grid.reshape(B, 1, 4, 4, p, p).transpose(0, 1, 2, 4, 3, 5).reshape(B, 1, 8, 8)


order = np.random.default_rng(1).permutation(16)
shuffled = shuffle_patches(x_test, order)
assert np.array_equal(shuffle_patches(x_test, np.arange(16)), x_test)  # the identity moves nothing

t0 = time.perf_counter()
bag, bag_losses = train_vit(x_train, y_train, positions=False)
bag_accuracy = accuracy(bag)
same = float((bag.predict(mg.tensor(shuffled)) == bag.predict(mg.tensor(x_test))).mean())
print(f"trained in {time.perf_counter() - t0:.1f} s")
print(f"no positions:   test accuracy {bag_accuracy:.3f}; shuffled patches give the same prediction "
      f"for {same:.0%} of the images")
print(f"with positions: test accuracy {full_accuracy:.3f}; on the shuffled images "
      f"{accuracy(model, shuffled):.3f}")
assert same == 1.0 and bag_accuracy < full_accuracy - 0.2
assert accuracy(model, shuffled) < full_accuracy - 0.3

# %% [markdown]
# **With fewer images** the ViT has less to learn the layout and the shapes from. The same
# model and the same 600 steps on the first 200 training images instead of 1437:

# %%
small, small_losses = train_vit(x_train[:200], y_train[:200])
small_accuracy = accuracy(small)
print(f"  200 training images: test accuracy {small_accuracy:.3f}")
print(f" 1437 training images: test accuracy {full_accuracy:.3f}")
print(f"training loss of the last 20 steps: {np.mean(small_losses[-20:]):.3f} on 200 images, "
      f"{np.mean(losses[-20:]):.3f} on 1437")
assert small_accuracy < full_accuracy - 0.05

# %% [markdown]
# The three training runs side by side (the training loss, each on its own training images).
# The 200-image model fits its images better than the full model fits 1437, and still tests
# worse: it memorises them instead of learning what a digit looks like anywhere.

# %%
if HAVE_MATPLOTLIB:
    fig, ax = plt.subplots(figsize=(5, 2.6), layout="constrained")
    smooth = np.ones(20) / 20
    for name, curve in (("1437 images", losses), ("no positions", bag_losses), ("200 images", small_losses)):
        ax.plot(np.convolve(curve, smooth, mode="valid"), label=name)
    ax.set(xlabel="step", ylabel="train loss (mean of 20)", title="ViT on the 8x8 digits")
    ax.legend()
    show(fig, "training")

# %% [markdown]
# Has it learned the grid? In a large ViT the learned position vectors of neighbouring patches
# end up similar (Dosovitskiy et al., 2021, Fig. 7). Here we compare the mean cosine
# similarity of the position vectors of neighbouring patches with that of patches three or
# more steps apart:

# %%
P = model.pos_emb.weight.numpy()[1:]  # (16, C): the patches' positions
P = P / np.linalg.norm(P, axis=1, keepdims=True)
cells = np.array([(i // 4, i % 4) for i in range(16)])
steps_apart = np.abs(cells[:, None] - cells[None]).sum(-1)  # (16, 16) grid distance
cosine = P @ P.T
near, far = float(cosine[steps_apart == 1].mean()), float(cosine[steps_apart >= 3].mean())
print(f"cosine similarity of position vectors: neighbours {near:.3f}, 3+ steps apart {far:.3f}")

# %% [markdown]
# Both cosine similarities are near zero, far from the grid a large ViT learns: on 1437 tiny
# images and 600 steps the positions have barely started to encode the layout; the model
# classifies digits from what the patches hold and roughly where they are, with much less
# structure than a CNN gets for free. That is the notes' point: a ViT trades the built-in
# bias for generality, and pays for it in data (the ViT paper's results rest on pretraining
# on ImageNet-21k and JFT-300M).
