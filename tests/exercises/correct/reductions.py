"""A correct reductions, built from the library's kernels (minigrad.ops.reduce)."""

from minigrad import Function
from minigrad.ops import reduce


class Sum(Function):
    forward = staticmethod(reduce.Sum.forward)
    backward = staticmethod(reduce.Sum.backward)


class Mean(Function):
    forward = staticmethod(reduce.Mean.forward)
    backward = staticmethod(reduce.Mean.backward)


class Max(Function):
    forward = staticmethod(reduce.Max.forward)
    backward = staticmethod(reduce.Max.backward)
