"""Seq2Seq: the encoder-decoder transformer, read top-down in nanoGPT's order.

References: Vaswani et al., "Attention Is All You Need" (2017); the lecture notes'
"Transformer Encoder & Decoder Blocks": the encoder reads the whole source with bidirectional
self-attention, the decoder reads the target so far with masked (causal) self-attention and
the source through cross-attention, and a linear-softmax head scores the next target token.

Shape letters: B batch, S source length, T target length, C embedding size (embed_dim),
H heads, D head size (C / H), V vocabulary size, K beams.

Two masks, both with minigrad's rule (True = may attend):
    * the source padding mask (B, 1, 1, S) hides PAD keys, in the encoder's self-attention
      and in the decoder's cross-attention, so padding never changes a real token's output;
    * the target causal mask (T, T) lets target position t see positions 0..t only, so the
      model trains on every position at once (teacher forcing) and decodes one at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

# ----------------------------------------------------------------------------- parts


class Embed(nn.Module):
    """Token embedding scaled by sqrt(C) plus position, then dropout (Vaswani et al., 3.4).

    With the table drawn from N(0, 1/C), the scaled token vectors have unit size per feature,
    as the sinusoids do, so neither drowns the other.
    """

    def __init__(self, config: Seq2SeqConfig):
        C = config.embed_dim
        self.scale = math.sqrt(C)
        self.tok = nn.Embedding(config.vocab_size, C, padding_idx=config.pad_id)
        nn.init.normal_(self.tok.weight, std=C ** -0.5)
        self.tok.weight._data[config.pad_id] = 0
        if config.learned_positions:
            self.pos = nn.LearnedPositionalEmbedding(config.block_size, C)
        else:
            self.pos = nn.SinusoidalPositionalEncoding(C, max_len=config.block_size)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, idx: Tensor) -> Tensor:
        return self.drop(self.pos(self.tok(idx) * self.scale))  # (B, T, C)


# ----------------------------------------------------------------------------- config


@dataclass
class Seq2SeqConfig:
    vocab_size: int = 44
    block_size: int = 32  # longest source, and longest decoder input (BOS + target)
    embed_dim: int = 64
    num_heads: int = 4
    num_layers: int = 2  # encoder layers, and as many decoder layers
    mlp_ratio: int = 4
    dropout: float = 0.0
    norm_first: bool = True  # pre-norm trains small models at a high learning rate without tricks
    learned_positions: bool = False  # sinusoidal (the paper's) or learned position vectors
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def num_parameters(self) -> int:
        """The model's parameter count, from the sizes alone (nothing is built): the shared
        token embedding V C (learned positions T C more), per encoder layer 4 C^2 + 4 C + 2 C F
        + F + C + 4 C (F = mlp_ratio C), per decoder layer as much plus a cross-attention
        4 C^2 + 4 C and a LayerNorm 2 C, each stack's final LayerNorm 2 C when pre-norm, and
        the head (C + 1) V."""
        C, F, V = self.embed_dim, self.mlp_ratio * self.embed_dim, self.vocab_size
        encoder = 4 * C * C + 4 * C + 2 * C * F + F + C + 4 * C
        decoder = encoder + 4 * C * C + 4 * C + 2 * C
        positions = self.block_size * C if self.learned_positions else 0
        final_norms = 4 * C if self.norm_first else 0
        return V * C + positions + self.num_layers * (encoder + decoder) + final_norms + (C + 1) * V


# ----------------------------------------------------------------------------- model


class Seq2Seq(nn.Module):
    """Encoder-decoder transformer with greedy and beam-search decoding.

    Shape:
        src: (B, S) int64 source ids, right-padded with pad_id.
        tgt_in: (B, T) int64 target ids starting with BOS (the target shifted right).
        forward returns logits (B, T, V): entry [b, t] scores the target token after tgt_in[b, :t+1].
    """

    def __init__(self, config: Seq2SeqConfig):
        self.config = config
        C, H = config.embed_dim, config.num_heads

        def layer(kind: type) -> nn.Module:
            return kind(C, H, dim_feedforward=config.mlp_ratio * C, dropout=config.dropout,
                        activation="relu", norm_first=config.norm_first)

        # One embedding for both sides: the tasks share one vocabulary (as in the paper).
        self.embed = Embed(config)
        final_norm = nn.LayerNorm(C) if config.norm_first else None  # pre-norm stacks end with one
        self.encoder = nn.TransformerEncoder(lambda: layer(nn.TransformerEncoderLayer), config.num_layers,
                                             norm=final_norm)
        final_norm = nn.LayerNorm(C) if config.norm_first else None
        self.decoder = nn.TransformerDecoder(lambda: layer(nn.TransformerDecoderLayer), config.num_layers,
                                             norm=final_norm)
        self.head = nn.Linear(C, config.vocab_size)

    def _check(self, name: str, idx: Tensor) -> None:
        if idx.ndim != 2 or idx.shape[1] > self.config.block_size:
            raise ValueError(f"Seq2Seq.{name}: expected ids of shape (B, L) with L <= block_size "
                             f"{self.config.block_size}, got {idx.shape}")

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """The memory (B, S, C) the decoder attends to, and the source padding mask (B, 1, 1, S)."""
        self._check("encode", src)
        src_mask = nn.padding_mask(src, pad=self.config.pad_id)  # (B, 1, 1, S)
        memory = self.encoder(self.embed(src), attend_mask=src_mask)  # (B, S, C)
        return memory, src_mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """Logits (B, T, V) of the next target tokens, given the target so far and the memory."""
        self._check("decode", tgt_in)
        T = tgt_in.shape[1]
        x = self.embed(tgt_in)  # (B, T, C)
        x = self.decoder(x, memory, attend_mask=nn.causal_mask(T), memory_attend_mask=src_mask)  # (B, T, C)
        return self.head(x)  # (B, T, V)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        memory, src_mask = self.encode(src)  # (B, S, C), (B, 1, 1, S)
        return self.decode(tgt_in, memory, src_mask)  # (B, T, V)

    def loss(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        """Mean cross-entropy of the target tokens tgt_out (B, T) (tgt_in shifted left); PAD
        positions do not count."""
        logits = self(src, tgt_in)  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),  # (B*T, V)
                               ignore_index=self.config.pad_id)

    @mg.no_grad()
    def score(self, src: Tensor | np.ndarray, out: np.ndarray) -> np.ndarray:
        """Log-probability (B,) of each output sequence (B, L) as the decoders return them
        (no BOS), counting the tokens up to and including the first EOS."""
        with nn.evaluating(self):
            out = np.asarray(out, dtype=np.int64)  # (B, L)
            bos = np.full((len(out), 1), self.config.bos_id)  # (B, 1)
            tgt_in = np.concatenate([bos, out[:, :-1]], axis=1)  # (B, L)
            logp = self(_ids(src), mg.tensor(tgt_in)).log_softmax(-1)._data  # (B, L, V)
            token_logp = np.take_along_axis(logp, out[..., None], axis=-1)[..., 0]  # (B, L)
            is_eos = out == self.config.eos_id
            after_eos = np.cumsum(is_eos, axis=1) - is_eos > 0  # (B, L)
        return np.where(after_eos, 0.0, token_logp).sum(1)

    # ------------------------------------------------------------------ decoding

    @mg.no_grad()
    def greedy_decode(self, src: Tensor | np.ndarray, max_len: int | None = None) -> np.ndarray:
        """Append the most likely next token, one step at a time, for the whole batch at once.

        The decoder reruns over the whole prefix at each step (no cache: targets are short).
        Returns (B, L) int64 ids without BOS; a row ends with EOS and is padded with PAD
        after it. Decoding stops when every row has its EOS, or after max_len tokens.
        """
        cfg = self.config
        max_len = self._max_len(max_len)
        with nn.evaluating(self):
            memory, src_mask = self.encode(_ids(src))  # (B, S, C), (B, 1, 1, S)
            B = memory.shape[0]
            seqs = np.full((B, 1), cfg.bos_id, dtype=np.int64)  # (B, 1)
            finished = np.zeros(B, dtype=bool)
            for _ in range(max_len):
                logits = self.decode(mg.tensor(seqs), memory, src_mask)._data[:, -1]  # (B, V)
                tokens = np.where(finished, cfg.pad_id, logits.argmax(-1))  # (B,)
                seqs = np.concatenate([seqs, tokens[:, None]], axis=1)  # (B, t+1)
                finished |= tokens == cfg.eos_id
                if finished.all():
                    break
        return seqs[:, 1:]  # (B, L)

    @mg.no_grad()
    def beam_search(self, src: Tensor | np.ndarray, beam_size: int = 4, max_len: int | None = None,
                    length_penalty: float = 0.0) -> np.ndarray:
        """Keep the K = beam_size most likely prefixes of each example at every step.

        A prefix's score is its summed log-probability. A finished prefix (it has emitted EOS)
        keeps its score and stays in the beam, extended by PAD, competing with the unfinished
        ones. At the end the best of the K is taken, by score / length^length_penalty (0: the
        plain log-probability; larger values favour longer outputs). beam_size=1 is greedy.
        The B examples are searched together, as B*K rows of one batch.

        Returns (B, L) int64 ids without BOS, as greedy_decode.
        """
        cfg, K = self.config, beam_size
        if K < 1:
            raise ValueError(f"beam_search: beam_size must be at least 1, got {K}")
        max_len = self._max_len(max_len)
        with nn.evaluating(self):
            src = _ids(src)._data  # (B, S)
            B = src.shape[0]
            # Each source K times over: row b*K + k holds beam k of example b.
            # (B*K, S, C), (B*K, 1, 1, S)
            memory, src_mask = self.encode(mg.tensor(np.repeat(src, K, axis=0)))
            seqs = np.full((B * K, 1), cfg.bos_id, dtype=np.int64)  # (B*K, 1)
            scores = np.full((B, K), -np.inf)  # (B, K)
            scores[:, 0] = 0.0  # one live beam at first, or the K beams would be K copies
            finished = np.zeros(B * K, dtype=bool)
            for _ in range(max_len):
                logits = self.decode(mg.tensor(seqs), memory, src_mask)[:, -1]  # (B*K, V)
                logp = logits.log_softmax(-1)._data.astype(np.float64)  # (B*K, V)
                logp[finished] = -np.inf
                logp[finished, cfg.pad_id] = 0.0  # a finished beam only grows by PAD, at no cost
                V = logp.shape[1]
                cand = (scores.reshape(B * K, 1) + logp).reshape(B, K * V)  # (B, K*V): every extension
                top = np.argsort(-cand, axis=1, kind="stable")[:, :K]  # (B, K): the K best
                scores = np.take_along_axis(cand, top, axis=1)  # (B, K)
                rows = (np.arange(B)[:, None] * K + top // V).reshape(-1)  # (B*K,): the beam each extends
                tokens = (top % V).reshape(-1)  # (B*K,)
                seqs = np.concatenate([seqs[rows], tokens[:, None]], axis=1)  # (B*K, t+1)
                finished = finished[rows] | (tokens == cfg.eos_id)
                if finished.all():
                    break
            lengths = np.maximum(_lengths(seqs[:, 1:], cfg.eos_id), 1).reshape(B, K)  # (B, K)
            best = np.argmax(scores / lengths**length_penalty, axis=1)  # (B,)
        out = seqs.reshape(B, K, -1)[np.arange(B), best, 1:]  # (B, L)
        return out[:, :max(1, _lengths(out, cfg.eos_id).max())]  # as wide as the longest, as greedy

    def _max_len(self, max_len: int | None) -> int:
        """Generated tokens fit the position table after BOS: at most block_size - 1."""
        longest = self.config.block_size - 1
        return longest if max_len is None else min(max_len, longest)


def _lengths(out: np.ndarray, eos_id: int) -> np.ndarray:
    """The length (N,) of each output row (N, L): its tokens up to and including the first EOS,
    all L without one. A PAD the model chose before its EOS is one of its tokens (greedy keeps
    it too); only the PAD after EOS is filling."""
    is_eos = out == eos_id  # (N, L)
    return np.where(is_eos.any(1), is_eos.argmax(1) + 1, out.shape[1])


def _ids(x: Tensor | np.ndarray) -> Tensor:
    """An int64 id tensor from a Tensor, array or nested list."""
    return mg.tensor(np.asarray(getattr(x, "_data", x), dtype=np.int64))
