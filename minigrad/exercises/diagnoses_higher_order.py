"""The diagnoses of the double-backward task: a backward that must itself be differentiable
(see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
    Diagnosis("array_in_graph", "an array where a Tensor must flow through the backward",
              ("double_backward",), (
        'Under backward(create_graph=True) your backward is given Tensors (g, and the saved y is the '
        'output tensor, in the graph of x), and it handed one to numpy (np.asarray(y), np.exp, '
        'np.where: minigrad raises rather than cut the graph), or it returned an array, so the '
        'gradient it gives depends neither on x nor on g. The first derivative can be right while no '
        'second derivative can be taken. Write the backward with operators alone (g * y, 1 - y), '
        'which arrays and Tensors both have, and look at the line the error names.'
    )),
    Diagnosis("detached_intermediate", "the saved output is a constant to the second derivative",
              ("double_backward",), (
        'Your first derivative is right, and its derivative with respect to g is too, but its '
        'derivative with respect to x is zero: the y your backward multiplies by is cut from the '
        'graph. y.detach(), y._data, y.numpy() or either.values(y) give a constant, and so does an '
        'array kept on ctx in the forward (ctx.y = y, or x kept to recompute the sigmoid with '
        'numpy): under create_graph=True only the y that ctx.saved hands the backward is the output '
        'tensor, through which dx = g * y * (1 - y) depends on x.'
    )),
    Diagnosis("missing_product_term", "one factor of y * (1 - y) is a constant: a product-rule term is lost",
              ("double_backward",), (
        'Your second derivative is off by exactly one term of the product rule: one factor of '
        'y * (1 - y) is kept in the graph and the other is a constant (detached, or an array). '
        'd/dx [y (1 - y)] = y\' (1 - y) - y y\' with y\' = y (1 - y), so the second derivative is '
        'g * y (1 - y) (1 - 2y); with (1 - y) cut it is g * y (1 - y)^2, with y cut -g * y^2 (1 - y). '
        'Look at which factor of the product your backward takes from elsewhere than the saved y.'
    )),
]
