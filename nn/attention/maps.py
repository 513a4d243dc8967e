"""`record_attention`: collect the attention weights of every attention computed inside a block,
named by the module that computed them, to look at them (e.g. with `minigrad.viz.plot_attention`).

    with nn.record_attention(model) as maps:
        model(idx)
    maps[0].name, maps[0].weights.shape     # "blocks.0.attn", (B, H, T, T)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from minigrad.errors import ShapeError
from minigrad.grad_mode import current_scope


class _Recorders(threading.local):
    """The open `record_attention` recorders of the running thread: one list per thread, as
    grad mode is, so a recorder open in one thread never collects the attention of a model
    running in another. Never rebound, so modules that import it see the same object; empty
    unless one is open, so the attention functions pay one `if _recorders:`."""

    def __init__(self) -> None:
        self.open: list = []  # a new thread starts with none

    def __bool__(self) -> bool:
        return bool(self.open)

    def __iter__(self):
        return iter(self.open)

    def __len__(self) -> int:
        return len(self.open)

    def __eq__(self, other: object) -> bool:
        return self.open == other

    def __repr__(self) -> str:
        return repr(self.open)


_recorders = _Recorders()


def _record(weights: np.ndarray, source: str) -> None:
    """Hand attention weights to every open recorder (each copies them); the attention
    functions and layers call it when `_recorders` is not empty."""
    for recorder in _recorders:
        recorder.add(weights, source)



@dataclass
class AttentionRecord:
    """The weights of one attention computation.

    Attributes:
        name: the dotted path of the module that computed it (`blocks.0.attn`), see
            `record_attention` for how it is found.
        weights: the softmax output as a numpy array (a copy, detached from the graph),
            before dropout: (B, H, Tq, Tk) from multi-head attention, (B, Tq, Tk) from the
            single-head layers (additive, bilinear); in general the scores' shape.
        module: the innermost module running when it was computed (None outside modules).
        call: how many records with the same name came before this one (0 for the first), so
            the steps of a decoder that runs one query at a time can be told apart.
    """

    name: str
    weights: np.ndarray
    module: Any = None
    call: int = 0


class AttentionMaps:
    """The records of a `record_attention` block, in the order the attentions ran.

    A list of `AttentionRecord`s (`len`, iteration, `maps[i]`), plus `names()` and
    `weights(name)`. Use it as a context manager: recording happens only inside the `with`.
    """

    def __init__(self, model: Any = None):
        self.model = model
        self.records: list[AttentionRecord] = []
        self._calls: dict[str, int] = {}
        self._paths: dict[int, str] = {}
        self._walked: dict[int, Any] = {}  # id -> root; holding the root keeps the ids valid
        if model is not None:
            self._walk(model)

    # ------------------------------------------------------------------ recording

    def __enter__(self) -> AttentionMaps:
        # This thread's recorders: attention computed in other threads is not recorded here.
        if any(r is self for r in _recorders):
            raise RuntimeError("record_attention: this recorder is already recording")
        _recorders.open.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        # Remove by identity: another recorder may be nested inside or around this one.
        recorders = _recorders.open
        for i, r in enumerate(recorders):
            if r is self:
                del recorders[i]
                break

    def add(self, weights: np.ndarray, source: str = "attention") -> None:
        """Record `weights` (copied) under the innermost running module; `source` names the
        function that computed them, for a call made outside any module."""
        scope = current_scope()
        module = scope[-1] if scope else None
        name = self._name(scope) if scope else source
        call = self._calls[name] = self._calls.get(name, -1) + 1
        self.records.append(AttentionRecord(name, np.array(weights, copy=True), module, call))

    def _walk(self, root: Any) -> None:
        if id(root) in self._walked:
            return
        self._walked[id(root)] = root
        named_modules = getattr(root, "named_modules", None)
        for path, m in named_modules() if named_modules is not None else ():
            self._paths.setdefault(id(m), path)

    def _name(self, scope: tuple) -> str:
        # With a model, paths are the model's; without one, paths inside the outermost module
        # that ran, which are the same when the model itself was called. A module keeps the
        # first path found for it. The root has the empty path: it is named by its class.
        self._walk(scope[0])
        path = self._paths.get(id(scope[-1]))
        return path or type(scope[-1]).__name__

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[AttentionRecord]:
        return iter(self.records)

    def __getitem__(self, i: int) -> AttentionRecord:
        return self.records[i]

    def names(self) -> list[str]:
        """The names of the modules that attended, each once, in the order they first ran."""
        return list(dict.fromkeys(r.name for r in self.records))

    def weights(self, name: str) -> np.ndarray:
        """The weights of module `name`; several calls are joined along the query axis.

        A decoder that runs one step at a time (one query per call) thus gives one map
        (B, steps, Tk) over the whole output, as if it had attended all at once.

        Raises:
            KeyError: nothing named `name` was recorded (the message lists what was).
            ValueError: the calls differ in the other axes (e.g. a growing key cache); read
                `records` one by one instead.
        """
        found = [r.weights for r in self.records if r.name == name]
        if not found:
            raise KeyError(f"record_attention: no attention recorded for {name!r}; recorded: "
                           f"{', '.join(self.names()) or 'nothing'}")
        if len(found) == 1:
            return found[0]
        if len({w.shape[:-2] + w.shape[-1:] for w in found}) > 1:
            raise ShapeError(
                f"record_attention: the {len(found)} calls of {name!r} have shapes "
                f"{sorted({w.shape for w in found})}, which differ in more than the query axis; "
                "read them one by one from .records"
            )
        return np.concatenate(found, axis=-2)

    def __repr__(self) -> str:
        lines = [f"{r.name}[{r.call}]: {r.weights.shape}" for r in self.records]
        return "AttentionMaps(" + ("\n  " + "\n  ".join(lines) + "\n" if lines else "") + ")"


def record_attention(model: Any = None) -> AttentionMaps:
    """Collect the weights of every attention computed inside a `with` block.

    Recorded are `F.scaled_dot_product_attention` (so `MultiheadAttention`, the transformer
    layers and every model built on them), `attention_reference`, and `AdditiveAttention` and
    `BilinearAttention`. The weights are kept even where the caller passed need_weights=False:
    while a recorder is open the fused kernel also hands out a copy of its softmax; when none
    is open this costs one `if`. Nothing is recorded outside the block, nor from other threads:
    the recorder sees the attention computed by the thread that opened it (as grad mode, each
    thread has its own).

    Args:
        model: the model whose `named_modules()` names the records (`blocks.0.attn`). Without
            it, a record is named by its module's path inside the outermost module that ran
            (the same when you call the model itself; a module keeps the first path found for
            it), and a module called on its own by its class name.

    Returns:
        An `AttentionMaps`, filled in as the block runs.

    Example:
        >>> with nn.record_attention(model) as maps:
        ...     logits = model(idx)
        >>> [(r.name, r.weights.shape) for r in maps]
        [('blocks.0.attn', (1, 4, 12, 12)), ('blocks.1.attn', (1, 4, 12, 12))]
        >>> plot_attention(maps[0].weights[0], x_tokens=list(text))
    """
    return AttentionMaps(model)
