"""Devices, as torch's: minigrad computes on the CPU, so `device("cpu")` is where every tensor
is. A program may name other devices (`torch.device("cuda")` is made and compared as in
torch); putting a tensor there, by `device=`, `.to(...)` or `.cuda()`, is refused with an error
naming the device. `cuda` and `backends` answer what torch answers on a machine without CUDA.
"""

from __future__ import annotations

import types
from types import SimpleNamespace
from typing import Any

# torch's device types (torch.device("foo") names them when it refuses "foo").
TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
         "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:  # noqa: N801  (torch's name)
    """A device, as torch.device: device("cpu"), device("cuda:0"), device("cuda", 0),
    device(type="cpu"). `.type` and `.index` (None unless given); str() is "cpu" or "cuda:0";
    equal to a device of the same type and index (not to a string, as in torch)."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string such as 'cpu', not {type!r}")
        kind, colon, number = type.partition(":")
        if kind not in TYPES:
            raise RuntimeError(f"device: {type!r} is not a device type; expected one of {', '.join(TYPES)}")
        if colon:
            if index is not None or not number.isdigit():
                raise RuntimeError(f"device: invalid device string {type!r}")
            index = int(number)
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"device: the index must be a non-negative int, not {index!r}")
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"device: {name} cannot be set")

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def check_device(where: Any, op: str) -> None:
    """Nothing for None or a CPU device (a string, or a device); else an error naming the device."""
    if where is None:
        return
    if isinstance(where, int) and not isinstance(where, bool):  # torch: an int is a CUDA index
        where = device("cuda", where)
    if not isinstance(where, device):
        where = device(where)
    if where.type != "cpu":
        raise RuntimeError(f"{op}: device {str(where)!r} is not available: minigrad computes on the CPU only "
                           "(minigrad.cuda.is_available() is False); use 'cpu'")


def is_device(value: Any) -> bool:
    """Whether value names a device (a device, or a string such as 'cpu' or 'cuda:0'): how
    `to(...)` tells a device from a dtype."""
    return isinstance(value, device) or (isinstance(value, str) and value.partition(":")[0] in TYPES)


def _module(name: str, doc: str, **attributes: Any) -> types.ModuleType:
    """A namespace that is a module, as torch's `cuda` and `backends` are (so `import` finds it
    under `minigrad run` and the docs list it as one)."""
    module = types.ModuleType(f"minigrad.{name}", doc)
    module.__dict__.update(attributes, __file__=__file__)  # defined here
    return module


cuda = _module(
    "cuda", "torch.cuda's questions, answered for a machine without CUDA: no device, seeding a no-op.",
    is_available=lambda: False,
    device_count=lambda: 0,
    is_bf16_supported=lambda: False,
    manual_seed=lambda seed: None,
    manual_seed_all=lambda seed: None,
)

backends = _module(
    "backends", "torch.backends' flags (allow_tf32, cudnn.benchmark, ...): kept as set, and they "
    "change nothing on the CPU.",
    cuda=_module("backends.cuda", "CUDA's flags.", matmul=SimpleNamespace(allow_tf32=False),
                 is_built=lambda: False),
    cudnn=_module("backends.cudnn", "cuDNN's flags.", allow_tf32=True, enabled=True, benchmark=False,
                  deterministic=False, is_available=lambda: False),
    mps=_module("backends.mps", "Apple's MPS: not available.", is_available=lambda: False,
                is_built=lambda: False),
)
