"""`torch` bound to minigrad for one run: an import hook that gives `import torch`, `import
torch.nn.functional as F` and `from torch.utils.data import DataLoader` minigrad's modules, each
seen through a face (`TorchFace`). A name the face's module lacks raises `MissingName`, which
says the torch name and the file and line that used it, in one line; it is an AttributeError,
so `hasattr(torch, name)` and `getattr(torch, name, default)` work as with torch itself; a
torch module minigrad lacks raises `MissingModule`, a ModuleNotFoundError.

The binding lasts for the `with bound_to_minigrad():` block: on leaving it, sys.modules and the
import path are as they were (torch itself, if it is installed and was imported before, comes
back).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import types
from typing import Any, Iterator

# torch's module -> the minigrad module that stands for it. A torch module not listed here is
# one minigrad lacks (`import torch.distributed` fails with MissingName).
TORCH_MODULES = {
    "torch": "minigrad",
    "torch.nn": "minigrad.nn",
    "torch.nn.functional": "minigrad.nn.functional",
    "torch.nn.init": "minigrad.nn.init",
    "torch.nn.utils": "minigrad.nn.utils",
    "torch.nn.utils.rnn": "minigrad.nn.utils.rnn",
    "torch.optim": "minigrad.optim",
    "torch.optim.lr_scheduler": "minigrad.optim.lr_scheduler",
    "torch.utils": "minigrad.utils",
    "torch.utils.data": "minigrad.utils.data",
    "torch.linalg": "minigrad.linalg",
    "torch.autograd": "minigrad.autograd",
    "torch.autograd.functional": "minigrad.autograd.functional",
    "torch.cuda": "minigrad.cuda",  # namespaces in minigrad (device.py), modules in torch
    "torch.backends": "minigrad.backends",
    "torch.backends.cuda": "minigrad.backends.cuda",
    "torch.backends.cudnn": "minigrad.backends.cudnn",
    "torch.backends.mps": "minigrad.backends.mps",
}


def minigrad_module(torch_name: str) -> types.ModuleType:
    """The minigrad module that stands for a torch module of TORCH_MODULES: an importable one,
    or a namespace module kept as an attribute of its parent (`minigrad.cuda`)."""
    return _module_named(TORCH_MODULES[torch_name])


def _module_named(target: str) -> types.ModuleType:
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        parent, _, name = target.rpartition(".")
        return getattr(_module_named(parent), name)


# Where minigrad's default differs from torch's on purpose (DESIGN: minigrad is batch-first), a
# program run as torch gets torch's: these classes are seen under their torch names as
# subclasses whose constructor defaults to torch's value.
TORCH_DEFAULTS = {
    "torch.nn.MultiheadAttention": {"batch_first": False},
    "torch.nn.TransformerEncoderLayer": {"batch_first": False},
    "torch.nn.TransformerDecoderLayer": {"batch_first": False},
}


def _with_torch_defaults(cls: type, defaults: dict[str, Any]) -> type:
    """A subclass of cls, of the same name, whose arguments default to torch's `defaults`."""
    signature = inspect.signature(cls.__init__)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = signature.bind_partial(self, *args, **kwargs).arguments
        cls.__init__(self, *args, **{**{k: v for k, v in defaults.items() if k not in given}, **kwargs})

    return type(cls.__name__, (cls,), {"__init__": __init__, "__doc__": cls.__doc__,
                                       "__module__": cls.__module__, "__qualname__": cls.__qualname__})


class _TorchTensorType(type):
    """The type of `torch.Tensor` under `minigrad run`: calling it is torch's constructor
    (`torch.Tensor(3, 4)` an uninitialised float32 tensor of that shape, `torch.Tensor(data)`
    a float32 tensor of the data), and any minigrad tensor is an instance of it."""

    def __call__(cls, *args: Any) -> Any:
        import numpy as np

        from minigrad.tensor import Tensor
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return Tensor._make(np.empty(args or (0,), dtype=np.float32), None)
        if len(args) > 1:
            raise TypeError(f"torch.Tensor: expected data or sizes, got {args!r}")
        data = args[0]._data if isinstance(args[0], Tensor) else args[0]
        return Tensor._make(np.array(data, dtype=np.float32), None)

    def __instancecheck__(cls, obj: Any) -> bool:
        from minigrad.tensor import Tensor
        return isinstance(obj, Tensor)

    def __subclasscheck__(cls, sub: type) -> bool:
        from minigrad.tensor import Tensor
        return issubclass(sub, Tensor)


def _torch_tensor(cls: type) -> type:
    """minigrad's Tensor seen as torch's: its methods, and torch's constructor (Tensor(*sizes))."""
    return _TorchTensorType(cls.__name__, (cls,), {"__slots__": (), "__doc__": cls.__doc__,
                                                    "__module__": cls.__module__})


# Names whose torch meaning differs from minigrad's own in one respect, seen under their torch
# name through a stand-in: torch.Tensor(3, 4) is a shape (minigrad.Tensor takes data only).
TORCH_STANDINS = {"torch.Tensor": _torch_tensor}


def _missing(name: str, filename: str | None, lineno: int | None) -> str:
    where = f" ({os.path.basename(filename)}, line {lineno})" if filename else ""
    return f"{name} is not in minigrad{where}"


class MissingName(AttributeError):
    """A torch name that minigrad lacks, used at `filename`:`lineno`."""

    def __init__(self, name: str, filename: str | None, lineno: int | None) -> None:
        super().__init__(_missing(name, filename, lineno))
        self.name, self.filename, self.lineno = name, filename, lineno


class MissingModule(ModuleNotFoundError):
    """A torch module that minigrad lacks (`import torch.distributed`), imported at
    `filename`:`lineno`; a ModuleNotFoundError, so `try: import ... except ImportError` works."""

    def __init__(self, name: str, filename: str | None, lineno: int | None) -> None:
        super().__init__(_missing(name, filename, lineno), name=name)
        self.filename, self.lineno = filename, lineno


def _user_frame(depth: int) -> tuple[str | None, int | None]:
    """File and line of the first frame at or above `depth` that is not the import machinery
    (an `import torch.x` runs inside importlib's frozen frames)."""
    frame = sys._getframe(depth + 1)
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else (None, None)


class TorchFace(types.ModuleType):
    """A minigrad module under its torch name: attributes come from the module (or, for a
    submodule torch has and minigrad maps, from that module's face); a missing one raises
    MissingName at the line that asked for it. Found attributes are kept on the face, so the
    second look-up is a plain module attribute."""

    def __init__(self, torch_name: str, module: types.ModuleType) -> None:
        super().__init__(torch_name, module.__doc__)
        self.__dict__["_module"] = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # dunder look-ups (__path__, __spec__): as a module without them
            raise AttributeError(name)
        full = f"{self.__name__}.{name}"
        if full in TORCH_MODULES:
            value = importlib.import_module(full)  # the face, through the finder
        else:
            try:
                value = getattr(self._module, name)
            except AttributeError:
                raise MissingName(full, *_user_frame(1)) from None
            if full in TORCH_DEFAULTS:
                value = _with_torch_defaults(value, TORCH_DEFAULTS[full])
            elif full in TORCH_STANDINS:
                value = TORCH_STANDINS[full](value)
        self.__dict__[name] = value
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._module)) | {t.rpartition(".")[2] for t in TORCH_MODULES
                                                 if t.rpartition(".")[0] == self.__name__})


class _FaceLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return TorchFace(spec.name, minigrad_module(spec.name))

    def exec_module(self, module: types.ModuleType) -> None:
        pass  # the face is complete when made


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` and its modules before any installed torch does."""

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        if fullname not in TORCH_MODULES:
            raise MissingModule(fullname, *_user_frame(1))
        is_package = any(t.startswith(fullname + ".") for t in TORCH_MODULES)
        return importlib.machinery.ModuleSpec(fullname, _FaceLoader(), is_package=is_package)


def _torch_entries() -> dict[str, types.ModuleType]:
    return {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}


@contextlib.contextmanager
def bound_to_minigrad() -> Iterator[None]:
    """Within the block, `import torch` (and the modules of TORCH_MODULES) gives minigrad."""
    saved = _torch_entries()
    for name in saved:
        del sys.modules[name]
    finder = _TorchFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in _torch_entries():
            del sys.modules[name]
        sys.modules.update(saved)
