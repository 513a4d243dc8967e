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
# # 13 · Convolutions, the CNN-vs-ViT contrast, and attention in image captioning
#
# Two places where the notes lean on convolutional networks:
#
# - Lecture 10, "Recap: why attention?" and "Encoders, decoders, and vision": *convolution
#   bakes in locality, each unit sees a fixed small patch*, and *ViT throws away
#   convolution's built-in image bias and relearns it from data*;
# - Session 07, "From One Context Vector to Dynamic Attention": *in image captioning, the same
#   process attends to different spatial CNN features for different generated words*.
#
# This notebook builds both with the real layers (`nn.Conv2d`, `nn.MaxPool2d`,
# `nn.BatchNorm2d`):
#
# 1. locality, receptive fields and weight sharing, measured with gradients;
# 2. the 1-D case, "bank" and "river", is tutorial 11 (with `nn.Conv1d`);
# 3. the CNN against the ViT as the training set shrinks;
# 4. a captioner (`minigrad.models.caption`) whose LSTM decoder attends over a grid of CNN
#    features, word by word, and what its attention maps do and do not say.

# %%
import json
import time
from pathlib import Path

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.models.cnn import CNN, CNNConfig
from minigrad.models.data import load_digits_split
from minigrad.models.data.captions import CAPTION_VOCAB, NUMBER_WORDS, attention_share, box_cells
from minigrad.models.recipes.caption import CaptionRecipe
from minigrad.models.train import TrainConfig, make_optimizer
from minigrad.models.vit import ViT, ViTConfig
from minigrad.viz import show, use_script_backend

HAVE_MATPLOTLIB = use_script_backend()  # draw inline in a notebook, off-screen in a script
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
mg.manual_seed(0)
np.set_printoptions(precision=2, suppress=True, linewidth=110)

# %% [markdown]
# ## 1. Locality, receptive fields, weight sharing
#
# `nn.Conv2d(1, 1, kernel_size=3, padding=1)` computes each output pixel from the 3 x 3
# pixels around it, with the same nine weights everywhere. We check the first half with a
# gradient: backpropagate from one output pixel, `out[i, j]`, and see which input pixels
# receive any gradient. `d out[i, j] / d x` is exactly zero outside the 3 x 3 patch.

# %%
S = 11  # an 11 x 11 image, the output pixel at its centre
centre = S // 2
x = mg.randn(1, 1, S, S, requires_grad=True)


def depends_on(model, i: int = centre, j: int = centre) -> np.ndarray:
    """Which input pixels the output pixel (i, j) depends on: d out[i, j] / d x != 0, (S, S)."""
    x.grad = None
    out = model(x)  # (1, C, S, S)
    out[0, :, i, j].sum().backward()
    return np.abs(x.grad[0, 0]) > 0


conv = nn.Conv2d(1, 1, kernel_size=3, padding=1)
patch = depends_on(conv)
print("which pixels out[5, 5] depends on (1 = nonzero gradient):")
print(patch.astype(int))
rows, cols = np.nonzero(patch)
assert patch.sum() == 9 and (rows.min(), rows.max(), cols.min(), cols.max()) == (4, 6, 4, 6)

# %% [markdown]
# Stacking grows the window: the second layer's pixel sees 3 x 3 first-layer pixels, each of
# which sees 3 x 3 inputs, so 5 x 5; a third layer, 7 x 7. Each 3 x 3 layer adds one pixel
# on every side (a tanh between the layers, so that no gradient is cut to zero by chance).

# %%
fields = {}
for layers in (1, 2, 3):
    mg.manual_seed(layers)
    parts = []
    for _ in range(layers):
        parts += [nn.Conv2d(1, 1, kernel_size=3, padding=1), nn.Tanh()]
    seen = depends_on(nn.Sequential(*parts))
    rows, cols = np.nonzero(seen)
    fields[layers] = (int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1))
    print(f"{layers} stacked 3x3 conv(s): out[5, 5] depends on a {fields[layers][0]} x {fields[layers][1]} "
          f"window ({seen.sum()} pixels)")
assert fields == {1: (3, 3), 2: (5, 5), 3: (7, 7)}

# %% [markdown]
# **Weight sharing.** The same kernel slides over every position, so the parameter count does
# not depend on the image size. A layer of 16 output channels on an 8 x 8 digit has
# `16 * 3 * 3 + 16` parameters; a dense (Linear) layer producing the same 16 x 8 x 8 outputs
# from the 64 pixels has one weight per (input pixel, output value) pair.

# %%
conv16 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
dense = nn.Linear(8 * 8, 16 * 8 * 8)
digit = mg.randn(1, 1, 8, 8)
assert conv16(digit).shape == (1, 16, 8, 8) and dense(digit.reshape(1, 64)).shape == (1, 1024)
n_conv, n_dense = conv16.num_parameters(), dense.num_parameters()
print(f"parameters for (1, 8, 8) -> (16, 8, 8): conv {n_conv:,}, dense {n_dense:,} "
      f"({n_dense / n_conv:.0f}x more)")

# %% [markdown]
# ## 2. The same in 1-D: "bank" and "river"
#
# Tutorial 11, § "1. How far can a convolution see?", stacks `nn.Conv1d` layers of kernel
# size 3 over the words of a sentence and measures the same gradients: "bank" depends on
# "river", seven words away, only from the seventh layer on, while one attention layer
# connects every pair of words. That is the notes' contrast: a CNN's receptive field is fixed
# by the architecture; attention's reach is not.
#
# ## 3. The image bias: a CNN against a ViT as the data shrinks
#
# The notes' "full circle": a CNN has locality and weight sharing built in, a ViT has to
# learn them from data. Tutorial 09 showed the ViT losing accuracy with fewer images; here
# the CNN of `minigrad.models.cnn` (three 3 x 3 convolutions with BatchNorm, a 2 x 2
# max-pool, a global average, a linear head) and tutorial 09's ViT train side by side with
# the same budget: 200 steps of 32 images, on the first 100 training digits and on all 1437,
# tested on the same 360.

# %%
x_train, y_train, x_test, y_test = load_digits_split()  # (N, 8, 8) in [0, 1], labels 0..9
x_train, x_test = x_train[:, None], x_test[:, None]  # (N, 1, 8, 8)


def make_model(kind: str):
    if kind == "CNN":
        return CNN(CNNConfig(channels=(8, 16, 32)))
    return ViT(ViTConfig(image_size=8, patch_size=2, embed_dim=32, num_heads=2, num_layers=2, mlp_ratio=2))


def train_classifier(kind: str, n: int, steps: int = 200) -> tuple[float, int]:
    """Test accuracy and parameter count of `kind` trained on the first n training digits."""
    mg.manual_seed(0)
    model = make_model(kind)
    opt, sched = make_optimizer(model, TrainConfig(steps=steps, lr=1e-2, min_lr=1e-3, warmup=20,
                                                   weight_decay=0.05))
    rng = np.random.default_rng(0)
    for _ in range(steps):
        idx = rng.integers(0, n, size=32)
        loss = model.loss(mg.tensor(x_train[idx]), mg.tensor(y_train[idx]))
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    return float((model.predict(mg.tensor(x_test)) == y_test).mean()), model.num_parameters()


t0 = time.perf_counter()
small_sweep = {(kind, n): train_classifier(kind, n) for kind in ("CNN", "ViT") for n in (100, 1437)}
print(f"4 runs of 200 steps in {time.perf_counter() - t0:.1f} s")
for kind in ("CNN", "ViT"):
    (few, params), (many, _) = small_sweep[kind, 100], small_sweep[kind, 1437]
    print(f"{kind}: {params:,} parameters; test accuracy {few:.3f} on 100 images, {many:.3f} on 1437")
cnn_few, vit_few = small_sweep["CNN", 100][0], small_sweep["ViT", 100][0]
assert cnn_few > vit_few + 0.1 and small_sweep["CNN", 100][1] < small_sweep["ViT", 100][1]

# %% [markdown]
# The CNN, with about a third of the ViT's parameters, loses little when it sees 100 images
# instead of 1437; the ViT loses much more. Locality and weight sharing are knowledge the CNN
# does not have to extract from the data.
#
# The full sweep, `benchmarks/cnn_vs_vit.py`, trains the two "quick" presets (about 94k and
# 102k parameters) for 500 steps each on 100, 200, 500 and all 1437 images (about four
# minutes); it was measured with `python benchmarks/cnn_vs_vit.py --json
# benchmarks/cnn_vs_vit_results.json --plot docs/cnn_vs_vit.png`, and here is its saved table:


# %%
def find_results(name: str = "benchmarks/cnn_vs_vit_results.json") -> Path | None:
    """The saved sweep in a checkout of the repository (beside the package, or above here)."""
    for folder in (Path(mg.__file__).resolve().parents[1], *Path.cwd().resolve().parents, Path.cwd()):
        if (folder / name).is_file():
            return folder / name
    return None


path = find_results()
if path is None:
    print("benchmarks/cnn_vs_vit_results.json is in a checkout of the repository, not beside this install")
    sweep = None
else:
    sweep = json.loads(path.read_text())
    by = {(r["model"], r["train_size"]): r for r in sweep["runs"]}
    print(f"the full sweep ({sweep['steps']} steps per run, {sweep['test_images']} test images, "
          f"{sweep['machine']}):")
    print(" images   CNN acc   ViT acc")
    for n in sweep["sizes"]:
        print(f"{n:7d}   {100 * by['cnn', n]['accuracy']:6.1f}%   {100 * by['vit', n]['accuracy']:6.1f}%")
    print(f"parameters: CNN {by['cnn', 100]['parameters']:,}, ViT {by['vit', 100]['parameters']:,}")
    assert all(by["cnn", n]["accuracy"] > by["vit", n]["accuracy"] for n in sweep["sizes"])

# %%
if HAVE_MATPLOTLIB and sweep is not None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
    for model, label in (("cnn", "CNN"), ("vit", "ViT")):
        ax.plot(sweep["sizes"], [100 * by[model, n]["accuracy"] for n in sweep["sizes"]], "o-", label=label)
    ax.set_xscale("log")
    ax.set(xlabel="training images", ylabel="test accuracy (%)",
           title=f"CNN vs ViT on the 8x8 digits, {sweep['steps']} steps each")
    ax.legend()
    show(fig, "cnn_vs_vit")

# %% [markdown]
# With 500 steps the gap is the same story at every size: on 100 images the CNN reaches 90.6%
# against the ViT's 80.8%, on all 1437 images 99.7% against 97.2%. The ViT closes the gap only
# as the data grows (`docs/cnn_vs_vit.png` is the same plot).

# %% [markdown]
# ## 4. Image captioning: attending over CNN features
#
# The pictures hold two digits side by side or one above the other, and the caption names
# them in reading order with their relation: "seven left of two", "three above five"
# (`minigrad.models.data.captions`; some digit pairs never occur in training).
#
# The captioner is "Show, Attend and Tell" in miniature. Its CNN encoder (three 3 x 3
# convolutions, two 2 x 2 max-pools) turns a 24 x 24 picture into a 6 x 6 grid of 64-number
# feature vectors: each of the 36 cells is one **annotation** `a_j`, a description of one
# region of the picture. An LSTM decoder writes the caption word by word; before each word it
# scores every annotation from its state, normalises the scores with a softmax, and combines
# the annotations into one context vector:
#
#     e_tj = v^T tanh(W_q s_{t-1} + W_k a_j),   alpha_tj = softmax_j(e_tj),   z_t = sum_j alpha_tj a_j
#
# the additive alignment of tutorial 06, over image regions instead of source words.
#
# We train the `quick` preset for 500 steps of 32 fresh pictures (the recipe's own budget,
# `minigrad train caption`, is 1200), at a higher learning rate.

# %%
mg.manual_seed(0)
recipe = CaptionRecipe("quick")
captioner, config = recipe.model, recipe.config
print(f"{captioner.num_parameters():,} parameters; pictures {config.image_height} x {config.image_width}, "
      f"feature grid {config.grid[0]} x {config.grid[1]} = {config.grid_size} annotations of "
      f"{config.feature_dim}")
print(recipe.data_summary())

train_config = TrainConfig(steps=500, batch_size=32, lr=1e-2, min_lr=3e-3, warmup=30, weight_decay=0.01)
opt, sched = make_optimizer(captioner, train_config)
rng = np.random.default_rng(0)
t0, losses = time.perf_counter(), []
for _ in range(train_config.steps):
    loss = recipe.loss(recipe.batch("train", rng, train_config.batch_size))
    opt.zero_grad()
    loss.backward()
    optim.clip_grad_norm_(captioner.parameters(), 1.0)
    opt.step()
    sched.step()
    losses.append(loss.item())
metrics = recipe.evaluate()  # the 1000 test pictures, half of them of held-out pairs
print(f"500 steps in {time.perf_counter() - t0:.1f} s; loss {np.mean(losses[:20]):.2f} -> "
      f"{np.mean(losses[-20:]):.2f}")
print(f"test: exact match {100 * metrics['exact_match']:.1f}% (seen pairs "
      f"{100 * metrics['exact_match_seen']:.1f}%, held-out pairs "
      f"{100 * metrics['exact_match_unseen']:.1f}%), word accuracy {100 * metrics['word_accuracy']:.1f}%, "
      f"attention on the named digit's box "
      f"{metrics['attention_share']:.2f}")
assert metrics["exact_match"] > 0.4 and metrics["attention_share"] > 0.6

# %% [markdown]
# ### Score, normalise, combine: one word by hand
#
# For the first word of a test picture: the decoder's first state comes from the mean
# annotation; we score the 36 annotations with the additive scorer's own weights, take the
# softmax, and average the annotations with those weights. The weights agree with what the
# decoder computes.

# %%
index = 0
image = recipe.test.images[index:index + 1]  # (1, 1, 24, 24)
h, w = config.grid
attention = captioner.decoder.attention
with nn.evaluating(captioner), mg.no_grad():
    annotations, (state, _), keys = captioner.encode(image)  # (1, 36, 64), (1, 128), (1, 36, 64)
    scores = attention.v((attention.w_q(state).unsqueeze(1) + keys).tanh()).squeeze(-1)  # (1, 36)
    weights = scores.softmax(dim=-1)  # (1, 36)
    context = (weights.unsqueeze(1) @ annotations).squeeze(1)  # (1, 64)
ids, maps = captioner.greedy_decode(image, max_len=6, return_attention=True)  # (1, L), (1, L, 36)
words = CAPTION_VOCAB.decode(ids[0]).split()
shown = [CAPTION_VOCAB.tokens[i] for i in ids[0]]  # the words and the <eos>
print(f"test picture {index}: true {recipe.test.captions[index]!r}, generated {' '.join(words)!r}")
print(f"annotations {annotations.shape}, keys W_k a_j {keys.shape}, decoder state {state.shape}")
print(f"word 1 ({words[0]!r}): scores e_1j on the {h} x {w} grid\n{scores.numpy().reshape(h, w)}")
print(f"weights alpha_1j = softmax(e_1j), sum {weights.numpy().sum():.3f}\n{weights.numpy().reshape(h, w)}")
print(f"context z_1 = sum_j alpha_1j a_j: shape {context.shape}")
assert np.allclose(weights.numpy()[0], maps[0, 0], atol=1e-5) and context.shape == (1, config.feature_dim)

# %% [markdown]
# ### A different region for each word
#
# The weights with which each word was written (`greedy_decode(..., return_attention=True)`),
# as the 6 x 6 grid over the picture, and for each digit word the share of its attention on
# the grid cells that overlap its digit's box (`box_cells`).

# %%
boxes = box_cells(recipe.test.boxes[index], image.shape[2:], config.grid)  # (2, 36): the two digits' cells
digit_rank = 0
for t, word in enumerate(shown):
    grid = maps[0, t].reshape(h, w)
    line = f"word {t + 1} {word!r}:"
    if word in NUMBER_WORDS:
        on_box = float(maps[0, t][boxes[digit_rank]].sum())
        line += f" {on_box:.2f} of the attention on digit {digit_rank + 1}'s box"
        digit_rank += 1
    print(line)
    print(grid)
share = attention_share(maps, ids, recipe.test.boxes[index:index + 1], image.shape[2:], config.grid)
print(f"this picture's mean attention share on the named digit's box: {share:.2f}")
assert share > 0.5

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    H, W = image.shape[2:]
    fig, axes = plt.subplots(1, len(shown) + 1, figsize=(1.7 * (len(shown) + 1), 2.1), layout="constrained")
    axes[0].imshow(image[0, 0], cmap="gray_r", vmin=0, vmax=1)
    axes[0].set_title("picture", fontsize=9)
    for ax, word, weight in zip(axes[1:], shown, maps[0]):
        ax.imshow(image[0, 0], cmap="gray_r", vmin=0, vmax=1)
        ax.imshow(weight.reshape(h, w), cmap="inferno", alpha=0.6, extent=(-0.5, W - 0.5, H - 0.5, -0.5),
                  vmin=0, vmax=float(weight.max()))
        ax.set_title(word, fontsize=9)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("where the captioner looked for each word")
    show(fig, "caption_attention")

# %% [markdown]
# ### What a bright region does not say
#
# The digit words look at their digits, and the map is a useful picture of where the decoder
# read from. But the notes warn that "a bright region should not automatically be treated as
# a complete causal explanation", and here there are two concrete reasons. First, a cell's
# annotation is not its 4 x 4 pixels: after three 3 x 3 convolutions and two poolings it
# depends on a much wider window of the picture, measured below with the gradient of
# section 1. Second, the word also depends on the decoder's state, which started from the
# mean of all 36 annotations and carries what was read for the words already written: a
# relation word ("left", "above") cannot be read off one cell, so its bright cell says little
# about why it was chosen. To claim that a region *causes* a word, intervene and measure (tutorial 11,
# § "2. A bright attention map is not an explanation", masks words and finds the
# most-attended one matters least).

# %%
probe = mg.tensor(recipe.test.images[:8], requires_grad=True)  # (8, 1, 24, 24)
with nn.evaluating(captioner):
    features = captioner.encoder.cnn(probe)  # (8, 64, 6, 6): before the LayerNorm and the positions
    features[:, :, 2, 2].sum().backward()
seen = np.abs(probe.grad).sum((0, 1)) > 0  # (24, 24)
rows, cols = np.nonzero(seen)
window = (int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1))
print(f"cell (2, 2) covers pixels 8..11 x 8..11 (4 x 4); its annotation depends on a "
      f"{window[0]} x {window[1]} window of pixels")
assert window[0] > 4 and window[1] > 4

# %% [markdown]
# A cell covers 4 x 4 pixels of the 24 x 24 picture, but its annotation depends on an 18 x 18
# window of them: the receptive field of section 1, grown by the poolings (3 pixels after
# the first convolution, 4 after the first pool, 8 after the second convolution, 10 after
# the second pool, 18 after the third convolution). Attention "on a cell" is attention on a
# summary of most of the picture, which the CNN has already mixed; the map shows where the
# decoder read, and the annotation decides what it read there.
