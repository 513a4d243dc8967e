"""minigrad: a small numpy tensor library with reverse-mode automatic differentiation.

    import minigrad as mg
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()     # x.grad == [2., 4.]
"""

import importlib
import math

import numpy as np

from . import _source_tree, linalg, optim, utils
from .autograd import Function, unbroadcast
from .creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .device import backends, cuda, device
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .memory import keep_freed_memory
from .ops import table as _table
from .ops.dtype import DTYPE_NAMES, LEGACY_TYPES, finfo, iinfo
from .random import Generator, manual_seed
from .runtime.threads import get_num_threads, set_num_threads
from .serialization import load, save
from .tensor import Size, Tensor

# torch's dtype names (float32, long, ...; float, int and bool shadow the builtins in this module
# only) and its legacy tensor types (LongTensor, ...).
globals().update(DTYPE_NAMES)
globals().update(LEGACY_TYPES)
bool_ = DTYPE_NAMES["bool"]
pi, e, inf, nan = math.pi, math.e, math.inf, math.nan  # torch.pi, torch.e, torch.inf, torch.nan

__version__ = "0.6.0"

keep_freed_memory()

_table.load_kinds()  # each kind of op in minigrad/ops/ declares its methods, function forms, in-place forms

_source_tree.add_finder()  # run from a clone's root: minigrad.nn and the rest are folders beside

# The function forms (minigrad.exp, minigrad.sum, minigrad.cat, ...), each declared once beside its
# op in minigrad/ops/<kind>.py; docs/api.md says where each is defined.
globals().update(_table.function_forms())

# The drawing package loads when first asked for (mg.viz, mg.detect_anomaly, mg.AnomalyError, or
# an import of minigrad.viz or minigrad.nn), not with minigrad: importing minigrad registers no
# backward observer (viz/grads.py's, which keeps small gradients for drawings, comes with viz).
_LAZY = {"viz": "minigrad.viz", "AnomalyError": "minigrad.viz.anomaly",
         "detect_anomaly": "minigrad.viz.anomaly"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    value = module if name == "viz" else getattr(module, name)
    globals()[name] = value
    return value


# mg.bool, float and int are left out of __all__: `from minigrad import *` would break
# isinstance(v, bool) and float(v)
__all__ = sorted([
    "AnomalyError", "arange", "as_tensor", "backends", "bool_", "cuda", "detect_anomaly", "device", "e",
    "empty", "empty_like", "enable_grad", "eye", "finfo", "from_numpy",
    "full", "full_like", "Function", "get_num_threads", "gradcheck", "GradcheckError", "gradgradcheck",
    "iinfo", "inf",
    "is_grad_enabled", "linalg", "linspace", "load", "manual_seed",
    "nan", "no_grad", "ones", "ones_like", "pi", "rand", "rand_like", "randint", "randn", "randn_like",
    "save", "set_grad_enabled", "set_num_threads", "Tensor", "tensor", "unbroadcast", "utils", "zeros",
    "zeros_like", "Generator", "randperm", "Size", *_table.function_forms(),
    *(n for n in DTYPE_NAMES if n not in ("bool", "float", "int")), *LEGACY_TYPES,
])
