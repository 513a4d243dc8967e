"""minigrad: a small numpy tensor library with reverse-mode automatic differentiation.

    import minigrad as mg
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()     # x.grad == [2., 4.]
"""

import numpy as np

from . import _source_tree, optim
from .autograd import Function, enable_grad, is_grad_enabled, no_grad, set_grad_enabled, unbroadcast
from .creation import (
    arange,
    as_tensor,
    cat,
    eye,
    full,
    full_like,
    maximum,
    minimum,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)
from .gradcheck import GradcheckError, gradcheck
from .memory import keep_freed_memory
from .random import manual_seed
from .serialization import load, save
from .tensor import Tensor
from .threads import get_num_threads, set_num_threads
from .viz.anomaly import AnomalyError, detect_anomaly

float32, float64, int64, int32 = np.float32, np.float64, np.int64, np.int32
bool_ = np.bool_

__version__ = "0.1.1"

keep_freed_memory()

_source_tree.add_finder()  # run from a clone's root: minigrad.nn and the rest are folders beside

__all__ = [
    "AnomalyError", "Function", "GradcheckError", "Tensor", "arange", "as_tensor", "bool_", "cat",
    "detect_anomaly", "enable_grad", "eye", "float32", "float64", "full", "full_like",
    "get_num_threads", "gradcheck", "int32", "int64", "is_grad_enabled", "load", "manual_seed",
    "maximum", "minimum", "no_grad", "ones", "ones_like", "rand", "rand_like", "randint", "randn",
    "randn_like", "save", "set_grad_enabled", "set_num_threads", "stack", "tensor", "unbroadcast",
    "where", "zeros", "zeros_like",
]
