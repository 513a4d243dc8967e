"""The op table: an op's Tensor method, its function form and its in-place variant, declared once.

An op is filed in one kind's module (`ops/pointwise.py`, `ops/reduce.py`, ...): its `Function`
(forward and backward side by side), then its method, declared with `op`:

    class Exp(Function):
        '''z = exp(x)        dx = g * z'''
        ...

    @op(inplace=True, inplace_function=True)
    def exp(self) -> Tensor:
        return Exp.apply(_floating(self))   # an integer tensor's exp is float32

From that one declaration come, as PyTorch's native_functions.yaml gives an op's variants:
    Tensor.exp           the function itself, a method of Tensor;
    minigrad.exp(input)  the function form: `input` may be anything `as_tensor` takes
                         (a number, a list, an array), then it is the method;
    Tensor.exp_          the in-place variant (`inplace=True`): the method's result written
                         into this tensor's own memory (`Tensor._take_result`);
    minigrad.exp_(input) its function form (`inplace_function=True`, where torch has one).
Where the function form or the method is not the other with `input` for `self` (torch's
`reshape(input, shape)` beside `x.reshape(*shape)`, `cat`, `einsum`), the kind's module declares
each on its own with `method` or `function`. `entries()` lists the table; docs/api.md's "defined
in" column and the tests read it.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..autograd import Function
from ..creation import as_tensor
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor


@dataclass
class Entry:
    """One declared name: where it is defined and which variants it has."""

    name: str
    kind: str  # the module that defines it, e.g. "pointwise" for ops/pointwise.py
    method: Callable | None = None  # Tensor.<name>
    function: Callable | None = None  # minigrad.<name>
    inplace: Callable | None = None  # Tensor.<name>_


_TABLE: dict[str, Entry] = {}


def _entry(fn: Any, name: str | None) -> Entry:
    fn = fn.fget if isinstance(fn, property) else fn  # a property (x.mT) is declared as a method
    name = name or fn.__name__
    kind = fn.__module__.rsplit(".", 1)[-1]
    entry = _TABLE.setdefault(name, Entry(name, kind))
    if entry.kind != kind:
        raise RuntimeError(f"op table: {name} is declared in ops/{entry.kind}.py and ops/{kind}.py; "
                           "an op is filed once")
    return entry


def op(fn: Callable | None = None, *, function: bool = True, inplace: bool = False,
       inplace_function: bool = False, aliases: tuple[str, ...] = (), name: str | None = None) -> Any:
    """Declare `fn(self, ...)` as a Tensor method, and from it the function form (unless
    function=False), the in-place variant `Tensor.name_` (inplace=True), its function form
    `minigrad.name_` (inplace_function=True: torch has one for its one-input pointwise ops,
    `torch.exp_`, not for `add_`), and each alias (torch's second names: `clip` for `clamp`,
    `arccos` for `acos`), which has every variant too."""
    def declare(fn: Callable) -> Callable:
        fn = _with_numpy_names(fn)
        primary = name or getattr(fn, "fget", fn).__name__
        # One object per variant, shared by the aliases (`arccos` is `acos`), as `arccos = acos` would be.
        form = _function_form(fn, primary) if function else None
        in_place = _inplace_form(fn, primary) if inplace else None
        in_place_form = _function_form(in_place, primary + "_") if inplace_function else None
        for each in (primary, *aliases):
            entry = _entry(fn, each)
            entry.method, entry.function, entry.inplace = fn, form, in_place
            setattr(Tensor, each, fn)
            if in_place is not None:
                setattr(Tensor, each + "_", in_place)
            if in_place_form is not None:
                _entry(fn, each + "_").function = in_place_form
        return fn
    return declare(fn) if fn is not None else declare


def method(fn: Callable | None = None, *, inplace: bool = False, name: str | None = None) -> Any:
    """Declare a Tensor method that has no function form of the same meaning (or, with `name`,
    a second name of one: `method(bitwise_and, name="__and__")`)."""
    return op(fn, function=False, inplace=inplace, name=name)


def function(fn: Callable | None = None, *, name: str | None = None) -> Any:
    """Declare a function form written on its own (`minigrad.cat`, `minigrad.where`)."""
    def declare(fn: Callable) -> Callable:
        fn = _with_numpy_names(fn)
        if name is not None:  # `amax_form` in its module, `amax` to every reader
            fn.__name__ = fn.__qualname__ = name
        _entry(fn, name).function = fn
        return fn
    return declare(fn) if fn is not None else declare


# The numpy spellings torch's argument parser takes for every op: x.sum(axis=0, keepdims=True).
NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def _with_numpy_names(fn: Any) -> Any:
    """fn, also taking `axis` for its `dim` and `keepdims` for its `keepdim` (as torch's ops do);
    fn itself when it has neither parameter (no wrapper, no cost)."""
    if isinstance(fn, property):
        return fn
    params = inspect.signature(fn).parameters
    renames = {numpy: ours for numpy, ours in NUMPY_NAMES.items() if ours in params and numpy not in params}
    if not renames:
        return fn
    unsettable = [k for k in ("out", "dtype") if k not in params]

    def with_numpy_names(*args: Any, **kwargs: Any) -> Any:
        for unset in unsettable:  # np.sum(x), np.mean(x) call x.sum(axis=None, dtype=None, out=None)
            if kwargs.get(unset, 0) is None:
                del kwargs[unset]
        for numpy, ours in renames.items():
            if numpy in kwargs:
                if ours in kwargs:
                    raise TypeError(f"{fn.__name__}: got both {ours}= and its other name {numpy}=")
                kwargs[ours] = kwargs.pop(numpy)
        return fn(*args, **kwargs)

    with_numpy_names.__signature__ = inspect.signature(fn)
    _name_like(with_numpy_names, fn, fn.__name__)
    return with_numpy_names


def _function_form(method: Callable, name: str) -> Callable:
    """minigrad.<name>(input, ...): the method on `as_tensor(input)`, with torch's `input` for
    `self` in its signature (a wrong call names the same counts: self is one positional)."""
    def form(input: Any, *args: Any, **kwargs: Any) -> Any:
        return method(as_tensor(input), *args, **kwargs)

    signature = inspect.signature(method)
    first, *rest = signature.parameters.values()
    form.__signature__ = signature.replace(parameters=[first.replace(name="input", annotation="Any"), *rest])
    _name_like(form, method, name)
    return form


class Overwritten(Function):
    """The node of an in-place op whose result has no gradient, on a tensor in a graph
    (`y.eq_(0)`, `y.logical_not_()`): z = the new values,  dx = 0, as in PyTorch.
    dx is a constant, so every higher derivative is 0 too (a tensor of zeros, no graph)."""

    differentiable_backward = True  # see graph_backward.py

    @staticmethod
    def forward(ctx, x, *, values):
        return values

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(getattr(g, "_data", g))


def _inplace_form(method: Callable, name: str) -> Callable:
    """Tensor.<name>_(...): the method's result written into self (see Tensor._take_result)."""
    def inplace(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        result = method(self, *args, **kwargs)
        if result._node is None and self.requires_grad and is_grad_enabled():
            result = Overwritten.apply(self, values=result._data)  # in the graph, with gradient 0
        return self._take_result(result, name + "_")

    inplace.__signature__ = inspect.signature(method)
    _name_like(inplace, method, name + "_")
    inplace.__doc__ = f"In place: `x.{name}_(...)` is `x.{name}(...)` written into x's own memory."
    return inplace


def _name_like(made: Callable, method: Callable, name: str) -> None:
    made.__name__ = made.__qualname__ = name
    made.__module__ = method.__module__
    made.__doc__ = method.__doc__
    made.__wrapped__ = method  # inspect.getsource and help() show the declaration


def load_kinds() -> None:
    """Import every kind of op (ops/__init__.py lists them): importing one declares its ops."""
    from . import KINDS

    for kind in KINDS:
        importlib.import_module(f"{__package__}.{kind}")


def entries() -> list[Entry]:
    """Every declared name, sorted."""
    return [_TABLE[name] for name in sorted(_TABLE)]


def function_forms() -> dict[str, Callable]:
    """name -> function form, for the `minigrad` namespace."""
    return {e.name: e.function for e in entries() if e.function is not None}
