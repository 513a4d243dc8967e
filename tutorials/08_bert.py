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
# # 08 · BERT
#
# Session 07, "BERT: Contextual Pretraining": a bidirectional transformer encoder pretrained on
# unlabeled text, then fine-tuned for a task. Its input is the sum of token, segment and
# position embeddings; masked language modelling selects 15% of the tokens (80% become
# [MASK], 10% a random token, 10% stay) and predicts the originals; next sentence prediction
# tells whether sentence B followed sentence A. And the point of it all: a word's vector now
# depends on its context, where Word2Vec and GloVe give each word one static vector.
#
# 1. the input: `[CLS] A [SEP] B [SEP]`, and the three embeddings summed (shapes, a drawing);
# 2. the 15% / 80-10-10 masking, measured on a batch;
# 3. the two heads: masked LM (tied to the token embedding) and next sentence (from [CLS]);
# 4. a short pretraining run on the standard library's docstrings;
# 5. "contextual": one word, two sentences, two vectors;
# 6. fine-tuning the pretrained encoder on a small sentence classification task, against the
#    same model trained from scratch.
#
# Where this departs from the notes and the paper: the tokenizer splits words and punctuation
# (no WordPiece) and keeps the 1,000 most frequent tokens; the model is tiny (one layer, 64
# features) and pretrains for seconds, not days (`minigrad train bert` trains the "quick"
# preset for 3,000 steps; the README lists what it reaches); its weights start with a spread
# scaled to its width rather than BERT's fixed 0.02 (see below). The layers are post-norm, as
# in the notes and the original BERT.

# %%
import math
import time

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
from minigrad.models.bert import BERT, IGNORE, BERTConfig, mask_tokens
from minigrad.models.recipes.mlm import BERTRecipe
from minigrad.models.train import TrainConfig, make_optimizer
from minigrad.viz import show, use_script_backend

# show(fig) draws a figure inline in a notebook; a script draws off-screen and keeps the figures
# only when MINIGRAD_FIGURES names a folder. Without matplotlib the pictures are skipped.
HAVE_MATPLOTLIB = use_script_backend()
mg.set_num_threads(1)  # small matrices: more threads cost more than they save
mg.manual_seed(0)  # initial weights
np.set_printoptions(precision=3, suppress=True, linewidth=110)

# %% [markdown]
# ## 1. The input: three embeddings, summed
#
# `BERTRecipe` (`minigrad.models.recipes.mlm`) brings the data: the docstrings of Python's
# standard library (`stdlib_corpus()`), a word tokenizer built from its first 90%, and sentence
# pairs for next sentence prediction. Our model is smaller than its presets:

# %%
base = BERTRecipe("tiny")  # the tokenizer and the data of the "tiny" preset
tok = base.tokenizer
config = BERTConfig(vocab_size=tok.vocab_size, pad_id=tok.pad_id, block_size=32, embed_dim=64,
                    num_heads=2, num_layers=1, dropout=0.0)
recipe = BERTRecipe("tiny", config=config, tokenizer=tok)
model = recipe.model
# BERT draws its matrices from N(0, 0.02), about 0.55 / sqrt(C) for its C = 768 features; at
# C = 64 that is six times smaller relative to the width, attention then barely mixes the tokens
# and a short run hardly leaves its start. We scale the draw to the width: std 1 / sqrt(C).
for _, p in model.named_parameters():
    if p.ndim == 2:
        nn.init.normal_(p, std=config.embed_dim ** -0.5)
print(f"vocabulary {tok.vocab_size} tokens (the first five special: {tok.SPECIAL_TOKENS}); "
      f"{model.num_parameters()} parameters")

# %% [markdown]
# A pair of sentences becomes `[CLS] A [SEP] B [SEP]`; the segment ids say which sentence each
# token belongs to (0 for `[CLS] A [SEP]`, 1 for `B [SEP]`), and the position ids count 0, 1, 2...

# %%
pair = ("Return the number of items.", "The list may be empty.", 1)
idx, segments = recipe.encode_pairs([pair])  # (1, T) token ids, (1, T) segment ids
T, C = idx.shape[1], config.embed_dim
words = [tok.tokens[i] for i in idx[0]]
print(f"{'token':>8s} " + " ".join(f"{w:>7s}" for w in words))
print(f"{'id':>8s} " + " ".join(f"{i:7d}" for i in idx[0]))
print(f"{'segment':>8s} " + " ".join(f"{s:7d}" for s in segments[0]))
print(f"{'position':>8s} " + " ".join(f"{p:7d}" for p in range(T)))
assert words[0] == "[CLS]" and words.count("[SEP]") == 2 and segments[0].tolist() == [0] * 8 + [1] * 7

# %% [markdown]
# Each of the three ids looks up a learned table, and the three vectors are added
# (`Embeddings.forward`: `tok_emb(idx) + seg_emb(segments) + pos_emb(arange(T))`), then
# layer-normalised. All three have the same width C, so the sum is one vector per token:

# %%
emb = model.embed
with mg.no_grad():
    tok_part = emb.tok_emb(idx)  # (1, T, C): what the word is
    seg_part = emb.seg_emb(segments)  # (1, T, C): which sentence it is in
    pos_part = emb.pos_emb(mg.arange(T)).unsqueeze(0)  # (1, T, C): where it is
    total = tok_part + seg_part + pos_part  # (1, T, C)
    x = emb(idx, segments)  # LayerNorm(sum) (dropout is 0)
for name, part in (("token", tok_part), ("segment", seg_part), ("position", pos_part), ("sum", total),
                   ("LayerNorm(sum)", x)):
    print(f"  {name:15s} {part.shape}")
    assert part.shape == (1, T, C)
assert np.allclose(x.numpy(), F.layer_norm(total, (C,), emb.norm.weight, emb.norm.bias).numpy(), atol=1e-6)
seg = seg_part.numpy()[0]  # (T, C): one row per token, two distinct rows in all
assert np.allclose(seg[:8], seg[0]) and np.allclose(seg[8:], seg[8]) and not np.allclose(seg[0], seg[8])

# %% [markdown]
# The tables: `tok_emb` (V, C), `seg_emb` (2, C), `pos_emb` (block_size, C). Drawn for this pair
# (rows are the tokens, columns the 64 features, before any training): the token
# part differs row by row (and repeats where a word repeats: "the"), the segment part has two
# distinct rows, one per sentence, and the position part is new at every row. The sum carries
# all three; order and sentence are in the data, not in the architecture (Lecture 10's
# "Positional encoding").

# %%
if HAVE_MATPLOTLIB:
    import matplotlib.pyplot as plt

    parts = {"token": tok_part, "+ segment": seg_part, "+ position": pos_part, "= sum": total}
    lim = np.abs(total.numpy()).max()
    fig, axes = plt.subplots(1, 4, figsize=(10, 3.2), sharey=True, layout="constrained")
    for ax, (name, part) in zip(axes, parts.items()):
        image = ax.imshow(part.numpy()[0], cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_title(name)
        ax.set_xlabel("feature")
    axes[0].set_yticks(range(T), words, fontsize=7)
    fig.colorbar(image, ax=axes, shrink=0.8)
    show(fig, "embeddings")

# %% [markdown]
# ## 2. Masking: 15% selected, then 80 / 10 / 10
#
# `mask_tokens` selects each ordinary token with probability 0.15 (never `[CLS]`, `[SEP]`,
# `[PAD]` or `[UNK]`); of the selected, 80% become `[MASK]`, 10% a random word and 10% stay as
# they are. The labels hold the original id at the selected positions and -100 (ignored by
# the loss) elsewhere. Why not always `[MASK]`? `[MASK]` never occurs after pretraining: the
# model must also keep a good vector for words it sees unmasked, and cannot tell which of them
# are the ones it will be asked about. Measured on the 2,048 held-out pairs at once:

# %%
batch_idx, _ = recipe.encode_pairs(recipe.val_pairs)  # (2048, T)
inputs, labels = mask_tokens(batch_idx, tok, np.random.default_rng(0))  # (2048, T) each
ordinary = batch_idx >= len(tok.SPECIAL_TOKENS)  # words, not [PAD] [UNK] [CLS] [SEP] [MASK]
selected = labels != IGNORE
became_mask = inputs[selected] == tok.mask_id
became_random = (inputs[selected] != tok.mask_id) & (inputs[selected] != batch_idx[selected])
stayed = inputs[selected] == batch_idx[selected]
fractions = {"selected (of the ordinary tokens)": selected.sum() / ordinary.sum(),
             "-> [MASK]": became_mask.mean(), "-> a random word": became_random.mean(),
             "-> unchanged": stayed.mean()}
print(f"{ordinary.sum()} ordinary tokens, {selected.sum()} selected")
for name, value in fractions.items():
    print(f"  {name:35s} {value:.3f}")
assert not np.any(selected & ~ordinary) and np.array_equal(labels[selected], batch_idx[selected])
assert abs(fractions["selected (of the ordinary tokens)"] - 0.15) < 0.01
assert abs(fractions["-> [MASK]"] - 0.8) < 0.03
assert abs(fractions["-> a random word"] - 0.1) < 0.02 and abs(fractions["-> unchanged"] - 0.1) < 0.02

# %% [markdown]
# (A random word can be the original word by chance, 1 time in about a thousand here: it then
# counts as "unchanged".) One masked pair, the input the model sees against the original:

# %%
row = int(np.argmax(selected.sum(1) >= 3))  # a pair with at least three selected tokens
shown = [f"{tok.tokens[i]}" if not s else f"{tok.tokens[i]}<-{tok.tokens[o]}"
         for i, o, s in zip(inputs[row], batch_idx[row], selected[row]) if o != tok.pad_id]
print(" ".join(shown))

# %% [markdown]
# ## 3. The two heads
#
# * **Masked LM**: the encoder's vector at each selected position goes through
#   Linear -> GELU -> LayerNorm, then a score for every word of the vocabulary. The output
#   matrix *is* the token embedding (tied weights, as in BERT): a word scores high where the
#   vector points like its embedding.
# * **Next sentence**: the vector at `[CLS]`, which attends to the whole pair, goes through the
#   pooler (Linear + tanh) and a two-way classifier: IsNext (1) or NotNext (0).
#
# The loss is the sum of both cross-entropies. Untrained, it should be near `ln V + ln 2`: a
# uniform guess over the vocabulary plus a coin flip. It comes out a little higher, because
# random logits are not all equal: with a spread of about 1 (a unit-size vector against random
# rows of std 1 / sqrt(C)), the expected cross-entropy grows by about half their variance.

# %%
assert model.mlm_head.decoder.weight is model.embed.tok_emb.weight  # tied: one (V, C) matrix
mask_in, seg_in, label_in, is_next = recipe.batch("val", np.random.default_rng(1), 32)
with mg.no_grad():
    mlm_logits, nsp_logits = model(mask_in, seg_in)  # (B, T, V), (B, 2)
    picked, _ = model(mask_in, seg_in, positions=label_in.numpy() != IGNORE)  # (N, V): selected only
    loss0 = model.loss(mask_in, seg_in, label_in, is_next).item()
print(f"mlm logits {mlm_logits.shape}, at the selected positions only {picked.shape}; "
      f"nsp logits {nsp_logits.shape}")
print(f"untrained loss {loss0:.3f}; ln V + ln 2 = {math.log(tok.vocab_size) + math.log(2):.3f}")
B = mask_in.shape[0]
assert mlm_logits.shape == (B, mask_in.shape[1], tok.vocab_size) and nsp_logits.shape == (B, 2)
assert picked.shape == (int((label_in.numpy() != IGNORE).sum()), tok.vocab_size)
assert 0 < loss0 - (math.log(tok.vocab_size) + math.log(2)) < 1.0

# %% [markdown]
# ## 4. A short pretraining run
#
# 800 steps of 32 sentence pairs, drawn fresh from the training docstrings at every step, each
# masked anew: AdamW, warm-up then cosine (the shared loop's `make_optimizer`).

# %%
STEPS = 800
opt, sched = make_optimizer(model, TrainConfig(steps=STEPS, lr=2e-3, min_lr=2e-4, warmup=20,
                                               weight_decay=0.01))
data_rng = np.random.default_rng(0)
before = recipe.evaluate(8)  # held-out pairs: loss, masked-word accuracy, next-sentence accuracy
losses, t0 = [], time.perf_counter()
for _ in range(STEPS):
    loss = recipe.loss(recipe.batch("train", data_rng, 32))  # masked LM + next sentence
    opt.zero_grad()
    loss.backward()
    optim.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    losses.append(loss.item())
seconds = time.perf_counter() - t0
after = recipe.evaluate(8)
print(f"{STEPS} steps in {seconds:.1f} s")
for key in ("val_loss", "mlm_acc", "mlm_baseline", "nsp_acc"):
    print(f"  {key:13s} {before[key]:.3f} -> {after[key]:.3f}")
assert after["val_loss"] < before["val_loss"] - 0.5
assert after["mlm_acc"] > after["mlm_baseline"] + 0.05  # better than always guessing the commonest word
assert after["nsp_acc"] > 0.55  # better than a coin flip (256 held-out pairs)

# %% [markdown]
# The masked-word accuracy is well above the baseline of always guessing the most frequent
# word ("the"), and next sentence prediction above the coin flip's 50%: both heads have begun
# to use the context. Both are far from BERT's: a word-level model of this size guesses
# mostly the common words, and the README's 3,000-step run of the larger "quick" preset
# reaches 26.0% of masked words and about 70% of next sentences. (Later work, RoBERTa, found
# next sentence prediction could be dropped altogether.)

# %%
if HAVE_MATPLOTLIB:
    fig, ax = plt.subplots(figsize=(5, 2.6), layout="constrained")
    ax.plot(losses, lw=0.6, label="masked LM + next sentence (one batch)")
    ax.plot(np.arange(19, STEPS), np.convolve(losses, np.ones(20) / 20, mode="valid"), label="mean of 20")
    ax.axhline(math.log(tok.vocab_size) + math.log(2), color="gray", ls=":", label="ln V + ln 2")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend(fontsize=7)
    show(fig, "pretraining_loss")

# %% [markdown]
# What the masked-LM head guesses for a hidden word: common words that fit the grammar, not
# yet the one a reader would pick. A model this small and this briefly trained knows little.

# %%
for masked_sentence in ("Return the [MASK] of the file.", "If the [MASK] is not found, raise an error."):
    (guesses,) = recipe.fill_mask(masked_sentence, top_k=5)
    print(f"{masked_sentence!r}: " + ", ".join(f"{w} {p:.2f}" for w, p in guesses))

# %% [markdown]
# ## 5. Contextual: one word, two vectors
#
# Word2Vec and GloVe give "return" one vector, whatever the sentence. BERT's vector for a token
# is the encoder's output at its position, computed by attending to every other token of the
# input. Put "return" at the same position (1, right after `[CLS]`) of two sentences, once a
# verb and once part of a noun, so that its token, segment and position embeddings, and hence
# its input vector, are identical; then compare its vectors layer by layer.


# %%
def vectors_by_layer(sentence: str) -> list[np.ndarray]:
    """The vectors of every token of "[CLS] sentence [SEP]": the input embedding, then each layer's output."""
    ids = np.array([[tok.cls_id, *tok.encode(sentence), tok.sep_id]])  # (1, T)
    model.eval()
    with mg.no_grad():
        h = model.embed(ids, np.zeros_like(ids))  # (1, T, C)
        out = [h.numpy()[0]]
        for layer in model.encoder.layers:
            h = layer(h)  # (1, T, C); no padding here, so no mask
            out.append(h.numpy()[0])
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


sentences = {"verb": "return the list of names .", "noun": "return value of the call is ignored .",
             "verb again": "return the name of the file ."}
vectors = {kind: vectors_by_layer(s) for kind, s in sentences.items()}
static = model.embed.tok_emb.weight.numpy()[tok.encode("return")[0]]  # the one static vector
print(f"static embedding of 'return' in both sentences: cosine {cosine(static, static):.3f}")
for depth in range(len(model.encoder.layers) + 1):
    name = "input (token + segment + position)" if depth == 0 else f"after encoder layer {depth}"
    print(f"  {name:35s} verb vs noun: {cosine(vectors['verb'][depth][1], vectors['noun'][depth][1]):.3f}"
          f"   verb vs verb: {cosine(vectors['verb'][depth][1], vectors['verb again'][depth][1]):.3f}")
contextual = cosine(vectors["verb"][-1][1], vectors["noun"][-1][1])
assert np.allclose(vectors["verb"][0][1], vectors["noun"][0][1])  # same word, same position: same input
assert contextual < 0.999  # ... but a different vector once the encoder has read the context

# %% [markdown]
# The input vectors are the same; the layer mixes in the other tokens (the notes: "context now
# changes each token vector"), so the output vectors differ, and the static embedding cannot
# tell the two uses apart at all. The differences are small here: one layer, briefly trained,
# whose residual connection carries the word's own vector through. In this run the two verb
# uses stay closer to each other than the verb and the noun; with more layers and training the
# vectors of a word come to separate by sense, which is what makes BERT's vectors useful.

# %% [markdown]
# ## 6. Fine-tuning: pretrained against from scratch
#
# BERT's recipe: keep the pretrained encoder, put a small new layer on the `[CLS]` vector (after
# the pretrained pooler), and train everything on a labelled task for a few steps. Our task,
# built from the same docstrings: **is a sentence the first one of its docstring (the summary
# line) or a later one?** Summary lines have a style of their own ("Return the ...",
# "Create a ..."), so the task is learnable, but not from a single word. The labelled
# sentences come from the training docstrings (200 of them) and the test sentences (300) from
# the held-out ones. The same model, the same steps and the same batches, once starting from
# the pretrained weights and once from fresh ones.

# %%
from minigrad.models.data import sentences as split_sentences  # noqa: E402
from minigrad.models.data import split_docstrings, stdlib_corpus, train_val_split  # noqa: E402


def summary_line_task(text: str, n: int, rng: np.random.Generator) -> list[tuple[str, int]]:
    """n (sentence, label) pairs from the docstrings of `text`: label 1 for a docstring's first
    sentence, 0 for one of its later sentences, half and half."""
    docs = [s for s in (split_sentences(d) for d in split_docstrings(text)) if len(s) >= 2]
    out = []
    for i in rng.permutation(len(docs)):
        first = rng.random() < 0.5
        sentence = docs[i][0 if first else int(rng.integers(1, len(docs[i])))]
        if 4 <= len(sentence.split()) <= 30:
            out.append((sentence, int(first)))
        if len(out) == n:
            return out
    raise ValueError(f"only {len(out)} sentences")


train_text, val_text = train_val_split(stdlib_corpus())  # the split the pretraining used
task_rng = np.random.default_rng(0)
task_train = summary_line_task(train_text, 200, task_rng)
task_test = summary_line_task(val_text, 300, task_rng)
for sentence, label in task_test[:4]:
    print(f"  {'summary' if label else 'later  '}  {sentence[:90]!r}")


def encode_sentences(texts: list[str]) -> np.ndarray:
    """ "[CLS] sentence [SEP]" for each, cut to block_size and padded: (B, T) ids."""
    rows = [[tok.cls_id, *tok.encode(s)[: config.block_size - 2], tok.sep_id] for s in texts]
    ids = np.full((len(rows), max(map(len, rows))), tok.pad_id, dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
    return ids


class SentenceClassifier(nn.Module):
    """BERT's encoder, its pooler on the [CLS] vector, and a new linear layer."""

    def __init__(self, bert: BERT, num_classes: int):
        self.bert = bert
        self.classifier = nn.Linear(bert.config.embed_dim, num_classes)

    def forward(self, ids: np.ndarray):
        pad = nn.padding_mask(ids, pad=tok.pad_id)  # (B, 1, 1, T)
        x = self.bert.encoder(self.bert.embed(ids, np.zeros_like(ids)), attend_mask=pad)  # (B, T, C)
        pooled = self.bert.nsp_head.act(self.bert.nsp_head.pooler(x[:, 0]))  # (B, C): [CLS]
        return self.classifier(pooled)  # (B, num_classes)


def fine_tune(bert: BERT, steps: int = 100) -> tuple[float, list[float]]:
    """Train `bert` and a new classifier on task_train; returns the test accuracy and the losses."""
    mg.manual_seed(1)  # the same new layer for both runs
    clf = SentenceClassifier(bert, 2)
    opt, sched = make_optimizer(clf, TrainConfig(steps=steps, lr=1e-3, min_lr=1e-4, warmup=10,
                                                 weight_decay=0.01))
    rng = np.random.default_rng(1)  # the same batches for both runs
    curve = []
    clf.train()
    for _ in range(steps):
        batch = [task_train[i] for i in rng.integers(0, len(task_train), size=32)]
        loss = F.cross_entropy(clf(encode_sentences([s for s, _ in batch])),
                               mg.tensor(np.array([y for _, y in batch])))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        curve.append(loss.item())
    clf.eval()
    with mg.no_grad():
        guess = clf(encode_sentences([s for s, _ in task_test])).numpy().argmax(-1)
    return float(np.mean(guess == np.array([y for _, y in task_test]))), curve


fresh = BERT(config)
for _, p in fresh.named_parameters():  # the same initialisation as the pretrained model had
    if p.ndim == 2:
        nn.init.normal_(p, std=config.embed_dim ** -0.5)
t0 = time.perf_counter()
acc_pretrained, curve_pretrained = fine_tune(model)
acc_scratch, curve_scratch = fine_tune(fresh)
print(f"fine-tuned in {time.perf_counter() - t0:.1f} s; "
      f"test accuracy on {len(task_test)} held-out sentences:")
print(f"  from the pretrained encoder: {acc_pretrained:.1%}")
print(f"  from scratch:                {acc_scratch:.1%}")
print(f"  always 'summary':            {np.mean([y for _, y in task_test]):.1%}")
assert acc_pretrained > 0.6 and acc_scratch > 0.6  # both learn the task
assert acc_pretrained > acc_scratch  # pretraining helps, even this little of it

# %% [markdown]
# The pretrained encoder fine-tunes to a better classifier than the same model trained from
# scratch on the same 200 labelled sentences: what it learnt from unlabelled text (which words
# go together, what a sentence pair looks like) carries over. The gain comes from a few
# seconds of pretraining (a run of 300 steps of a two-layer model gave none), and it grows
# with pretraining: that is the whole bet of BERT, days of self-supervised pretraining once,
# then a cheap fine-tuning for each task. Pretraining matters most when labels are few; with
# many, a model trained from scratch catches up.
#
# The fine-tuning losses of both runs:

# %%
if HAVE_MATPLOTLIB:
    fig, ax = plt.subplots(figsize=(5, 2.6), layout="constrained")
    for curve, label in ((curve_pretrained, f"from the pretrained encoder: {acc_pretrained:.0%}"),
                         (curve_scratch, f"from scratch: {acc_scratch:.0%}")):
        ax.plot(np.convolve(curve, np.ones(10) / 10, mode="valid"), label=label)
    ax.set_xlabel("fine-tuning step")
    ax.set_ylabel("cross-entropy (mean of 10)")
    ax.set_title("test accuracy in the legend", fontsize=8)
    ax.legend(fontsize=7)
    show(fig, "fine_tuning")
