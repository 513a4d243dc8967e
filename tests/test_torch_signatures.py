"""Positional parameters are PyTorch's, in PyTorch's order, for every public function and method
that PyTorch has too: minigrad's top-level names (minigrad.__all__), nn.functional, the Tensor
methods, the nn modules' __init__ and forward, the optimizers and the lr schedulers.

The rule, for each name both have:
  - every parameter minigrad takes by position (positional-or-keyword) has the name that
    PyTorch's parameter at that position has, and PyTorch takes it by position too;
  - minigrad's *args stands where PyTorch's *args stands;
  - a keyword-only parameter of minigrad's is one of PyTorch's parameters, of the same name,
    or is listed in EXTENSIONS with the reason minigrad has it: minigrad's own keyword-only
    extensions (MultiheadAttention's `cache`), and the keywords of another of PyTorch's
    overloads that minigrad's one signature also takes (var's `correction`); a parameter
    minigrad takes by position is never an extension;
  - minigrad may leave out PyTorch's trailing parameters (`omitted` lists them).
PyTorch's signature comes from inspect.signature where PyTorch has one (its Python functions and
classes); for its builtins, from the type stubs PyTorch ships beside them (torch/_C/*.pyi,
torch/nn/functional.pyi: generated from the argument parser, one `def` per overload, so
`var(dim, unbiased, keepdim)` is there beside `var(dim, *, correction, keepdim)`); else from
the first line of the docstring, which states it ("var(dim=None, *, correction=1,
keepdim=False) -> Tensor"), or from TORCH_SIGNATURES where neither has it. A builtin with
several overloads matches when one of them does.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
from typing import Any, Callable

import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
import minigrad.optim.lr_scheduler as lr_scheduler

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")

POS, KW, VAR = "positional", "keyword", "var"

# PyTorch's signature where neither inspect, its stubs nor its docstring give one, or where they
# give a wrong one, as "input, dim=None, *, keepdim=False" (several strings for several
# overloads; they replace what the stubs say, so list every overload). Each was checked
# against what PyTorch accepts: where its stub says otherwise (numel's `self`, requires_grad_'s
# `mode`), calling it with the stub's name fails and with this one works.
TORCH_SIGNATURES: dict[str, list[str]] = {
    "torch.numel": ["input"],
    # classes of torch's C extension, documented as torch.finfo(type=None) and torch.iinfo(type)
    "torch.finfo": ["type=None"],
    "torch.iinfo": ["type"],
    "torch.Tensor.requires_grad_": ["requires_grad=True"],
    "torch.nn.Identity.__init__": ["*args"],  # the arguments are ignored
    "torch.nn.Sequential.__init__": ["*args"],
    "torch.nn.Parameter.__init__": ["data=None, requires_grad=True"],
    # RNN, LSTM and GRU take (*args, **kwargs) and hand them to RNNBase, without its mode
    "torch.nn.RNN.__init__": ["input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, "
                              "batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None"],
    "torch.nn.LSTM.__init__": ["input_size, hidden_size, num_layers=1, bias=True, batch_first=False, "
                               "dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None"],
    "torch.nn.GRU.__init__": ["input_size, hidden_size, num_layers=1, bias=True, batch_first=False, "
                              "dropout=0.0, bidirectional=False, device=None, dtype=None"],
    # The stubs' three overloads, and the docstring's own form, to(*args, **kwargs): PyTorch's
    # parser takes one dtype, device or tensor by position and the rest by name, as minigrad's
    # to(*args, dtype=None, copy=False) does (checked: x.to(torch.float64, copy=True),
    # x.to(other, copy=True) and x.to(dtype=torch.float64, copy=True) all work).
    "torch.Tensor.to": ["dtype, non_blocking=False, copy=False, *, memory_format=None",
                        "device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=None",
                        "other, non_blocking=False, copy=False, *, memory_format=None",
                        "*args, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None"],
}

# Keyword-only parameters of minigrad's that the PyTorch signature it matches lacks, each with
# the reason minigrad has it: {qualified torch name: {minigrad parameter: reason}}. They are
# minigrad's own extensions, or keywords of another of PyTorch's overloads that minigrad's one
# signature takes too. Only keyword-only ones can be here: `mismatches` still refuses a listed
# name that minigrad takes by position, and test_every_extension_is_a_keyword_only_parameter
# refuses an entry that matches nothing.
_TRUE_MAY_ATTEND = "minigrad's boolean mask, True = may attend (the rule of nn.attention), beside PyTorch's"
_CORRECTION = ("PyTorch's, of its overload (dim, *, correction, keepdim); minigrad's one signature "
               "also takes the (dim, unbiased, keepdim) overload's positions")
_VALUE = ("PyTorch's, of its overload scatter(dim, index, value, *, reduce); minigrad also takes "
          "that number by position, as src")
_STABLE = ("PyTorch's, of its overload (*, stable, dim, descending); minigrad's one signature also "
           "takes (dim, descending) by position, the form torch.argsort's docstring states (checked: "
           "its parser refuses argsort(x, 0, stable=True))")
EXTENSIONS: dict[str, dict[str, str]] = {
    "torch.nn.functional.scaled_dot_product_attention": {
        "need_weights": "also return the attention weights",
        "mask": "minigrad's older name of attn_mask, kept for the exercises' code",
    },
    "torch.nn.MultiheadAttention.__init__": {
        "fused": "the fused attention kernel or the composed attention_reference, to compare the two",
        "init": "'xavier' (PyTorch's) or 'linear' (Linear's own draws, for a model that sets its weights)",
    },
    "torch.nn.MultiheadAttention.forward": {
        "mask": _TRUE_MAY_ATTEND + " attn_mask (True = masked out)",
        "cache": "a KVCache for generation, one packed op per step",
    },
    "torch.nn.TransformerEncoderLayer.forward": {"attend_mask": _TRUE_MAY_ATTEND + " src_mask"},
    "torch.nn.TransformerEncoder.forward": {"attend_mask": _TRUE_MAY_ATTEND + " mask"},
    "torch.nn.TransformerDecoderLayer.forward": {"attend_mask": _TRUE_MAY_ATTEND + " tgt_mask",
                                                 "memory_attend_mask": _TRUE_MAY_ATTEND + " memory_mask"},
    "torch.nn.TransformerDecoder.forward": {"attend_mask": _TRUE_MAY_ATTEND + " tgt_mask",
                                            "memory_attend_mask": _TRUE_MAY_ATTEND + " memory_mask"},
    "torch.var": {"correction": _CORRECTION},
    "torch.std": {"correction": _CORRECTION},
    "torch.Tensor.var": {"correction": _CORRECTION},
    "torch.Tensor.std": {"correction": _CORRECTION},
    "torch.scatter": {"value": _VALUE},
    "torch.Tensor.scatter": {"value": _VALUE},
    "torch.Tensor.scatter_": {"value": _VALUE},
    "torch.sort": {"stable": _STABLE},
    "torch.argsort": {"stable": _STABLE},
    "torch.Tensor.sort": {"stable": _STABLE},
    "torch.Tensor.argsort": {"stable": _STABLE},
    "torch.tensor": {"name": "a label for graph drawings (the same as setting t.name later)"},
    "torch.set_num_threads": {"way": "who gets the threads: minigrad's kernels, or BLAS ('blas')"},
}


# ----------------------------------------------------------------------------- signatures


def _from_inspect(fn: Callable, drop_first: bool) -> list[tuple[str, str]] | None:
    """[(name, kind)] of fn's parameters (kind POS, KW or VAR; **kwargs left out), or None."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            continue
        kind = {p.POSITIONAL_ONLY: POS, p.POSITIONAL_OR_KEYWORD: POS, p.VAR_POSITIONAL: VAR}.get(p.kind, KW)
        params.append((p.name, kind))
    return params[1:] if drop_first and params and params[0][0] in ("self", "cls") else params


def _split_top(text: str) -> list[str]:
    """text split at the commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def _parse(params_text: str) -> list[tuple[str, str]]:
    """[(name, kind)] from a documented parameter list "input, dim=None, *, keepdim=False"."""
    out, kw_only = [], False
    for part in _split_top(params_text):
        name = re.split(r"[=:\s]", part, maxsplit=1)[0]
        if name == "*":
            kw_only = True
        elif name.startswith("**"):
            continue
        elif name.startswith("*"):
            out.append((name[1:], VAR))
            kw_only = True
        elif name.isidentifier():
            out.append((name, KW if kw_only else POS))
    return out


def _documented(name: str, doc: str | None) -> list[list[tuple[str, str]]]:
    """Every signature `name(...)` the docstring states at the start of a line (or after
    ".. function::", as PyTorch documents an overload)."""
    if not doc:
        return []
    found = []
    start = rf"(?m)^\s*(?:\.\. (?:function|method):: )?(?:torch\.|Tensor\.)?{re.escape(name)}\("
    for m in re.finditer(start, doc):
        depth, i = 1, m.end()
        while i < len(doc) and depth:
            depth += {"(": 1, ")": -1}.get(doc[i], 0)
            i += 1
        found.append(_parse(doc[m.end():i - 1].replace("\n", " ")))
    return found


# Which stub states the builtins of each namespace (a class name: its methods).
STUBS = {"torch": [("_C/_VariableFunctions.pyi", None)], "torch.Tensor": [("_C/__init__.pyi", "TensorBase")],
         "torch.nn.functional": [("nn/functional.pyi", None), ("_C/_nn.pyi", None)]}


@functools.cache
def _stub_overloads(namespace: str) -> dict[str, list[list[tuple[str, str]]]]:
    """{name: [parameters of each overload]} of the defs in the namespace's stubs."""
    out: dict[str, list] = {}
    root = os.path.dirname(torch.__file__)
    for rel, cls in STUBS.get(namespace, []):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        body = tree.body
        if cls is not None:
            body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), [])
        for node in body:
            if isinstance(node, ast.FunctionDef):
                a = node.args
                params = [(x.arg, POS) for x in a.posonlyargs + a.args]
                params += [(a.vararg.arg, VAR)] if a.vararg else []
                params += [(x.arg, KW) for x in a.kwonlyargs]
                if cls is not None and params and params[0][0] == "self":
                    params = params[1:]
                out.setdefault(node.name, []).append(params)
    return out


def torch_signatures(qualname: str, obj: Any, name: str, drop_first: bool) -> list[list[tuple[str, str]]]:
    """PyTorch's signatures of obj (one, or one per overload)."""
    if qualname in TORCH_SIGNATURES:
        return [_parse(s) for s in TORCH_SIGNATURES[qualname]]
    sig = _from_inspect(obj, drop_first)
    if sig is not None and sig != [("args", VAR)]:  # (*args, **kwargs) is a wrapper's: no information
        return [sig]
    stubs = _stub_overloads(qualname.rpartition(".")[0]).get(name)
    if stubs:
        return stubs
    documented = _documented(name, getattr(obj, "__doc__", None))
    if drop_first:  # a method documented as torch.xxx(input, ...) has input for self
        documented = [s[1:] if s and s[0][0] in ("input", "self") else s for s in documented]
    return documented


# ----------------------------------------------------------------------------- the comparison


Params = list[tuple[str, str]]


def mismatches(mine: Params, theirs: Params, extensions: dict[str, str]) -> list[str]:
    """What breaks the rule in minigrad's parameters `mine` against PyTorch's `theirs`, given
    minigrad's keyword-only `extensions` (names PyTorch lacks, see EXTENSIONS)."""
    problems = []
    torch_names = {n for n, _ in theirs}
    for i, (n, kind) in enumerate(mine):
        if kind == KW:
            if n not in torch_names and n not in extensions:
                problems.append(f"keyword-only {n!r} is not one of PyTorch's parameters")
            continue
        if i >= len(theirs) or theirs[i][1] == KW:
            problems.append(f"{n!r} at position {i} is keyword-only or absent in PyTorch")
            continue
        tn, tkind = theirs[i]
        if kind == VAR and tkind != VAR:
            problems.append(f"*{n} at position {i} where PyTorch has {tn!r}")
        elif kind == POS and tkind == VAR:
            if n != tn:
                problems.append(f"{n!r} at position {i} where PyTorch has *{tn}")
        elif kind == POS and n != tn:
            problems.append(f"{n!r} at position {i} where PyTorch has {tn!r}")
    return problems


def check(qualname: str, mine_fn: Callable, torch_obj: Any, name: str, method: bool) -> list[str]:
    """[] when minigrad's signature follows PyTorch's (one of its overloads), else the problems
    against the closest overload, each prefixed with the name."""
    mine = _from_inspect(mine_fn, method)
    if mine is None:
        return []
    overloads = torch_signatures(qualname, torch_obj, name, method)
    if not overloads:
        return [f"{qualname}: no PyTorch signature found (add it to TORCH_SIGNATURES)"]
    extensions = EXTENSIONS.get(qualname, {})
    results = [mismatches(mine, theirs, extensions) for theirs in overloads]
    best = min(results, key=len)
    return [f"{qualname}: {p}  (minigrad: {_show(mine)}; PyTorch: {_show(overloads[results.index(best)])})"
            for p in best]


def _show(params: list[tuple[str, str]]) -> str:
    out, star = [], False
    for n, k in params:
        if k == KW and not star:
            out.append("*")
            star = True
        out.append(("*" + n) if k == VAR else n)
        star = star or k == VAR
    return "(" + ", ".join(out) + ")"


def omitted(mine_fn: Callable, torch_params: list[tuple[str, str]], method: bool) -> list[str]:
    """PyTorch's parameters that minigrad's signature leaves out."""
    mine = {n for n, _ in (_from_inspect(mine_fn, method) or [])}
    return [n for n, _ in torch_params if n not in mine and n != "out"]


# ----------------------------------------------------------------------------- what is compared


def _callable(x: Any) -> bool:
    return inspect.isfunction(x) or inspect.ismethod(x) or inspect.isbuiltin(x)


def pairs() -> list[tuple[str, Callable, Any, str, bool]]:
    """(torch's qualified name, minigrad's callable, torch's, the name, is a method) for each
    public function, method and class constructor that both have."""
    out = []

    def functions(mine_module: Any, names: list[str], torch_module: Any, prefix: str) -> None:
        for name in names:
            mine, theirs = getattr(mine_module, name, None), getattr(torch_module, name, None)
            if theirs is None or not _callable(mine) or isinstance(mine, type):
                continue
            out.append((f"{prefix}.{name}", mine, theirs, name, False))

    functions(mg, list(mg.__all__), torch, "torch")
    functions(F, list(F.__all__), torch.nn.functional, "torch.nn.functional")
    functions(nn.init, [n for n in dir(nn.init) if not n.startswith("_")], torch.nn.init, "torch.nn.init")
    for name, mine in inspect.getmembers(mg.Tensor):
        theirs = getattr(torch.Tensor, name, None)
        if name.startswith("_") or theirs is None or not callable(mine) or isinstance(mine, property):
            continue
        out.append((f"torch.Tensor.{name}", mine, theirs, name, True))

    def classes(mine_module: Any, names: list[str], torch_module: Any, prefix: str, methods: tuple) -> None:
        for name in names:
            mine, theirs = getattr(mine_module, name, None), getattr(torch_module, name, None)
            if not isinstance(mine, type) or not isinstance(theirs, type):
                continue
            for method in methods:
                if method in vars(mine) or any(method in vars(c) for c in mine.__mro__[1:-1]):
                    out.append((f"{prefix}.{name}.{method}", getattr(mine, method), getattr(theirs, method),
                                method, True))

    classes(nn, list(nn.__all__), torch.nn, "torch.nn", ("__init__", "forward"))
    classes(optim, list(optim.__all__), torch.optim, "torch.optim", ("__init__", "step", "zero_grad"))
    classes(lr_scheduler, list(lr_scheduler.__all__), torch.optim.lr_scheduler, "torch.optim.lr_scheduler",
            ("__init__", "step", "get_last_lr"))
    return out


PAIRS = pairs()


def test_there_is_much_to_compare():
    """The collection finds the families it should (a broken import would make it empty)."""
    names = {q for q, *_ in PAIRS}
    assert len(PAIRS) > 300
    for expected in ("torch.Tensor.var", "torch.nn.functional.cross_entropy", "torch.nn.Linear.__init__",
                     "torch.optim.Adam.__init__", "torch.optim.lr_scheduler.StepLR.__init__", "torch.where"):
        assert expected in names


@pytest.mark.parametrize("qualname, mine, theirs, name, method", PAIRS, ids=[p[0] for p in PAIRS])
def test_positional_parameters_are_torchs(qualname, mine, theirs, name, method):
    problems = check(qualname, mine, theirs, name, method)
    assert not problems, "\n".join(problems)


def test_every_extension_is_a_keyword_only_parameter():
    """Each entry of EXTENSIONS names a compared callable and a keyword-only parameter of
    minigrad's that the callable has (a renamed or removed one leaves a stale entry)."""
    mine = {q: dict(_from_inspect(fn, method) or []) for q, fn, _, _, method in PAIRS}
    for qualname, params in EXTENSIONS.items():
        assert qualname in mine, f"EXTENSIONS: {qualname} is not compared"
        for name in params:
            assert mine[qualname].get(name) == KW, f"EXTENSIONS: {qualname} has no keyword-only {name!r}"


# ----------------------------------------------------------------------------- the checker itself


def test_the_checker_catches_each_kind_of_difference():
    def torch_like(input, dim=None, *, correction=1, keepdim=False, out=None):
        """A stand-in for a PyTorch function."""

    def same(input, dim=None, *, keepdim=False):
        """The same order, trailing parameters left out."""

    def swapped(input, keepdim=False, dim=None):
        """keepdim by position where PyTorch has dim."""

    def renamed(x, dim=None):
        """x where PyTorch says input."""

    def extra(input, dim=None, *, unbiased=True):
        """A keyword PyTorch does not have."""

    def too_far(input, dim=None, correction=1):
        """correction by position, keyword-only in PyTorch."""

    def extended(input, dim=None, *, keepdim=False, fused=True):
        """A keyword-only extension of minigrad's, listed in the extensions."""

    def extended_by_position(input, dim=None, fused=True):
        """The same extension taken by position: still refused."""

    theirs = _from_inspect(torch_like, False)
    assert mismatches(_from_inspect(same, False), theirs, {}) == []
    assert mismatches(_from_inspect(swapped, False), theirs, {}) == [
        "'keepdim' at position 1 where PyTorch has 'dim'",
        "'dim' at position 2 is keyword-only or absent in PyTorch"]
    assert mismatches(_from_inspect(renamed, False), theirs, {}) == [
        "'x' at position 0 where PyTorch has 'input'"]
    assert mismatches(_from_inspect(extra, False), theirs, {}) == [
        "keyword-only 'unbiased' is not one of PyTorch's parameters"]
    assert mismatches(_from_inspect(too_far, False), theirs, {}) == [
        "'correction' at position 2 is keyword-only or absent in PyTorch"]
    listed = {"fused": "minigrad's own switch"}
    assert mismatches(_from_inspect(extended, False), theirs, listed) == []
    assert mismatches(_from_inspect(extended, False), theirs, {}) == [
        "keyword-only 'fused' is not one of PyTorch's parameters"]
    assert mismatches(_from_inspect(extra, False), theirs, listed) == [  # only the listed names
        "keyword-only 'unbiased' is not one of PyTorch's parameters"]
    assert mismatches(_from_inspect(extended_by_position, False), theirs, listed) == [
        "'fused' at position 2 is keyword-only or absent in PyTorch"]
    assert omitted(same, theirs, False) == ["correction"]


def test_documented_signatures_are_parsed():
    doc = "var(dim=None, *, correction=1, keepdim=False) -> Tensor\n\nSee :func:`torch.var`\n"
    assert _documented("var", doc) == [[("dim", POS), ("correction", KW), ("keepdim", KW)]]
    two = "max(input) -> Tensor\n\ntext\n\n.. function:: max(input, dim, keepdim=False, *, out=None)\n"
    assert _documented("max", two) == [[("input", POS)], [("input", POS), ("dim", POS), ("keepdim", POS),
                                                          ("out", KW)]]
    multi = "sdpa(query, key,\n    value, attn_mask=None) -> Tensor"
    assert _documented("sdpa", multi) == [[("query", POS), ("key", POS), ("value", POS), ("attn_mask", POS)]]
    assert _parse("*size, out=None, dtype=None") == [("size", VAR), ("out", KW), ("dtype", KW)]
