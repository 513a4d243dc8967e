"""Module and Parameter: models as trees of modules, whose parameters are found by walking.

A Module finds its parameters and children by looking at its attributes (lists, tuples and
dicts included), so there is nothing to register and no `super().__init__()` to forget.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import numpy as np

from minigrad import Tensor
from minigrad.autograd import module_scope


class Parameter(Tensor):
    """A Tensor that a Module owns and an optimizer updates (requires grad by default)."""

    def __init__(self, data: Any, requires_grad: bool = True):
        super().__init__(data.data if isinstance(data, Tensor) else data)
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def _walk(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted name, Parameter or Module) found in an attribute value, lists and dicts included."""
    if isinstance(value, (Parameter, Module)):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(f"{name}.{i}", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(f"{name}.{key}", item)


class Module:
    """Base class of layers and models: subclasses set attributes and define `forward`."""

    training: bool = True

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")  # abstract

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Nodes recorded here remember this module, so graphs can draw it as a cluster.
        with module_scope(self):
            return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ the tree

    def _members(self) -> Iterator[tuple[str, Any]]:
        """Direct parameters and children, by the name a state dict uses."""
        for attr, value in vars(self).items():
            if attr != "training":
                yield from _walk(attr, value)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, value in self._members():
            if isinstance(value, Module):
                yield name, value

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every module below it, each once, with dotted paths."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            kids = [(f"{name}.{n}" if name else n, m) for n, m in module.named_children()]
            stack.extend(reversed(kids))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Every parameter once: a tied weight appears under the first name it is found by
        (so state dicts hold it once, unlike PyTorch's, which list every name)."""
        seen: set[int] = set()
        for path, module in self.named_modules(prefix):
            for name, value in module._members():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def num_parameters(self) -> int:
        return sum(p.data.size for p in self.parameters())

    # ------------------------------------------------------------------ state

    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def to(self, dtype: Any) -> Module:
        """Cast every parameter to dtype in place (e.g. float64 for gradient checks)."""
        for p in self.parameters():
            p.data = p.data.astype(dtype)
            p.grad = None
        return self

    def double(self) -> Module:
        return self.to(np.float64)

    def state_dict(self) -> dict[str, np.ndarray]:
        """Parameter name -> a copy of its array."""
        return {name: p.data.copy() for name, p in self.named_parameters()}

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Copy arrays into the parameters of the same names.

        Every entry is checked before any is written: with strict=True a missing or unexpected
        name is an error, and a wrong shape always is, so a failed load changes nothing.
        """
        params = dict(self.named_parameters())
        missing = [k for k in params if k not in state]
        unexpected = [k for k in state if k not in params]
        wrong = [
            f"{k}: checkpoint {np.shape(getattr(v, 'data', v))}, model {params[k].shape}"
            for k, v in state.items()
            if k in params and np.shape(getattr(v, "data", v)) != params[k].shape
        ]
        problems = []
        if strict and missing:
            problems.append("missing: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected: " + ", ".join(unexpected))
        if wrong:
            problems.append("wrong shape: " + "; ".join(wrong))
        if problems:
            raise ValueError(f"load_state_dict into {type(self).__name__}: " + " | ".join(problems))
        try:  # convert everything first: a value that fails to convert must not leave a half load
            arrays = {k: np.array(getattr(v, "data", v), dtype=params[k].dtype) for k, v in state.items()
                      if k in params}
        except (TypeError, ValueError) as e:
            raise ValueError(f"load_state_dict into {type(self).__name__}: {e}") from None
        for k, a in arrays.items():
            params[k].data = a

    # ------------------------------------------------------------------ printing

    def extra_repr(self) -> str:
        """The constructor arguments shown in repr (layers override this)."""
        return ""

    def __repr__(self) -> str:
        kids = list(self.named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not kids:
            return head + ")"
        lines = [head]
        for name, child in kids:
            sub = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}  # {child.num_parameters():,} params")
        return "\n".join(lines) + "\n)"


class Sequential(Module):
    """Modules applied one after another; children are named 0, 1, 2, ... as in PyTorch."""

    def __init__(self, *modules: Module):
        self.layers = list(modules)

    def _members(self) -> Iterator[tuple[str, Any]]:
        for i, m in enumerate(self.layers):
            yield str(i), m

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)


class ModuleList(Module):
    """A list of modules named 0, 1, 2, ...; a plain Python list attribute works as well."""

    def __init__(self, modules: Any = ()):
        self.items = list(modules)

    def _members(self) -> Iterator[tuple[str, Any]]:
        for i, m in enumerate(self.items):
            yield from _walk(str(i), m)

    def append(self, module: Module) -> ModuleList:
        self.items.append(module)
        return self

    def __getitem__(self, i: int) -> Module:
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.items)


class ModuleDict(Module):
    """Modules by name, in insertion order, as in PyTorch: `d["enc"]`, `d.items()`; the
    state dict names them `enc.weight`, .... A plain dict attribute works as well."""

    def __init__(self, modules: Any = None):
        self.entries: dict[str, Module] = {}
        if modules is not None:
            self.update(modules)

    def _members(self) -> Iterator[tuple[str, Any]]:
        for key, m in self.entries.items():
            yield from _walk(key, m)

    def __getitem__(self, key: str) -> Module:
        try:
            return self.entries[key]
        except KeyError:
            raise KeyError(f"ModuleDict has no module {key!r}; it has {list(self.entries)}") from None

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str) or "." in key or not key:
            raise KeyError(f"ModuleDict: a key must be a non-empty string without '.', not {key!r} "
                           "(a dot would split the state dict name)")
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {key!r} must be a Module, not a {type(module).__name__}")
        self.entries[key] = module

    def __delitem__(self, key: str) -> None:
        del self.entries[key]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def keys(self) -> Any:
        return self.entries.keys()

    def values(self) -> Any:
        return self.entries.values()

    def items(self) -> Any:
        return self.entries.items()

    def pop(self, key: str) -> Module:
        return self.entries.pop(key)

    def clear(self) -> None:
        self.entries.clear()

    def update(self, modules: Any) -> None:
        """Add (name, module) pairs from a mapping or an iterable of pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module


@contextmanager
def evaluating(model: Module) -> Iterator[Module]:
    """Put `model` (and every module below it) in eval mode for the block, then give each
    module back the training flag it had, even when the block raises.

        with nn.evaluating(model):      # dropout off, as model.eval()
            logits = model(x)
        # here each module is in the mode it was in before: a submodule that was frozen in
        # eval mode stays so, where model.train() would have switched it back on.
    """
    before = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for m, mode in before:
            m.training = mode
