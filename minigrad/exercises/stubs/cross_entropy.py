"""Exercise 6 · cross_entropy: log-softmax and the negative log-likelihood, fused, averaged over
the batch: the loss every classifier and language model in the course trains with.

For N rows of logits x (N, C) and their classes t (N,) (integers in 0..C-1):
    log p_ic = x_ic - logsumexp_c'(x_ic')            logsumexp(x) = m + log(sum exp(x - m)),
                                                     m = max(x): exp never overflows
    loss = -(1/N) sum_i log p_i,t_i                  one number
Backward, with g = dL/dloss (a number; 1 under loss.backward(), but not always):
    dx_ic = g * (p_ic - [c = t_i]) / N               p = softmax(x) = exp(log p)
(the softmax's Jacobian and the log's 1/p cancel: that is why the two are fused).

Write both forward and backward. Shapes: x (N, C) floats, t (N,) integers; the loss is a 0-d
array. backward returns (dx, None): the classes get no gradient. Use numpy only.
Check your work with
    minigrad exercise check cross_entropy
"""

import numpy as np  # noqa: F401  (for your code)

from minigrad import Function


class CrossEntropy(Function):
    """loss = mean_i -log softmax(x_i)[t_i]        dx = g * (softmax(x) - onehot(t)) / N"""

    @staticmethod
    def forward(ctx, x, t):
        # Your code: save what backward needs (ctx.save_for_backward(...)), return the loss.
        raise NotImplementedError

    @staticmethod
    def backward(ctx, g):
        # Your code: return dx, None.
        raise NotImplementedError
