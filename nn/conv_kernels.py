"""The convolution and pooling kernels on NCHW arrays: a 2-D cross-correlation by im2col and one
matrix product per group, its transpose (the correlation's input gradient as an op), max
pooling (each window's gradient goes to its first maximum) and average pooling. `g` is always
the upstream gradient."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from minigrad.autograd import Function
from minigrad.ops.indexing import where as tensor_where
from minigrad.ops.shape import PutAt, stack
from minigrad.tensor import Tensor


def pool_out_size(n: int, k: int, stride: int, before: int, after: int, dilation: int = 1,
                  ceil_mode: bool = False) -> int:
    """Output length along one axis (PyTorch's rule): floor (or ceil) of (n + pads - d(k - 1) - 1)
    / stride, plus 1; in ceil mode a last window that would start inside the right padding is
    dropped."""
    span = n + before + after - dilation * (k - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= n + before:
        out -= 1
    return out


def transpose_out_size(n: int, k: int, stride: int, padding: int, output_padding: int = 0,
                       dilation: int = 1) -> int:
    """Output length of a transposed convolution along one axis (PyTorch's rule): the span of
    the stamps, (n - 1) s + d (k - 1) + 1, less the padding on both sides, plus output_padding."""
    return (n - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1


def _offsets(kernel, stride, dilation, out):
    """For every kernel offset (i, j) in row-major order, the strided slices of the padded input
    that offset reads: rows i*d, i*d + s, ..., i*d + s*(OH - 1) (and the same for columns)."""
    (kH, kW), (sH, sW), (dH, dW), (OH, OW) = kernel, stride, dilation, out
    for i in range(kH):
        for j in range(kW):
            yield (Ellipsis, slice(i * dH, i * dH + sH * (OH - 1) + 1, sH),
                   slice(j * dW, j * dW + sW * (OW - 1) + 1, sW))


def _padded(x, padding, shape):
    """x (A, B, H, W) placed at (top, left) = padding[0], padding[2] into zeros of spatial `shape`
    (x itself when there is nothing to pad)."""
    H, W = x.shape[2:]
    top, left = padding[0], padding[2]
    if shape == (H, W):
        return x
    xp = np.zeros(x.shape[:2] + shape, dtype=x.dtype)
    xp[:, :, top:top + H, left:left + W] = x
    return xp


def _cropped(dxp, padding, shape):
    """The inverse placement: the part of a padded-input gradient that lies over x."""
    top, left = padding[0], padding[2]
    return dxp[:, :, top:top + shape[0], left:left + shape[1]]


def im2col(xp: np.ndarray, kernel, stride, dilation, out) -> np.ndarray:
    """cols[c, i, j, n, p, q] = xp[c, n, p*sH + i*dH, q*sW + j*dW] for a padded input xp laid out
    (C, N, Hp, Wp): every window as one column of a (C*kH*kW, N*OH*OW) matrix, so that one matrix
    product serves the whole batch. A strided view (no copy) made contiguous in one pass."""
    C, N = xp.shape[:2]
    sC, sN, sH, sW = xp.strides
    view = as_strided(xp, (C,) + tuple(kernel) + (N,) + tuple(out),
                      (sC, sH * dilation[0], sW * dilation[1], sN, sH * stride[0], sW * stride[1]),
                      writeable=False)
    return np.ascontiguousarray(view)


def col2im(dcols: np.ndarray, shape, stride, dilation) -> np.ndarray:
    """The adjoint of im2col, back to (C, N, Hp, Wp): every column entry scatter-added onto the
    pixel it was read from (a pixel read by several windows receives all their gradients). One
    strided add per kernel offset (i, j), each over every channel and the whole batch."""
    C, kH, kW, N, OH, OW = dcols.shape
    dxp = np.zeros((C, N) + tuple(shape), dtype=dcols.dtype)
    for (i, j), where in zip(np.ndindex(kH, kW), _offsets((kH, kW), stride, dilation, (OH, OW))):
        dxp[where] += dcols[:, i, j]
    return dxp


def input_grad(weight: np.ndarray, g2: np.ndarray, shape, stride, dilation, out) -> np.ndarray:
    """col2im(W2^T @ g2), the padded input's gradient (C, N, Hp, Wp), a kernel column j at a time.

    The product for column j gives the entries of the offsets (., j) only, (C*kH, N*OH*OW), small
    enough to stay in cache while they are added: first the kH row shifts into a buffer OW wide
    (long contiguous runs), then that buffer at its column shift (the short runs of OW pixels,
    kW times rather than kH * kW times). About 1.3x faster than the product then col2im.
    g2: (G, O/G, N*OH*OW); weight: (O, C/G, kH, kW).
    """
    G, Og, _ = g2.shape
    _, Cg, kH, kW = weight.shape
    (sH, sW), (dH, dW), (OH, OW) = stride, dilation, out
    N = g2.shape[2] // (OH * OW)
    dxp = np.zeros((G * Cg, N) + tuple(shape), dtype=g2.dtype)
    for j in range(kW):
        wj = weight[:, :, :, j].reshape(G, Og, Cg * kH).transpose(0, 2, 1)  # (G, C/G*kH, O/G)
        dcols = np.matmul(wj, g2).reshape(G * Cg, kH, N, OH, OW)  # the columns of offsets (., j)
        column = np.zeros((G * Cg, N, shape[0], OW), dtype=g2.dtype)
        for i in range(kH):
            column[:, :, i * dH:i * dH + sH * (OH - 1) + 1:sH] += dcols[:, i]
        dxp[:, :, :, j * dW:j * dW + sW * (OW - 1) + 1:sW] += column
    return dxp


# ----------------------------------------------------------------------------- the compositions
# What the kernels compute, composed from differentiable Tensor ops: each op's `reference`, whose
# gradients backward(create_graph=True) follows (graph_backward.py); first order keeps the kernels.


def _zero_padded(x: Tensor, top: int, bottom: int, left: int, right: int) -> Tensor:
    """Tensor x (A, B, H, W) placed at (top, left) into zeros, `bottom` rows and `right` columns
    more (PutAt: the placement, whose backward is the slice of x's place)."""
    if not (top or bottom or left or right):
        return x
    A, B, H, W = x.shape
    where = (slice(None), slice(None), slice(top, top + H), slice(left, left + W))
    return PutAt.apply(x, index=where, shape=(A, B, H + top + bottom, W + left + right))


def _windows(xp: Tensor, kernel, stride, dilation, out) -> Tensor:
    """cols[n, c, k, p, q] = xp[n, c, p*sH + i*dH, q*sW + j*dW] (k = i*kW + j): the strided slice
    of the padded input that each kernel offset reads, stacked (im2col, as Tensor ops)."""
    return stack([xp[where] for where in _offsets(kernel, stride, dilation, out)], dim=2)


def _correlation(xp: Tensor, weight: Tensor, bias, stride, dilation, out, groups: int) -> Tensor:
    """The cross-correlation of an already padded input xp (N, C, Hp, Wp) with weight
    (O, C/G, kH, kW): per group, W2 (O/G, C/G*kH*kW) @ cols (C/G*kH*kW, OH*OW), then + bias."""
    N = xp.shape[0]
    Cout, Cg, kH, kW = weight.shape
    cols = _windows(xp, (kH, kW), stride, dilation, out).reshape(N, groups, Cg * kH * kW, out[0] * out[1])
    y = (weight.reshape(groups, Cout // groups, Cg * kH * kW) @ cols).reshape(N, Cout, out[0], out[1])
    return y if bias is None else y + bias.reshape(1, Cout, 1, 1)


# ----------------------------------------------------------------------------- convolution


class Conv2dOp(Function):
    """2-D cross-correlation (PyTorch's "convolution"), x (N, C, H, W), W (O, C/G, kH, kW):

        y[n, o, p, q] = b[o] + sum_{c, i, j} W[o, c, i, j] * xp[n, c0(o) + c, p*s + i*d, q*s + j*d]

    with xp = x zero-padded by (top, bottom, left, right) = padding and c0(o) the first input
    channel of output o's group (0 when groups = 1). im2col turns it into a matrix product:
    cols[(c, i, j), (n, p, q)] holds every window, so per group y = W2 @ cols with W2 = W
    reshaped (O/G, C/G*kH*kW).

    Backward, with g (N, O, OH, OW) laid out like that product's result, (O, N*OH*OW):
        db = sum over n, p, q of g
        dW = g @ cols^T             (the product's gradient w.r.t. its left factor; summing
                                     over the columns sums over the batch)
        dcols = W2^T @ g            (and w.r.t. its right factor)
        dx = col2im(dcols), cropped to x (computed a kernel column at a time, see input_grad)
    im2col is a linear map that copies each pixel into every window holding it, so its adjoint
    col2im adds each window's entries back onto the pixels they came from. Written per pixel
    (stride 1), dx[c, h, w] = sum_{o, i, j} W[o, c, i, j] * g[o, h - i*d, w - j*d]: the gradient
    of a correlation w.r.t. its input is a full correlation of g (padded by d(k - 1)) with the
    flipped kernel W[:, :, ::-1, ::-1], channels in and out swapped; the scatter computes the
    same sums without building the columns of g, which are O/C times larger.
    The batch rides along in the columns (C, N, H, W order), so each product is one large
    matrix product, and moving between that order and NCHW copies whole rows of pixels.
    """

    @staticmethod
    def reference(ctx, x, weight, bias=None):
        """The composition this kernel computes, for backward(create_graph=True): the zero-padded
        input's windows (strided slices, stacked) times the weight, per group (a matmul)."""
        top, bottom, left, right = ctx.padding
        kH, kW = weight.shape[2:]
        out = (pool_out_size(x.shape[2], kH, ctx.stride[0], top, bottom, ctx.dilation[0]),
               pool_out_size(x.shape[3], kW, ctx.stride[1], left, right, ctx.dilation[1]))
        xp = _zero_padded(x, top, bottom, left, right)
        return _correlation(xp, weight, bias, ctx.stride, ctx.dilation, out, x.shape[1] // weight.shape[1])

    @staticmethod
    def forward(ctx, x, weight, bias=None, *, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1),
                groups=1):
        N, C, H, W = x.shape
        Cout, Cg, kH, kW = weight.shape
        top, bottom, left, right = padding
        OH = pool_out_size(H, kH, stride[0], top, bottom, dilation[0])
        OW = pool_out_size(W, kW, stride[1], left, right, dilation[1])
        xp = _padded(x.transpose(1, 0, 2, 3), padding, (H + top + bottom, W + left + right))
        cols = im2col(xp, (kH, kW), stride, dilation, (OH, OW))  # (C, kH, kW, N, OH, OW)
        cols = cols.reshape(groups, Cg * kH * kW, N * OH * OW)
        w2 = weight.reshape(groups, Cout // groups, Cg * kH * kW)
        y = np.matmul(w2, cols).reshape(Cout, N, OH, OW).transpose(1, 0, 2, 3)  # (N, O, OH, OW)
        y = y + bias[:, None, None] if bias is not None else np.ascontiguousarray(y)
        ctx.save_for_backward(cols, w2)
        ctx.shapes = x.shape, weight.shape, xp.shape[2:]
        ctx.stride, ctx.padding, ctx.dilation = stride, padding, dilation
        return y

    @staticmethod
    def backward(ctx, g):
        cols, w2 = ctx.saved
        (N, C, H, W), wshape, pshape = ctx.shapes
        G, Og, K = w2.shape
        needs = ctx.needs_input_grad
        g2 = np.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(G, Og, -1)  # (G, O/G, N*OH*OW)
        dx = dw = db = None
        if needs[0]:  # col2im(W2^T @ g), fused (input_grad)
            dxp = input_grad(w2.reshape(wshape), g2, pshape, ctx.stride, ctx.dilation, g.shape[2:])
            dx = np.ascontiguousarray(_cropped(dxp, ctx.padding, (H, W)).transpose(1, 0, 2, 3))
        if needs[1]:
            dw = np.matmul(g2, cols.transpose(0, 2, 1)).reshape(wshape)
        if len(needs) == 3 and needs[2]:
            db = g2.reshape(G * Og, N, -1).sum(axis=2).sum(axis=1)
        return (dx, dw) if len(needs) == 2 else (dx, dw, db)


class ConvTranspose2dOp(Function):
    """2-D transposed convolution, x (N, C, H, W), W (C, O/G, kH, kW): the gradient of the
    convolution of an (N, O, OH, OW) input with the weight W (read as a convolution's weight,
    C outputs from O/G channels per group) with respect to that input, applied to x:

        yp[n, o0(c) + o, h*s + i*d, w*s + j*d] += W[c, o, i, j] * x[n, c, h, w]
        y = yp cropped by padding on every side (OH = (H - 1) s - 2 p + d (k - 1) + output_padding + 1)

    every input pixel spreading its kernel-sized stamp onto the output, stamps s apart (o0(c):
    the first output channel of input channel c's group). In matrices, per group, with the
    input laid out x2 (C/G, N*H*W): yp = col2im(W2^T @ x2) with W2 = W reshaped (C/G, O/G*kH*kW),
    the input gradient of Conv2dOp (computed a kernel column at a time, `input_grad`);
    output_padding only lengthens yp at the bottom and right, rows no stamp reaches.

    Backward, with g (N, O, OH, OW) zero-padded by padding to gp and cols = im2col(gp) (the
    (H, W) windows of size k, stride s, dilation d: one column per input pixel):
        db = sum over n, p, q of g
        dx = W2 @ cols                  (a convolution of g with W, stride s, padding p, dilation d:
                                         the adjoint of the scatter reads back what it spread)
        dW = x2 @ cols^T                (the product's gradient w.r.t. W2^T, transposed)
    """

    @staticmethod
    def reference(ctx, x, weight, bias=None):
        """The composition this kernel computes, for backward(create_graph=True): per group the
        stamps W2^T @ x2 (a matmul), each kernel offset's placed s apart at its shift (PutAt)
        and added, then cropped by the padding."""
        (N, C, H, W), pshape, pads, stride, dilation = ctx.geometry
        G = ctx.groups
        _, Og, kH, kW = weight.shape
        w2 = weight.reshape(G, C // G, Og * kH * kW).permute(0, 2, 1)  # (G, O/G*kH*kW, C/G)
        stamps = (w2 @ x.reshape(N, G, C // G, H * W)).reshape(N, G * Og, kH, kW, H, W)
        yp = None
        for (i, j), where in zip(np.ndindex(kH, kW), _offsets((kH, kW), stride, dilation, (H, W))):
            placed = PutAt.apply(stamps[:, :, i, j], index=where, shape=(N, G * Og) + tuple(pshape))
            yp = placed if yp is None else yp + placed
        OH, OW = pshape[0] - pads[0] - pads[1], pshape[1] - pads[2] - pads[3]
        y = yp[:, :, pads[0]:pads[0] + OH, pads[2]:pads[2] + OW]
        return y if bias is None else y + bias.reshape(1, G * Og, 1, 1)

    @staticmethod
    def forward(ctx, x, weight, bias=None, *, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                dilation=(1, 1), groups=1):
        N, C, H, W = x.shape
        kH, kW = weight.shape[2:]
        OH, OW = (transpose_out_size(n, k, s, p, q, d) for n, k, s, p, q, d in
                  zip((H, W), (kH, kW), stride, padding, output_padding, dilation))
        pshape = (OH + 2 * padding[0], OW + 2 * padding[1])
        x2 = np.ascontiguousarray(x.transpose(1, 0, 2, 3)).reshape(groups, C // groups, N * H * W)
        yp = input_grad(weight, x2, pshape, stride, dilation, (H, W))  # (O, N, OHp, OWp)
        pads = (padding[0], padding[0], padding[1], padding[1])
        y = _cropped(yp, pads, (OH, OW)).transpose(1, 0, 2, 3)  # (N, O, OH, OW)
        y = y + bias[:, None, None] if bias is not None else np.ascontiguousarray(y)
        ctx.save_for_backward(x2, weight)
        ctx.geometry = x.shape, pshape, pads, stride, dilation
        ctx.groups = groups
        return y

    @staticmethod
    def backward(ctx, g):
        x2, weight = ctx.saved
        (N, C, H, W), pshape, pads, stride, dilation = ctx.geometry
        G = x2.shape[0]
        needs = ctx.needs_input_grad
        dx = dw = db = None
        if needs[0] or needs[1]:
            gp = _padded(g.transpose(1, 0, 2, 3), pads, pshape)  # (O, N, OHp, OWp)
            cols = im2col(gp, weight.shape[2:], stride, dilation, (H, W))  # (O, kH, kW, N, H, W)
            cols = cols.reshape(G, weight[0].size, N * H * W)
            if needs[0]:
                dx2 = np.matmul(weight.reshape(G, C // G, weight[0].size), cols)  # (G, C/G, N*H*W)
                dx = np.ascontiguousarray(dx2.reshape(C, N, H, W).transpose(1, 0, 2, 3))
            if needs[1]:
                dw = np.matmul(x2, cols.transpose(0, 2, 1)).reshape(weight.shape)
        if len(needs) == 3 and needs[2]:
            db = g.sum(axis=(0, 2, 3))
        return (dx, dw) if len(needs) == 2 else (dx, dw, db)


# ----------------------------------------------------------------------------- pooling


def _pool_geometry(x_shape, kernel, stride, padding, dilation, ceil_mode):
    """(OH, OW), and the spatial shape of the padded input that holds every window (in ceil
    mode the last window may reach past the right padding)."""
    H, W = x_shape[2:]
    OH = pool_out_size(H, kernel[0], stride[0], padding[0], padding[0], dilation[0], ceil_mode)
    OW = pool_out_size(W, kernel[1], stride[1], padding[1], padding[1], dilation[1], ceil_mode)
    Hp = max(H + 2 * padding[0], (OH - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1)
    Wp = max(W + 2 * padding[1], (OW - 1) * stride[1] + dilation[1] * (kernel[1] - 1) + 1)
    return (OH, OW), (Hp, Wp)


def _inside(n, k, stride, pad, dilation, out):
    """inside[i, p]: whether the i-th kernel row of window p reads a real row (not padding)."""
    rows = np.arange(out)[None, :] * stride + np.arange(k)[:, None] * dilation - pad
    return (rows >= 0) & (rows < n)


def max_pool2d_scan(x, kernel, stride, padding, dilation, ceil_mode):
    """(y, arg): each window's maximum and its offset k = i*kW + j, scanning the window in
    row-major order and keeping the first maximum, as PyTorch does (a NaN wins and propagates).
    Padding is never chosen: it acts as -inf."""
    out, pshape = _pool_geometry(x.shape, kernel, stride, padding, dilation, ceil_mode)
    xp = _padded(x, (padding[0], 0, padding[1], 0), pshape)
    inh = _inside(x.shape[2], kernel[0], stride[0], padding[0], dilation[0], out[0])
    inw = _inside(x.shape[3], kernel[1], stride[1], padding[1], dilation[1], out[1])
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min  # integers: max_pool2d's
    y = np.full(x.shape[:2] + out, lowest, dtype=x.dtype)
    arg = np.full(y.shape, -1, dtype=np.int64)
    for k, where in enumerate(_offsets(kernel, stride, dilation, out)):
        i, j = divmod(k, kernel[1])
        v = xp[where]
        take = (v > y) | np.isnan(v) | (arg < 0)
        take &= inh[i][:, None] & inw[j][None, :]
        np.copyto(y, v, where=take)
        arg[take] = k
    return y, arg


def max_pool2d_indices(x, arg, kernel, stride, padding, dilation) -> np.ndarray:
    """PyTorch's return_indices: the flat position h * W + w in x of each window's maximum."""
    OH, OW = arg.shape[2:]
    i, j = np.divmod(arg, kernel[1])
    h = np.arange(OH)[:, None] * stride[0] - padding[0] + i * dilation[0]
    w = np.arange(OW)[None, :] * stride[1] - padding[1] + j * dilation[1]
    return h * x.shape[3] + w


class MaxPool2dOp(Function):
    """y[n, c, p, q] = max over the window (i, j) of xp[n, c, p*s + i*d, q*s + j*d]   (xp: x padded
    with -inf)

    dx = g routed to the first maximum of each window (row-major scan, as PyTorch): one element
    per window receives it, never a tie's others; overlapping windows that pick the same element
    add their gradients.
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): each window's
        first maximum (the saved scan's choice) gathered from x (GetItem, whose backward is the
        scatter-add of PutAt), so the gradient takes the kernel's route, and its own derivative
        too."""
        (arg,) = ctx.saved
        shape, kernel, stride, padding, dilation, _ = ctx.geometry
        N, C, H, W = shape
        real = arg >= 0  # (a window of padding only keeps -inf)
        flat = np.where(real, max_pool2d_indices(x, arg, kernel, stride, padding, dilation), 0)
        flat = flat + (np.arange(N * C, dtype=np.int64) * (H * W)).reshape(N, C, 1, 1)
        y = x.reshape(-1)[flat]
        if real.all():
            return y
        return tensor_where(real, y, Tensor._make(np.array(-np.inf, dtype=x.dtype), None))

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False):
        y, arg = max_pool2d_scan(x, kernel_size, stride, padding, dilation, ceil_mode)
        ctx.save_for_backward(arg)
        ctx.geometry = x.shape, kernel_size, stride, padding, dilation, ceil_mode
        return y

    @staticmethod
    def backward(ctx, g):
        (arg,) = ctx.saved
        shape, kernel, stride, padding, dilation, ceil_mode = ctx.geometry
        out, pshape = _pool_geometry(shape, kernel, stride, padding, dilation, ceil_mode)
        dxp = np.zeros(shape[:2] + pshape, dtype=g.dtype)
        for k, where in enumerate(_offsets(kernel, stride, dilation, out)):
            dxp[where] += np.where(arg == k, g, 0)
        return np.ascontiguousarray(_cropped(dxp, (padding[0], 0, padding[1], 0), shape[2:]))


def _avg_divisor(n, k, stride, pad, out, count_include_pad):
    """The divisor along one axis (PyTorch's rule): the window's length within the padded input
    (n + pad on the right; a ceil-mode window past it is cut), or only its real rows."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + k, n + pad)
    if count_include_pad:
        return end - start
    return np.minimum(end, n) - np.maximum(start, 0)


class AvgPool2dOp(Function):
    """y[n, c, p, q] = (sum over the window (i, j) of xp[n, c, p*s + i, q*s + j]) / D[p, q]
    (xp: x zero-padded; D = divisor_override, or the window's size counting the padding or not)

    dx = g / D added to every element of its window (overlapping windows accumulate)
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): the sum of the
        zero-padded input's strided slices (one per kernel offset), over the saved divisor."""
        (divisor,) = ctx.saved
        shape, kernel, stride, padding, out, pshape = ctx.geometry
        H, W = shape[2:]
        xp = _zero_padded(x, padding[0], pshape[0] - H - padding[0], padding[1], pshape[1] - W - padding[1])
        total = None
        for where in _offsets(kernel, stride, (1, 1), out):
            total = xp[where] if total is None else total + xp[where]
        return total / Tensor._make(divisor, None)

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding=(0, 0), ceil_mode=False, count_include_pad=True,
                divisor_override=None):
        out, pshape = _pool_geometry(x.shape, kernel_size, stride, padding, (1, 1), ceil_mode)
        if divisor_override:
            divisor = np.full(out, divisor_override, dtype=x.dtype)
        else:
            dh = _avg_divisor(x.shape[2], kernel_size[0], stride[0], padding[0], out[0], count_include_pad)
            dw = _avg_divisor(x.shape[3], kernel_size[1], stride[1], padding[1], out[1], count_include_pad)
            divisor = (dh[:, None] * dw[None, :]).astype(x.dtype)
        xp = _padded(x, (padding[0], 0, padding[1], 0), pshape)
        total = np.zeros(x.shape[:2] + out, dtype=x.dtype)
        for where in _offsets(kernel_size, stride, (1, 1), out):
            total += xp[where]
        ctx.save_for_backward(divisor)
        ctx.geometry = x.shape, kernel_size, stride, padding, out, pshape
        return total / divisor

    @staticmethod
    def backward(ctx, g):
        (divisor,) = ctx.saved
        shape, kernel, stride, padding, out, pshape = ctx.geometry
        share = g / divisor
        dxp = np.zeros(shape[:2] + pshape, dtype=g.dtype)
        for where in _offsets(kernel, stride, (1, 1), out):
            dxp[where] += share
        return np.ascontiguousarray(_cropped(dxp, (padding[0], 0, padding[1], 0), shape[2:]))
