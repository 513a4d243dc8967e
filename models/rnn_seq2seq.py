"""RNNSeq2Seq: the encoder-decoder RNN, with additive (Bahdanau) attention or without it.

References: Cho et al., "Learning Phrase Representations using RNN Encoder-Decoder for
Statistical Machine Translation" (2014); Sutskever et al., "Sequence to Sequence Learning with
Neural Networks" (2014); Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly
Learning to Align and Translate" (2015); the lecture notes' "From One Context Vector to Dynamic
Attention" and "Alignment, Weights & Context":

    e_tj = align(s_{t-1}, h_j),   a_tj = softmax_j(e_tj),   c_t = sum_j a_tj h_j

A GRU encoder reads the source into annotations h_1..h_S; a GRU decoder, started from the
encoder's final state, emits the target one token at a time. At each step it reads the previous
token and a context vector c_t:
    * attention=True: c_t is a fresh weighted average of all annotations, the weights scored
      from the previous decoder state s_{t-1} (nn.AdditiveAttention: v^T tanh(W_q s + W_k h));
    * attention=False: c_t = h_S, the encoder's final state, the same at every step. This
      fixed vector is the bottleneck attention removes: the whole source must fit in it.
Everything else is the same, so the two differ only in where the context comes from.

Shape letters: B batch, S source length, T target length, E embedding size (embed_dim),
C hidden size (hidden_size), V vocabulary size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

# ----------------------------------------------------------------------------- parts


class Encoder(nn.Module):
    """A GRU reads the source left to right; its states are the annotations h_1..h_S."""

    def __init__(self, embed_dim: int, hidden_size: int):
        self.cell = nn.GRUCell(embed_dim, hidden_size)

    def forward(self, x: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """Annotations (B, S, C) and the final state (B, C) of x (B, S, E); keep (B, S, 1) is
        False at PAD, where the state is carried over unchanged, so the final state is the
        state after each sequence's last real token."""
        B, S, _ = x.shape
        h = mg.zeros(B, self.cell.hidden_size, dtype=x.dtype)  # (B, C), in the model's dtype
        states = []
        for j in range(S):
            h = mg.where(keep[:, j], self.cell(x[:, j], h), h)  # (B, C)
            states.append(h)
        return mg.stack(states, dim=1), h  # (B, S, C), (B, C)


class Decoder(nn.Module):
    """One step of the GRU decoder: read the previous token and a context, score the next."""

    def __init__(self, config: RNNConfig):
        E, C = config.embed_dim, config.hidden_size
        self.attention = nn.AdditiveAttention(C, C, config.attention_dim) if config.attention else None
        self.cell = nn.GRUCell(E + C, C)
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(C + C, config.vocab_size)  # from the new state and the context

    def project(self, annotations: Tensor) -> Tensor | None:
        """The attention's key projection of the annotations (B, S, A), the same at every step."""
        return None if self.attention is None else self.attention.project_keys(annotations)

    def forward(self, y_prev: Tensor, s: Tensor, annotations: Tensor, final: Tensor,
                src_mask: Tensor, keys: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
        """Logits (B, V), the new state (B, C) and the attention weights (B, S) (None without
        attention), from the previous token's embedding y_prev (B, E) and state s (B, C);
        `keys` is `project(annotations)`, computed once per sequence."""
        if self.attention is not None:
            context, weights = self.attention(s.unsqueeze(1), annotations, annotations, mask=src_mask,
                                              projected_keys=keys)  # (B, 1, C), (B, 1, S)
            context, weights = context.squeeze(1), weights.squeeze(1)  # (B, C), (B, S)
        else:
            context, weights = final, None  # (B, C): the fixed vector
        s = self.cell(mg.cat([y_prev, context], dim=-1), s)  # (B, C)
        logits = self.head(self.drop(mg.cat([s, context], dim=-1)))  # (B, V)
        return logits, s, weights


# ----------------------------------------------------------------------------- config


@dataclass
class RNNConfig:
    vocab_size: int = 44
    embed_dim: int = 32
    hidden_size: int = 128
    attention: bool = True  # additive attention (True) or the fixed final state (False)
    attention_dim: int = 64  # hidden size of the additive scorer's tanh layer
    dropout: float = 0.0
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def num_parameters(self) -> int:
        """The model's parameter count, from the sizes alone (nothing is built): the embedding
        V E, a GRU cell 3 H (i + H) + 6 H for the encoder (i = E) and the decoder (i = E + H),
        the additive attention 2 A H + A (if any) and the head (2 H + 1) V."""
        E, H, A, V = self.embed_dim, self.hidden_size, self.attention_dim, self.vocab_size

        def gru(i: int) -> int:
            return 3 * H * (i + H) + 6 * H

        attention = 2 * A * H + A if self.attention else 0
        return V * E + gru(E) + gru(E + H) + attention + (2 * H + 1) * V


# ----------------------------------------------------------------------------- model


class RNNSeq2Seq(nn.Module):
    """Encoder-decoder GRU with optional additive attention, and greedy decoding.

    Shape:
        src: (B, S) int64 source ids, right-padded with pad_id.
        tgt_in: (B, T) int64 target ids starting with BOS (the target shifted right).
        forward returns logits (B, T, V): entry [b, t] scores the target token after tgt_in[b, :t+1].
    """

    def __init__(self, config: RNNConfig):
        self.config = config
        # One embedding for both sides: the tasks share one vocabulary.
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim, padding_idx=config.pad_id)
        self.drop = nn.Dropout(config.dropout)
        self.encoder = Encoder(config.embed_dim, config.hidden_size)
        self.decoder = Decoder(config)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Annotations (B, S, C), the final encoder state (B, C) and the padding mask (B, 1, 1, S)."""
        if src.ndim != 2:
            raise ValueError(f"RNNSeq2Seq.encode: expected source ids of shape (B, S), got {src.shape}")
        src_mask = nn.padding_mask(src, pad=self.config.pad_id)  # (B, 1, 1, S)
        keep = src_mask.reshape(src.shape[0], src.shape[1], 1)  # (B, S, 1)
        annotations, final = self.encoder(self.drop(self.embed(src)), keep)  # (B, S, C), (B, C)
        return annotations, final, src_mask

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: the decoder reads the true previous token at every step."""
        annotations, final, src_mask = self.encode(src)  # (B, S, C), (B, C), (B, 1, 1, S)
        y = self.drop(self.embed(tgt_in))  # (B, T, E)
        s = final  # (B, C): the decoder starts from the encoder's final state
        keys = self.decoder.project(annotations)  # (B, S, A) or None
        logits = []
        for t in range(tgt_in.shape[1]):
            step_logits, s, _ = self.decoder(y[:, t], s, annotations, final, src_mask, keys)  # (B, V), (B, C)
            logits.append(step_logits)
        return mg.stack(logits, dim=1)  # (B, T, V)

    def loss(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        """Mean cross-entropy of the target tokens tgt_out (B, T) (tgt_in shifted left); PAD
        positions do not count."""
        logits = self(src, tgt_in)  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),  # (B*T, V)
                               ignore_index=self.config.pad_id)

    @mg.no_grad()
    def greedy_decode(self, src: Tensor | np.ndarray, max_len: int = 32,
                      return_attention: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Feed back the most likely token, one step at a time, for the whole batch at once.

        Returns (B, L) int64 ids without BOS; a row ends with EOS and is padded with PAD after
        it. Decoding stops when every row has its EOS, or after max_len tokens. With
        return_attention, also the attention weights (B, L, S) of every step (attention=True).
        """
        cfg = self.config
        if return_attention and not cfg.attention:
            raise ValueError("RNNSeq2Seq.greedy_decode: return_attention needs attention=True")
        with nn.evaluating(self):
            annotations, final, src_mask = self.encode(mg.tensor(np.asarray(getattr(src, "_data", src))))
            B = annotations.shape[0]
            s = final  # (B, C)
            keys = self.decoder.project(annotations)  # (B, S, A) or None
            token = np.full(B, cfg.bos_id, dtype=np.int64)  # (B,)
            out, weights = [], []
            finished = np.zeros(B, dtype=bool)
            for _ in range(max_len):
                y_prev = self.embed(mg.tensor(token))  # (B, E)
                logits, s, w = self.decoder(y_prev, s, annotations, final, src_mask, keys)
                # logits (B, V), s (B, C), w (B, S)
                token = np.where(finished, cfg.pad_id, logits._data.argmax(-1))  # (B,)
                out.append(token)
                weights.append(None if w is None else w._data)  # (B, S)
                finished |= token == cfg.eos_id
                if finished.all():
                    break
        ids = np.stack(out, axis=1)  # (B, L)
        return (ids, np.stack(weights, axis=1)) if return_attention else ids  # (B, L), (B, L, S)
