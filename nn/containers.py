"""Containers: Sequential, ModuleList and ModuleDict, with PyTorch's names and child names.

Plain Python lists and dicts of modules work as attributes too (the walker looks inside them);
these classes add what PyTorch users expect: `Sequential` calls its children in order, and
each container names its children in the state dict as PyTorch does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator, Mapping

from .module import Module, _walk


def _check_child(owner: str, key: Any, module: Any) -> None:
    """A child name must be a non-empty string without '.' (a dot would split the state dict
    name), and a child must be a Module."""
    if not isinstance(key, str) or "." in key or not key:
        raise KeyError(f"{owner}: a key must be a non-empty string without '.', not {key!r} "
                       "(a dot would split the state dict name)")
    if not isinstance(module, Module):
        raise TypeError(f"{owner}: {key!r} must be a Module, not a {type(module).__name__}")


class Sequential(Module):
    """Modules applied one after another, as `torch.nn.Sequential`.

    `Sequential(a, b, c)` names its children 0, 1, 2; `Sequential(OrderedDict([("fc", a),
    ("act", b)]))` names them by the keys, so `seq.fc` is `a` and the state dict holds
    `fc.weight`. `seq[i]` is the i-th child (a slice gives a Sequential of those children).

    Shape:
        - Input: whatever the first module takes
        - Output: whatever the last module returns
    """

    def __init__(self, *modules: Module):
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            pairs = list(modules[0].items())
        else:
            for i, m in enumerate(modules):
                if not isinstance(m, Module):
                    hint = " (pass an OrderedDict to name the children)" if isinstance(m, Mapping) else ""
                    raise TypeError(f"Sequential: argument {i} is a {type(m).__name__}, not a Module{hint}")
            pairs = [(str(i), m) for i, m in enumerate(modules)]
        entries: dict[str, Module] = {}
        for key, m in pairs:
            _check_child("Sequential", key, m)
            entries[key] = m
        self._entries = entries

    def _members(self) -> Iterator[tuple[str, Any]]:
        yield from self._entries.items()

    def forward(self, input: Any) -> Any:
        for layer in self._entries.values():
            input = layer(input)
        return input

    def __getattr__(self, name: str) -> Module:
        # Only reached when ordinary lookup fails: a child by its name (`seq.fc`).
        entries = self.__dict__.get("_entries")
        if entries is not None and name in entries:
            return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        entries = self.__dict__.get("_entries")
        if entries is not None and name in entries:  # replace the child of that name
            _check_child("Sequential", name, value)
            entries[name] = value
        else:
            object.__setattr__(self, name, value)

    def _key(self, i: int) -> str:
        keys = list(self._entries)
        if not -len(keys) <= i < len(keys):
            raise IndexError(f"Sequential: index {i} is out of range for {len(keys)} modules")
        return keys[i]

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._entries.items())[i]))
        return self._entries[self._key(i)]

    def __setitem__(self, i: int, module: Module) -> None:
        key = self._key(i)
        _check_child("Sequential", key, module)
        self._entries[key] = module

    def append(self, module: Module) -> Sequential:
        """Add `module` at the end, named by its position (as torch)."""
        key = str(len(self._entries))
        _check_child("Sequential", key, module)
        self._entries[key] = module
        return self

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._entries.values())


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
        _check_child("ModuleDict", key, module)
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
