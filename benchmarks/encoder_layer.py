"""Forward + backward time of one TransformerEncoderLayer with the fused kernels against the
same layer built from primitive ops only, and against the layer with only its attention composed.

    python benchmarks/encoder_layer.py                  # B=16, T=64, d=64, 4 heads, ff=256
    python benchmarks/encoder_layer.py --causal --reps 50

All runs use the same weights and input (dropout 0) and are checked to give the same output.
"fused" is nn.TransformerEncoderLayer as it is (fused attention, linear, layer norm); "composed
attention" sets `layer.self_attn.fused = False` (attention from Tensor ops, the rest fused);
"primitive" computes the whole layer from primitive ops: matmul, add, mean, exp, sqrt, ... .
The attention op alone is timed too, on the (B, H, T, D) tensors the layer gives it.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Callable

import numpy as np

import minigrad as mg
import minigrad.nn as nn
from minigrad.nn.functional import attention_reference, scaled_dot_product_attention


def median_ms(steps: dict[str, Callable[[], None]], reps: int, warmup: int,
              clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Median time of each step in milliseconds; the steps take turns (in alternating order),
    so that a slow spell of the machine affects them alike."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for rep in range(reps):
        names = list(steps) if rep % 2 == 0 else list(reversed(steps))
        for name in names:
            start = clock()
            steps[name]()
            times[name].append(clock() - start)
    return {name: 1000 * statistics.median(ts) for name, ts in times.items()}


def layer_step(layer: nn.TransformerEncoderLayer, x: mg.Tensor, g: np.ndarray,
               causal: bool) -> Callable[[], None]:
    def step() -> None:
        layer.zero_grad()
        layer(x, is_causal=causal).backward(g)

    return step


def primitive_layer(layer: nn.TransformerEncoderLayer, x: mg.Tensor, causal: bool) -> mg.Tensor:
    """The post-norm layer Z = LN(X + MHA(X)), X~ = LN(Z + MLP(Z)) from primitive ops only,
    with the weights of `layer` (relu activation, dropout 0)."""

    def linear(m: nn.Linear, h: mg.Tensor) -> mg.Tensor:
        return h @ m.weight.T + m.bias

    def layer_norm(m: nn.LayerNorm, h: mg.Tensor) -> mg.Tensor:
        mu = h.mean(-1, keepdim=True)
        var = ((h - mu) * (h - mu)).mean(-1, keepdim=True)
        return (h - mu) / (var + m.eps).sqrt() * m.weight + m.bias

    def softmax(s: mg.Tensor) -> mg.Tensor:
        e = (s - s.amax(-1, keepdim=True).detach()).exp()
        return e / e.sum(-1, keepdim=True)

    attn = layer.self_attn
    B, T, E = x.shape
    H, D = attn.num_heads, attn.head_dim
    q, k, v = (linear(p, x).reshape(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
               for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    s = q @ k.transpose(-2, -1) / float(np.sqrt(D))  # (B, H, T, T)
    if causal:
        s = s.masked_fill(~mg.tensor(np.tril(np.ones((T, T), dtype=bool))), -np.inf)
    y = softmax(s) @ v  # (B, H, T, D)
    z = layer_norm(layer.norm1, x + linear(attn.out_proj, y.transpose(1, 2).reshape(B, T, E)))
    return layer_norm(layer.norm2, z + linear(layer.linear2, linear(layer.linear1, z).relu()))


def primitive_step(layer: nn.TransformerEncoderLayer, x: mg.Tensor, g: np.ndarray,
                   causal: bool) -> Callable[[], None]:
    def step() -> None:
        layer.zero_grad()
        primitive_layer(layer, x, causal).backward(g)

    return step


def attention_step(fn: Callable, q: mg.Tensor, k: mg.Tensor, v: mg.Tensor, g: np.ndarray,
                   causal: bool) -> Callable[[], None]:
    def step() -> None:
        q.grad = k.grad = v.grad = None
        fn(q, k, v, is_causal=causal).backward(g)

    return step


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ff", type=int, default=256)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--causal", action="store_true", help="self-attention with is_causal=True")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (1, as the minigrad command: more only add hand-offs here)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall time, or this process's CPU time (steadier on a busy machine)")
    args = parser.parse_args(argv)
    mg.set_num_threads(args.threads)
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    mg.manual_seed(args.seed)
    B, T, E, H = args.batch, args.seq, args.d_model, args.heads
    layer = nn.TransformerEncoderLayer(E, H, dim_feedforward=args.ff, dropout=0.0)
    rng = np.random.default_rng(args.seed)
    x = mg.tensor(rng.standard_normal((B, T, E)).astype(np.float32), requires_grad=True)
    g = rng.standard_normal((B, T, E)).astype(np.float32)

    fused_layer = layer
    composed_layer = copy.deepcopy(layer)  # the same weights, with the composed attention
    composed_layer.self_attn.fused = False
    want = fused_layer(x, is_causal=args.causal)._data
    for other in (composed_layer(x, is_causal=args.causal), primitive_layer(layer, x, args.causal)):
        np.testing.assert_allclose(other._data, want, rtol=1e-4, atol=1e-4)
    results = median_ms({
        "layer_fused": layer_step(fused_layer, x, g, args.causal),
        "layer_composed": layer_step(composed_layer, x, g, args.causal),
        "layer_primitive": primitive_step(layer, x, g, args.causal),
    }, args.reps, args.warmup, clock)

    D = E // H
    q, k, v = (mg.tensor(rng.standard_normal((B, H, T, D)).astype(np.float32), requires_grad=True)
               for _ in range(3))
    ga = rng.standard_normal((B, H, T, D)).astype(np.float32)
    results.update(median_ms({
        "attn_fused": attention_step(scaled_dot_product_attention, q, k, v, ga, args.causal),
        "attn_composed": attention_step(attention_reference, q, k, v, ga, args.causal),
    }, args.reps, args.warmup, clock))

    print(f"TransformerEncoderLayer B={B} T={T} d_model={E} heads={H} ff={args.ff} dropout=0 "
          f"causal={args.causal} threads={args.threads}")
    print(f"forward + backward, median of {args.reps} runs, {args.clock} clock (ms)")
    print(f"{'':34}{'fused':>8}{'other':>8}{'speed-up':>10}")
    rows = (("layer vs primitive ops only", "layer_fused", "layer_primitive"),
            ("layer vs composed attention", "layer_fused", "layer_composed"),
            ("attention op alone", "attn_fused", "attn_composed"))
    for name, fast, slow in rows:
        print(f"{name:34}{results[fast]:8.2f}{results[slow]:8.2f}{results[slow] / results[fast]:9.2f}x")
    return results


if __name__ == "__main__":
    main()
