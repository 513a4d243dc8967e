"""Exercise 8 · linear_layer: a Module with parameters, and their initialisation.

    y = x W^T + b        x (..., in_features) -> y (..., out_features)
    W: (out_features, in_features),  b: (out_features,)         (PyTorch's layout)

A Module finds its parameters by looking at its attributes: assign `self.weight` and
`self.bias` to `Parameter`s and `parameters()`, `state_dict()` and the optimizers see them.
With bias=False, set `self.bias = None`.

Initialisation: both W and b start uniform in [-1/sqrt(in_features), 1/sqrt(in_features)]
(PyTorch's default). Draw with minigrad's global generator, `mg.rand(*shape)` (uniform in
[0, 1)), so that `mg.manual_seed(s)` makes a model reproducible. Why not zeros: every output
unit would get the same gradient and stay identical to the others forever. Why 1/sqrt(in): y
sums in_features terms, so this keeps y's variance about the same as x's.

forward uses Tensor operations (the engine does the backward): `x @ w.transpose(0, 1)`, `+`.
Check your work with
    minigrad exercise check linear_layer
"""

import math  # noqa: F401  (for math.sqrt)

import minigrad as mg  # noqa: F401  (for mg.rand)
from minigrad.nn import Module, Parameter  # noqa: F401  (for your __init__)


class Linear(Module):
    """y = x W^T + b, W and b initialised uniform in [-1/sqrt(in), 1/sqrt(in)]"""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        self.in_features, self.out_features = in_features, out_features
        # Your code: self.weight (out, in) and self.bias (out,) or None, as Parameters.
        raise NotImplementedError

    def forward(self, x):
        # Your code: return x W^T + b.
        raise NotImplementedError
