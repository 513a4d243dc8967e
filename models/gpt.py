"""GPT: a decoder-only transformer language model, read top-down in nanoGPT's order.

References: Radford et al., "Improving Language Understanding by Generative Pre-Training"
(2018) and "Language Models are Unsupervised Multitask Learners" (GPT-2, 2019); the lecture
notes' "Putting it together: GPT": embed tokens + positions, a stack of masked (causal)
transformer layers, a linear-softmax head giving the next-token distribution.

Shape letters: B batch, T time (tokens), C embedding size (embed_dim), H heads,
D head size (C / H), V vocabulary size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Tensor

# ----------------------------------------------------------------------------- parts


class MLP(nn.Module):
    """Position-wise feed-forward network: C -> 4C -> C with GELU."""

    def __init__(self, embed_dim: int, hidden_dim: int, dropout: float, activation: str):
        self.linear1 = nn.Linear(embed_dim, hidden_dim)
        self.act = nn.GELU(approximate=activation)
        self.linear2 = nn.Linear(hidden_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.linear2(self.act(self.linear1(x))))  # (B, T, C)


class Block(nn.Module):
    """A pre-norm transformer block: x + attn(LN(x)), then x + mlp(LN(x)).

    The attention is causal multi-head self-attention, token t seeing tokens 0..t
    (`nn.MultiheadAttention`, packed into one op); with a `nn.KVCache` it attends from the new
    tokens to the cached ones too, so that generating one more token costs one query against
    the cache instead of recomputing the whole prefix.
    """

    def __init__(self, config: GPTConfig):
        C = config.embed_dim
        if C % config.num_heads:
            raise ValueError(f"GPT: embed_dim {C} is not divisible by num_heads {config.num_heads}")
        self.norm1 = nn.LayerNorm(C)
        # init="linear": GPT sets the weights itself (below), from what four Linear layers draw.
        self.attn = nn.MultiheadAttention(C, config.num_heads, dropout=config.dropout, init="linear")
        self.resid_dropout = nn.Dropout(config.dropout)
        self.norm2 = nn.LayerNorm(C)
        self.mlp = MLP(C, config.mlp_ratio * C, config.dropout, config.activation)

    def forward(self, x: Tensor, cache: nn.KVCache | None = None) -> Tensor:
        h = self.norm1(x)  # (B, T, C)
        x = x + self.resid_dropout(self.attn(h, h, h, is_causal=True, cache=cache, need_weights=False)[0])
        x = x + self.mlp(self.norm2(x))  # (B, T, C)
        return x


# ----------------------------------------------------------------------------- config


@dataclass
class GPTConfig:
    vocab_size: int = 96
    block_size: int = 64  # longest context the model sees
    embed_dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    mlp_ratio: int = 4
    dropout: float = 0.0
    activation: str = "tanh"  # GELU form: "tanh" (GPT-2) or "none" (exact erf)
    tie_weights: bool = True  # the output head reuses the token embedding

    def num_parameters(self) -> int:
        """The GPT's parameter count, from the sizes alone (nothing is built): embeddings
        (V + T) C, per block 4 C^2 + 4 C (attention) + 2 C F + F + C (MLP, F = mlp_ratio C)
        + 4 C (two LayerNorms), the final LayerNorm 2 C, and V C more for an untied head."""
        C, F = self.embed_dim, self.mlp_ratio * self.embed_dim
        block = 4 * C * C + 4 * C + 2 * C * F + F + C + 4 * C
        head = 0 if self.tie_weights else self.vocab_size * C
        return (self.vocab_size + self.block_size) * C + self.num_layers * block + 2 * C + head


PRESETS = {
    "tiny": dict(block_size=32, embed_dim=32, num_heads=2, num_layers=1),
    "quick": dict(block_size=64, embed_dim=64, num_heads=4, num_layers=2),
    "small": dict(block_size=64, embed_dim=128, num_heads=4, num_layers=4),  # nanoGPT on a CPU
}

# ----------------------------------------------------------------------------- model


class GPT(nn.Module):
    """Decoder-only language model.

    Shape:
        idx: (B, T) int64 token ids, T <= block_size.
        forward returns logits (B, T, V): entry [b, t] scores the token after idx[b, :t+1].
    """

    def __init__(self, config: GPTConfig):
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.embed_dim)
        self.pos_emb = nn.Embedding(config.block_size, config.embed_dim)  # learned positions
        self.drop = nn.Dropout(config.dropout)
        self.blocks = [Block(config) for _ in range(config.num_layers)]
        self.norm_f = nn.LayerNorm(config.embed_dim)
        self.head = nn.Linear(config.embed_dim, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.tok_emb.weight  # (V, C) serves both ways
        # GPT-2's init: small normal weights, residual projections scaled by depth.
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.ndim == 2:
                nn.init.normal_(p, std=0.02)
            if name.endswith(("out_proj.weight", "linear2.weight")):
                nn.init.normal_(p, std=0.02 / np.sqrt(2 * config.num_layers))

    def new_caches(self) -> list[nn.KVCache]:
        """One empty KV cache per block, each preallocated for block_size positions: pass them
        to forward (with `start`, the position of idx's first token) under `mg.no_grad()`."""
        return [nn.KVCache(self.config.block_size) for _ in self.blocks]

    def forward(self, idx: Tensor, caches: list[nn.KVCache] | None = None, start: int = 0) -> Tensor:
        B, T = idx.shape
        if start + T > self.config.block_size:
            raise ValueError(
                f"GPT: sequence of {start + T} tokens is longer than block_size {self.config.block_size}"
            )
        pos = mg.arange(start, start + T)  # (T,)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))  # (B, T, C)
        if caches is not None and (len(caches) != len(self.blocks)
                                   or not all(isinstance(c, nn.KVCache) for c in caches)):
            raise TypeError(f"GPT: caches must be {len(self.blocks)} nn.KVCache (model.new_caches()), got "
                            f"{[type(c).__name__ for c in caches]}")
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])  # (B, T, C)
        return self.head(self.norm_f(x))  # (B, T, V)

    def loss(self, idx: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy of predicting targets[b, t] (the token after idx[b, t])."""
        logits = self(idx)  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))  # (B*T, V)

    @mg.no_grad()
    def generate(self, idx: Tensor | np.ndarray, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, use_cache: bool = True) -> np.ndarray:
        """Extend each row of idx (B, T) by sampling max_new_tokens tokens.

        temperature < 1 sharpens the distribution, > 1 flattens it, 0 takes the argmax;
        top_k keeps only the k most likely tokens. With use_cache the keys and values of
        the prefix are kept between steps, so a step runs one query against the cache; the
        tokens are the same as without it while the sequence fits in block_size. Past it,
        the uncached model reads the last block_size tokens at every step, while the cache,
        once full, restarts from the last half window (its positions are absolute, so it
        cannot slide by one token): from there on the two may pick different tokens.
        """
        if temperature < 0:
            raise ValueError(f"generate: temperature must be >= 0, got {temperature}")
        if max_new_tokens < 0:
            raise ValueError(f"generate: max_new_tokens must be >= 0, got {max_new_tokens}")
        with nn.evaluating(self):
            out = np.array(getattr(idx, "_data", idx), dtype=np.int64)  # (B, T)
            block = self.config.block_size
            caches, cached = None, 0  # the caches hold the last `cached` tokens of out, at positions 0..
            for _ in range(max_new_tokens):
                if not use_cache:
                    logits = self(mg.tensor(out[:, -block:]))  # crop to the context window
                elif caches is not None and cached < block:  # one new token against the cache
                    logits = self(mg.tensor(out[:, -1:]), caches, start=cached)
                    cached += 1
                else:
                    # Fill the caches from the prompt or, once the window is full, from its last
                    # half: positions are absolute, so a window that slides by one token would
                    # change every cached key. Jumping by half a window keeps most steps cheap.
                    keep = out.shape[1] if caches is None else block - block // 2
                    context = out[:, -min(keep, block):]
                    caches = self.new_caches()
                    logits = self(mg.tensor(context), caches)
                    cached = context.shape[1]
                out = np.concatenate([out, self._pick(logits._data[:, -1], temperature, top_k)], axis=1)
        return out

    @staticmethod
    def _pick(logits: np.ndarray, temperature: float, top_k: int | None) -> np.ndarray:
        """One next token per row (B, 1) from logits (B, V)."""
        if temperature == 0:
            return logits.argmax(-1)[:, None]
        logits = logits.astype(np.float64) / temperature
        if top_k is not None:
            kth = np.sort(logits, axis=-1)[:, -min(top_k, logits.shape[-1])][:, None]
            logits = np.where(logits < kth, -np.inf, logits)
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        rng = mg.random.generator()
        return np.array([[rng.choice(len(row), p=row)] for row in p], dtype=np.int64)

