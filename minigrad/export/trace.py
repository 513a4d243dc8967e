"""Recording one forward pass of minigrad code as a program: every `Function.apply` in order,
with its class, its options, and where each input came from.

An input of an op is one of: an example input of the traced function (by position), a
parameter or a buffer of the module (by its state-dict name), the output of an earlier op, or a
constant (any other array, e.g. a mask or a position table built inside forward). Arrays inside
the options (attention masks, index arrays) are classified the same way.

A module that keeps state outside the graph (batch norm's running statistics, updated with
numpy) cannot be replayed from its ops, which do not show the update. Such modules are
recorded whole: a call of a module of a class given in `trace(..., modules=...)` is one node,
whose op is the module's class, whose args are the call's tensors and whose options are what
the class's entry reads from the module (its settings, and its parameters and buffers as Refs);
the ops it runs inside are not recorded. This file needs numpy only; `minigrad.export.module`
replays a program with torch.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.nn.module import Module


@dataclass(frozen=True)
class Ref:
    """Where a value comes from: kind "input" (key = position), "param" or "buffer" (key = the
    state-dict name), "node" (key = index of the op that made it) or "const" (key = index into
    Program.constants).
    `detach`: minigrad used the value cut from the graph (`detach()`, or inside `no_grad`)."""

    kind: str
    key: Any
    detach: bool = False


@dataclass
class Node:
    """One recorded op: `op.apply(*args, **options)`, or, when `op` is a module class recorded
    whole, one call of such a module (`options` as its entry in `trace(modules=...)` read
    them); `grad` tells whether minigrad's output required grad (False inside `no_grad`, or
    when no input did)."""

    op: type
    args: tuple[Ref, ...]
    options: dict[str, Any]
    grad: bool


@dataclass
class Program:
    """The ops of one forward pass, the constants they read, and the result as a structure
    (a Ref, or tuples / lists / dicts of them, or plain Python values)."""

    nodes: list[Node]
    constants: list[np.ndarray]
    output: Any


class TraceError(RuntimeError):
    """The forward pass does something a recorded program cannot replay."""


# ----------------------------------------------------------------------------- recording

_lock = threading.Lock()


class _Tracing(threading.local):
    active = False


_tracing = _Tracing()


@contextlib.contextmanager
def _recording(record: Callable[..., None], whole: tuple[type, ...] = (),
               record_module: Callable[..., None] | None = None) -> Iterator[None]:
    """Call record(cls, inputs, options, out) after every top-level `Function.apply` made by
    this thread while the block runs, and record_module(module, args, out) after every
    top-level call of a module that is an instance of a class in `whole` (the ops inside such
    a call are not top-level).

    The core's forward-check hook sees neither the options nor the output Tensor, so the
    recorder wraps `Function.apply` (and `Module.__call__`) itself for the length of one
    forward pass (one trace at a time, other threads pass straight through) and puts the
    originals back afterwards.
    """
    original = Function.__dict__["apply"]
    original_call = Module.__dict__["__call__"]
    owner, depth = threading.get_ident(), [0]

    def apply(cls: type[Function], *inputs: Tensor, **options: Any) -> Tensor:
        if threading.get_ident() != owner:
            return original.__func__(cls, *inputs, **options)
        depth[0] += 1  # an op whose forward applies other ops is recorded once, as itself
        try:
            out = original.__func__(cls, *inputs, **options)
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            record(cls, inputs, options, out)
        return out

    def call(module: Module, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != owner or not isinstance(module, whole):
            return original_call(module, *args, **kwargs)
        if kwargs:
            raise TraceError(f"{type(module).__name__} is recorded as one call and takes its inputs "
                             f"by position; it was called with keywords {sorted(kwargs)}")
        depth[0] += 1
        try:
            out = original_call(module, *args)
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            record_module(module, args, out)
        return out

    if _tracing.active:  # the lock below is not reentrant: nesting would wait forever
        raise TraceError("a trace cannot run inside another trace (an exported module called while tracing)")
    with _lock:
        _tracing.active = True
        Function.apply = classmethod(apply)  # type: ignore[method-assign]
        if whole:
            Module.__call__ = call  # type: ignore[method-assign]
        try:
            yield
        finally:
            Function.apply = original  # type: ignore[method-assign]
            Module.__call__ = original_call  # type: ignore[method-assign]
            _tracing.active = False


class _Recorder:
    """Builds a Program from the ops it is shown, classifying every input and option array."""

    def __init__(self, inputs: list[Any], params: list[tuple[str, Tensor]],
                 buffers: list[tuple[str, Tensor]] = (), modules: Mapping[type, Callable] | None = None):
        self.modules = dict(modules or {})
        self.nodes: list[Node] = []
        self.constants: list[np.ndarray] = []
        self._alive: list[Any] = []  # keeps every seen object alive, so that ids stay unique
        self._tensors: dict[int, Ref] = {}  # id(Tensor) -> Ref
        self._arrays: dict[int, tuple[Ref, bool]] = {}  # id(array) -> (Ref, required grad)
        for i, x in enumerate(inputs):
            if isinstance(x, Tensor):
                self._add(x, Ref("input", i))
        for name, p in params:
            self._add(p, Ref("param", name))
        for name, b in buffers:
            self._add(b, Ref("buffer", name))

    def _add(self, t: Tensor, ref: Ref) -> None:
        # The array too: an op may give the tensor a new one (batch norm's running statistics),
        # and a freed array's id could come back as an unrelated array's
        self._alive.extend((t, t._data))
        self._tensors[id(t)] = ref
        self._arrays[id(t._data)] = (ref, t.requires_grad)

    def ref(self, t: Tensor) -> Ref:
        hit = self._tensors.get(id(t))
        if hit is not None:
            return hit
        return self.array_ref(t._data, t.requires_grad)

    def array_ref(self, a: np.ndarray, requires_grad: bool = False) -> Ref:
        """A Ref for an array: a known one (e.g. `Tensor._make(input._data, None)` wraps an example
        input's array again, and `detach()` an op's output), else a new constant."""
        hit = self._arrays.get(id(a))
        if hit is not None:
            ref, grad = hit
            return Ref(ref.kind, ref.key, detach=grad and not requires_grad)
        self._alive.append(a)
        self.constants.append(np.array(a))  # a copy: the caller may change its array later
        return Ref("const", len(self.constants) - 1)

    def _option(self, name: str, value: Any) -> Any:
        if isinstance(value, Tensor):
            return self.ref(value)
        if isinstance(value, np.ndarray):
            return self.array_ref(value)
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, tuple):
            return tuple(self._option(name, v) for v in value)
        if isinstance(value, slice):
            return slice(*(None if v is None else int(v) for v in (value.start, value.stop, value.step)))
        if isinstance(value, (list, dict)):
            raise TraceError(
                f"{name}={type(value).__name__}: an op that writes into a list or dict passed as an "
                "option (e.g. attention weights for need_weights or record_attention) cannot be "
                "exported; trace a forward that does not ask for them"
            )
        return value

    def record(self, cls: type[Function], inputs: tuple, options: dict, out: Tensor) -> None:
        args = tuple(self.ref(t) for t in inputs)
        opts = {k: self._option(k, v) for k, v in options.items()
                if not (k == "weights_out" and v is None)}
        self.nodes.append(Node(cls, args, opts, out.requires_grad))
        self._add(out, Ref("node", len(self.nodes) - 1))

    def record_module(self, module: Module, args: tuple, out: Any) -> None:
        """One call of a module recorded whole: op = the first class of `modules` it is an
        instance of, options = what that class's entry reads from the module."""
        cls = next(c for c in self.modules if isinstance(module, c))
        if not all(isinstance(a, Tensor) for a in args) or not isinstance(out, Tensor):
            raise TraceError(f"{type(module).__name__} is recorded as one call, from tensors to a tensor; "
                             f"it was called with {[type(a).__name__ for a in args]} and returned "
                             f"{type(out).__name__}")
        opts = {k: self._option(k, v) for k, v in self.modules[cls](module).items()}
        self.nodes.append(Node(cls, tuple(self.ref(t) for t in args), opts, out.requires_grad))
        self._add(out, Ref("node", len(self.nodes) - 1))

    def structure(self, result: Any) -> Any:
        """The traced function's result with every Tensor (or array) replaced by its Ref."""
        if isinstance(result, Tensor):
            return self.ref(result)
        if isinstance(result, np.ndarray):
            return self.array_ref(result)
        if isinstance(result, (tuple, list)):
            return type(result)(self.structure(r) for r in result)
        if isinstance(result, dict):
            return {k: self.structure(v) for k, v in result.items()}
        return result


def trace(fn: Callable[..., Any], inputs: list[Any], params: list[tuple[str, Tensor]],
          buffers: list[tuple[str, Tensor]] = (), modules: Mapping[type, Callable[[Any], dict]] | None = None
          ) -> Program:
    """Run fn(*inputs) once and return the program of ops it ran.

    Args:
        fn: minigrad code, e.g. a module or its bound `loss` method.
        inputs: its positional arguments (Tensors are example inputs; other values are passed
            as they are and become part of the program).
        params: (name, Parameter) pairs, so that ops reading them refer to them by name.
        buffers: (name, buffer) pairs, the same for buffers.
        modules: module class -> a function giving the options of one call of such a module
            (a dict; Tensors in it become Refs): the calls of these modules are recorded whole.
    """
    rec = _Recorder(inputs, params, buffers, modules)
    with _recording(rec.record, tuple(rec.modules), rec.record_module):
        result = fn(*inputs)
    return Program(rec.nodes, rec.constants, rec.structure(result))


def same_structure(a: Program, b: Program) -> bool:
    """Whether two programs run the same ops, wired the same way (constants and options may differ)."""
    if len(a.nodes) != len(b.nodes) or _kinds(a.output) != _kinds(b.output):
        return False
    for na, nb in zip(a.nodes, b.nodes):
        if na.op is not nb.op or len(na.args) != len(nb.args) or na.options.keys() != nb.options.keys():
            return False
        for ra, rb in zip(na.args, nb.args):
            if ra.kind != rb.kind or (ra.kind != "const" and ra.key != rb.key):
                return False
    return True


def _kinds(structure: Any) -> Any:
    if isinstance(structure, Ref):
        return (structure.kind, None if structure.kind == "const" else structure.key)
    if isinstance(structure, (tuple, list)):
        return tuple(_kinds(s) for s in structure)
    if isinstance(structure, dict):
        return {k: _kinds(v) for k, v in structure.items()}
    return structure
