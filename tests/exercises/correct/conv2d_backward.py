"""A correct conv2d_backward written differently from the reference: no im2col, one loop over
the kernel offsets (i, j), each a strided slice of the padded input; col2im adds the slices back."""

import numpy as np

from minigrad import Function


class Conv2d(Function):
    @staticmethod
    def forward(ctx, x, w, b, *, stride=1, padding=0):
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        ho, wo = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
        x_pad = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
        out = np.zeros((n, o, ho, wo)) + b[:, None, None]
        for i in range(kh):
            for j in range(kw):
                window = x_pad[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]  # (N, C, Ho, Wo)
                out += np.einsum("nchw,oc->nohw", window, w[:, :, i, j])
        ctx.save_for_backward(x_pad, w)
        ctx.stride, ctx.padding, ctx.size = stride, padding, (h, wd)
        return out

    @staticmethod
    def backward(ctx, g):
        x_pad, w = ctx.saved
        s, p, (h, wd) = ctx.stride, ctx.padding, ctx.size
        ho, wo = g.shape[2:]
        dx_pad, dw = np.zeros_like(x_pad), np.zeros_like(w)
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                rows, cols = slice(i, i + s * ho, s), slice(j, j + s * wo, s)
                dx_pad[:, :, rows, cols] += np.einsum("nohw,oc->nchw", g, w[:, :, i, j])
                dw[:, :, i, j] = np.einsum("nohw,nchw->oc", g, x_pad[:, :, rows, cols])
        return dx_pad[:, :, p:p + h, p:p + wd], dw, g.sum(axis=(0, 2, 3))
