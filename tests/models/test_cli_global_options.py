"""The `minigrad` command's global options (--threads, -v, --version) go before or after the
subcommand, with the same meaning and help there; given in both places, the one after wins."""

import re

import pytest

import minigrad as mg
from minigrad.cli import build_parser, main


def help_of(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def option_blocks(text):
    """option strings ("-v, --verbose") -> their help, whitespace joined, from a --help text."""
    blocks, name = {}, None
    for line in text.splitlines():
        found = re.match(r"  (-[^ ]+(?:, -[^ ]+)*)(?: [A-Z_]+)?(?:  +(.*))?$", line)
        if found:
            name = found.group(1)
            blocks[name] = found.group(2) or ""
        elif name is not None and line.startswith("   "):
            blocks[name] += " " + line.strip()
        else:
            name = None
    return {k: " ".join(v.split()) for k, v in blocks.items()}


def global_options(capsys):
    top = option_blocks(help_of([], capsys))
    top.pop("-h, --help")
    return top


def subcommands(capsys):
    listed = re.search(r"\{([a-z,]+)\}", help_of([], capsys)).group(1).split(",")
    return [[name] for name in listed] + [["exercise", "list"], ["exercise", "check"]]


def test_the_global_options_are_threads_verbose_and_version(capsys):
    assert set(global_options(capsys)) == {"--version", "--threads", "-v, --verbose"}


def test_every_subcommand_lists_the_global_options_with_the_same_help(capsys):
    top = global_options(capsys)
    wins = "given in both places, the one after the subcommand wins"
    assert wins in " ".join(help_of([], capsys).split())
    for argv in subcommands(capsys):
        text = help_of(argv, capsys)
        assert wins in " ".join(text.split()), f"{' '.join(argv)} --help does not say which place wins"
        here = option_blocks(text)
        for option, said in top.items():
            assert here.get(option) == said, f"{' '.join(argv)} --help: {option}"


@pytest.mark.parametrize("argv, threads, verbose", [
    pytest.param(["train", "gpt"], "auto", False, id="defaults"),
    pytest.param(["--threads", "2", "-v", "train", "gpt"], 2, True, id="before"),
    pytest.param(["train", "gpt", "--threads", "2", "-v"], 2, True, id="after"),
    pytest.param(["train", "--threads", "blas:2", "--verbose", "gpt"], "blas:2", True, id="between"),
    pytest.param(["--threads", "2", "train", "gpt", "--threads", "1"], 1, False, id="after-wins"),
    pytest.param(["-v", "--threads", "3", "train", "gpt", "--seed", "1"], 3, True, id="before-stays"),
    pytest.param(["exercise", "list", "--threads", "1", "-v"], 1, True, id="nested"),
    pytest.param(["sample", "c.npz", "--threads", "blas:2"], "blas:2", False, id="sample"),
])
def test_global_options_mean_the_same_before_and_after_the_subcommand(argv, threads, verbose):
    args = build_parser().parse_args(argv)
    assert args.threads == threads and args.verbose is verbose


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_bad_value_is_refused_the_same_way_in_either_place(where, capsys):
    argv = ["--threads", "0", "train", "gpt"] if where == "before" else ["train", "gpt", "--threads", "0"]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2 and "at least 1 thread, not 0" in capsys.readouterr().err


def test_version_after_the_subcommand(capsys):
    with pytest.raises(SystemExit) as done:
        main(["train", "gpt", "--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"minigrad {mg.__version__}"
