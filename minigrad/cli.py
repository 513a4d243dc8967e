"""The `minigrad` command: the one module that knows every subcommand.

    minigrad train gpt                     # models: train, sample, eval, graph, attention, plot
    minigrad exercise check softmax_backward              # exercises: list, start, check
    minigrad train gpt --engine torch --nproc 2           # export: the torch engine (torch extra)
    minigrad run train.py --lr 3e-4                       # run: a PyTorch program on minigrad

It sits above every package it dispatches to: each contributes its own subcommands
(`minigrad.models.commands.add_commands`, `minigrad.exercises.cli.add_commands`,
`minigrad.run.cli.add_commands`), and this module wires them together, giving the models'
`train` the engines it knows (the torch one from `minigrad.export`, imported only when asked
for). It also holds what every subcommand shares: the global options (`--threads`, `-v`,
`--version`, before or after the subcommand), the checks of counts and the one-line errors.
"""

from __future__ import annotations

import argparse
import os
import sys

import minigrad as mg
from minigrad.exercises import cli as exercises
from minigrad.models import commands as models
from minigrad.models.train import Engine
from minigrad.run import cli as run
from minigrad.runtime.threads import apply_setting, parse_setting


def torch_engine(nproc: int, threads: int | str) -> Engine:
    """The torch engine of minigrad.export; torch is imported here, when it is asked for, so the
    command starts fast without it (and says which extra to install when it is missing)."""
    from minigrad.export.distributed import TorchEngine

    return TorchEngine(nproc=nproc, threads=1 if threads == "auto" else parse_setting(threads)[0])


ENGINES = {
    **models.ENGINES,
    "torch": models.EngineChoice(
        make=torch_engine, processes=True,
        help="export the model and train it with PyTorch, data-parallel over --nproc processes "
             "(needs the torch extra)"),
}


# ----------------------------------------------------------------------------- global options

PLACES = ("go before the subcommand or after it (minigrad --threads 1 train gpt, or minigrad train "
          "gpt --threads 1); given in both places, the one after the subcommand wins")


def add_global_options(parser: argparse.ArgumentParser, defaults: bool = True) -> None:
    """The options of every command, with one help each: on the top-level parser with their
    defaults, and on each subcommand's parser with defaults=False. There they default to
    argparse.SUPPRESS, so an option not given after the subcommand leaves the value given
    before it (or the top-level default), and one given after it replaces that value."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    where = parser if defaults else parser.add_argument_group("options of every command", f"these {PLACES}")
    where.add_argument("--version", action="version", version=f"minigrad {mg.__version__}")
    where.add_argument("--threads", type=_threads, default=default("auto"),
                       help="threads for the matrix products and kernels: a number (minigrad splits its "
                            "kernels), blas:N (BLAS multiplies on N threads, the kernels run on one), or "
                            "auto (the default): train times its first steps at each setting and keeps "
                            "the fastest; other commands use 1")
    where.add_argument("-v", "--verbose", action="store_true", default=default(False),
                       help="also say how the steps run: the thread setting --threads auto picks and "
                            "its timings, after each evaluation")


class SubcommandParser(argparse.ArgumentParser):
    """The parser of a subcommand, and of a subcommand's own subcommands (argparse makes those
    of the same class): it takes the global options too, so `minigrad train gpt --threads 1`
    means `minigrad --threads 1 train gpt`."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        add_global_options(self, defaults=False)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="minigrad", description="Train and inspect small transformers. "
                                f"The options below {PLACES}.")
    add_global_options(p)
    sub = p.add_subparsers(dest="command", required=True, parser_class=SubcommandParser)
    models.add_commands(sub, engines=ENGINES)
    exercises.add_commands(sub)
    run.add_commands(sub)
    return p


def _threads(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        try:
            parse_setting(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"a number of threads, blas:N or auto, not {text!r}") from None
        return text
    if n < 1:
        raise argparse.ArgumentTypeError(f"at least 1 thread, not {n}")
    return n


def _check_counts(args: argparse.Namespace) -> None:
    """Counts must be positive; checked before anything is built or written."""
    for name in ("steps", "max_new_tokens", "batches", "top_k", "batch_size"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {value}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_counts(args)
        apply_setting(1 if args.threads == "auto" else args.threads)  # train's auto: models/train.py
        code = args.run(args)
        sys.stdout.flush()  # so a closed pipe shows up here, not at exit
        return code
    except BrokenPipeError:  # the output went to a program that has quit (`minigrad ... | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 1
    except (ValueError, FileNotFoundError, ImportError, OSError) as e:
        print(f"minigrad: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C outside the training loop (loading data, sampling...)
        print("minigrad: interrupted", file=sys.stderr)
        return 130


def _one_line(e: BaseException) -> str:
    # A FileNotFoundError from open() prints as "[Errno 2] ...: 'path'"; keep messages on one line.
    return " ".join(str(e).split())


if __name__ == "__main__":
    sys.exit(main())
