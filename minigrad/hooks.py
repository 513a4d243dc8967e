"""Watching the engine: public hooks on every op's forward and every node's backward.

    from minigrad.hooks import observe_backward
    with observe_backward(lambda node, g, grads: print(node.name, g.shape)):
        loss.backward()

`observe_forward(check)` calls check(ctx, inputs, out) after every op's forward; the node is
not recorded yet (ctx.scope is unset: ask `current_scope()`), and a check that raises stops
the op. `observe_backward(observer)` calls observer(node, g, grads) after each node's backward:
g is the gradient of the node's output (after its tensor hooks), grads what backward
returned, one entry per input, before the engine sums a gradient back over broadcast axes.
Both hold in this thread only, while the `with` block runs (or the decorated function);
leaving removes exactly the hook this entry added, also when the block raises, so they nest.
`detect_anomaly`, `trace_backward` and `keep_grads` are built on them.

`observe_every_backward(observer, max_nodes)` is for a library's own bookkeeping: it watches
every backward of every thread from now on, but only of graphs of at most `max_nodes` nodes,
so that a large graph pays nothing for it (viz keeps small gradients for drawings this way).

Without hooks the engine pays one test of an empty list per op and one call per backward pass.

`RemovableHandle` is what registering a tensor's or a module's hook returns (torch's
torch.utils.hooks.RemovableHandle): `handle.remove()` takes the hook off, and `with handle:`
keeps it on for a block.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Iterator

from .grad_mode import DEFAULT, get, own

ForwardCheck = Callable[[Any, tuple, Any], None]  # (ctx, input tensors, output array)
BackwardObserver = Callable[[Any, Any, tuple], None]  # (node, upstream g, returned grads)

_handle_ids = itertools.count()


class RemovableHandle:
    """Removes one hook from the dict it was registered in (`hooks[handle.id]`), as torch's."""

    def __init__(self, hooks: dict[int, Any]):
        self.hooks = hooks
        self.id = next(_handle_ids)

    def remove(self) -> None:
        """Take the hook off; a second remove does nothing, as in torch."""
        self.hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<RemovableHandle id={self.id}>"


# (observer, max_nodes) for every thread, in the order registered; see observe_every_backward.
_everywhere: list[tuple[BackwardObserver, int]] = []


@contextlib.contextmanager
def observe_forward(check: ForwardCheck) -> Iterator[None]:
    """Call check(ctx, inputs, out) after every op's forward in this thread, inside the block."""
    checks = own().forward_checks
    checks.append(check)
    try:
        yield
    finally:
        _remove(own().forward_checks, check)


@contextlib.contextmanager
def observe_backward(observer: BackwardObserver) -> Iterator[None]:
    """Call observer(node, g, grads) after each node's backward in this thread, inside the block.

    Example:
        >>> seen = []
        >>> with observe_backward(lambda node, g, grads: seen.append(node.name)):
        ...     (w * w).sum().backward()
        >>> seen
        ['Sum', 'Mul']
    """
    observers = own().backward_observers
    observers.append(observer)
    try:
        yield
    finally:
        _remove(own().backward_observers, observer)


def observe_every_backward(observer: BackwardObserver, max_nodes: int) -> None:
    """Call observer(node, g, grads) in every backward pass, of every thread, from now on,
    whose graph has at most `max_nodes` nodes. For bookkeeping that must not depend on a
    `with` block (and stays cheap: a larger graph skips it). Registering it again does nothing."""
    if not any(o is observer for o, _ in _everywhere):
        _everywhere.append((observer, max_nodes))


def forward_checks() -> tuple:
    """The checks `observe_forward` installed in this thread, oldest first."""
    return tuple(get(DEFAULT).forward_checks)


def backward_observers() -> tuple:
    """The observers `observe_backward` installed in this thread, oldest first."""
    return tuple(get(DEFAULT).backward_observers)


def observers_for(n_nodes: int) -> tuple:
    """What the engine calls at the start of a backward pass over `n_nodes` nodes: the
    observers of this pass, this thread's first."""
    mine = get(DEFAULT).backward_observers
    if not _everywhere:
        return tuple(mine)
    return (*mine, *[o for o, limit in _everywhere if n_nodes <= limit])


def _remove(hooks: list, hook: Callable) -> None:
    # By identity, the last one added: the same function may be installed twice (nested blocks).
    for i in range(len(hooks) - 1, -1, -1):
        if hooks[i] is hook:
            del hooks[i]
            return
