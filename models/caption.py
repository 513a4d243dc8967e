"""Captioner: image captioning with attention, "Show, Attend and Tell" in miniature.

References: Xu et al., "Show, Attend and Tell: Neural Image Caption Generation with Visual
Attention" (2015); Bahdanau, Cho and Bengio (2015) for the additive score; the lecture notes'
"Alignment, Weights & Context":

    e_tj = align(s_{t-1}, a_j),   alpha_tj = softmax_j(e_tj),   z_t = sum_j alpha_tj a_j

A small CNN turns the image into a grid of feature vectors; each of the N = h*w cells is one
"annotation" a_j, a description of one region of the picture (layer-normed, plus a learned
vector saying where the cell is, so that "left of" and "above" can be told). An LSTM decoder, started from
the mean annotation, writes the caption one word at a time: at each step it scores every cell
from its previous state with additive attention (nn.AdditiveAttention), reads the weighted
average z_t of the annotations with the previous word's embedding, and predicts the next word
from its new state and z_t. The weights alpha_t show where the model looked for each word.

Shape letters: B batch, H x W image, h x w feature grid, N cells (h*w), F feature size
(feature_dim), T caption length, E embedding size (embed_dim), C hidden size (hidden_size),
V vocabulary size, K beams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

# ----------------------------------------------------------------------------- parts


class Encoder(nn.Module):
    """Conv 3x3 + ReLU, halving the grid with a 2x2 max-pool after each but the last layer;
    the last feature map (B, F, h, w) is read as N = h*w annotations (B, N, F), row-major."""

    def __init__(self, config: CaptionConfig):
        widths = [config.in_channels, *config.channels, config.feature_dim]
        layers: list[nn.Module] = []
        for i, (c_in, c_out) in enumerate(zip(widths[:-1], widths[1:])):
            layers += [nn.Conv2d(c_in, c_out, kernel_size=3, padding=1), nn.ReLU()]
            if i < len(widths) - 2:
                layers.append(nn.MaxPool2d(2))
        self.cnn = nn.Sequential(*layers)
        # Unit-size annotations: the ReLU maps of a freshly started CNN are small (std ~0.05), too
        # faint for the attention and the LSTM to pick the digits out of.
        self.norm = nn.LayerNorm(config.feature_dim)
        self.pos = nn.LearnedPositionalEmbedding(config.grid_size, config.feature_dim)

    def forward(self, images: Tensor) -> Tensor:
        x = self.cnn(images)  # (B, F, h, w)
        B, Fd, h, w = x.shape
        x = x.reshape(B, Fd, h * w).transpose(1, 2)  # (B, N, F): one annotation per cell, row-major
        return self.pos(self.norm(x))  # (B, N, F)


class Decoder(nn.Module):
    """One step of the LSTM decoder: attend over the cells, read the previous word and the
    context, score the next word."""

    def __init__(self, config: CaptionConfig):
        Fd, E, C = config.feature_dim, config.embed_dim, config.hidden_size
        self.attention = nn.AdditiveAttention(C, Fd, config.attention_dim)
        self.cell = nn.LSTMCell(E + Fd, C)
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(C + Fd, config.vocab_size)  # from the new state and the context

    def forward(self, y_prev: Tensor, state: tuple[Tensor, Tensor], annotations: Tensor,
                keys: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor]:
        """Logits (B, V), the new state (h, c) (B, C) each and the weights (B, N), from the
        previous word's embedding y_prev (B, E); `keys` is the attention's key projection of
        the annotations (B, N, A), computed once per image."""
        h, _ = state
        context, weights = self.attention(h.unsqueeze(1), annotations, annotations,
                                          projected_keys=keys)  # (B, 1, F), (B, 1, N)
        context, weights = context.squeeze(1), weights.squeeze(1)  # (B, F), (B, N)
        h, c = self.cell(mg.cat([y_prev, context], dim=-1), state)  # (B, C) each
        logits = self.head(self.drop(mg.cat([h, context], dim=-1)))  # (B, V)
        return logits, (h, c), weights


# ----------------------------------------------------------------------------- config


@dataclass
class CaptionConfig:
    vocab_size: int = 16
    image_height: int = 24
    image_width: int = 24
    in_channels: int = 1
    channels: tuple[int, ...] = (16, 32)  # conv widths before the last; each halves the grid
    feature_dim: int = 64  # F: the last conv's width, the size of an annotation
    embed_dim: int = 32
    hidden_size: int = 128
    attention_dim: int = 64  # hidden size of the additive scorer's tanh layer
    dropout: float = 0.0
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self) -> None:
        self.channels = tuple(self.channels)  # a list from JSON meta reads back as a tuple
        shrink = 2 ** len(self.channels)
        if self.image_height % shrink or self.image_width % shrink:
            raise ValueError(f"CaptionConfig: the image ({self.image_height} x {self.image_width}) must "
                             f"divide by {shrink}, the pooling of {len(self.channels)} layers")

    def num_parameters(self) -> int:
        """The captioner's parameter count, from the sizes alone (nothing is built): 3x3
        convolutions (9 c_in + 1) c_out, the annotations' LayerNorm 2 F and positions N F, the
        embedding V E, the first state and cell (F + 1) H each, the additive attention
        A (H + F) + A, the LSTM cell 4 H (E + F + H) + 8 H and the head (H + F + 1) V."""
        widths = [self.in_channels, *self.channels, self.feature_dim]
        convs = sum((9 * a + 1) * b for a, b in zip(widths[:-1], widths[1:]))
        E, H, Fd = self.embed_dim, self.hidden_size, self.feature_dim
        A, V = self.attention_dim, self.vocab_size
        return (convs + 2 * Fd + self.grid_size * Fd + V * E + 2 * (Fd + 1) * H + A * (H + Fd) + A
                + 4 * H * (E + Fd + H) + 8 * H + (H + Fd + 1) * V)

    @property
    def grid(self) -> tuple[int, int]:
        """(h, w) of the last feature map."""
        shrink = 2 ** len(self.channels)
        return self.image_height // shrink, self.image_width // shrink

    @property
    def grid_size(self) -> int:
        h, w = self.grid
        return h * w


# ----------------------------------------------------------------------------- model


class Captioner(nn.Module):
    """CNN encoder, LSTM decoder with additive attention over the grid; greedy and beam decoding.

    Shape:
        images: (B, in_channels, H, W) float.
        tgt_in: (B, T) int64 caption ids starting with BOS (the caption shifted right).
        forward returns logits (B, T, V) and the attention weights (B, T, N): entry [b, t]
        scores the word after tgt_in[b, :t+1], and says where the model looked for it.
    """

    def __init__(self, config: CaptionConfig):
        self.config = config
        C, Fd = config.hidden_size, config.feature_dim
        self.encoder = Encoder(config)
        self.embed = nn.Embedding(config.vocab_size, config.embed_dim, padding_idx=config.pad_id)
        self.init_h = nn.Linear(Fd, C)  # the first state, from the mean annotation (the paper's)
        self.init_c = nn.Linear(Fd, C)
        self.decoder = Decoder(config)

    def encode(self, images: Tensor | np.ndarray) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor]:
        """Annotations (B, N, F), the first decoder state (h, c) and the attention keys (B, N, A)."""
        cfg = self.config
        images = images if isinstance(images, Tensor) else mg.tensor(np.asarray(images, dtype=np.float32))
        want = (cfg.in_channels, cfg.image_height, cfg.image_width)
        if images.ndim != 4 or tuple(images.shape[1:]) != want:
            raise ValueError(f"Captioner.encode: expected images of shape (B, {', '.join(map(str, want))}), "
                             f"got {images.shape}")
        annotations = self.encoder(images)  # (B, N, F)
        mean = annotations.mean(dim=1)  # (B, F)
        state = (self.init_h(mean).tanh(), self.init_c(mean).tanh())  # (B, C) each
        return annotations, state, self.decoder.attention.project_keys(annotations)

    def forward(self, images: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing: the decoder reads the true previous word at every step."""
        annotations, state, keys = self.encode(images)  # (B, N, F), (B, C) x 2, (B, N, A)
        y = self.embed(tgt_in)  # (B, T, E)
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            step_logits, state, w = self.decoder(y[:, t], state, annotations, keys)  # (B, V), (B, N)
            logits.append(step_logits)
            weights.append(w)
        return mg.stack(logits, dim=1), mg.stack(weights, dim=1)  # (B, T, V), (B, T, N)

    def loss(self, images: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        """Mean cross-entropy of the caption words tgt_out (B, T) (tgt_in shifted left); PAD
        positions do not count."""
        logits, _ = self(images, tgt_in)  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),  # (B*T, V)
                               ignore_index=self.config.pad_id)

    @mg.no_grad()
    def attention(self, images: Tensor | np.ndarray, words: np.ndarray) -> np.ndarray:
        """The attention weights (B, L, N) with which the model wrote `words` (B, L) (e.g. its
        own output, without BOS): row t is where it looked for word t."""
        words = np.asarray(words, dtype=np.int64)
        tgt_in = np.concatenate([np.full((len(words), 1), self.config.bos_id), words[:, :-1]], axis=1)
        with nn.evaluating(self):
            _, weights = self(images, mg.tensor(tgt_in))  # (B, L, N)
        return weights._data

    @mg.no_grad()
    def generate(self, images: Tensor | np.ndarray, max_len: int = 8, beam_size: int = 1) -> np.ndarray:
        """Captions (B, L) int64 without BOS, each ending with EOS and padded with PAD after it
        (L: the longest, at most max_len), greedy (beam_size=1) or by beam search."""
        return self.greedy_decode(images, max_len) if beam_size == 1 else self.beam_search(
            images, beam_size, max_len)

    @mg.no_grad()
    def greedy_decode(self, images: Tensor | np.ndarray, max_len: int = 8,
                      return_attention: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Feed back the most likely word, one step at a time, for the whole batch at once; with
        return_attention also the weights (B, L, N) each word was written with."""
        cfg = self.config
        with nn.evaluating(self):
            annotations, state, keys = self.encode(images)
            B = annotations.shape[0]
            token = np.full(B, cfg.bos_id, dtype=np.int64)  # (B,)
            finished = np.zeros(B, dtype=bool)
            out, weights = [], []
            for _ in range(max_len):
                logits, state, w = self.decoder(self.embed(mg.tensor(token)), state, annotations, keys)
                token = np.where(finished, cfg.pad_id, logits._data.argmax(-1))  # (B,)
                out.append(token)
                weights.append(w._data)  # (B, N)
                finished |= token == cfg.eos_id
                if finished.all():
                    break
        ids = np.stack(out, axis=1)  # (B, L)
        return (ids, np.stack(weights, axis=1)) if return_attention else ids  # (B, L), (B, L, N)

    @mg.no_grad()
    def beam_search(self, images: Tensor | np.ndarray, beam_size: int = 4, max_len: int = 8) -> np.ndarray:
        """Keep the K = beam_size most likely captions of each image at every step.

        A caption's score is its summed log-probability; a finished one (it has emitted EOS)
        keeps its score and grows by PAD at no cost, competing with the unfinished ones. The
        best of the K is returned. The B images are searched together, as B*K rows of one
        batch whose decoder states are reordered with the beams. beam_size=1 is greedy.
        """
        cfg, K = self.config, beam_size
        if K < 1:
            raise ValueError(f"Captioner.beam_search: beam_size must be at least 1, got {K}")
        with nn.evaluating(self):
            annotations, state, keys = self.encode(images)
            B = annotations.shape[0]
            rep = mg.tensor(np.repeat(np.arange(B), K))  # (B*K,): row b*K + k is beam k of image b
            annotations, keys = annotations[rep], keys[rep]  # (B*K, N, F), (B*K, N, A)
            state = (state[0][rep], state[1][rep])  # (B*K, C) each
            seqs = np.zeros((B * K, 0), dtype=np.int64)  # (B*K, t)
            token = np.full(B * K, cfg.bos_id, dtype=np.int64)
            scores = np.full((B, K), -np.inf)
            scores[:, 0] = 0.0  # one live beam at first, or the K beams would be K copies
            finished = np.zeros(B * K, dtype=bool)
            for _ in range(max_len):
                logits, state, _ = self.decoder(self.embed(mg.tensor(token)), state, annotations, keys)
                logp = logits.log_softmax(-1)._data.astype(np.float64)  # (B*K, V)
                logp[finished] = -np.inf
                logp[finished, cfg.pad_id] = 0.0
                V = logp.shape[1]
                cand = (scores.reshape(B * K, 1) + logp).reshape(B, K * V)  # (B, K*V): every extension
                top = np.argsort(-cand, axis=1, kind="stable")[:, :K]  # (B, K)
                scores = np.take_along_axis(cand, top, axis=1)  # (B, K)
                rows = (np.arange(B)[:, None] * K + top // V).reshape(-1)  # (B*K,): the beam extended
                token = (top % V).reshape(-1)  # (B*K,)
                seqs = np.concatenate([seqs[rows], token[:, None]], axis=1)
                picked = mg.tensor(rows)
                state = (state[0][picked], state[1][picked])
                finished = finished[rows] | (token == cfg.eos_id)
                if finished.all():
                    break
            best = np.argmax(scores, axis=1)  # (B,)
        return seqs.reshape(B, K, -1)[np.arange(B), best]  # (B, L)

    def caption(self, images: Tensor | np.ndarray, vocab: Any, max_len: int = 8,
                beam_size: int = 1) -> list[str]:
        """The captions of `images` as strings, with `vocab.decode` (e.g. data.captions.CAPTION_VOCAB)."""
        return [vocab.decode(row) for row in self.generate(images, max_len, beam_size)]
