"""The `run` command: `minigrad run script.py [args...]` runs a PyTorch program on minigrad,
`minigrad run --check script.py` lists the torch names it uses that minigrad lacks, `minigrad
run --explore page.html script.py` also writes the explorer page of its first backward pass."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .binding import MissingModule, MissingName
from .check import check_file
from .program import run_program


def cmd_run(args: argparse.Namespace) -> int:
    if args.check:
        if not os.path.isfile(args.script):
            raise FileNotFoundError(f"run --check: no such program file: {args.script}")
        uses = check_file(args.script)
        missing = [u for u in uses if not u.found]
        name = os.path.basename(args.script)
        for use in missing:
            print(f"{name}:{use.line}: {use.name} is not in minigrad")
        if missing:
            print(f"{len(missing)} of the {len(uses)} torch names {name} uses are not in minigrad "
                  "(methods of tensors are found when it runs)")
            return 1
        print(f"minigrad has every one of the {len(uses)} torch names {name} uses "
              "(methods of tensors are found when it runs)")
        return 0
    try:
        page = run_program(args.script, args.args, explore=args.explore)
    except (MissingName, MissingModule) as e:
        print(f"minigrad run: {e}", file=sys.stderr)
        return 1
    except SystemExit as e:  # the program's own exit code
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    if args.explore:
        if page is None:
            print(f"minigrad run: {os.path.basename(args.script)} called no backward(): "
                  f"no page written to {args.explore}", file=sys.stderr)
            return 1
        print(f"wrote {page}: the first backward pass, to step through in a browser")
    return 0


def add_commands(subparsers: Any) -> None:
    """Add the `run` command to the `minigrad` command's subparsers (minigrad/cli.py)."""
    p = subparsers.add_parser(
        "run", help="run a PyTorch program with torch bound to minigrad",
        description="Run a program written for PyTorch, unchanged: `import torch` (torch.nn, "
                    "torch.nn.functional, torch.optim, torch.utils.data, ...) gives minigrad for "
                    "this run. A torch name minigrad lacks stops the run with one line naming it "
                    "and the line that used it.")
    p.add_argument("--check", action="store_true",
                   help="do not run: list the torch names the script uses that minigrad lacks")
    p.add_argument("--explore", metavar="PAGE",
                   help="write the explorer page (graph, values, backward stepper) of the first "
                        "backward() the program calls to PAGE (an .html file)")
    p.add_argument("script", help="the program (a .py file)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    p.set_defaults(run=cmd_run)
