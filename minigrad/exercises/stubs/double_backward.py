"""Exercise 16 · double_backward: a backward that can itself be differentiated.

The sigmoid squashes a number into (0, 1):
    y = 1 / (1 + exp(-x))
Its forward is given below, and it saves its output y. Write its backward: given g = dL/dy (the
upstream gradient, the shape of y), return dL/dx. The math:
    dy/dx = y (1 - y)          so          dx = g * y * (1 - y)

The backward is called twice over. In an ordinary `backward()`, g and the saved y are
np.ndarrays. Under `backward(create_graph=True)` (or `autograd.grad(..., create_graph=True)`),
which gives gradients that can be differentiated again (second derivatives, Hessian-vector
products, a gradient penalty), minigrad calls the SAME backward with Tensors instead: g is a
Tensor, and the saved y is the output tensor itself, in the graph of x. The class says it can
take them (`differentiable_backward = True`, given), and the gradient your backward returns is
then a Tensor whose graph reaches x through y:
    d(dx)/dx = g * y (1 - y) (1 - 2y)          (the product rule on y * (1 - y))
    d(dx)/dg = y (1 - y)

So write the backward with operators only (*, -, +, which arrays and Tensors both have) on g
and the saved y, and keep every factor in the graph: a numpy function (np.exp, np.asarray)
given a Tensor that requires grad raises, and an array taken out of a tensor, or kept on ctx,
is a constant to the second derivative.

Shapes: x (any shape) -> y (same); g (the shape of y) -> dx (the shape of x).
Check your work (first derivatives, then second derivatives, with minigrad.gradgradcheck) with
    minigrad exercise check double_backward
"""

import numpy as np

from minigrad import Function


class Sigmoid(Function):
    """y = 1 / (1 + exp(-x))        dx = g * y * (1 - y)"""

    differentiable_backward = True  # the backward is called with Tensors under create_graph=True

    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + np.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved  # an array (first order), or the output tensor (create_graph=True)
        # Your code: return dL/dx, the shape of g, with operators on g and y only.
        raise NotImplementedError
