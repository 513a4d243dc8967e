"""The differentiable ops, one `Function` subclass each, grouped by kind.

    elementwise.py   arithmetic, unary math, maximum/minimum, clip, where, masked_fill
    pointwise.py     trigonometry, exp2/expm1/log2/log10/log1p, erf, atan2, hypot, logaddexp
    rounding.py      sign, floor, ceil, round, trunc (gradient 0), remainder, fmod, // and div
                     with a rounding mode
    reduce.py        sum, mean, amax/amin, var/std, logsumexp, softmax, log_softmax
    ordering.py      prod, cumsum, cumprod, the values of sort / topk / max(dim)
    statistics.py    median, vector norms
    shape.py         reshape, permute, expand, indexing, cat, stack
    indexing.py      gather, scatter, scatter_add, index_select, index_add, y[index] = value
    einsum.py        einsum
    linalg.py        matmul, cast
    promotion.py     the one dtype rule for mixed operands
    erf.py           the erf kernel for numpy arrays (numpy has none)

The needs_input_grad rule, held by every op here (tests/core/test_needs_input_grad.py):
backward returns None for an input whose `ctx.needs_input_grad` entry is False, unless that
gradient costs nothing: g itself or a view of it (Add's `g, g`, cat's slices), or an array
computed anyway for another input (Div's g / b, which db needs). Every other gradient (a
product, a `where`, a sum, a matmul) is computed only when it is needed, so a constant operand
or a frozen weight costs no array work. An op with a single array input needs no test: its node
is recorded only when that input requires grad. The engine drops whatever is returned for an
input that needs no gradient, so the rule is about cost, never about the result.
"""
