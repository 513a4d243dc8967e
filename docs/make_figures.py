"""Regenerate the README's pictures of "Seeing inside":

    python docs/make_figures.py

* gpt_graph.svg: the computation graph of one training step of a tiny GPT, two module levels
  deep (what `minigrad graph gpt --depth 2` draws, without loading the training text).
* attention.png: the lecture notes' demo "self-attention from scratch" (5 tokens, d = 16,
  seed 0), computed with minigrad's attention and recorded with `nn.record_attention`: full
  self-attention next to the causal (decoder) mask.

Needs Graphviz's `dot` program and matplotlib (`pip install -e ".[plot]"`).
"""

from __future__ import annotations

import os

import numpy as np

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.models.gpt import GPT, PRESETS, GPTConfig
from minigrad.viz import draw_graph, plot_attention

HERE = os.path.dirname(os.path.abspath(__file__))


def gpt_graph(path: str) -> None:
    mg.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=96, **PRESETS["tiny"]))  # one block, 2 heads, C = 32
    ids = np.random.default_rng(0).integers(0, 96, size=(2, 33))
    loss = model.loss(mg.tensor(ids[:, :-1]), mg.tensor(ids[:, 1:]))  # next-token targets
    loss.backward()  # so the parameters show their gradient norms
    draw_graph(loss, model=model, depth=2).save(path)


def lecture_attention(path: str) -> None:
    # The lecture's numpy demo, line for line, then the same attention through minigrad.
    rng = np.random.default_rng(0)
    tokens = ["the", "cat", "sat", "on", "mat"]
    N, d = len(tokens), 16
    X = rng.normal(size=(N, d))
    Wq, Wk, Wv = (rng.normal(size=(d, d)) * 0.5 for _ in range(3))
    Q, K, V = (mg.tensor(X @ W) for W in (Wq, Wk, Wv))  # (N, d) each, float64
    with nn.record_attention() as maps:
        F.scaled_dot_product_attention(Q, K, V)  # softmax(Q K^T / sqrt(d)) V
        F.scaled_dot_product_attention(Q, K, V, is_causal=True)  # no peeking ahead
    full, causal = maps[0].weights, maps[1].weights  # (N, N) each

    def softmax(z):  # the notes' check: the same numbers, with the -1e9 mask of the slides
        z = z - z.max(-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(-1, keepdims=True)

    S = Q.numpy() @ K.numpy().T / np.sqrt(d)
    mask = np.triu(np.ones((N, N)), 1) * -1e9
    assert np.allclose(full, softmax(S)) and np.allclose(causal, softmax(S + mask))
    fig = plot_attention(np.stack([full, causal]), x_tokens=tokens,
                         names=["full self-attention", "causal (decoder) mask"])
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    gpt_graph(os.path.join(HERE, "gpt_graph.svg"))
    lecture_attention(os.path.join(HERE, "attention.png"))
    for name in ("gpt_graph.svg", "attention.png"):
        print(f"wrote {name}: {os.path.getsize(os.path.join(HERE, name)) / 1000:.0f} KB")
