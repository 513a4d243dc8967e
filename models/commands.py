"""The `minigrad` subcommands of the models: train, sample from, evaluate and look inside them.

    minigrad train gpt                     # the quick GPT on the standard library's docstrings
    minigrad train vit --preset quick --steps 500
    minigrad train gpt --engine torch --nproc 2           # PyTorch, data-parallel (torch extra)
    minigrad train gpt --resume runs/gpt --steps 4000     # on at the final lr (--new-schedule: stretch it)
    minigrad sample runs/gpt/checkpoint.npz --prompt "Return the"   # needs no training text
    minigrad eval runs/gpt/checkpoint.npz
    minigrad graph gpt --depth 2 --out gpt.svg            # the computation graph of one step
    minigrad attention runs/gpt/checkpoint.npz --text "Return the" --out attention.png
    minigrad plot runs/gpt --out curves.png               # loss curves from log.csv

`add_commands(subparsers, engines)` adds them to the `minigrad` command (minigrad/cli.py), which
passes the engines `train --engine` may use: this package knows only its own, minigrad.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import minigrad as mg
from minigrad.serialization import CheckpointError

from . import inspection
from .recipes import RECIPES, check_preset, recipe_class
from .runs import RunExistsError, check_recipe_config, check_run_folder, checkpoint_path, read_checkpoint
from .train import Engine, TrainConfig, TrainingInterrupted, resume_config, train

DEFAULT_ENGINE = "minigrad"


@dataclass(frozen=True)
class EngineChoice:
    """An engine `minigrad train --engine NAME` can train with.

    make(nproc, threads) returns the `models.train.Engine` (threads: a count, or "auto"),
    importing its library only then, so a missing extra raises ImportError there; help says
    what it is for `--help`; processes: whether it can train over --nproc > 1 processes."""

    make: Callable[[int, int | str], Engine]
    help: str = ""
    processes: bool = False


ENGINES = {DEFAULT_ENGINE: EngineChoice(make=lambda nproc, threads: Engine(threads=threads))}


def _recipe_from_checkpoint(path: str, expect: str | None = None, load_data: bool = True, need: str = "",
                            resume: bool = False):
    """The recipe a checkpoint was trained with, its weights loaded. With load_data=False the
    training text is not read (sample, attention); else `need` (the command) is named when the
    text is gone. The file's arrays, its meta (with `resume`, what resuming needs too) and its
    model config are checked before anything is built (`read_checkpoint`, `check_recipe_config`)."""
    meta, model_state, _ = read_checkpoint(path, resume=resume)
    check_recipe_config(meta, path, resume=resume)
    if expect is not None and meta["model"] != expect:
        raise ValueError(f"{path} is a {meta['model']} checkpoint, not {expect}")
    data = meta["recipe"].get("data")
    if load_data and isinstance(data, str) and not os.path.isfile(data):
        raise FileNotFoundError(f"{need} needs the text {path} was trained on, {data}, which is not there "
                                "any more: put it back at that path (sample and attention do without it)")
    try:
        recipe = recipe_class(meta["model"]).from_meta(meta["recipe"], load_data=load_data)
    except KeyError as e:  # a field the recipe's meta() writes, missing
        raise CheckpointError(f"{path}: recipe has no {e} field, which a {meta['model']} checkpoint "
                              "has") from None
    except ValueError as e:  # the model's own checks (heads dividing the width...)
        raise CheckpointError(f"{path}: recipe: {e}") from None
    recipe.model.load_state_dict(model_state)
    recipe.model.eval()
    return recipe, meta


def _check_out(out: str, resume: str | None, force: bool) -> None:
    """Refuse an --out holding another run (one line offering the ways on), or say what --force replaces."""
    try:
        check_run_folder(out, resume, overwrite=False)
    except RunExistsError as e:
        if not force and not os.path.isfile(os.path.join(out, "checkpoint.npz")):  # nothing to resume
            raise ValueError(f"{out} already holds a run ({e.what}) that stopped before its first "
                             "checkpoint, so it cannot be resumed: start it again with --force (replacing "
                             "it), or train into a new folder with --out DIR") from None
        if not force:
            raise ValueError(f"{out} already holds a run ({e.what}); continue it with --resume {out}, train "
                             f"into a new folder with --out DIR, or give --force to replace it") from None
        print(f"minigrad: --force: replacing the run in {out} ({e.what})", file=sys.stderr)


def _check_resumable(resume: str, model: str) -> None:
    """Refuse --resume of a run folder whose run saved no checkpoint, naming what works instead."""
    if (os.path.isdir(resume) and not os.path.isfile(os.path.join(resume, "checkpoint.npz"))
            and os.path.isfile(os.path.join(resume, "log.csv"))):
        raise FileNotFoundError(
            f"{resume} holds no checkpoint.npz: its run stopped before its first checkpoint (one is saved "
            f"at each evaluation), so there is nothing to resume; start it again with its options and "
            f"--force: minigrad train {model} --out {resume} --force")


def cmd_train(args: argparse.Namespace, engines: Mapping[str, EngineChoice]) -> int:
    if args.nproc < 1:
        raise ValueError(f"--nproc must be positive, got {args.nproc}")
    choice = engines[args.engine]
    if args.nproc > 1 and not choice.processes:
        parallel = " or ".join(name for name, c in engines.items() if c.processes)
        raise ValueError(f"--nproc {args.nproc} needs --engine {parallel}: the {args.engine} engine "
                         "trains in one process")
    try:  # an engine imports its library (torch) only here, so the command starts fast without it
        engine = choice.make(args.nproc, args.threads)
    except ImportError as e:
        raise ImportError(f"--engine {args.engine}: {e}") from None
    engine.verbose = args.verbose  # the tuner's choices only with -v
    cls = recipe_class(args.model)
    fixed = [f"--{name}" for name in ("preset", "data", "seed") if getattr(args, name) is not None]
    if args.resume and fixed:  # else they would be silently ignored
        raise ValueError(f"{' and '.join(fixed)} cannot change a resumed run: its checkpoint fixes the "
                         "model, the data and the random state; leave them out (--steps, --out may change)")
    args.preset = args.preset or cls.default_preset
    check_preset(cls, args.preset)
    if args.new_schedule and not args.resume:
        raise ValueError("--new-schedule is for --resume: a new run gets the preset's schedule anyway")
    schedule = ""
    if args.resume:
        _check_resumable(args.resume, args.model)
        args.resume = checkpoint_path(args.resume)  # a run folder stands for its checkpoint.npz
        # By default the run goes on in the checkpoint's folder, next to its log.csv.
        out = args.out or os.path.dirname(args.resume) or "."
        _check_out(out, args.resume, args.force)
        recipe, meta = _recipe_from_checkpoint(args.resume, expect=args.model, need="--resume", resume=True)
        cfg, schedule = resume_config(meta, args.steps, new_schedule=args.new_schedule)
        if cfg.steps <= meta["step"]:
            done = meta["step"]
            raise ValueError(f"{args.resume} is at step {done} already: training to step {cfg.steps} "
                             f"leaves nothing to do; give --steps above {done} to train on")
        what = f"from step {meta['step']} of {args.resume}"
    else:
        out = args.out or os.path.join("runs", args.model)
        _check_out(out, None, args.force)  # before the data is read: a refusal comes at once
        recipe = cls(args.preset, data=args.data) if args.data else cls(args.preset)
        cfg = cls.train_config(args.preset, steps=args.steps, seed=args.seed)
        what = args.preset
    print(f"{args.model} ({what}): {recipe.model.num_parameters():,} parameters, "
          f"{cfg.steps} steps, batch {cfg.batch_size}; writing to {out}"
          + (f"; {args.engine} engine, {args.nproc} process{'es' * (args.nproc > 1)}"
             if args.engine != DEFAULT_ENGINE else ""))
    for line in (recipe.data_summary(), schedule):
        if line:
            print(line)
    t0 = time.perf_counter()
    try:
        metrics = train(recipe, cfg, out, resume=args.resume, progress=not args.quiet, overwrite=args.force,
                        engine=engine)
    except TrainingInterrupted as stop:
        print(f"minigrad: {stop}; continue with: minigrad train {args.model} --resume {out}", file=sys.stderr)
        return 130  # the shell's code for "ended by Ctrl-C"
    print(f"done in {time.perf_counter() - t0:.0f} s: {_metrics_line(metrics, recipe)}")
    demo = recipe.demo()
    if demo:
        print(demo)
    return 0


def _metrics_line(metrics: Mapping[str, float], recipe: Any) -> str:
    """Metrics for a person: "val_loss 1.7555 (a uniform guess over the 96 characters: 4.56)",
    each followed by what the recipe says it compares with (log.csv keeps the bare numbers)."""
    notes = recipe.metric_notes()
    return ", ".join(f"{k} {v:.4f}" + (f" ({notes[k]})" if k in notes else "")
                     for k, v in metrics.items() if k != "step")


def cmd_sample(args: argparse.Namespace) -> int:
    recipe, _ = _recipe_from_checkpoint(args.checkpoint, load_data=False)
    if hasattr(recipe, "sample_images"):  # captioning: test pictures and their captions, no prompt
        print(recipe.sample_images(seed=args.seed))
        return 0
    if not hasattr(recipe, "sample"):
        raise ValueError(f"{recipe.name} models do not generate text; try `minigrad eval`")
    mg.manual_seed(args.seed)
    print(recipe.sample(args.prompt, max_new_tokens=args.max_new_tokens,
                        temperature=args.temperature, top_k=args.top_k))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    recipe, meta = _recipe_from_checkpoint(args.checkpoint, need="eval")
    metrics = recipe.evaluate(args.batches or TrainConfig.from_dict(meta["train"]).eval_batches)
    print(f"{recipe.name} at step {meta['step']}: {_metrics_line(metrics, recipe)}")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    """One training batch's loss, drawn (--out; --expand-fused, --show-values) and/or written as
    the interactive page of `minigrad.viz.explore` (--html)."""
    from minigrad.viz import draw_graph, explore

    cls = recipe_class(args.model)
    preset = args.preset or ("tiny" if "tiny" in cls.presets else cls.default_preset)
    check_preset(cls, preset)
    out = args.out or (None if args.html else f"{args.model}_graph.svg")
    if out is not None:
        inspection.check_picture_path(out)
    if args.html and os.path.splitext(args.html)[1].lower() not in (".html", ".htm"):
        raise ValueError(f"--html writes a web page: end its name in .html, got {args.html!r}")
    if args.html and args.module:
        raise ValueError("--module draws a picture of one module; the --html page opens modules by click")
    recipe, loss = inspection.step_loss(cls, preset, args.module, args.batch_size, args.seed)
    what = f"{args.model} ({preset}), one training batch of {args.batch_size} forward and backward"
    if args.grad_of:  # draw the backward pass itself: the graph of one parameter's gradient
        import minigrad as mg

        params = dict(recipe.model.named_parameters())
        if args.grad_of not in params:
            near = ", ".join(list(params)[:6])
            raise ValueError(f"--grad-of: {args.model} has no parameter {args.grad_of!r} "
                             f"(it has {near}, ...)")
        (loss,) = mg.autograd.grad(loss, params[args.grad_of], create_graph=True)
        loss = loss.sum()
        what = f"the backward pass giving d loss / d {args.grad_of} of {args.model} ({preset})"
    if args.html:
        page = explore(loss, model=recipe.model, depth=args.depth)  # runs the backward it steps through
        inspection.save_page(page, args.html)
        folded = "every module open" if args.depth is None else f"modules below depth {args.depth} folded"
        print(f"wrote {args.html}: {what}, {len(page.trace)} backward steps, {folded}")
    else:  # so the drawing shows gradients (a gradient's graph is kept whole: its nodes share tensors)
        loss.backward(retain_graph=bool(args.grad_of))
    if out is None:
        return 0
    drawing = draw_graph(loss, model=recipe.model, depth=args.depth, module=args.module,
                         show_values=True if args.show_values else "auto", expand_fused=args.expand_fused)
    written, notes = inspection.save_drawing(drawing, out)
    for note in notes:  # e.g. Graphviz is missing, so DOT source was written instead
        print(f"minigrad: {note}", file=sys.stderr)
    depth = "the whole graph" if args.depth is None else f"depth {args.depth}"
    print(f"wrote {written}: {what}, {depth}")
    return 0


def cmd_attention(args: argparse.Namespace) -> int:
    recipe, _ = _recipe_from_checkpoint(args.checkpoint, load_data=False)
    names, notes = inspection.plot_model_attention(recipe, args.out, text=args.text, index=args.index)
    for note in notes:
        print(note)
    print(f"wrote {args.out}: {len(names)} attention layer{'s' * (len(names) != 1)} ({', '.join(names)})")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from minigrad.viz import plot_training

    run = args.run_dir
    out = args.out or os.path.join(run if os.path.isdir(run) else os.path.dirname(run), "training.png")
    if os.path.isfile(run) or os.path.isdir(run):  # else plot_training says what is missing
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    plot_training(run, path=out)
    print(f"wrote {out}")
    return 0


def _depth(text: str) -> int | None:
    if text == "all":
        return None
    try:
        depth = int(text)
    except ValueError:
        depth = -1
    if depth < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 or 'all', got {text!r}")
    return depth


def add_commands(subparsers: Any, engines: Mapping[str, EngineChoice] | None = None) -> None:
    """Add train, sample, eval, graph, attention and plot to the `minigrad` command's
    subparsers. `engines`: the choices of `train --engine`, minigrad (the default) among them
    (default: this package's `ENGINES`, minigrad alone)."""
    engines = dict(ENGINES if engines is None else engines)
    t = subparsers.add_parser("train", help="train a model")
    t.add_argument("model", help=f"one of: {', '.join(RECIPES)}")
    t.add_argument("--preset", help="preset: model size and task (default: the model's own, e.g. quick)")
    t.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    t.add_argument("--out", help="folder for the checkpoint and log.csv (default runs/MODEL)")
    t.add_argument("--data", help="a UTF-8 text file to train on (gpt, bert)")
    t.add_argument("--resume", help="checkpoint (or run folder) to continue from; the run goes on in "
                   "its folder unless --out is given")
    t.add_argument("--force", action="store_true",
                   help="train into an --out folder holding another run, replacing its checkpoint and log")
    t.add_argument("--new-schedule", action="store_true",
                   help="with --resume and more --steps: stretch the lr schedule over the new steps (the "
                   "lr rises again) instead of going on at its final lr")
    t.add_argument("--seed", type=int, help="random seed")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument("--engine", choices=list(engines), default=DEFAULT_ENGINE,
                   help=f"{DEFAULT_ENGINE} (default)" + "".join(
                       f" or {name}: {c.help}" for name, c in engines.items() if name != DEFAULT_ENGINE))
    t.add_argument("--nproc", type=int, default=1,
                   help="processes for --engine torch, each on its share of every batch (default 1)")
    t.set_defaults(run=lambda args: cmd_train(args, engines))

    s = subparsers.add_parser("sample", help="generate text from a checkpoint")
    s.add_argument("checkpoint")
    s.add_argument("--prompt", default="Return the", help="text to continue (default %(default)r)")
    s.add_argument("--max-new-tokens", type=int, default=300,
                   help="how many characters to generate after the prompt (default %(default)s)")
    s.add_argument("--temperature", type=float, default=0.8,
                   help="divides the model's scores (logits) before sampling: below 1 the likely "
                        "characters come more often, above 1 the text gets more varied, 0 always takes "
                        "the most likely one (default %(default)s)")
    s.add_argument("--top-k", type=int,
                   help="sample only from the k most likely next characters (default: every character "
                        "of the vocabulary)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed: the same seed and options give the same text, and for a caption "
                        "model the same test pictures (default %(default)s)")
    s.set_defaults(run=cmd_sample)

    e = subparsers.add_parser("eval", help="evaluate a checkpoint on held-out data")
    e.add_argument("checkpoint")
    e.add_argument("--batches", type=int)
    e.set_defaults(run=cmd_eval)

    g = subparsers.add_parser("graph", help="draw the computation graph of one training step")
    g.add_argument("model", help=f"one of: {', '.join(RECIPES)}")
    g.add_argument("--depth", type=_depth, default=1,
                   help="module levels to open (0: the model as one box; 'all': every op); default 1")
    g.add_argument("--out", help="the picture: .svg, .png, .pdf or .dot (default MODEL_graph.svg)")
    g.add_argument("--preset", help="model size (default tiny, so it is quick to draw)")
    g.add_argument("--module", help="draw only this module, by its path (e.g. blocks.0.attn)")
    g.add_argument("--batch-size", type=int, default=2, help="examples in the batch (default 2)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--expand-fused", action="store_true",
                   help="draw each fused kernel (attention) as its steps: q k^T, scale, softmax, @ v")
    g.add_argument("--show-values", action="store_true",
                   help="print the values and gradients of small tensors (up to 64 elements) as grids")
    g.add_argument("--html", help="also (or, without --out, only) write the interactive page of "
                   "minigrad.viz.explore: modules open by click, a backward stepper")
    g.add_argument("--grad-of", metavar="PARAM",
                   help="draw the backward pass instead: the graph of the gradient of this parameter "
                   "(e.g. blocks.0.attn.q_proj.weight), made with create_graph=True")
    g.set_defaults(run=cmd_graph)

    a = subparsers.add_parser("attention", help="heatmaps of a checkpoint's attention weights on an input")
    a.add_argument("checkpoint")
    a.add_argument("--text", help="the input: text (gpt, bert) or the source sequence (seq2seq, rnn)")
    a.add_argument("--index", type=int, default=0, help="vit, caption: which test image (default 0)")
    a.add_argument("--out", default="attention.png", help="the picture (default attention.png)")
    a.set_defaults(run=cmd_attention)

    pl = subparsers.add_parser("plot", help="plot the loss curves of a training run")
    pl.add_argument("run_dir", help="the run's folder (holding log.csv) or the log.csv itself")
    pl.add_argument("--out", help="the picture (default RUN_DIR/training.png)")
    pl.set_defaults(run=cmd_plot)
