"""Image captioning with attention (Captioner) on pictures of two digits and their relation:
"seven left of two", "three above five" (models/data/captions.py).

Training pictures are made fresh at every step from the digits' training drawings, of the pairs
not held out; the test set is TEST_SIZE fixed pictures from the test drawings, half of seen pairs
and half of held-out ones, interleaved, so the first n of them hold as many of each.
"""

from __future__ import annotations

import os
from dataclasses import asdict

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad import Tensor

from ..caption import CaptionConfig, Captioner
from ..data.captions import (
    CAPTION_VOCAB,
    CaptionData,
    CaptionSet,
    attention_share,
    bleu,
    encode_captions,
    word_accuracy,
)
from . import Recipe, check_preset

TEST_SIZE = 1000  # held-out pictures (the quality figures use all of them)
TEST_SEED = 0
EVAL_BATCH = 50  # evaluate(num_batches) looks at num_batches * EVAL_BATCH test pictures
MAX_LEN = 6  # the longest caption is 4 words and EOS
SHADES = " .:-=+*#%@"  # pixel intensity 0..1 as ASCII, light to dark


class CaptionRecipe(Recipe):
    name = "caption"
    config_class = CaptionConfig
    presets = {
        "tiny": dict(channels=(8, 8), feature_dim=16, embed_dim=8, hidden_size=16, attention_dim=8),
        "quick": dict(channels=(16, 32), feature_dim=64, embed_dim=32, hidden_size=128, attention_dim=64),
    }
    train_presets = {
        "tiny": dict(steps=20, batch_size=8, lr=1e-2, warmup=5, eval_every=10, eval_batches=1),
        "quick": dict(steps=1200, batch_size=32, lr=3e-3, min_lr=1e-4, warmup=50, weight_decay=0.01,
                      eval_every=400, eval_batches=20),
    }

    def __init__(self, preset: str = "quick", data: str | None = None, *, config: CaptionConfig | None = None,
                 holdout_seed: int = 0):
        check_preset(type(self), preset)
        if data is not None:
            raise ValueError("caption trains on generated pictures of the bundled digits; "
                             "it takes no --data file")
        self.config = config or CaptionConfig(vocab_size=CAPTION_VOCAB.vocab_size, **self.presets[preset])
        self.holdout_seed = holdout_seed
        self.data = CaptionData(self.config.image_height, self.config.image_width, holdout_seed)
        self.model = Captioner(self.config)
        seen = self.data.make(TEST_SIZE // 2, "test", seed=TEST_SEED)
        unseen = self.data.make(TEST_SIZE // 2, "test", seed=TEST_SEED + 1, seen=False)
        half = np.arange(TEST_SIZE // 2)
        self.test = _join(seen, unseen).take(np.stack([half, half + len(half)], axis=1).reshape(-1))

    def meta(self) -> dict:
        return {"config": asdict(self.config), "holdout_seed": self.holdout_seed,
                "vocab": CAPTION_VOCAB.tokens}

    @classmethod
    def from_meta(cls, meta: dict, load_data: bool = True) -> CaptionRecipe:  # the pictures are generated
        if meta["vocab"] != CAPTION_VOCAB.tokens:
            raise ValueError("this caption checkpoint was trained with another vocabulary")
        return cls(config=CaptionConfig(**meta["config"]), holdout_seed=meta["holdout_seed"])

    def data_summary(self) -> str:
        d = self.data
        return (f"pictures {d.height} x {d.width} of two digits; {len(d.seen_pairs)} digit pairs to "
                f"train on, {len(d.unseen_pairs)} held out; {len(self.test)} test pictures "
                "(half of them of held-out pairs)")

    def batch(self, split: str, rng: np.random.Generator, batch_size: int) -> tuple[Tensor, Tensor, Tensor]:
        """(images (B, 1, H, W), tgt_in (B, T), tgt_out (B, T)): BOS + caption, caption + EOS."""
        if split == "train":
            part = self.data.make(batch_size, "train", seed=int(rng.integers(2**62)))
        else:
            part = self.test.take(rng.integers(0, len(self.test), size=batch_size))
        return _tensors(part)

    def loss(self, batch: tuple[Tensor, Tensor, Tensor]) -> Tensor:
        return self.model.loss(*batch)

    def evaluate(self, num_batches: int = 20) -> dict[str, float]:
        """On the first num_batches * EVAL_BATCH test pictures (all from 20 on): the teacher-
        forced val_loss; for the greedy captions the exact match (all, seen and unseen pairs),
        the per-word accuracy, BLEU-2 (the captions are 3 or 4 words) and the attention share
        (the mean weight a digit word puts on the cells of its digit's box)."""
        test = self.test.take(slice(0, max(1, min(len(self.test), num_batches * EVAL_BATCH))))
        losses, ids, weights = [], np.full((len(test), MAX_LEN), CAPTION_VOCAB.pad_id), []
        with nn.evaluating(self.model), mg.no_grad():
            for i in range(0, len(test), EVAL_BATCH):
                part = test.take(slice(i, i + EVAL_BATCH))
                losses.append(self.loss(_tensors(part)).item() * len(part))
                # (b, L), L <= MAX_LEN, and (b, L, N)
                out, w = self.model.greedy_decode(part.images, MAX_LEN, return_attention=True)
                ids[i:i + len(part), :out.shape[1]] = out
                weights.append(np.pad(w, ((0, 0), (0, MAX_LEN - w.shape[1]), (0, 0))))  # (b, MAX_LEN, N)
        outputs = [CAPTION_VOCAB.decode(row) for row in ids]
        right = np.array([o == t for o, t in zip(outputs, test.captions)])
        share = attention_share(np.concatenate(weights), ids, test.boxes, test.images.shape[2:],
                                self.config.grid)
        bleu2 = [bleu(o.split(), t.split(), max_n=2) for o, t in zip(outputs, test.captions)]
        return {
            "val_loss": float(np.sum(losses) / len(test)),
            "exact_match": float(right.mean()),
            "exact_match_seen": float(right[test.seen].mean()) if test.seen.any() else float("nan"),
            "exact_match_unseen": float(right[~test.seen].mean()) if (~test.seen).any() else float("nan"),
            "word_accuracy": word_accuracy(outputs, test.captions),
            "bleu2": float(np.mean(bleu2)),
            "attention_share": share,
        }

    def captions(self, images: np.ndarray, beam_size: int = 1) -> list[str]:
        return self.model.caption(images, CAPTION_VOCAB, MAX_LEN, beam_size)

    def demo(self, count: int = 4) -> str:
        """The first `count` test pictures as ASCII art, each with its caption."""
        return self._show(np.arange(count))

    def sample_images(self, count: int = 4, seed: int = 0) -> str:
        """`count` test pictures picked with `seed` (what `minigrad sample` prints), greedy and
        beam-search (4 beams) captions."""
        picked = np.random.default_rng(seed).choice(len(self.test), size=count, replace=False)
        return self._show(picked, beam=4)

    def _show(self, idx: np.ndarray, beam: int = 0) -> str:
        part = self.test.take(idx)
        images = part.images[:, 0]  # (n, H, W)
        levels = np.minimum((images * len(SHADES)).astype(int), len(SHADES) - 1)
        rows = ["  ".join("".join(SHADES[v] for v in img[r]) for img in levels).rstrip()
                for r in range(images.shape[1])]
        greedy = self.captions(part.images)
        beamed = self.captions(part.images, beam_size=beam) if beam else greedy
        for k, (i, out, out_beam, true) in enumerate(zip(idx, greedy, beamed, part.captions)):
            pair = "seen pair" if part.seen[k] else "held-out pair"
            verdict = "ok" if out == true else f"(true {true!r})"
            line = f"{k + 1}. test picture {i} ({pair}): {out!r} {verdict}"
            rows.append(line + (f"; beam {beam}: {out_beam!r}" if beam else ""))
        return "\n".join(rows)

    def plot_attention(self, out: str, index: int = 0) -> tuple[list[str], list[str]]:
        """Draw test picture `index` once per generated word, with the word's attention over
        it (the Show, Attend and Tell figure), to `out`. Returns the attention modules drawn
        and a note with the caption, as `minigrad attention` prints them."""
        if not 0 <= index < len(self.test):
            raise ValueError(f"--index {index} is not a test picture: choose 0 to {len(self.test) - 1}")
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ImportError("plotting needs matplotlib: pip install 'minigrad[plot]'") from None
        image = self.test.images[index:index + 1]  # (1, 1, H, W)
        ids = self.model.generate(image, MAX_LEN)  # (1, L)
        ends = np.flatnonzero(ids[0] == CAPTION_VOCAB.eos_id)
        ids = ids[:, :ends[0] + 1] if len(ends) else ids  # through the EOS
        with nn.record_attention(self.model) as maps:
            weights = self.model.attention(image, ids)[0]  # (L, N)
        h, w = self.config.grid
        H, W = image.shape[2:]
        words = [CAPTION_VOCAB.tokens[i] for i in ids[0]]
        fig = Figure(figsize=(1.8 * (len(words) + 1), 2.2), layout="constrained")
        axes = fig.subplots(1, len(words) + 1)
        axes[0].imshow(image[0, 0], cmap="gray_r", vmin=0, vmax=1)
        axes[0].set_title("picture", fontsize=9)
        for ax, word, wt in zip(axes[1:], words, weights):
            ax.imshow(image[0, 0], cmap="gray_r", vmin=0, vmax=1)
            ax.imshow(wt.reshape(h, w), cmap="inferno", alpha=0.6, extent=(-0.5, W - 0.5, H - 0.5, -0.5),
                      vmin=0, vmax=max(float(wt.max()), 1e-6), interpolation="bilinear")
            ax.set_title(word, fontsize=9)
        for ax in axes:
            ax.set_xticks([])
            ax.set_yticks([])
        caption = CAPTION_VOCAB.decode(ids[0])
        fig.suptitle(f"test picture {index}: {caption!r} (true {self.test.captions[index]!r})", fontsize=9)
        folder = os.path.dirname(out)
        if folder:
            os.makedirs(folder, exist_ok=True)
        fig.savefig(out, dpi=120)
        return maps.names(), [f"caption: {caption!r}; true: {self.test.captions[index]!r}"]


def _tensors(part: CaptionSet) -> tuple[Tensor, Tensor, Tensor]:
    ids = encode_captions(part.captions)  # (B, T + 1): BOS, words, EOS, PAD...
    return mg.tensor(part.images), mg.tensor(ids[:, :-1]), mg.tensor(ids[:, 1:])


def _join(a: CaptionSet, b: CaptionSet) -> CaptionSet:
    return CaptionSet(np.concatenate([a.images, b.images]), a.captions + b.captions,
                      np.concatenate([a.boxes, b.boxes]), np.concatenate([a.pairs, b.pairs]),
                      np.concatenate([a.seen, b.seen]))
