"""Sequence-to-sequence tasks (copy, reverse, sort, addition, dates) for the encoder-decoder
transformer; `TaskRecipe` is what it shares with the RNN encoder-decoder (translate_rnn.py):
the generated data, the teacher-forced loss and the exact-match evaluation by greedy decoding."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad import Tensor

from ..data import SEQ_VOCAB, TaskTokenizer, encode_pairs, make_examples
from ..seq2seq import Seq2Seq, Seq2SeqConfig
from . import Recipe, check_preset

TEST_SIZE = 1000  # held-out examples of the "test" split (the quality figures use all of them)
TEST_SEED = 0
EVAL_BATCH = 50  # evaluate(num_batches) looks at num_batches * EVAL_BATCH of the test examples
DECODE_BATCH = 250  # sources translate() decodes at once: bounds the activations of one decode


class TaskRecipe(Recipe):
    """An encoder-decoder on one synthetic task of `minigrad.models.data`.

    Training batches are drawn fresh from the task's "train" split at every step (a seed
    from the loop's generator, so a resumed run sees the same batches); evaluation uses
    TEST_SIZE fixed examples of the "test" split, whose sources never occur in training.
    A subclass sets `config_class` and `model_class`; the model offers
    `loss(src, tgt_in, tgt_out)` and `greedy_decode(src, max_len)`.

    A preset is a dict of config fields plus "task", the name of the task.
    """

    config_class: type
    model_class: type

    def __init__(self, preset: str | None = None, data: str | None = None, *, config: Any = None,
                 task: str | None = None):
        preset = preset or self.default_preset
        check_preset(type(self), preset)
        if data is not None:
            raise ValueError(f"{self.name} trains on generated tasks, not on a text file; choose the task "
                             f"with --preset ({', '.join(self.presets)})")
        options = dict(self.presets[preset])
        preset_task = options.pop("task")
        self.task = task or preset_task
        self.config = config or self.config_class(vocab_size=SEQ_VOCAB.vocab_size, **options)
        self.model = self.model_class(self.config)
        self.test_pairs = make_examples(self.task, TEST_SIZE, "test", seed=TEST_SEED)
        # Room for the longest target and its EOS, and a little more: a longer output is
        # wrong anyway, so decoding need not wait for it to end.
        self.max_len = max(len(t) for _, t in self.test_pairs) + 2

    def meta(self) -> dict:
        return {"task": self.task, "config": asdict(self.config), "vocab": SEQ_VOCAB.to_dict()}

    @classmethod
    def from_meta(cls, meta: dict, load_data: bool = True) -> TaskRecipe:  # the data is generated
        TaskTokenizer.from_dict(meta["vocab"])  # the vocabulary the weights were trained with
        return cls(task=meta["task"], config=cls.config_class(**meta["config"]))

    def batch(self, split: str, rng: np.random.Generator, batch_size: int) -> tuple[Tensor, Tensor, Tensor]:
        """(src (B, S), tgt_in (B, T), tgt_out (B, T)): tgt_in is BOS + target, tgt_out is target + EOS."""
        if split == "train":
            pairs = make_examples(self.task, batch_size, "train", seed=int(rng.integers(2**62)))
        else:
            pairs = [self.test_pairs[i] for i in rng.integers(0, len(self.test_pairs), size=batch_size)]
        return _tensors(pairs)

    def loss(self, batch: tuple[Tensor, Tensor, Tensor]) -> Tensor:
        return self.model.loss(*batch)

    def evaluate(self, num_batches: int) -> dict[str, float]:
        """Teacher-forced val_loss and greedy exact_match on the first num_batches * EVAL_BATCH
        test examples (all TEST_SIZE from num_batches = TEST_SIZE / EVAL_BATCH = 20 on)."""
        pairs = self.test_pairs[: max(1, min(len(self.test_pairs), num_batches * EVAL_BATCH))]
        chunks = [pairs[i:i + EVAL_BATCH] for i in range(0, len(pairs), EVAL_BATCH)]
        with nn.evaluating(self.model), mg.no_grad():
            losses = [self.loss(_tensors(chunk)).item() for chunk in chunks]
        return {"val_loss": float(np.mean(losses)), "exact_match": exact_match(self.translate, pairs)}

    def translate(self, sources: list[str]) -> list[str]:
        """Greedy outputs of the model for source strings, DECODE_BATCH at a time."""
        out = []
        for i in range(0, len(sources), DECODE_BATCH):
            src, _ = encode_pairs([(s, "") for s in sources[i:i + DECODE_BATCH]])
            out += [SEQ_VOCAB.decode(row) for row in self.model.greedy_decode(src, max_len=self.max_len)]
        return out

    def demo(self, n: int = 6) -> str:
        """The first n test sources with the model's output and the true target."""
        pairs = self.test_pairs[:n]
        width = max(len(s) for s, _ in pairs) + 2
        lines = [f"{self.task}: source -> output (target)"]
        for (src, tgt), pred in zip(pairs, self.translate([s for s, _ in pairs])):
            lines.append(f"  {src!r:<{width}} -> {pred!r} {'ok' if pred == tgt else f'(target {tgt!r})'}")
        return "\n".join(lines)


def _tensors(pairs: list[tuple[str, str]]) -> tuple[Tensor, Tensor, Tensor]:
    src, tgt = encode_pairs(pairs)  # (B, S), (B, T + 1): BOS, target, EOS, PAD...
    return mg.tensor(src), mg.tensor(tgt[:, :-1]), mg.tensor(tgt[:, 1:])


def exact_match(translate: Any, pairs: list[tuple[str, str]]) -> float:
    """Fraction of (source, target) pairs whose whole output equals the target."""
    outputs = translate([s for s, _ in pairs])
    return float(np.mean([out == tgt for out, (_, tgt) in zip(outputs, pairs)]))


class Seq2SeqRecipe(TaskRecipe):
    name = "seq2seq"
    default_preset = "reverse"
    config_class = Seq2SeqConfig
    model_class = Seq2Seq
    # block_size covers the longest source and BOS + target + EOS of the task.
    presets = {
        "tiny": dict(task="reverse", block_size=16, embed_dim=32, num_heads=2, num_layers=1),
        "reverse": dict(task="reverse", block_size=16, embed_dim=64, num_heads=4, num_layers=2),
        "copy": dict(task="copy", block_size=16, embed_dim=64, num_heads=4, num_layers=2),
        "sort": dict(task="sort", block_size=16, embed_dim=64, num_heads=4, num_layers=2),
        "addition": dict(task="addition", block_size=16, embed_dim=64, num_heads=4, num_layers=2),
        "dates": dict(task="dates", block_size=32, embed_dim=64, num_heads=4, num_layers=2),
    }
    train_presets = {
        "tiny": dict(steps=200, batch_size=16, lr=3e-3, warmup=20, eval_every=100, eval_batches=2),
        **{task: dict(steps=2000, batch_size=64, lr=3e-3, min_lr=1e-4, warmup=100, weight_decay=0.01,
                      eval_every=500, eval_batches=20)
           for task in ("reverse", "copy", "sort", "dates")},
        # Carries take longer to learn than moving digits around.
        "addition": dict(steps=4000, batch_size=64, lr=3e-3, min_lr=1e-4, warmup=100, weight_decay=0.01,
                         eval_every=1000, eval_batches=20),
    }
