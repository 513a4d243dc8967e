"""minigrad: a small numpy tensor library with reverse-mode automatic differentiation.

    import minigrad as mg
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()     # x.grad == [2., 4.]
"""

import numpy as np

from . import _source_tree, linalg, optim
from .autograd import Function, unbroadcast
from .creation import (
    arange,
    as_tensor,
    cat,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
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
from .functions import (
    abs,
    acos,
    all,
    allclose,
    any,
    arccos,
    arcsin,
    arctan,
    arctan2,
    argsort,
    asin,
    atan,
    atan2,
    ceil,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    cos,
    cosh,
    count_nonzero,
    cumprod,
    cumsum,
    eq,
    equal,
    erf,
    exp,
    exp2,
    expm1,
    fix,
    floor,
    fmod,
    frac,
    ge,
    gt,
    hypot,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    lerp,
    log,
    log1p,
    log2,
    log10,
    log_softmax,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    matmul,
    max,
    mean,
    min,
    nan_to_num,
    ne,
    permute,
    prod,
    reciprocal,
    relu,
    remainder,
    reshape,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    softmax,
    sort,
    sqrt,
    square,
    squeeze,
    sum,
    tan,
    tanh,
    topk,
    transpose,
    trunc,
    unsqueeze,
)
from .functions_arithmetic import (
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    div,
    divide,
    floor_divide,
    mul,
    multiply,
    neg,
    negative,
    pow,
    sub,
    subtract,
    true_divide,
)
from .functions_indexing import (
    bmm,
    broadcast_to,
    diagonal,
    einsum,
    gather,
    index_add,
    index_select,
    masked_select,
    mm,
    nonzero,
    outer,
    repeat_interleave,
    scatter,
    scatter_add,
    take_along_dim,
)
from .functions_shape import (
    chunk,
    clone,
    concat,
    concatenate,
    detach,
    flatten,
    flip,
    hstack,
    masked_fill,
    moveaxis,
    movedim,
    narrow,
    numel,
    roll,
    split,
    swapaxes,
    swapdims,
    tile,
    tril,
    triu,
    unbind,
    unflatten,
    vstack,
)
from .functions_statistics import amax, amin, argmax, argmin, logsumexp, median, multinomial, norm, std, var
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck
from .memory import keep_freed_memory
from .random import manual_seed
from .serialization import load, save
from .tensor import Tensor
from .threads import get_num_threads, set_num_threads
from .viz.anomaly import AnomalyError, detect_anomaly

float32, float64, int64, int32 = np.float32, np.float64, np.int64, np.int32
bool_ = np.bool_
float16, int8, int16, uint8 = np.float16, np.int8, np.int16, np.uint8
bool = np.bool_  # mg.bool, as torch.bool (this shadows the builtin in this module only)

__version__ = "0.4.1"

keep_freed_memory()

_source_tree.add_finder()  # run from a clone's root: minigrad.nn and the rest are folders beside

__all__ = [
    "AnomalyError", "Function", "GradcheckError", "Tensor", "abs", "acos", "all", "allclose", "any",
    "arange", "arccos", "arcsin", "arctan", "arctan2", "as_tensor", "asin", "atan", "atan2",
    "bool_", "cat", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "cosh",
    "detect_anomaly", "enable_grad", "eq", "equal", "erf", "exp", "exp2", "expm1", "eye", "fix",
    "float32", "float64", "floor", "fmod", "frac", "full", "full_like", "ge", "get_num_threads",
    "gradcheck", "gt", "hypot", "int32", "int64", "is_grad_enabled", "isclose", "isfinite", "isinf",
    "isnan", "le", "lerp", "load", "log", "log10", "log1p", "log2", "log_softmax", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "lt", "manual_seed", "matmul", "max",
    "maximum", "mean", "min", "minimum", "nan_to_num", "ne", "no_grad", "ones", "ones_like",
    "permute", "rand", "rand_like", "randint", "randn", "randn_like", "reciprocal", "relu",
    "remainder", "reshape", "round", "rsqrt", "save", "set_grad_enabled", "set_num_threads",
    "sigmoid", "sign", "sin", "sinh", "softmax", "sqrt", "square", "squeeze", "stack", "sum", "tan",
    "tanh", "tensor", "transpose", "trunc", "unbroadcast", "unsqueeze", "where", "zeros",
    "zeros_like",
]
__all__ += [  # copies, moves, repeats and joins (functions_shape.py)
    "clone", "concat", "concatenate", "flip", "hstack", "moveaxis", "movedim", "narrow", "roll",
    "swapaxes", "swapdims", "tile", "tril", "triu", "unbind", "unflatten", "vstack",
]
__all__ += [  # products, running sums, sorting and counting (tensor_ordering.py)
    "argsort", "count_nonzero", "cumprod", "cumsum", "prod", "sort", "topk",
]
# mg.bool is left out of __all__: `from minigrad import *` would break isinstance(v, bool)
__all__ += [  # creation, dtypes, median, norms and sampling (creation.py, functions_statistics.py)
    "empty", "empty_like", "float16", "from_numpy", "int8", "int16", "linalg", "linspace",
    "median", "multinomial", "norm", "uint8",
]
__all__ += [  # indexing, einsum and matrix products (functions_indexing.py)
    "bmm", "broadcast_to", "diagonal", "einsum", "gather", "index_add", "index_select",
    "masked_select", "mm", "nonzero", "outer", "repeat_interleave", "scatter", "scatter_add",
    "take_along_dim",
]
__all__ += [  # function forms of the arithmetic, bitwise, reduction and shape methods
    "add", "amax", "amin", "argmax", "argmin", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "chunk", "detach", "div", "divide", "flatten", "floor_divide", "logsumexp", "masked_fill", "mul",
    "multiply", "neg", "negative", "numel", "pow", "split", "std", "sub", "subtract", "true_divide", "var",
]
