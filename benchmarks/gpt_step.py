"""One GPT training step (forward, backward, Adam) in minigrad and, when installed, PyTorch.

The standard step: vocab 65, context 64, batch 16, 2 layers, 4 heads, d=64, MLP 256, GELU
(tanh form), pre-norm, untied head, cross-entropy, Adam. `--config long` is the long-context
step: context 1024, batch 2, 2 layers, 4 heads, d=128; `--config small` the small preset's
(context 64, batch 12, 4 layers, 4 heads, d=128); `--config nanogpt` a nanoGPT-sized character
model (context 128, batch 8, 4 layers, 4 heads, d=128). Both frameworks start from the same
weights and batch, and the script checks that they compute the same loss. Each framework runs
in its own process, so that peak memory (RSS) is its own.

    python benchmarks/gpt_step.py --threads 1
    python benchmarks/gpt_step.py --threads 1 --config long
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

CONFIGS = {
    "standard": dict(V=65, T=64, B=16, LAYERS=2, HEADS=4, C=64),
    "long": dict(V=65, T=1024, B=2, LAYERS=2, HEADS=4, C=128),
    "small": dict(V=65, T=64, B=12, LAYERS=4, HEADS=4, C=128),  # the small preset's sizes and batch
    "nanogpt": dict(V=65, T=128, B=8, LAYERS=4, HEADS=4, C=128),  # a nanoGPT-sized character model
}
V, T, B, LAYERS, HEADS, C = CONFIGS["standard"].values()


def use_config(name: str) -> None:
    """Set the module's sizes (V, T, B, ...) to those of one configuration."""
    globals().update(CONFIGS[name])


def batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.integers(0, V, (B, T))
    return x, (x + 1) % V


def minigrad_model():
    import minigrad as mg
    from minigrad.models.gpt import GPT, GPTConfig

    mg.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=V, block_size=T, embed_dim=C, num_heads=HEADS, num_layers=LAYERS,
                          activation="tanh", tie_weights=False))
    return model


def saved_bytes(loss) -> int:
    """Bytes of the arrays the graph of `loss` keeps for backward (each array once)."""
    from minigrad.autograd import toposort

    seen, total = set(), 0
    for node in toposort(loss.grad_fn):
        for a in node.saved or ():
            if isinstance(a, np.ndarray) and id(a) not in seen:
                seen.add(id(a))
                total += a.nbytes
    return total


def run_minigrad(steps: int, threads: int, way: str = "kernels") -> dict:
    import minigrad as mg

    mg.set_num_threads(threads, way=way)
    model = minigrad_model()
    opt = mg.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (mg.tensor(a) for a in batch())
    first = model.loss(x, y)
    info = {"loss": first.item(), "saved_bytes": saved_bytes(first)}

    def step() -> float:
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return {**info, **_time(step, steps)}


def run_torch(steps: int, threads: int) -> dict:
    import torch
    import torch.nn as tnn
    import torch.nn.functional as TF

    torch.set_num_threads(threads)

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = tnn.LayerNorm(C), tnn.LayerNorm(C)
            self.q_proj, self.k_proj, self.v_proj, self.out_proj = (tnn.Linear(C, C) for _ in range(4))
            self.linear1, self.linear2 = tnn.Linear(C, 4 * C), tnn.Linear(4 * C, C)

        def forward(self, x):
            h = self.norm1(x)
            q, k, v = (p(h).view(B, T, HEADS, C // HEADS).transpose(1, 2)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
            a = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out_proj(a.transpose(1, 2).reshape(B, T, C))
            return x + self.linear2(TF.gelu(self.linear1(self.norm2(x)), approximate="tanh"))

    class GPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb, self.pos_emb = tnn.Embedding(V, C), tnn.Embedding(T, C)
            self.blocks = tnn.ModuleList(Block() for _ in range(LAYERS))
            self.norm_f, self.head = tnn.LayerNorm(C), tnn.Linear(C, V, bias=False)

        def forward(self, idx, targets):
            x = self.tok_emb(idx) + self.pos_emb(torch.arange(T))
            for block in self.blocks:
                x = block(x)
            return TF.cross_entropy(self.head(self.norm_f(x)).view(-1, V), targets.view(-1))

    model = GPT()
    # The same initial weights as minigrad's model: copy them over by name.
    ours = dict(minigrad_model().named_parameters())
    with torch.no_grad():
        for name, p in model.named_parameters():
            theirs = name.replace("mlp.", "").replace("attn.", "")
            key = next(k for k in ours if k.replace("mlp.", "").replace("attn.", "") == theirs)
            p.copy_(torch.from_numpy(ours[key]._data))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (torch.from_numpy(a) for a in batch())
    info = {"loss": model(x, y).item()}

    def step() -> float:
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return {**info, **_time(step, steps)}


def _time(step, steps: int) -> dict:
    for _ in range(5):  # warm up: first calls allocate and load kernels
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"ms": 1000 * float(np.median(times)), "rss_mb": rss_kb / 1024}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3, help="alternate the frameworks this many times")
    p.add_argument("--config", choices=list(CONFIGS), default="standard",
                   help="standard (T=64, batch 16), long (T=1024, batch 2, d=128) or small (the "
                        "small preset: T=64, batch 12, 4 layers, d=128)")
    p.add_argument("--only", choices=["minigrad", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--way", choices=["kernels", "blas"], default="kernels",
                   help="minigrad's threads: its kernels split their work (the default) or BLAS "
                        "multiplies on them (minigrad.set_num_threads)")
    args = p.parse_args()
    use_config(args.config)
    if args.only:  # child process: one framework, results as JSON
        if args.only == "minigrad":
            print(json.dumps(run_minigrad(args.steps, args.threads, args.way)))
        else:
            print(json.dumps(run_torch(args.steps, args.threads)))
        return
    # The frameworks take turns for --rounds rounds and each keeps its best round: on a shared
    # machine a slow spell then hits both alike instead of one of them.
    results: dict[str, dict] = {}
    per_round: dict[str, list[float]] = {"minigrad": [], "torch": []}
    for _ in range(args.rounds):
        for name in ("minigrad", "torch"):
            if name == "torch" and results.get("torch") is False:
                continue
            cmd = [sys.executable, __file__, "--only", name, "--threads", str(args.threads),
                   "--steps", str(args.steps), "--config", args.config, "--way", args.way]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode == 0:
                r = json.loads(done.stdout.strip().splitlines()[-1])
                per_round[name].append(r["ms"])
                if name not in results or r["ms"] < results[name]["ms"]:
                    results[name] = r
            elif name == "torch" and "No module named 'torch'" in done.stderr:
                print("(PyTorch is not installed: minigrad only)")
                results["torch"] = False
            else:
                sys.exit(f"{name} failed:\n{done.stderr}")
    if results.get("torch") is False:
        del results["torch"]
    print(f"GPT step (B={B}, T={T}, C={C}, {LAYERS} layers, {HEADS} heads, V={V}), "
          f"{args.threads} thread(s) (minigrad's the {args.way} way), median of {args.steps} steps, "
          f"best of {args.rounds} rounds")
    print(f"{'':10} {'ms/step':>8} {'peak RSS MB':>12} {'first loss':>11}")
    for name, r in results.items():
        print(f"{name:10} {r['ms']:8.1f} {r['rss_mb']:12.0f} {r['loss']:11.5f}")
    m = results["minigrad"]
    print(f"saved for backward per step (minigrad): {m['saved_bytes'] / 2**20:.1f} MiB")
    if "torch" in results:
        t = results["torch"]
        same = abs(m["loss"] - t["loss"]) < 1e-4
        print(f"ratio minigrad / torch: time {m['ms'] / t['ms']:.2f}x, RSS {m['rss_mb'] / t['rss_mb']:.2f}x; "
              f"same loss: {'yes' if same else 'NO'}")
        # How far the machine's speed drifted: the time ratio of each round on its own.
        rounds = " ".join(f"{a / b:.2f}" for a, b in zip(per_round["minigrad"], per_round["torch"]))
        print(f"time ratio of each round: {rounds}")


if __name__ == "__main__":
    main()
