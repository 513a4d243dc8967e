"""Masked-word and next-sentence pretraining of BERT, word level, on sentence pairs from the
standard library's docstrings or from the user's own text file (documents at blank lines)."""

from __future__ import annotations

import os
from dataclasses import asdict

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

from ..bert import BERT, IGNORE, PRESETS, BERTConfig, mask_tokens, truncate_pair
from ..data import (
    WordTokenizer,
    load_text,
    nsp_pairs,
    split_docstrings,
    stdlib_corpus,
    tokenizer_from_dict,
    train_val_split,
)
from . import Recipe, check_preset

# Data side of each preset: the vocabulary cap.
MAX_VOCAB = {"tiny": 1000, "quick": 4000}
# `nsp_pairs` splits every document it is given into sentences, too slow to do for the whole
# corpus at every step; a batch draws its pairs from this many random documents instead. Both
# kinds of pair still pick their documents uniformly, so the distribution is the same.
DOCS_PER_BATCH = 256
VAL_PAIRS = 2048
EVAL_BATCH = 32


class BERTRecipe(Recipe):
    name = "bert"
    config_class = BERTConfig
    presets = PRESETS
    train_presets = {
        "tiny": dict(steps=100, batch_size=16, lr=2e-3, min_lr=2e-4, warmup=10, eval_every=50,
                     eval_batches=2),
        "quick": dict(steps=3000, batch_size=32, lr=2e-3, min_lr=2e-4, warmup=200, weight_decay=0.01,
                      eval_every=500, eval_batches=32),
    }

    def __init__(self, preset: str = "quick", data: str | None = None, *, config: BERTConfig | None = None,
                 tokenizer: WordTokenizer | None = None, load_data: bool = True):
        check_preset(type(self), preset)
        # The absolute path: eval and --resume find the text from any folder.
        self.preset, self.data_path = preset, os.path.abspath(data) if data else None
        if not load_data:  # drawing attention needs only the tokenizer and the weights
            if tokenizer is None or config is None:
                raise ValueError("BERTRecipe: load_data=False needs the tokenizer and the config")
            self.tokenizer, self.config = tokenizer, config
            self.train_docs, self.val_pairs, self.most_frequent = [], [], 0
            self.model = BERT(self.config)
            return
        text = load_text(data) if data else stdlib_corpus()
        train, val = train_val_split(text)
        self.tokenizer = tokenizer or WordTokenizer.from_text(train, max_vocab=MAX_VOCAB[preset])
        tok = self.tokenizer
        self.config = config or BERTConfig(vocab_size=tok.vocab_size, pad_id=tok.pad_id, **PRESETS[preset])
        self.train_docs = split_docstrings(train)
        try:
            nsp_pairs(self.train_docs, 1, np.random.default_rng(0))  # the text can give pairs at all
            # A fixed generator: the same held-out pairs (from held-out text) on every run.
            self.val_pairs = nsp_pairs(split_docstrings(val), VAL_PAIRS, np.random.default_rng(1))
        except ValueError as e:
            raise ValueError(f"bert: {e}; the text needs documents separated by blank lines, in both "
                             "its first 90% (training) and its last 10% (validation)") from None
        counts = np.bincount(tok.encode(train), minlength=tok.vocab_size)
        counts[: len(tok.SPECIAL_TOKENS)] = 0  # specials are never prediction targets
        self.most_frequent = int(counts.argmax())  # the baseline's one guess
        self.model = BERT(self.config)

    def meta(self) -> dict:
        return {"config": asdict(self.config), "tokenizer": self.tokenizer.to_dict(), "data": self.data_path,
                "preset": self.preset}

    @classmethod
    def from_meta(cls, meta: dict, load_data: bool = True) -> BERTRecipe:
        return cls(meta["preset"], data=meta["data"], config=BERTConfig(**meta["config"]),
                   tokenizer=tokenizer_from_dict(meta["tokenizer"]), load_data=load_data)

    def data_summary(self) -> str:
        where = self.data_path or "the standard library's docstrings"
        return (f"data: {where}, {len(self.train_docs):,} documents to train on, "
                f"{len(self.val_pairs):,} held-out sentence pairs")

    # ------------------------------------------------------------------ batches

    def encode_pairs(self, pairs: list[tuple[str, str, int]]) -> tuple[np.ndarray, np.ndarray]:
        """"[CLS] A [SEP] B [SEP]" for each pair, cut to block_size and padded to the longest:
        token ids (B, T) and segment ids (B, T) (0 for [CLS] A [SEP], 1 for B [SEP], 0 at pads)."""
        tok = self.tokenizer
        rows = []
        for a, b, _ in pairs:
            a, b = truncate_pair(tok.encode(a), tok.encode(b), self.config.block_size - 3)
            rows.append(([tok.cls_id, *a, tok.sep_id, *b, tok.sep_id], len(a) + 2))
        T = max(len(ids) for ids, _ in rows)
        idx = np.full((len(rows), T), tok.pad_id, dtype=np.int64)
        segments = np.zeros((len(rows), T), dtype=np.int64)
        for i, (ids, len_a) in enumerate(rows):
            idx[i, : len(ids)] = ids
            segments[i, len_a : len(ids)] = 1
        return idx, segments

    def _batch_of(self, pairs: list, rng: np.random.Generator) -> tuple[Tensor, ...]:
        idx, segments = self.encode_pairs(pairs)  # (B, T), (B, T)
        inputs, labels = mask_tokens(idx, self.tokenizer, rng)  # (B, T), (B, T)
        is_next = np.array([label for _, _, label in pairs], dtype=np.int64)  # (B,)
        return mg.tensor(inputs), mg.tensor(segments), mg.tensor(labels), mg.tensor(is_next)

    def batch(self, split: str, rng: np.random.Generator, batch_size: int) -> tuple[Tensor, ...]:
        if split != "train":
            picks = rng.integers(0, len(self.val_pairs), size=batch_size)
            return self._batch_of([self.val_pairs[i] for i in picks], rng)
        some = rng.choice(len(self.train_docs), size=min(DOCS_PER_BATCH, len(self.train_docs)), replace=False)
        try:
            pairs = nsp_pairs([self.train_docs[i] for i in some], batch_size, rng)
        except ValueError:  # a text with few multi-sentence documents: draw from all of them
            pairs = nsp_pairs(self.train_docs, batch_size, rng)
        return self._batch_of(pairs, rng)

    def loss(self, batch: tuple[Tensor, ...]) -> Tensor:
        return self.model.loss(*batch)

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, num_batches: int) -> dict[str, float]:
        """Loss and accuracies on held-out pairs, the same pairs and masks every time.

        mlm_acc is the share of selected positions whose original word is the top guess;
        mlm_baseline the share that always guessing the training text's most frequent word
        gets on the same positions; nsp_acc the share of pairs classified right."""
        rng = np.random.default_rng(0)
        losses, hits, base, picked, nsp_hits, pairs_seen = [], 0, 0, 0, 0, 0
        with nn.evaluating(self.model), mg.no_grad():
            for i in range(num_batches):
                start = (i * EVAL_BATCH) % len(self.val_pairs)
                inputs, segments, labels, is_next = self._batch_of(
                    self.val_pairs[start : start + EVAL_BATCH], rng)
                selected = labels._data != IGNORE  # (B, T)
                mlm_logits, nsp_logits = self.model(inputs, segments, positions=selected)  # (N, V), (B, 2)
                targets = labels._data[selected]  # (N,)
                loss = F.cross_entropy(mlm_logits, targets) + F.cross_entropy(nsp_logits, is_next)
                losses.append(loss.item())
                hits += int((mlm_logits._data.argmax(-1) == targets).sum())
                base += int((targets == self.most_frequent).sum())
                picked += targets.size
                nsp_hits += int((nsp_logits._data.argmax(-1) == is_next._data).sum())
                pairs_seen += len(is_next._data)
        return {"val_loss": float(np.mean(losses)), "mlm_acc": hits / max(picked, 1),
                "mlm_baseline": base / max(picked, 1), "nsp_acc": nsp_hits / max(pairs_seen, 1)}

    # ------------------------------------------------------------------ demo

    def fill_mask(self, text: str, top_k: int = 3) -> list[list[tuple[str, float]]]:
        """The top_k words (with probabilities) for each "[MASK]" in `text`, read as one sentence."""
        tok = self.tokenizer
        pieces = [tok.encode(p) for p in text.split("[MASK]")]
        ids = [tok.cls_id, *pieces[0]]
        for piece in pieces[1:]:
            ids += [tok.mask_id, *piece]
        ids = np.array([ids[: self.config.block_size - 1] + [tok.sep_id]], dtype=np.int64)  # (1, T)
        with nn.evaluating(self.model), mg.no_grad():
            logits, _ = self.model(ids, positions=ids == tok.mask_id)  # (M, V), M masks
        logits = logits._data.astype(np.float64)
        logits[:, : len(tok.SPECIAL_TOKENS)] = -np.inf  # guess words only
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        best = np.argsort(-p, axis=-1)[:, :top_k]
        return [[(tok.tokens[j], float(p[m, j])) for j in row] for m, row in enumerate(best)]

    def demo(self) -> str:
        """Hide about one word in six of two held-out sentences and show the model's guesses."""
        tok, rng = self.tokenizer, np.random.default_rng(0)
        lines = []
        shown = [a for a, _, _ in self.val_pairs if 8 <= len(tok.encode(a)) <= 20
                 and tok.unk_id not in tok.encode(a)][:2]
        for sentence in shown:
            words = tok.tokenize(sentence)
            hide = rng.choice(len(words), size=max(1, len(words) // 6), replace=False)
            masked = " ".join("[MASK]" if i in hide else w for i, w in enumerate(words))
            lines += [f"input:  {masked}", f"truth:  {' '.join(words)}"]
            for i, guesses in zip(sorted(hide), self.fill_mask(masked)):
                lines.append(f"  {words[i]!r}: " + ", ".join(f"{w} {p:.2f}" for w, p in guesses))
        return "\n".join(lines)
