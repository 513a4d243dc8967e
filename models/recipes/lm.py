"""Character-level language modelling with GPT, on the standard library's docstrings or on
the user's own text file."""

from __future__ import annotations

import math
import os
from dataclasses import asdict

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad import Tensor

from ..data import CharTokenizer, load_text, stdlib_corpus, tokenizer_from_dict, train_val_split
from ..gpt import GPT, PRESETS, GPTConfig
from . import Recipe, check_preset

# Sequences per validation batch: eval_batches * EVAL_BATCH windows of block_size characters,
# the same for every preset, so val_loss of two runs compares on the same text.
EVAL_BATCH = 16


class GPTRecipe(Recipe):
    name = "gpt"
    config_class = GPTConfig
    presets = PRESETS
    train_presets = {
        "tiny": dict(steps=200, batch_size=8, lr=3e-3, warmup=20, eval_every=100, eval_batches=5),
        "quick": dict(steps=2000, batch_size=16, lr=3e-3, min_lr=3e-4, warmup=100, eval_every=500),
        "small": dict(steps=2000, batch_size=12, lr=2e-3, min_lr=2e-4, warmup=100, eval_every=500),
    }

    def __init__(self, preset: str = "quick", data: str | None = None, *, config: GPTConfig | None = None,
                 tokenizer: CharTokenizer | None = None, load_data: bool = True):
        check_preset(type(self), preset)
        # The absolute path: eval and --resume find the text from any folder.
        self.data_path = os.path.abspath(data) if data else None
        if not load_data:  # sampling and drawing need only the tokenizer and the weights
            if tokenizer is None or config is None:
                raise ValueError("GPTRecipe: load_data=False needs the tokenizer and the config")
            self.tokenizer, self.config = tokenizer, config
            self.train_ids = self.val_ids = np.zeros(0, dtype=np.int64)
            self.model = GPT(self.config)
            return
        text = load_text(data) if data else stdlib_corpus()
        self.tokenizer = tokenizer or CharTokenizer.from_text(text)
        train, val = train_val_split(text)
        self.train_ids = np.array(self.tokenizer.encode(train), dtype=np.int64)
        self.val_ids = np.array(self.tokenizer.encode(val), dtype=np.int64)
        self.config = config or GPTConfig(vocab_size=self.tokenizer.vocab_size, **PRESETS[preset])
        need = self.config.block_size + 2  # a batch reads T + 1 characters from some start
        if min(len(self.train_ids), len(self.val_ids)) < need:
            where = data or "the standard library's docstrings"
            raise ValueError(
                f"gpt: {where} has {len(text)} characters, split into {len(train)} to train on and "
                f"{len(val)} to validate on (the last 10%); each part needs at least {need} for a "
                f"context of {self.config.block_size} characters: give a text of at least "
                f"{math.ceil(need / 0.08)} characters"
            )
        self.model = GPT(self.config)

    def meta(self) -> dict:
        return {"config": asdict(self.config), "tokenizer": self.tokenizer.to_dict(), "data": self.data_path}

    @classmethod
    def from_meta(cls, meta: dict, load_data: bool = True) -> GPTRecipe:
        return cls(data=meta["data"], config=GPTConfig(**meta["config"]),
                   tokenizer=tokenizer_from_dict(meta["tokenizer"]), load_data=load_data)

    def data_summary(self) -> str:
        where = self.data_path or "the standard library's docstrings"
        return (f"data: {where}, {len(self.train_ids):,} characters to train on, "
                f"{len(self.val_ids):,} to validate on")

    def metric_notes(self) -> dict[str, str]:
        # Guessing each of the V characters with probability 1/V costs ln V nats per character.
        V = self.tokenizer.vocab_size
        return {"val_loss": f"a uniform guess over the {V} characters: {math.log(V):.2f}"}

    def batch(self, split: str, rng: np.random.Generator, batch_size: int) -> tuple[Tensor, Tensor]:
        ids = self.train_ids if split == "train" else self.val_ids
        T = self.config.block_size
        starts = rng.integers(0, len(ids) - T - 1, size=batch_size)
        x = np.stack([ids[s:s + T] for s in starts])  # (B, T)
        y = np.stack([ids[s + 1:s + T + 1] for s in starts])  # (B, T): the next characters
        return mg.tensor(x), mg.tensor(y)

    def loss(self, batch: tuple[Tensor, Tensor]) -> Tensor:
        return self.model.loss(*batch)

    def evaluate(self, num_batches: int) -> dict[str, float]:
        rng = np.random.default_rng(0)  # the same validation batches every time
        with nn.evaluating(self.model), mg.no_grad():
            losses = [self.loss(self.batch("val", rng, EVAL_BATCH)).item() for _ in range(num_batches)]
        return {"val_loss": float(np.mean(losses))}

    def sample(self, prompt: str = "\n", max_new_tokens: int = 200, temperature: float = 0.8,
               top_k: int | None = None) -> str:
        if not prompt:
            raise ValueError("sample: the prompt is empty")
        idx = np.array([self.tokenizer.encode(prompt)], dtype=np.int64)
        out = self.model.generate(idx, max_new_tokens, temperature=temperature, top_k=top_k)
        return self.tokenizer.decode(out[0].tolist())

    def demo(self) -> str:
        # Start from the first words of the validation text: its characters are in the vocabulary.
        prompt = self.tokenizer.decode(self.val_ids[:12].tolist())
        return "sample:\n" + self.sample(prompt, max_new_tokens=200)
