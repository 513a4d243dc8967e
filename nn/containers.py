"""Containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict, with
PyTorch's names and child names.

Plain Python lists and dicts of modules work as attributes too (the walker looks inside them);
these classes add what PyTorch users expect: `Sequential` calls its children in order, and
each container names its children in the state dict as PyTorch does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator, Mapping

from minigrad import Tensor

from .module import Module, Parameter, _walk


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
    """A list of modules named 0, 1, 2, ..., as torch.nn.ModuleList; a plain Python list
    attribute works as well. Indexing with a slice gives a ModuleList."""

    def __init__(self, modules: Any = None):
        self._items: list[Module] = []
        if modules is not None:
            self.extend(modules)

    def _members(self) -> Iterator[tuple[str, Any]]:
        for i, m in enumerate(self._items):
            yield from _walk(str(i), m)

    def _checked(self, i: int, module: Any) -> Module:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: entry {i} must be a Module, not a {type(module).__name__}")
        return module

    def append(self, module: Module) -> ModuleList:
        self._items.append(self._checked(len(self._items), module))
        return self

    def extend(self, modules: Any) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        self._items.insert(index, self._checked(index, module))

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return ModuleList(self._items[i])
        return self._items[i]

    def __setitem__(self, i: int, module: Module) -> None:
        self._items[i] = self._checked(i, module)

    def __delitem__(self, i: int | slice) -> None:
        del self._items[i]

    def __getattr__(self, name: str) -> Module:
        # torch names the entries "0", "1", ...: getattr(layers, "0") is layers[0].
        items = self.__dict__.get("_items")
        if items is not None and name.isdigit() and int(name) < len(items):
            return items[int(name)]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __iadd__(self, modules: Any) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Any) -> ModuleList:
        return ModuleList([*self._items, *other])

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items)


class _Dict(Module):
    """What ModuleDict and ParameterDict share: entries by name, in insertion order, reached as
    `d[name]` and as the attribute `d.name` (nanoGPT's `self.transformer.wte`)."""

    _what = "entry"

    def __init__(self, entries: Any = None):
        object.__setattr__(self, "_entries", {})
        if entries is not None:
            self.update(entries)

    def _members(self) -> Iterator[tuple[str, Any]]:
        for key, value in self._entries.items():
            yield from _walk(key, value)

    _kind: type = object  # what an entry is: an attribute of this kind becomes an entry

    def _check(self, key: Any, value: Any) -> Any:
        raise NotImplementedError  # each dict checks (and converts) its own values

    def __getitem__(self, key: str) -> Any:
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"{type(self).__name__} has no {self._what} {key!r}; it has "
                           f"{list(self._entries)}") from None

    def __setitem__(self, key: str, value: Any) -> None:
        self._entries[key] = self._check(key, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when ordinary lookup fails: an entry by its name.
        entries = self.__dict__.get("_entries")
        if entries is not None and name in entries:
            return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        # `d.name = module` makes or replaces an entry, as torch registers it; other values
        # (`training`, a subclass's settings) stay plain attributes.
        if name in self._entries or isinstance(value, self._kind):
            self[name] = value
        else:
            object.__setattr__(self, name, value)

    def __delitem__(self, key: str) -> None:
        del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> Any:
        return self._entries.keys()

    def values(self) -> Any:
        return self._entries.values()

    def items(self) -> Any:
        return self._entries.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._entries.get(key, default)

    def pop(self, key: str) -> Any:
        return self._entries.pop(key)

    def clear(self) -> None:
        self._entries.clear()

    def update(self, entries: Any) -> None:
        """Add (name, value) pairs from a mapping or an iterable of pairs."""
        pairs = entries.items() if isinstance(entries, Mapping) else entries
        for key, value in pairs:
            self[key] = value


class ModuleDict(_Dict):
    """Modules by name, in insertion order, as torch.nn.ModuleDict: `d["enc"]` or `d.enc`,
    `d.items()`; the state dict names them `enc.weight`, .... A plain dict attribute works as
    well (but only a ModuleDict gives its entries as attributes)."""

    _what, _kind = "module", Module

    def __init__(self, modules: Any = None):
        super().__init__(modules)

    def _check(self, key: Any, module: Any) -> Module:
        _check_child("ModuleDict", key, module)
        return module


class ParameterList(Module):
    """A list of parameters named 0, 1, 2, ..., as torch.nn.ParameterList: a Tensor put in
    becomes a Parameter (as torch does)."""

    def __init__(self, values: Any = None):
        self._items: list[Parameter] = []
        if values is not None:
            self.extend(values)

    def _members(self) -> Iterator[tuple[str, Any]]:
        for i, p in enumerate(self._items):
            yield str(i), p

    def append(self, value: Any) -> ParameterList:
        self._items.append(_as_parameter("ParameterList", len(self._items), value))
        return self

    def extend(self, values: Any) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return ParameterList(self._items[i])
        return self._items[i]

    def __setitem__(self, i: int, value: Any) -> None:
        self._items[i] = _as_parameter("ParameterList", i, value)

    def __iadd__(self, values: Any) -> ParameterList:
        return self.extend(values)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._items)

    def extra_repr(self) -> str:
        return ", ".join(f"({i}): {tuple(p.shape)}" for i, p in enumerate(self._items))


class ParameterDict(_Dict):
    """Parameters by name, in insertion order, as torch.nn.ParameterDict: `d["w"]` or `d.w`; a
    Tensor put in becomes a Parameter."""

    _what, _kind = "parameter", Tensor

    def __init__(self, parameters: Any = None):
        super().__init__(parameters)

    def _check(self, key: Any, value: Any) -> Parameter:
        if not isinstance(key, str) or "." in key or not key:
            raise KeyError(f"ParameterDict: a key must be a non-empty string without '.', not {key!r}")
        return _as_parameter("ParameterDict", key, value)

    def extra_repr(self) -> str:
        return ", ".join(f"({k}): {tuple(p.shape)}" for k, p in self._entries.items())


def _as_parameter(owner: str, key: Any, value: Any) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)  # requires grad, as torch's wrapping gives
    raise TypeError(f"{owner}: {key!r} must be a Parameter or a Tensor, not a {type(value).__name__}")
