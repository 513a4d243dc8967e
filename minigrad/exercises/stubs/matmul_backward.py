"""Exercise 2 · matmul_backward: batched matrix product, with broadcast batch axes.

    z = a @ b        a (..., n, k),  b (..., k, m)  ->  z (..., n, m)
    da = g @ b^T     (..., n, m) @ (..., m, k) = (..., n, k)
    db = a^T @ g     (..., k, n) @ (..., n, m) = (..., k, m)

"Transpose" means the last two axes: x.swapaxes(-1, -2). The leading (batch) axes broadcast
like numpy's: a (2, 3, 4) @ b (4, 5) uses the same b for both batch entries, so db is the sum
over the batch of each entry's a^T @ g (the adjoint of broadcasting is a sum, exercise 1 (`mul_broadcast`)).
Return each gradient in exactly its input's shape: use your sum_to_shape from exercise 1 (`mul_broadcast`), or
the library's `minigrad.unbroadcast(grad, shape)`, which does the same.
A trick worth knowing: write the shapes under every product; only one arrangement fits.

Shapes: a and b have 2 axes or more. Use numpy only. Check your work with
    minigrad exercise check matmul_backward
"""

from minigrad import Function, unbroadcast  # noqa: F401  (unbroadcast: for your backward)


class MatMul(Function):
    """z = a @ b        da = g @ b^T,   db = a^T @ g   (summed over broadcast batch axes)"""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        # Your code: return da (a's shape), db (b's shape).
        raise NotImplementedError
