"""In-place safety: a version counter per storage, and the check backward makes with it.

Changing a tensor in place after an op saved it for backward would give a silently wrong
gradient; with these counters backward raises instead, naming the op and the tensor, as
PyTorch does ("modified by an inplace operation").

A storage is the numpy array that owns the memory (`a.base` of any view `a`, or `a` itself),
so a tensor, its `detach()` and every view an op makes of it (reshape, transpose, expand,
basic indexing) share one counter without any bookkeeping when they are made. Counters exist
only for storages that were changed in place; everything else is at version 0.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .autograd import Function

# In-place changes so far, in all threads. A recorded node notes this count (`edits`) as its
# forward starts, and a storage notes it at each change (`ticks`, counted once the change is
# written): a tick above a node's count is a change during or after that node's forward (by
# another thread, or before backward), a tick at or below it one that forward already saw.
# One integer per node keeps the hot path cheap; recording a version for each saved input
# would cost every op a loop.
edits = 0
_lock = threading.Lock()
_counters: dict[int, VersionCounter] = {}  # id(storage) -> its counter, while it lives


class VersionCounter:
    """How many times one storage was changed in place (PyTorch's `tensor._version`).

    `ticks` keeps the global edit counts of its latest changes, so that backward can tell a
    change made after a node's forward from one made before, and say which version it saw.
    """

    __slots__ = ("version", "ticks", "ref")
    KEEP_TICKS = 32

    def __init__(self, storage: np.ndarray) -> None:
        self.version = 0
        self.ticks: list[int] = []
        key = id(storage)
        # Forget the counter when the storage is freed (its id may then be reused).
        self.ref = weakref.ref(storage, lambda ref, key=key: _forget(key, ref))


def _forget(key: int, ref: weakref.ref) -> None:
    vc = _counters.get(key)
    if vc is not None and vc.ref is ref:
        del _counters[key]


def storage(a: np.ndarray) -> Any:
    """The array that owns a's memory (numpy points a view, even of a view, at it)."""
    b = a.base
    return b if isinstance(b, np.ndarray) else a  # `a` itself when it owns its memory


def counter(a: np.ndarray) -> VersionCounter | None:
    """The counter of a's storage, or None if that storage was never changed in place."""
    s = storage(a)
    vc = _counters.get(id(s))
    return vc if vc is not None and vc.ref() is s else None


def version(a: np.ndarray) -> int:
    vc = counter(a)
    return 0 if vc is None else vc.version


def bump(a: np.ndarray) -> None:
    """Record that the storage of array `a` was just changed in place (in-place operators of
    Tensor, optimizers)."""
    global edits
    s = storage(a)
    with _lock:  # `+=` on a global is not atomic between threads
        vc = counter(a)
        if vc is None:
            try:
                vc = _counters[id(s)] = VersionCounter(s)
            except TypeError:  # memory owned by a non-array (a bytes object): nothing to track
                return
        edits += 1
        vc.version += 1
        vc.ticks.append(edits)
        if len(vc.ticks) > VersionCounter.KEEP_TICKS:
            del vc.ticks[0]


def check(node: Function) -> None:
    """Raise if an array that `node` saved for backward was changed in place after its forward.

    The engine calls this only for a node whose `edits` is below the global count, i.e. when
    something was changed in place since its forward ran (rare). Arrays it did not save, such
    as both inputs of Add, may change freely, as in PyTorch.
    """
    for a in node.saved:
        if not isinstance(a, np.ndarray):
            continue
        vc = counter(a)
        if vc is None or not vc.ticks or vc.ticks[-1] <= node.edits:
            continue
        s = storage(a)
        what, shape = "output", a.shape  # saved, but no input's: the output (or a view of it)
        for i, t in enumerate(node.inputs):
            if storage(t._data) is s:
                what, shape = f"input {i}", t._data.shape
                break
        raise RuntimeError(_message(node, what, shape, vc))


def _message(node: Function, what: str, shape: tuple, vc: VersionCounter) -> str:
    later = sum(tick > node.edits for tick in vc.ticks)
    seen = vc.version - later
    bound = " or earlier" if later == len(vc.ticks) < vc.version else ""  # old ticks dropped
    return (
        f"backward: {node.name} saved its {what} (a tensor of shape {shape}) for the backward "
        f"pass, and it was changed in place afterwards: it is now at version {vc.version}, "
        f"{node.name} saw version {seen}{bound}, so the gradient would be wrong. Make a new "
        "tensor instead of changing it (x = x + 1, not x += 1), or change it after backward "
        "(an optimizer step goes after loss.backward())"
    )
