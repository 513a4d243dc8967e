"""Module and Parameter: models as trees of modules, whose parameters are found by walking.

A Module finds its parameters and children by looking at its attributes (lists, tuples and
dicts included), so there is nothing to register and no `super().__init__()` to forget. Only
buffers (state saved with the model that is not a parameter, as a running count) are named
with `register_buffer`, as in torch; torch's `register_parameter` and `add_module` work too
and just set the attribute. The containers (Sequential, ...) are in containers.py, the
forward and backward hooks in module_hooks.py.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, NamedTuple

import numpy as np

from minigrad import Tensor, zeros
from minigrad.device import check_device, is_device
from minigrad.grad_mode import module_scope
from minigrad.hooks import RemovableHandle

from .module_hooks import ModuleHooks

# Attributes of a Module that are its own bookkeeping, never parameters or children.
_BOOKKEEPING = ("training", "_buffers", "_module_hooks")


class Parameter(Tensor):
    """A Tensor that a Module owns and an optimizer updates (requires grad by default)."""

    def __init__(self, data: Any, requires_grad: bool = True):
        super().__init__(data._data if isinstance(data, Tensor) else data)
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


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` did not match, as torch's `_IncompatibleKeys`: names the model
    has and the state dict lacks, and names the state dict has and the model lacks."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _target_dtype(args: tuple, kwargs: dict) -> Any:
    """The dtype of Module.to's torch forms, None for none; the device checked to be the CPU."""
    unknown = set(kwargs) - {"device", "dtype", "non_blocking", "memory_format"}
    if unknown:
        raise TypeError(f"Module.to: unexpected keyword {sorted(unknown)[0]!r}")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    rest = list(args)
    if rest and is_device(rest[0]):
        device = rest.pop(0)
    if len(rest) > 1 or (rest and dtype is not None):
        raise TypeError(f"Module.to: expected a device, a dtype or a tensor, got {args!r}")
    if rest:
        dtype = rest[0].dtype if isinstance(rest[0], Tensor) else rest[0]
    check_device(device, "Module.to")
    return dtype


class Module:
    """Base class of layers and models: subclasses set attributes and define `forward`."""

    training: bool = True
    _module_hooks: ModuleHooks | None = None  # made by the first register_*_hook

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")  # abstract

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._module_hooks is not None:
            return self._module_hooks.call(self, args, kwargs)
        # Nodes recorded here remember this module, so graphs can draw it as a cluster.
        with module_scope(self):
            return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ hooks

    def _hooks(self) -> ModuleHooks:
        if self._module_hooks is None:
            object.__setattr__(self, "_module_hooks", ModuleHooks())
        return self._module_hooks

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call hook(module, args) before each forward (hook(module, args, kwargs) with
        with_kwargs); what it returns, if not None, replaces the positional arguments (a
        non-tuple is wrapped in one), or (args, kwargs) with with_kwargs. As torch."""
        return self._hooks().add("forward_pre", (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call hook(module, args, output) after each forward (hook(module, args, kwargs,
        output) with with_kwargs); what it returns, if not None, replaces the output. With
        always_call it runs (with output None) when forward raises too. As torch."""
        return self._hooks().add("forward", (hook, with_kwargs, always_call), prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call hook(module, grad_input, grad_output) in backward, once the gradients with
        respect to the module's inputs are known: grad_input has one entry per positional
        argument (None for one that is not a tensor requiring grad), grad_output one per
        output. A tuple it returns replaces grad_input. As torch (see module_hooks.py)."""
        return self._hooks().add("backward", hook, prepend)

    # ------------------------------------------------------------------ the tree

    def _members(self) -> Iterator[tuple[str, Any]]:
        """Direct parameters and children, by the name a state dict uses."""
        for attr, value in vars(self).items():
            if attr not in _BOOKKEEPING:
                yield from _walk(attr, value)

    def _child_items(self) -> Iterator[tuple[str, Module]]:
        """Direct children, a module reached under two names yielded under both."""
        for name, value in self._members():
            if isinstance(value, Module):
                yield name, value

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) of each direct child, each module once."""
        memo: set[Module] = set()
        for name, m in self._child_items():
            if m not in memo:
                memo.add(m)
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set[Module] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every module below it, depth first (a parent before its children,
        children in order), with dotted paths, as torch. With remove_duplicate, a module
        reached twice is yielded once; `memo` holds modules to leave out (and collects the ones
        yielded)."""
        memo = set() if memo is None else memo
        stack = [(prefix, self)]  # a stack, not recursion: a deep chain must not hit the limit
        while stack:
            name, module = stack.pop()
            if module in memo:
                continue
            if remove_duplicate:
                memo.add(module)
            yield name, module
            stack.extend(reversed([(_join(name, n), m) for n, m in module._child_items()]))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def _tree(self, prefix: str, recurse: bool, remove_duplicate: bool) -> Iterator[tuple[str, Module]]:
        if recurse:
            yield from self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            yield prefix, self

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Every parameter once, as torch: a tied weight appears under the first name it is
        found by (the state dict lists it under every name, as torch's)."""
        seen: set[int] = set()
        for path, module in self._tree(prefix, recurse, remove_duplicate):
            for name, value in module._members():
                if isinstance(value, Parameter) and not (remove_duplicate and id(value) in seen):
                    seen.add(id(value))
                    yield _join(path, name), value

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def num_parameters(self) -> int:
        return sum(p._data.size for p in self.parameters())

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call fn on every child's tree (children first), then on this module; returns self,
        as torch (e.g. `model.apply(init_weights)`)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ buffers

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Keep `tensor` as the attribute `name`, a buffer: state that is not a parameter (the
        optimizer leaves it alone) but that `state_dict()` saves and `load_state_dict` loads,
        unless persistent=False. None is allowed (no entry in the state dict)."""
        if not isinstance(name, str):
            raise TypeError(f"register_buffer: the buffer name must be a string, not a {type(name).__name__}")
        if "." in name or not name:
            raise KeyError(f"register_buffer: a buffer name must be non-empty and without '.', not {name!r}")
        buffers = vars(self).setdefault("_buffers", {})
        if hasattr(self, name) and name not in buffers:
            raise KeyError(f"register_buffer: attribute {name!r} already exists on {type(self).__name__}")
        if tensor is not None and (not isinstance(tensor, Tensor) or isinstance(tensor, Parameter)):
            raise TypeError(f"register_buffer: cannot assign a {type(tensor).__name__} to the buffer "
                            f"{name!r} (a Tensor that is not a Parameter, or None, is required)")
        buffers[name] = persistent
        object.__setattr__(self, name, tensor)

    def _own_buffers(self) -> Iterator[tuple[str, Tensor, bool]]:
        """(name, tensor, persistent) of this module's buffers that are not None."""
        for name, persistent in vars(self).get("_buffers", {}).items():
            value = vars(self).get(name)
            if isinstance(value, Tensor):
                yield name, value, persistent

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        for path, module in self._tree(prefix, recurse, remove_duplicate):
            for name, value, _ in module._own_buffers():
                if not (remove_duplicate and id(value) in seen):
                    seen.add(id(value))
                    yield _join(path, name), value

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ torch's registrations

    def _check_new_name(self, what: str, name: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what}: the name must be a string, not a {type(name).__name__}")
        if "." in name or not name:
            raise KeyError(f"{what}: a name must be non-empty and without '.', not {name!r}")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Set the attribute `name` to `param` (a Parameter, or None for an absent one), as
        torch; the walk finds it from there."""
        self._check_new_name("register_parameter", name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: cannot assign a {type(param).__name__} to the "
                            f"parameter {name!r} (a Parameter or None is required)")
        if hasattr(self, name) and not isinstance(getattr(self, name), (Parameter, type(None))):
            raise KeyError(f"register_parameter: attribute {name!r} already exists on {type(self).__name__}")
        setattr(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Set the attribute `name` to the child `module` (or None), as torch."""
        self._check_new_name("add_module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and not isinstance(getattr(self, name), (Module, type(None))):
            raise KeyError(f"add_module: attribute {name!r} already exists on {type(self).__name__}")
        setattr(self, name, module)

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The module at the dotted path `target` ("" is this module), as torch."""
        if target == "":
            return self
        found = dict(self.named_modules(remove_duplicate=False))
        if target in found:
            return found[target]
        parts = target.split(".")
        for i in range(len(parts)):  # name the first step that leads nowhere
            if ".".join(parts[:i + 1]) not in found:
                owner = found[".".join(parts[:i])] if i else self
                raise AttributeError(f"{type(owner).__name__} has no attribute `{parts[i]}`")
        raise AttributeError(f"{type(self).__name__} has no submodule `{target}`")  # unreachable

    def _get_member(self, target: str, kind: str, found: dict[str, Tensor]) -> Any:
        if target in found:
            return found[target]
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)  # names a missing module on the way
        raise AttributeError(f"get_{kind}: {type(module).__name__} has no {kind} `{name}`")

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path `target` (e.g. "blocks.0.fc.weight"), as torch."""
        return self._get_member(target, "parameter", dict(self.named_parameters(remove_duplicate=False)))

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path `target`, as torch."""
        return self._get_member(target, "buffer", dict(self.named_buffers(remove_duplicate=False)))

    # ------------------------------------------------------------------ state

    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradients on or off for every parameter (freezing a part); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: .grad becomes None, or with set_to_none=False a
        tensor of zeros in place, as torch."""
        for p in self.parameters():
            if set_to_none or p._grad is None:
                p._grad = None
            else:
                p._grad[...] = 0

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """As torch's Module.to: `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(tensor)`
        (its dtype), keywords device=, dtype=, non_blocking=. Casts every parameter and
        floating-point buffer to the dtype in place (e.g. float64 for gradient checks); integer
        buffers (counters) keep theirs. The device must be the CPU, minigrad's one device (any
        other is an error naming it). Returns the module."""
        dtype = _target_dtype(args, kwargs)
        if dtype is None:
            return self
        for p in self.parameters():
            p._data = p._data.astype(dtype)
            p.grad = None
        for b in self.buffers():
            if b.dtype.kind == "f":
                b._data = b._data.astype(dtype)
        return self

    def double(self) -> Module:
        return self.to(np.float64)

    def cpu(self) -> Module:
        """The module itself: its tensors are on the CPU, minigrad's one device."""
        return self

    def cuda(self, device: Any = None) -> Module:
        """Refused with an error naming the device: minigrad computes on the CPU only."""
        zeros(0).cuda(device)
        return self

    def _state_tensors(self) -> dict[str, Tensor]:
        """The tensors of the state dict, in torch's order: each module's parameters, then its
        persistent buffers, a parent before its children; a tied weight (or a module reached
        twice) under every name, as torch lists it."""
        out: dict[str, Tensor] = {}
        for path, module in self.named_modules(remove_duplicate=False):
            own = [(n, v) for n, v in module._members() if isinstance(v, Parameter)]
            own += [(n, v) for n, v, persistent in module._own_buffers() if persistent]
            for name, t in own:
                out[_join(path, name)] = t
        return out

    def state_dict(self) -> OrderedDict[str, Tensor]:
        """Parameter and persistent buffer name -> its values as a Tensor cut from the graph,
        sharing the parameter's memory, as torch's (a training step changes them too: keep a
        snapshot with `{k: v.clone() for k, v in model.state_dict().items()}`)."""
        return OrderedDict((name, Tensor._make(t._data, None)) for name, t in self._state_tensors().items())

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy arrays into the parameters and buffers of the same names.

        Every entry is checked before any is written: with strict=True a missing or unexpected
        name is an error, and a wrong shape always is, so a failed load changes nothing. With
        strict=False the matching names are loaded and the others reported. A tied weight is
        loaded when one of its names is there (a state dict that lists it once loads too).

        Returns:
            IncompatibleKeys(missing_keys, unexpected_keys), as torch.
        """
        targets = self._state_tensors()
        loaded = {id(targets[k]) for k in state if k in targets}
        missing = [k for k in targets if k not in state and id(targets[k]) not in loaded]
        unexpected = [k for k in state if k not in targets]
        wrong = [
            f"{k}: checkpoint {np.shape(getattr(v, '_data', v))}, model {targets[k].shape}"
            for k, v in state.items()
            if k in targets and np.shape(getattr(v, "_data", v)) != targets[k].shape
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
            arrays = {k: np.array(getattr(v, "_data", v), dtype=targets[k].dtype) for k, v in state.items()
                      if k in targets}
        except (TypeError, ValueError) as e:
            raise ValueError(f"load_state_dict into {type(self).__name__}: {e}") from None
        for k, a in arrays.items():
            targets[k]._data = a
        return IncompatibleKeys(missing, unexpected)

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

