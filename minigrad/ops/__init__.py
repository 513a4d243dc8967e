"""The ops, filed by kind: each kind's module holds, for every op of that kind, its `Function`
(forward and backward side by side, the math in the docstring) and, declared beside it with
`table.op`, its Tensor method, its function form and its in-place variant.

    arithmetic.py   + - * / ** and negation: add, sub, mul, div, true_divide, neg, pow
    pointwise.py    exp, log, sqrt, abs, tanh, sigmoid, relu, clamp, maximum/minimum,
                    trigonometry, exp2/expm1/log2/log10/log1p, erf, atan2, hypot, logaddexp,
                    reciprocal, rsqrt, square, lerp, nan_to_num
    rounding.py     sign, floor, ceil, round, trunc, frac (gradient 0), remainder, fmod, //
                    and div with a rounding mode
    logic.py        comparisons, isnan/isinf/isfinite, isclose, logical and bitwise ops (no grad)
    reduce.py       sum, mean, max/min, amax/amin, var/std, logsumexp, softmax, log_softmax,
                    all/any, argmax/argmin
    ordering.py     prod, cumsum, cumprod, sort, argsort, topk, count_nonzero
    statistics.py   median, vector norms, multinomial
    shape.py        reshape, view, permute, transpose, expand, (un)squeeze, flatten, split,
                    indexing, cat, stack, flip, roll, repeat, tril/triu, diagonal
    indexing.py     gather, scatter, index_select, index_add, index_fill, masked_fill, masked_select,
                    where, nonzero, y[index] = value
    linalg.py       matmul (@), mm, bmm, outer, einsum
    filling.py      fill_, zero_, copy_, uniform_, normal_, bernoulli_, exponential_,
                    detach_, new_zeros/new_ones/new_empty/new_full/new_tensor
    dtype.py        to, type, type_as, float, double, half, long, int, bool; the dtype
                    names (float32, long, ...), legacy types (LongTensor), finfo, iinfo

Beside the kinds: table.py (the declarations), arguments.py (dims and indices, checked),
promotion.py (the one dtype rule for mixed operands), erf.py (numpy has no erf).

The needs_input_grad rule, held by every op here (tests/core/test_needs_input_grad.py):
backward returns None for an input whose `ctx.needs_input_grad` entry is False, unless that
gradient costs nothing: g itself or a view of it (Add's `g, g`, cat's slices), or an array
computed anyway for another input (Div's g / b, which db needs). Every other gradient (a
product, a `where`, a sum, a matmul) is computed only when it is needed, so a constant operand
or a frozen weight costs no array work. An op with a single array input needs no test: its node
is recorded only when that input requires grad. The engine drops whatever is returned for an
input that needs no gradient, so the rule is about cost, never about the result.
"""

KINDS = ("arithmetic", "pointwise", "rounding", "logic", "reduce", "ordering", "statistics", "shape",
         "indexing", "linalg", "filling", "dtype")  # minigrad/__init__.py imports each: it declares its ops
