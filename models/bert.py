"""BERT: a bidirectional transformer encoder pretrained by masked-word and next-sentence
prediction, read top-down in nanoGPT's order.

References: Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding" (2019); the lecture notes' "BERT: Contextual Pretraining": the input is the sum
of token, segment and position embeddings; 15% of the tokens are selected, of which 80% become
[MASK], 10% a random token and 10% stay, and the model predicts the originals; a second head
tells from [CLS] whether sentence B followed sentence A. No causal mask: every token sees the
whole sequence, except padding. The layers are post-norm, x = LayerNorm(x + attn(x)), and use
GELU in its tanh form, as the original code did.

Input layout: [CLS] A [SEP] B [SEP] [PAD] ..., segment ids 0 for "[CLS] A [SEP]", 1 for "B [SEP]".

Shape letters: B batch, T time (tokens), C embedding size (embed_dim), H heads,
D head size (C / H), V vocabulary size, N selected (masked) positions in the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

IGNORE = -100  # label of the positions the masked-LM loss skips (F.cross_entropy's ignore_index)

# ----------------------------------------------------------------------------- parts


class Embeddings(nn.Module):
    """Token + segment + position embeddings (all learned), then LayerNorm and dropout."""

    def __init__(self, config: BERTConfig):
        C = config.embed_dim
        self.tok_emb = nn.Embedding(config.vocab_size, C)
        self.seg_emb = nn.Embedding(config.type_vocab_size, C)
        self.pos_emb = nn.Embedding(config.block_size, C)
        self.norm = nn.LayerNorm(C)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, idx: Any, segments: Any) -> Tensor:
        T = idx.shape[1]
        x = self.tok_emb(idx) + self.seg_emb(segments) + self.pos_emb(mg.arange(T))  # (B, T, C)
        return self.drop(self.norm(x))  # (B, T, C)


class MaskedLMHead(nn.Module):
    """Linear -> GELU -> LayerNorm, then a score for every word: the decoder's weight is the
    token embedding itself (tied), plus a bias of its own."""

    def __init__(self, config: BERTConfig, tok_emb: nn.Embedding):
        C = config.embed_dim
        self.dense = nn.Linear(C, C)
        self.act = nn.GELU(approximate=config.activation)
        self.norm = nn.LayerNorm(C)
        self.decoder = nn.Linear(C, config.vocab_size)
        self.decoder.weight = tok_emb.weight  # (V, C) serves both ways

    def forward(self, x: Tensor) -> Tensor:
        h = self.norm(self.act(self.dense(x)))  # (..., C)
        return self.decoder(h)  # (..., V)


class NextSentenceHead(nn.Module):
    """The pooler (Linear + tanh on the [CLS] vector) and a two-way classifier:
    logit 0 = NotNext, logit 1 = IsNext (the labels of `models.data.nsp_pairs`)."""

    def __init__(self, config: BERTConfig):
        C = config.embed_dim
        self.pooler = nn.Linear(C, C)
        self.act = nn.Tanh()
        self.classifier = nn.Linear(C, 2)

    def forward(self, x: Tensor) -> Tensor:
        pooled = self.act(self.pooler(x[:, 0]))  # (B, C): the [CLS] position sums up the pair
        return self.classifier(pooled)  # (B, 2)


# ----------------------------------------------------------------------------- config


@dataclass
class BERTConfig:
    vocab_size: int = 2000
    block_size: int = 128  # longest input, [CLS] and [SEP]s included
    embed_dim: int = 128
    num_heads: int = 4
    num_layers: int = 2
    mlp_ratio: int = 4  # hidden size of each layer's MLP: mlp_ratio * embed_dim
    dropout: float = 0.1
    activation: str = "tanh"  # GELU form: "tanh" (the original BERT code's) or "none" (exact erf)
    type_vocab_size: int = 2  # segments: sentence A and sentence B
    pad_id: int = 0  # the padding token, hidden from attention when no mask is given

    def num_parameters(self) -> int:
        """BERT's parameter count, from the sizes alone (nothing is built): embeddings
        (V + segments + T) C + 2 C, per layer 4 C^2 + 4 C + 2 C F + F + C + 4 C (F = mlp_ratio C),
        the masked-LM head C^2 + 3 C + V (its decoder shares the token embedding) and the
        next-sentence head C^2 + C + 2 C + 2."""
        C, F, V = self.embed_dim, self.mlp_ratio * self.embed_dim, self.vocab_size
        layer = 4 * C * C + 4 * C + 2 * C * F + F + C + 4 * C
        embed = (V + self.type_vocab_size + self.block_size) * C + 2 * C
        return embed + self.num_layers * layer + (C * C + 3 * C + V) + (C * C + C + 2 * C + 2)


PRESETS = {
    "tiny": dict(block_size=32, embed_dim=32, num_heads=2, num_layers=1, dropout=0.0),
    # 64 tokens hold 90% of the docstring sentence pairs whole; no dropout for a short run.
    "quick": dict(block_size=64, embed_dim=128, num_heads=4, num_layers=2, dropout=0.0),
}

# ----------------------------------------------------------------------------- model


class BERT(nn.Module):
    """Encoder-only model with a masked-LM head and a next-sentence head.

    Shape:
        idx: (B, T) int64 token ids, T <= block_size; segments: (B, T) ids in
        [0, type_vocab_size) (default all 0); pad_mask: a key-padding mask (B, 1, 1, T),
        True at real tokens (`nn.padding_mask`; default: where idx != pad_id).
        forward returns (mlm_logits (B, T, V), nsp_logits (B, 2)); with `positions`, a (B, T)
        bool array, mlm_logits are (N, V), one row per True position in row-major order.
    """

    def __init__(self, config: BERTConfig):
        self.config = config
        self.embed = Embeddings(config)
        layer = nn.TransformerEncoderLayer(
            config.embed_dim, config.num_heads, config.mlp_ratio * config.embed_dim, config.dropout,
            activation=nn.GELU(approximate=config.activation), norm_first=False,  # post-norm, as BERT
        )
        self.encoder = nn.TransformerEncoder(layer, config.num_layers)
        self.mlm_head = MaskedLMHead(config, self.embed.tok_emb)
        self.nsp_head = NextSentenceHead(config)
        # BERT's init: N(0, 0.02) weights, zero biases (LayerNorms stay at gain 1, bias 0).
        for name, p in self.named_parameters():
            if p.ndim == 2:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: Any, segments: Any = None, pad_mask: Any = None,
                positions: np.ndarray | None = None) -> tuple[Tensor, Tensor]:
        idx = np.asarray(getattr(idx, "_data", idx))
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(
                f"BERT: sequence of {T} tokens is longer than block_size {self.config.block_size}"
            )
        segments = np.zeros_like(idx) if segments is None else segments
        if pad_mask is None:
            pad_mask = nn.padding_mask(idx, pad=self.config.pad_id)  # (B, 1, 1, T)
        x = self.embed(idx, segments)  # (B, T, C)
        x = self.encoder(x, attend_mask=pad_mask)  # (B, T, C): every token sees every real token
        nsp_logits = self.nsp_head(x)  # (B, 2)
        if positions is not None:
            x = x[np.asarray(getattr(positions, "_data", positions), dtype=bool)]  # (N, C)
        return self.mlm_head(x), nsp_logits  # (B, T, V) or (N, V); (B, 2)

    def loss(self, idx: Any, segments: Any, labels: Any, is_next: Any, pad_mask: Any = None) -> Tensor:
        """Masked-LM cross-entropy over the selected positions (labels != -100) plus the
        next-sentence cross-entropy. The vocabulary scores are computed at the selected
        positions only (about 15% of the tokens), as in the original implementation."""
        labels = np.asarray(getattr(labels, "_data", labels))
        selected = labels != IGNORE  # (B, T)
        mlm_logits, nsp_logits = self(idx, segments, pad_mask, positions=selected)  # (N, V), (B, 2)
        return F.cross_entropy(mlm_logits, labels[selected]) + F.cross_entropy(nsp_logits, is_next)


# ----------------------------------------------------------------------------- masking


def mask_tokens(ids: Any, tokenizer: Any, rng: np.random.Generator,
                mask_prob: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """BERT's masking: select tokens for the masked-LM loss and corrupt the input there.

    Each ordinary token is selected with probability `mask_prob`; special tokens ([PAD],
    [CLS], [SEP], [UNK], [MASK]) never are. Of the selected, 80% become [MASK], 10% a random
    ordinary token and 10% stay unchanged, so the model cannot rely on seeing [MASK] (which
    never occurs after pretraining) and must keep a good vector for every input word.

    Args:
        ids: (B, T) token ids.
        tokenizer: a `models.data.WordTokenizer`, or anything with `vocab_size`, `mask_id`
            and `SPECIAL_TOKENS`, the special tokens taking the first ids.
        rng: source of randomness.
        mask_prob: chance that an ordinary token is selected.

    Returns:
        (inputs, labels), both (B, T) int64: the corrupted ids, and the original id at the
        selected positions, -100 elsewhere (ignored by the loss).
    """
    ids = np.asarray(getattr(ids, "_data", ids), dtype=np.int64)
    first_word = len(tokenizer.SPECIAL_TOKENS)  # ids below this are special
    selected = (ids >= first_word) & (rng.random(ids.shape) < mask_prob)
    r = rng.random(ids.shape)  # one draw decides: < 0.8 [MASK], < 0.9 random word, else keep
    random_words = rng.integers(first_word, tokenizer.vocab_size, size=ids.shape)
    inputs = np.where(selected & (r < 0.8), tokenizer.mask_id, ids)
    inputs = np.where(selected & (r >= 0.8) & (r < 0.9), random_words, inputs)
    labels = np.where(selected, ids, IGNORE)
    return inputs, labels


def truncate_pair(a: list[int], b: list[int], max_tokens: int) -> tuple[list[int], list[int]]:
    """Cut the longer of the two token lists at its end until both fit in max_tokens together
    (the original recipe's rule: keeps both sentences when one of them is long)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()
    return a, b
