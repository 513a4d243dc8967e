"""Write docs/api.md: every public name of minigrad beside its PyTorch counterpart.

    python docs/api.py            # rewrite docs/api.md
    python docs/api.py --check    # exit 1, with a summary of the differences, if it is stale

One table per module (each name of its `__all__`: kind, the first sentence of its docstring,
the PyTorch name, the file that defines it), one for the methods and properties of
`minigrad.Tensor`, then the notes of
`docs/api_notes.md` (deliberate differences, what is not supported) with the torch.nn and
torch.nn.functional names minigrad lacks, grouped. The PyTorch name is the same name looked up
in the matching torch module, unless OWN below says otherwise. A module that does not exist
(yet) is left out. Needs PyTorch (`pip install -e ".[torch]"`); the output depends on the
installed names only (sorted, no dates, no versions).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "api.md"
NOTES = HERE / "api_notes.md"
MISSING_MARK = "<!-- torch names minigrad lacks -->"

# minigrad module -> the torch modules its names are looked up in, the matching one first
MODULES = [
    ("minigrad", ["torch", "torch.autograd"]),
    ("minigrad.autograd", ["torch.autograd"]),
    ("minigrad.autograd.functional", ["torch.autograd.functional"]),
    ("minigrad.nn", ["torch.nn"]),
    ("minigrad.nn.functional", ["torch.nn.functional"]),
    ("minigrad.nn.utils", ["torch.nn.utils"]),
    ("minigrad.nn.utils.rnn", ["torch.nn.utils.rnn"]),
    ("minigrad.optim", ["torch.optim", "torch.optim.lr_scheduler", "torch.nn.utils"]),
    ("minigrad.optim.lr_scheduler", ["torch.optim.lr_scheduler"]),
    ("minigrad.linalg", ["torch.linalg"]),
    ("minigrad.utils.data", ["torch.utils.data"]),
]

# (module, name) -> the counterpart column, written by hand: names PyTorch spells differently
# or does not have, and names whose PyTorch namesake means something else.
OWN = {
    ("minigrad", "AnomalyError"): "minigrad only: raised by `detect_anomaly` at the first NaN or Inf "
                                  "(PyTorch raises `RuntimeError`)",
    ("minigrad", "GradcheckError"): "`torch.autograd.gradcheck.GradcheckError`",
    ("minigrad", "bool_"): "`torch.bool`",
    ("minigrad", "unbroadcast"): "minigrad only: the engine's sum over broadcast axes, for writing ops",
    ("minigrad", "save"): "`torch.save` of a state dict (minigrad writes arrays to .npz, no pickle)",
    ("minigrad", "load"): "`torch.load(..., weights_only=True)` (minigrad reads the .npz of `save`)",
    ("minigrad.nn", "AdditiveAttention"): "minigrad only: Bahdanau's additive attention",
    ("minigrad.nn", "AttentionMaps"): "minigrad only: what `record_attention` collects",
    ("minigrad.nn", "AttentionRecord"): "minigrad only: one recorded attention",
    ("minigrad.nn", "BilinearAttention"): "minigrad only: Luong's bilinear (\"general\") attention",
    ("minigrad.nn", "KVCache"): "minigrad only: `MultiheadAttention`'s key/value cache for generation",
    ("minigrad.nn", "LearnedPositionalEmbedding"): "minigrad only (PyTorch: an `nn.Embedding` of positions)",
    ("minigrad.nn", "SinusoidalPositionalEncoding"): "minigrad only: the transformer paper's table",
    ("minigrad.nn", "causal_mask"): "minigrad only, bool (PyTorch's float form: "
                                    "`torch.nn.Transformer.generate_square_subsequent_mask`)",
    ("minigrad.nn", "evaluating"): "minigrad only: eval mode for a block, each module's flag restored after",
    ("minigrad.nn", "masked_softmax"): "minigrad only: softmax after a mask (True = may attend)",
    ("minigrad.nn", "padding_mask"): "minigrad only: (B, 1, 1, T), True at real tokens "
                                     "(PyTorch's `key_padding_mask`: (B, T), True at padding)",
    ("minigrad.nn", "record_attention"): "minigrad only: the weights of every attention in a block",
    ("minigrad.nn.functional", "attention_reference"): "minigrad only: attention as three Tensor ops",
    ("minigrad.nn.functional", "packed_self_attention"): "minigrad only: self-attention from one "
                                                         "q/k/v projection",
    ("minigrad.nn.functional", "tiled_attention"): "minigrad only: the tiled (online softmax) kernel",
    ("minigrad.optim", "InverseSqrt"): "minigrad only (PyTorch: a `LambdaLR`)",
    ("minigrad.optim", "WarmupCosine"): "minigrad only (PyTorch: `SequentialLR` of `LinearLR` "
                                        "and `CosineAnnealingLR`)",
    ("minigrad.optim", "cosine_lr"): "minigrad only: `WarmupCosine`'s rate at a step",
    ("minigrad.optim", "inverse_sqrt_lr"): "minigrad only: `InverseSqrt`'s rate at a step",
    ("minigrad.optim", "step_lr"): "minigrad only: `StepLR`'s rate at a step",
    ("minigrad.optim", "flatten_state"): "minigrad only: a state dict as arrays for an .npz file",
    ("minigrad.optim", "unflatten_state"): "minigrad only: the inverse of `flatten_state`",
    ("Tensor", "name"): "minigrad only: the label graph drawings show",
    ("Tensor", "zero_grad"): "minigrad only: `x.grad = None`",
    ("Tensor", "to"): "`torch.Tensor.to` (a dtype only: there are no devices)",
}

# Summaries of the Tensor attributes that are slots and of the number constants (they have no
# docstring of their own).
SUMMARY = {
    "pi": "π as a Python float, as `torch.pi`.",
    "e": "Euler's number as a Python float, as `torch.e`.",
    "inf": "Positive infinity as a Python float, as `torch.inf`.",
    "nan": "Not a number, as a Python float, as `torch.nan`.",
    "requires_grad": "Whether backward computes a gradient for this tensor.",
    "name": "A label for graph drawings (`mg.tensor(..., name=\"x\")`).",
}

# The torch.nn and torch.nn.functional names minigrad lacks, summarised by group: the first
# pattern a name matches (case-insensitive) gives its group and what to do instead.
GROUPS = [
    ("Lazy modules", r"^lazy", "give every size when building a layer"),
    ("Convolution and folding", r"conv|fold", "`nn.Conv1d`/`2d`, `nn.ConvTranspose1d`/`2d` (no 3-D ones)"),
    ("Padding", r"pad", "`F.pad` (constant, reflect, replicate, circular)"),
    ("Pooling", r"pool", "`nn.MaxPool1d`, `nn.MaxPool2d`, `nn.AvgPool2d`, `nn.AdaptiveAvgPool2d`"),
    ("Normalization", r"norm|lrn", "the normalization layers of `minigrad.nn` (`LayerNorm`, ...)"),
    ("Recurrent layers", r"^(rnn|lstm|gru)", "the recurrent layers and cells of `minigrad.nn`"),
    ("Transformer (whole model)", r"^transformer$", "stack `TransformerEncoder` and `TransformerDecoder`"),
    ("Upsampling and image ops", r"upsampl|interpolate|pixel|grid|affine|shuffle",
     "`F.interpolate` / `nn.Upsample` (the deprecated `F.upsample*` are `F.interpolate`)"),
    ("Dropout variants", r"dropout", "`Dropout` / `F.dropout`"),
    ("Losses", r"loss|cross_entropy", "the losses of `minigrad.nn` cover the course; compose the others"),
    ("Attention internals", r"attention", "`nn.MultiheadAttention`, `F.scaled_dot_product_attention`"),
    ("Distances", r"distance|pdist|cosine", "`F.cosine_similarity`, or compose with Tensor ops"),
    ("Parallelism", r"parallel", "`minigrad train --engine torch --nproc N` (see the README)"),
    ("Containers", r"container|parameter", "attributes, lists and dicts of parameters are found as they are"),
    ("Low-precision matrix products", r"mm$", "`matmul` in the inputs' float dtype"),
    ("Activations and others", r"", "compose from Tensor ops"),
]
LONGEST = 160  # characters of a summary
TORCH_HELPERS = {"assert_int_or_pair"}  # in torch.nn.functional's namespace, not part of its API


def _import(name: str) -> types.ModuleType | None:
    """The module, or None when it (or a package above it) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise


def _summary(obj: Any, name: str, *others: Any) -> str:
    """The first sentence of the docstring's first paragraph, on one line, for a table cell;
    without a docstring, that of the first of `others` (the method, the function, the op) with
    one."""
    if isinstance(obj, np.dtype):  # mg.float32, and torch's aliases (mg.long is mg.int64)
        same = "" if name == obj.name else f"another name for `{obj.name}`, "
        return f"The {obj.name} dtype ({same}numpy's `np.dtype('{obj.name}')`)."
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return f"The {np.dtype(obj).name} dtype (`numpy.{obj.__name__}`)."
    if not callable(obj) and not isinstance(obj, types.ModuleType | property):
        return SUMMARY.get(name, "")  # a constant or a slot: its type's docstring says nothing
    doc = next((d for d in map(_own_doc, (obj, *others)) if d), "")
    alias = getattr(obj, "__name__", name) if isinstance(obj, types.FunctionType) else name
    if alias != name and not alias.startswith("_"):  # `arccos = acos`
        import minigrad

        same = _summary(obj, alias, getattr(minigrad.Tensor, alias, None), _op(alias))
        return f"Another name for `{alias}`" + (f": {same}" if same else ".")
    lines = doc.split("\n\n")[0].split("\n")  # an op's math: "z = exp(x)    dx = g * z"
    first = " ".join(" ".join(re.sub(r"(?<=\S) {3,}(?=[^ (])", " ; ", ln).split()) for ln in lines)
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", first.replace(" ; ", "; "))[0]
    if len(sentence) > LONGEST:  # cut at a word, and say so
        sentence = sentence[: sentence.rfind(" ", 0, LONGEST)].rstrip(",;:") + " …"
    return sentence.replace("|", "\\|")


def _own_doc(obj: Any) -> str:
    """obj's docstring, stripped, if it has one of its own (not its class's or a base's)."""
    if obj is None:
        return ""
    doc = getattr(obj, "__doc__", None)
    if not isinstance(obj, type | types.ModuleType) and doc == type(obj).__doc__:
        return ""  # a method wrapper or a slot: the docstring of its type
    return inspect.cleandoc(doc).strip() if isinstance(doc, str) else ""


def _ops() -> dict[str, type]:
    """minigrad's ops (Function subclasses of minigrad.ops and minigrad.nn) by their lower-case
    names without underscores or the suffix Op, so that `log_softmax` finds `LogSoftmaxOp` and its
    math."""
    import minigrad

    found: dict[str, type] = {}
    todo = [minigrad.Function]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith(("minigrad.ops.", "minigrad.nn.")):
            key = cls.__name__.removesuffix("Op").lower()
            if key not in found or cls.__module__ < found[key].__module__:
                found[key] = cls
    return found


def _is_constant(obj: Any) -> bool:
    scalar_type = isinstance(obj, type) and issubclass(obj, np.generic)
    return isinstance(obj, np.dtype) or scalar_type or not callable(obj)


def _kind(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if _is_constant(obj):
        return "constant"
    return "class" if isinstance(obj, type) else "function"


def _torch_name(key: str, name: str, torch_places: list[tuple[str, Any]]) -> str:
    if (key, name) in OWN:
        return OWN[(key, name)]
    for where, place in torch_places:
        if hasattr(place, name):
            return f"`{where}.{name}`"
    return "—"


def _defined_in(obj: Any, module: str) -> str:
    """The file of the repository that defines obj: an op's method, function form and in-place
    variant all name the kind's module in minigrad/ops/ (ops/table.py makes the last two from the
    first). `module` is where a constant or an attribute was found."""
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, types.ModuleType) and obj.__spec__ is None:  # made by code (minigrad.cuda)
        return f"`{Path(obj.__file__).resolve().relative_to(HERE.parent).as_posix()}`"
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    else:
        obj = inspect.unwrap(obj) if callable(obj) else obj
        name = getattr(obj, "__module__", None) if callable(obj) and not _is_constant(obj) else None
        name = name or module
    file = sys.modules[name].__file__ or ""
    try:  # the file itself (minigrad.autograd.functional is minigrad/autograd_functional.py)
        return f"`{Path(file).resolve().relative_to(HERE.parent).as_posix()}`"
    except ValueError:  # installed elsewhere: from the module's name
        pass
    path = name.replace(".", "/") + ("/__init__.py" if file.endswith("__init__.py") else ".py")
    for top in ("nn", "models"):  # installed as minigrad.nn and minigrad.models (setup.cfg)
        if path.startswith(f"minigrad/{top}/"):
            path = path[len("minigrad/"):]
    return f"`{path}`"


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(key: str, names: list[str], lookup: Any, torch_places: list[tuple[str, Any]],
           module: str) -> list[str]:
    lines = [_row("name", "kind", "what it is", "PyTorch", "defined in"), _row(*["---"] * 5)]
    for name in sorted(names, key=lambda n: (n.lower(), n)):
        obj, kind, others = lookup(name)
        summary = _summary(obj, name, *others)
        lines.append(_row(f"`{name}`", kind, summary, _torch_name(key, name, torch_places),
                          _defined_in(obj, module)))
    return lines


def _op(name: str) -> type | None:
    return _ops().get(name.replace("_", "").lower())


def _tensor_member(name: str) -> tuple[Any, str, list[Any]]:
    """The member, its kind, and where else its summary may come from."""
    import minigrad

    raw = inspect.getattr_static(minigrad.Tensor, name)
    if isinstance(raw, property):
        return raw, "property", []
    if isinstance(raw, types.MemberDescriptorType):
        return raw, "attribute", []
    function_form = getattr(minigrad, name, None) if name in minigrad.__all__ else None
    return getattr(minigrad.Tensor, name), "method", [function_form, _op(name)]


def _module_member(module: types.ModuleType, name: str) -> tuple[Any, str, list[Any]]:
    import minigrad

    obj = getattr(module, name)
    method = getattr(minigrad.Tensor, name, None) if module is minigrad else None
    return obj, _kind(obj), [method, _op(name)] if callable(obj) else []


def _missing_torch_names(torch: types.ModuleType) -> list[str]:
    """A table: each group of torch.nn modules and torch.nn.functional functions with no name in
    minigrad.nn / minigrad.nn.functional, and what to use instead."""
    import minigrad.nn as nn
    import minigrad.nn.functional as F

    missing: list[str] = []
    for n in dir(torch.nn):
        obj = getattr(torch.nn, n)
        if inspect.isclass(obj) and issubclass(obj, torch.nn.Module) and not n.startswith("_"):
            missing += [f"`nn.{n}`"] if n not in nn.__all__ else []
    for n in dir(torch.nn.functional):
        obj = getattr(torch.nn.functional, n)
        public = not n.startswith("_") and not n.endswith("_") and n not in TORCH_HELPERS
        own = getattr(obj, "__module__", None) in ("torch", "torch.nn.functional", "torch._C._nn")
        if public and own and callable(obj) and not inspect.isclass(obj) and n not in F.__all__:
            missing.append(f"`F.{n}`")
    grouped: dict[str, list[str]] = {}
    for item in missing:
        bare = item.strip("`").split(".", 1)[1]
        title = next(t for t, pattern, _ in GROUPS if re.search(pattern, bare, flags=re.I))
        grouped.setdefault(title, []).append(item)
    lines = [_row("group", "PyTorch names minigrad lacks", "instead"), _row(*["---"] * 3)]
    for title, _, instead in GROUPS:
        if title in grouped:
            names = sorted(grouped[title], key=lambda s: (s.startswith("`F."), s.strip("`").lower()))
            lines.append(_row(title, ", ".join(names), instead))
    return lines


def generate() -> str:
    """The text of docs/api.md for the minigrad and torch installed now."""
    import torch

    import minigrad

    parts = [
        "# minigrad beside PyTorch",
        "",
        "Every public name of minigrad (each module's `__all__`) and every public method and property of",
        "`minigrad.Tensor`, with its kind, the first sentence of its docstring, its PyTorch counterpart and",
        "the file that defines it (an op's method, function form and in-place variant: its kind's module).",
        "Generated by `python docs/api.py` (do not edit by hand: edit `docs/api_notes.md` or the tables in",
        "`docs/api.py`); `tests/test_api_docs.py` checks that this file is up to date.",
        "\"minigrad only\" marks a name PyTorch does not have; \"—\" a name with no counterpart found.",
        "",
    ]
    tables: list[tuple[str, list[str]]] = []
    for mod_name, torch_names in MODULES:
        mod = _import(mod_name)
        if mod is None:
            continue
        places = [(m.__name__, m) for m in map(_import, torch_names) if m is not None]
        lookup = lambda n, mod=mod: _module_member(mod, n)
        tables.append((f"`{mod_name}`", _table(mod_name, list(mod.__all__), lookup, places, mod_name)))
        if mod_name == "minigrad":
            members = [n for n in dir(minigrad.Tensor) if not n.startswith("_")]
            tensor_places = [("torch.Tensor", torch.Tensor)]
            tables.append(("`minigrad.Tensor`", _table("Tensor", members, _tensor_member, tensor_places,
                                                       "minigrad.tensor")))
    parts += ["Contents: " + ", ".join(f"[{t}](#{_anchor(t)})" for t, _ in tables)
              + ", [Deliberate differences](#deliberate-differences), [Not supported](#not-supported).", ""]
    for title, lines in tables:
        parts += [f"## {title}", "", *lines, ""]
    notes = NOTES.read_text(encoding="utf-8").strip("\n")
    notes = notes.replace(MISSING_MARK, "\n".join(_missing_torch_names(torch)))
    return "\n".join(parts) + "\n" + notes + "\n"


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is stale")
    args = parser.parse_args(argv)
    try:
        text = generate()
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        print("docs/api.py needs PyTorch: pip install -e '.[torch]'", file=sys.stderr)
        return 2
    if not args.check:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT.name}: {text.count(chr(10))} lines")
        return 0
    old = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
    if old == text:
        return 0
    diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), "docs/api.md", "generated",
                                     lineterm="", n=0))
    print(stale_summary(diff), file=sys.stderr)
    return 1


def stale_summary(diff: list[str], limit: int = 20) -> str:
    """What a stale docs/api.md lacks and holds in excess, for --check and the test."""
    added = [d for d in diff if d.startswith("+") and not d.startswith("+++")]
    removed = [d for d in diff if d.startswith("-") and not d.startswith("---")]
    body = [d for d in diff if not d.startswith(("+++", "---", "@@"))][:limit]
    more = "" if len(added) + len(removed) <= limit else "\n..."
    return (f"docs/api.md is stale ({len(added)} lines to add, {len(removed)} to remove); "
            "run `python docs/api.py`:\n" + "\n".join(body) + more)


if __name__ == "__main__":
    sys.exit(main())
