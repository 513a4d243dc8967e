"""Grad mode, the module scope and the hooks (minigrad.hooks): the engine's state, one copy per thread.

As in PyTorch, `no_grad()` in one thread does not stop another thread from recording its
graph, and every new thread starts with grad mode on, outside any module, with no hooks.
(A function run in a copy of the caller's contextvars context, as `asyncio.to_thread` does,
starts from the caller's mode instead, and its own changes stay its own.)
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from typing import Any, Callable, Iterator


class State:
    """What `Function.apply` and `run_backward` consult; each thread has its own."""

    __slots__ = ("grad_enabled", "scope", "modes", "forward_checks", "backward_observers", "thread",
                 "graph_backward")

    def __init__(self) -> None:
        self.thread = threading.get_ident()  # the thread that may change it
        self.grad_enabled = True
        # The modules (outermost first) that new nodes are tagged with; nn pushes them through
        # `module_scope`, so graph drawings can group nodes into clusters by module.
        self.scope: tuple = ()
        self.modes: list[bool] = []  # grad mode before each no_grad/enable_grad still open
        # The hooks of minigrad.hooks (observe_forward, observe_backward), changed only there.
        self.forward_checks: list[Callable[..., None]] = []
        self.backward_observers: list[Callable[..., None]] = []
        # > 0 while an op's backward runs on Tensors to build a graph (create_graph=True): a
        # tensor that requires grad must not become an array then (graph_backward.py).
        self.graph_backward = 0


# Each thread runs in its own contextvars context, so a ContextVar holds one State per thread
# (and per asyncio task that sets it). Reading it costs about 12 ns more than reading a
# global, where a threading.local attribute costs about 50 ns more: the engine reads it once
# per op.
_var: contextvars.ContextVar[State] = contextvars.ContextVar("minigrad_state")
get = _var.get  # get(DEFAULT): this thread's state, for reading

# What a thread that changed nothing yet reads; never changed (tuples where State has lists).
DEFAULT = State()
DEFAULT.modes, DEFAULT.forward_checks, DEFAULT.backward_observers = (), (), ()  # type: ignore


def own() -> State:
    """This thread's own state, made on first need, for changing."""
    s = _var.get(None)
    if s is None or s.thread != threading.get_ident():
        # A context copied into another thread (asyncio.to_thread does so) brings the caller's
        # State: that thread starts from a copy, so that its no_grad() cannot change the caller's.
        prev, s = s, State()
        if prev is not None:
            s.grad_enabled, s.scope = prev.grad_enabled, prev.scope
            s.forward_checks, s.backward_observers = list(prev.forward_checks), list(prev.backward_observers)
        _var.set(s)
    return s


def is_grad_enabled() -> bool:
    """True when ops record the graph (the default); False inside `no_grad()`. Per thread."""
    return get(DEFAULT).grad_enabled


class no_grad(contextlib.ContextDecorator):
    """Context manager and decorator that stops ops from recording the graph, in this thread.

    Example:
        >>> with no_grad():
        ...     w -= lr * w.grad      # an update is not part of the model
    """

    _mode = False

    def __enter__(self) -> None:
        # The previous mode goes on a per-thread stack, not on this object: one decorated
        # function may run in two threads at once, or call itself.
        s = own()
        s.modes.append(s.grad_enabled)
        s.grad_enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        s = own()
        s.grad_enabled = s.modes.pop()


class enable_grad(no_grad):
    """Turn graph recording back on inside a `no_grad()` block (in this thread)."""

    _mode = True


class set_grad_enabled(no_grad):
    """Turn graph recording on or off (in this thread): as a call, at once; as a context
    manager or decorator, until the block or function ends, then back to the mode before.

    Example:
        >>> with set_grad_enabled(is_training):
        ...     loss = model(x)
    """

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        s = own()
        self._before = s.grad_enabled  # restored by the `with` block this call may open
        s.grad_enabled = self._mode  # a plain call takes effect now, as in PyTorch

    def __enter__(self) -> None:
        s = own()
        before, self._before = self._before, None
        s.modes.append(s.grad_enabled if before is None else before)
        s.grad_enabled = self._mode

    def __call__(self, func: Callable) -> Callable:
        # As a decorator it must not change the mode where the function is defined.
        if self._before is not None:
            own().grad_enabled, self._before = self._before, None
        return super().__call__(func)


@contextlib.contextmanager
def module_scope(module: Any) -> Iterator[None]:
    """Tag every node recorded inside the block (in this thread) as running inside `module`."""
    s = own()
    prev = s.scope
    s.scope = prev + (module,)
    try:
        yield
    finally:
        s.scope = prev


def current_scope() -> tuple:
    """The modules (outermost first) that new nodes are tagged with; () outside any."""
    return get(DEFAULT).scope
