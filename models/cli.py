"""The `minigrad` command: train, sample from and evaluate the models of minigrad.models.

    minigrad train gpt                     # the quick GPT on the standard library's docstrings
    minigrad train vit --preset quick --steps 500
    minigrad sample runs/gpt/checkpoint.npz --prompt "Return the"
    minigrad eval runs/gpt/checkpoint.npz
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import minigrad as mg

from .recipes import RECIPES, check_preset, recipe_class
from .train import TrainConfig, read_checkpoint, train


def _recipe_from_checkpoint(path: str, expect: str | None = None):
    meta, model_state, _ = read_checkpoint(path)
    if expect is not None and meta["model"] != expect:
        raise ValueError(f"{path} is a {meta['model']} checkpoint, not {expect}")
    recipe = recipe_class(meta["model"]).from_meta(meta["recipe"])
    recipe.model.load_state_dict(model_state)
    recipe.model.eval()
    return recipe, meta


def cmd_train(args: argparse.Namespace) -> int:
    cls = recipe_class(args.model)
    args.preset = args.preset or cls.default_preset
    check_preset(cls, args.preset)
    out = args.out or os.path.join("runs", args.model)
    if args.resume:
        recipe, meta = _recipe_from_checkpoint(args.resume, expect=args.model)
        recipe.model.train()
        cfg = TrainConfig.from_dict({**meta["train"], **({"steps": args.steps} if args.steps else {})})
    else:
        recipe = cls(args.preset, data=args.data) if args.data else cls(args.preset)
        cfg = cls.train_config(args.preset, steps=args.steps, seed=args.seed)
    print(f"{args.model} ({args.preset}): {recipe.model.num_parameters():,} parameters, "
          f"{cfg.steps} steps, batch {cfg.batch_size}; writing to {out}")
    t0 = time.perf_counter()
    metrics = train(recipe, cfg, out, resume=args.resume, progress=not args.quiet)
    print(f"done in {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if k != "step"))
    demo = recipe.demo()
    if demo:
        print(demo)
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    recipe, _ = _recipe_from_checkpoint(args.checkpoint)
    if not hasattr(recipe, "sample"):
        raise ValueError(f"{recipe.name} models do not generate text; try `minigrad eval`")
    mg.manual_seed(args.seed)
    print(recipe.sample(args.prompt, max_new_tokens=args.max_new_tokens,
                        temperature=args.temperature, top_k=args.top_k))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    recipe, meta = _recipe_from_checkpoint(args.checkpoint)
    metrics = recipe.evaluate(args.batches or meta["train"]["eval_batches"])
    print(f"{recipe.name} at step {meta['step']}: "
          + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="minigrad", description="Train and inspect small transformers.")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (default 1: faster for these small matrices)")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a model")
    t.add_argument("model", help=f"one of: {', '.join(RECIPES)}")
    t.add_argument("--preset", help="preset: model size and task (default: the model's own, e.g. quick)")
    t.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    t.add_argument("--out", help="folder for the checkpoint and log.csv (default runs/MODEL)")
    t.add_argument("--data", help="a UTF-8 text file to train on (gpt, bert)")
    t.add_argument("--resume", help="checkpoint to continue from")
    t.add_argument("--seed", type=int, help="random seed")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(run=cmd_train)

    s = sub.add_parser("sample", help="generate text from a checkpoint")
    s.add_argument("checkpoint")
    s.add_argument("--prompt", default="Return the", help="text to continue")
    s.add_argument("--max-new-tokens", type=int, default=300)
    s.add_argument("--temperature", type=float, default=0.8)
    s.add_argument("--top-k", type=int)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(run=cmd_sample)

    e = sub.add_parser("eval", help="evaluate a checkpoint on held-out data")
    e.add_argument("checkpoint")
    e.add_argument("--batches", type=int)
    e.set_defaults(run=cmd_eval)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        mg.set_num_threads(args.threads)
        return args.run(args)
    except (ValueError, FileNotFoundError, ImportError, OSError) as e:
        print(f"minigrad: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
