"""What `minigrad graph` and `minigrad attention` do: draw the computation graph of one training
step of a model, and plot the attention weights of a trained model on one input.

Every model is reached through its recipe; `attention` needs to know how each one reads its input
(`_LOOKS`): a GPT a string of characters, BERT words, the encoder-decoders a source sequence they
translate first, ViT a test image.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

import minigrad as mg
import minigrad.nn as nn

from .recipes import Recipe

# ----------------------------------------------------------------------------- graph


def step_loss(cls: type[Recipe], preset: str, module: str | None = None, batch_size: int = 2,
              seed: int = 0) -> tuple[Recipe, Any]:
    """The model of `preset` and the loss of one training batch (not yet backward), for
    `minigrad graph`; `module`, a path to draw alone, is checked to exist."""
    if batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {batch_size}")
    mg.manual_seed(seed)
    recipe = cls(preset)
    if module is not None:
        _check_module(recipe.model, module, f"{cls.name} ({preset})")
    return recipe, recipe.loss(recipe.batch("train", np.random.default_rng(seed), batch_size))


def check_picture_path(out: str) -> None:
    import graphviz

    fmt = os.path.splitext(out)[1].lower().lstrip(".")
    if fmt not in graphviz.FORMATS | {"dot", "gv"}:
        raise ValueError(f"cannot tell the picture's format from {out!r}; end it in .svg, .png, .pdf or .dot")


def save_drawing(drawing: Any, out: str) -> tuple[str, list[str]]:
    """Write a draw_graph drawing to `out` (.svg, .png, .pdf, .dot).

    Returns:
        The path written (a .dot file when Graphviz's `dot` is missing) and notes for the user.
    """
    from minigrad.viz import GraphvizNotFoundWarning

    _make_folder(out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GraphvizNotFoundWarning)
        written = drawing.save(out)
    return written, [str(w.message) for w in caught]


def save_page(page: Any, path: str) -> None:
    """Write an explore page (minigrad.viz.explore) to `path`, its folder made if need be."""
    _make_folder(path)
    page.save(path)


def _check_module(model: nn.Module, path: str, what: str) -> None:
    """A ValueError for a module path `model` does not have, listing every module one level below
    the deepest part of `path` that exists (the top-level modules when none does)."""
    modules = dict(model.named_modules())
    paths = [p for p in modules if p]
    if path in paths:
        return
    known = set(paths)

    def parent(p: str) -> str:  # the nearest enclosing module ("" for the model itself)
        parts = p.split(".")
        return next((".".join(parts[:cut]) for cut in range(len(parts) - 1, 0, -1)
                     if ".".join(parts[:cut]) in known), "")

    base = parent(path)
    children = [p for p in paths if parent(p) == base]
    if not children:
        inner = type(modules[base]).__name__
        raise ValueError(f"{what} has no module {path!r}: {base!r} ({inner}) holds no modules")
    where = f"in {base!r} are" if base else "at the top are"
    raise ValueError(f"{what} has no module {path!r}; the modules {where}: {', '.join(children)} "
                     "(a drawing with a larger --depth labels the modules inside with their paths)")


# ----------------------------------------------------------------------------- attention


def plot_model_attention(recipe: Recipe, out: str, text: str | None = None,
                         index: int = 0) -> tuple[list[str], list[str]]:
    """Run `recipe.model` on one input inside `nn.record_attention` and save heatmaps of every
    attention module (one row of heads each) to `out`.

    Args:
        recipe: a recipe with a trained model (from a checkpoint).
        out: the picture (.png, .svg, .pdf).
        text: the input of gpt and bert, the source sequence of seq2seq and rnn.
        index: vit: which test image.

    Returns:
        The names of the attention modules drawn, and notes for the user (e.g. the output).
    """
    from minigrad.viz import plot_attention

    if recipe.name == "caption":  # each word's attention over the picture, not a heatmap of tokens
        if text is not None:
            raise ValueError("caption looks at a picture, not at text: choose a test picture with --index")
        return recipe.plot_attention(out, index)
    look = _LOOKS.get(recipe.name)
    if look is None:
        raise ValueError(f"a {recipe.name} model has no attention to draw (minigrad attention draws "
                         f"the attention models: {', '.join(sorted([*_LOOKS, 'caption']))})")
    if recipe.name == "vit":
        if text is not None:
            raise ValueError("vit looks at an image, not at text: choose a test image with --index")
    elif text is None:
        raise ValueError(f"give the input of the {recipe.name} model with --text")
    elif not text:
        raise ValueError("--text is empty")
    run, labels, notes, title = look(recipe, text, index)
    with mg.no_grad(), nn.record_attention(recipe.model) as maps:
        run()
    if not len(maps):
        raise ValueError(f"this {recipe.name} model computed no attention (it has no attention layer)")
    names = maps.names()
    weights = {name: maps.weights(name)[0] for name in names}  # the one batch item
    y_tokens = {name: labels(name)[0] for name in names}
    x_tokens = {name: labels(name)[1] for name in names}
    _make_folder(out)
    plot_attention(weights, x_tokens=x_tokens, y_tokens=y_tokens, title=title, path=out)
    return names, notes


def _gpt(recipe: Any, text: str, index: int) -> tuple:
    ids = recipe.tokenizer.encode(text)  # a ValueError lists characters outside the vocabulary
    _fits(len(ids), recipe.config.block_size, "characters")
    tokens = list(text)
    return (lambda: recipe.model(mg.tensor(np.array([ids], dtype=np.int64))),
            lambda name: (tokens, tokens), [], f"gpt attention on {_short(text)}")


def _bert(recipe: Any, text: str, index: int) -> tuple:
    tok = recipe.tokenizer
    words = tok.tokenize(text)
    if not words:
        raise ValueError(f"--text {text!r} holds no words")
    ids = [tok.cls_id, *tok.encode(text), tok.sep_id]
    _fits(len(ids), recipe.config.block_size, "tokens ([CLS] and [SEP] included)")
    tokens = [tok.tokens[i] for i in ids]  # as the model sees them: unknown words are [UNK]
    unknown = [w for w, i in zip(words, ids[1:-1]) if i == tok.unk_id]
    notes = [f"not in the vocabulary, read as [UNK]: {', '.join(unknown)}"] if unknown else []
    return (lambda: recipe.model(np.array([ids], dtype=np.int64)),
            lambda name: (tokens, tokens), notes, f"bert attention on {_short(text)}")


def _source(recipe: Any, text: str) -> tuple[np.ndarray, list[str], np.ndarray, list[str]]:
    """Source ids (1, S) and labels, and the greedy output (L,) through EOS and its labels."""
    from .data import SEQ_VOCAB, encode_pairs

    src, _ = encode_pairs([(text, "")])  # (1, S); a ValueError lists unknown characters
    block = getattr(recipe.config, "block_size", None)
    if block is not None:
        _fits(src.shape[1], block, "characters")
    out = recipe.model.greedy_decode(src, max_len=recipe.max_len)[0]  # (L,)
    eos = np.flatnonzero(out == SEQ_VOCAB.eos_id)
    out = out[: eos[0] + 1] if len(eos) else out
    return src, list(text), out, [SEQ_VOCAB.tokens[i] for i in out]


def _seq2seq(recipe: Any, text: str, index: int) -> tuple:
    from .data import SEQ_VOCAB

    src, src_tokens, out, produced = _source(recipe, text)
    tgt_in = np.concatenate([[SEQ_VOCAB.bos_id], out[:-1]])[None]  # (1, L): what each step reads
    read = [SEQ_VOCAB.tokens[i] for i in tgt_in[0]]

    def labels(name: str) -> tuple[list[str], list[str]]:
        # Decoder rows are labelled by the token they produced, their keys by what they read.
        if name.startswith("encoder"):
            return src_tokens, src_tokens
        if "multihead_attn" in name:  # cross-attention: output steps looking at the source
            return produced, src_tokens
        return produced, read

    # Teacher-forced on the model's own output: the attention greedy decoding used at its last step.
    return (lambda: recipe.model(mg.tensor(src), mg.tensor(tgt_in)), labels,
            [f"output: {SEQ_VOCAB.decode(out)!r}"], f"seq2seq attention on {_short(text)}")


def _rnn(recipe: Any, text: str, index: int) -> tuple:
    from .data import SEQ_VOCAB

    src, src_tokens, out, produced = _source(recipe, text)
    # Decoding again inside the recorder: the additive attention runs once per output step.
    return (lambda: recipe.model.greedy_decode(src, max_len=len(out)), lambda name: (produced, src_tokens),
            [f"output: {SEQ_VOCAB.decode(out)!r}"], f"rnn attention on {_short(text)}")


def _vit(recipe: Any, text: str | None, index: int) -> tuple:
    images, labels = recipe.x_test, recipe.y_test
    if not 0 <= index < len(images):
        raise ValueError(f"--index {index} is not a test image: choose 0 to {len(images) - 1}")
    image = mg.tensor(images[index:index + 1])  # (1, c, h, w)
    grid = recipe.config.image_size // recipe.config.patch_size
    tokens = ["cls"] + [f"{r},{c}" for r in range(grid) for c in range(grid)]  # patch row, column
    predicted = int(recipe.model.predict(image)[0])
    seen = f"test image {index}: digit {labels[index]}, predicted {predicted}"
    return lambda: recipe.model(image), lambda name: (tokens, tokens), [seen], f"vit attention, {seen}"


_LOOKS = {"gpt": _gpt, "bert": _bert, "seq2seq": _seq2seq, "rnn": _rnn, "vit": _vit}


def _fits(length: int, block_size: int, what: str) -> None:
    if length > block_size:
        raise ValueError(f"the input is {length} {what} long; this model reads at most {block_size}")


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _make_folder(path: str) -> None:
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
