"""Exercise 15 · conv2d_backward: the forward and backward of a 2-D convolution, as in CNNs.

Deep-learning "convolution" (torch.nn.functional.conv2d) is a cross-correlation: the kernel is
slid over the (zero-padded) input as it is, not flipped. With x_pad the input padded by
`padding` zeros on every side, stride s:
    out[n, o, h, w] = b[o] + sum over c, i, j of  wt[o, c, i, j] * x_pad[n, c, s*h + i, s*w + j]
    Ho = (H + 2*padding - kH) // s + 1,   Wo = (W + 2*padding - kW) // s + 1
(rows and columns of x_pad that no window reaches, when the stride does not fit, get no weight).

im2col, given below, gathers every window into a column: cols (N, C*kH*kW, Ho*Wo). Then the
forward is one matrix product per sample, Wt cols_n with Wt = w reshaped to (O, C*kH*kW).
Use it or not: loops over the kernel offsets (i, j) work as well.

Backward, given g = dL/dout (N, O, Ho, Wo):
    db = sum of g over the batch and every output position      (b[o] is added to all of them)
    dw = sum over the batch of g_n cols_n^T, reshaped to w's shape  (one kernel for all samples)
    dcols_n = Wt^T g_n: the gradient of every window's entries. Each x_pad entry sits in several
    windows (they overlap where the kernel is larger than the stride), so its gradient is the
    SUM of the entries of dcols that read it ("col2im": add each window back where it was
    taken from, with the same stride); then crop the padding off to get dx in x's shape.
    (Equivalently: dx is the full correlation of the stride-dilated g with the flipped kernel.)

Shapes: x (N, C, H, W), w (O, C, kH, kW), b (O,), out and g (N, O, Ho, Wo); stride and padding
are ints (the same along both axes). Return dx, dw, db in exactly the shapes of x, w, b.
Use numpy only. Check your work with
    minigrad exercise check conv2d_backward
"""

import numpy as np

from minigrad import Function


def im2col(x, kh, kw, stride, padding):
    """The windows of x (N, C, H, W) as columns: (cols (N, C*kh*kw, Ho*Wo), (Ho, Wo)), where
    cols[n, (c*kh + i)*kw + j, h*Wo + w] = x_pad[n, c, h*stride + i, w*stride + j]."""
    n, c, h, w = x.shape
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    x_pad = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    cols = np.empty((n, c, kh, kw, ho, wo), dtype=x.dtype)
    for i in range(kh):  # one slice per kernel offset, not one per element
        for j in range(kw):
            cols[:, :, i, j] = x_pad[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
    return cols.reshape(n, c * kh * kw, ho * wo), (ho, wo)


class Conv2d(Function):
    """out = correlate(pad(x), w) + b, with a stride      dx, dw, db: see the module docstring"""

    @staticmethod
    def forward(ctx, x, w, b, *, stride=1, padding=0):
        # Your code: save what backward needs (ctx.save_for_backward(...), and the sizes on ctx),
        # return out (N, O, Ho, Wo).
        raise NotImplementedError

    @staticmethod
    def backward(ctx, g):
        # Your code: return dx (x's shape), dw (w's shape), db (b's shape).
        raise NotImplementedError
