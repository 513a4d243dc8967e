"""Upsampling and resizing, as in PyTorch: `F.interpolate` and the layers `nn.Upsample`,
`nn.UpsamplingNearest2d` and `nn.UpsamplingBilinear2d` (torch/nn/modules/upsampling.py).

Every mode is separable: along each spatial axis an output element reads one (nearest), two
(linear) or four (cubic) input elements of that axis, with weights, and the axes are done one
after the other. So a kernel is a list of "taps" per axis, (indices, weights) of shape
(taps, out), and

    forward:   y[..., j, ...] = sum_t w[t, j] * x[..., idx[t, j], ...]     along each axis in turn
    backward:  dx[..., i, ...] = sum over (t, j) with idx[t, j] = i of w[t, j] * g[..., j, ...]
               (np.add.at: an input element read by several outputs gets all their gradients)

The indices and weights are PyTorch's to the bit, in its arithmetic: the scale of an axis is
1 / scale_factor when a scale factor is given (and not recomputed), else in / out; the source
coordinate of output j is scale * j (nearest, align_corners), or scale * (j + 0.5) - 0.5
(pixel centres) clipped at 0 for linear; computed in float32 for float32 (and float16) inputs
with one rounding of the multiply-add, as PyTorch's compiled loop does, and in float64 for
float64 inputs.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from minigrad import Tensor
from minigrad.autograd import Function
from minigrad.errors import ShapeError

from ._checks import _need_tensor, _where
from .module import Module
from .pooling import _adaptive_matrix, adaptive_avg_pool2d

_NEAREST = ("nearest", "nearest-exact")
_INTERPOLATING = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}  # mode: the input's rank
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_CUBIC_A = -0.75  # the cubic convolution's parameter, as PyTorch (and OpenCV)


# ----------------------------------------------------------------------------- PyTorch's index arithmetic


def _opmath(dtype: np.dtype) -> type:
    """The float type PyTorch computes indices and weights in: float64 for float64, else float32."""
    return np.float64 if dtype == np.float64 else np.float32


def _axis_scale(n_in: int, n_out: int, scale: float | None, align_corners: bool, ot: type) -> Any:
    """PyTorch's `area_pixel_compute_scale`: (in - 1) / (out - 1) with align_corners (0 for one
    output), else 1 / scale_factor when one is given, else in / out; in the float type ot."""
    if align_corners:
        return ot(n_in - 1) / ot(n_out - 1) if n_out > 1 else ot(0)
    if scale is not None and scale > 0:
        return ot(1.0 / scale)
    return ot(n_in) / ot(n_out)


def _centres(s: Any, n_out: int, ot: type) -> np.ndarray:
    """s * (j + 0.5) - 0.5 for j = 0 .. n_out - 1, rounded once to ot (PyTorch's loop compiles
    to a fused multiply-add; for float32 the float64 result is that exact value)."""
    j = np.arange(n_out).astype(ot) + ot(0.5)
    if ot is np.float32:
        return (np.float64(s) * j.astype(np.float64) - 0.5).astype(np.float32)
    return s * j - 0.5


def _floorf(a: np.ndarray) -> np.ndarray:
    """C's floorf, which PyTorch calls on float64 coordinates too: rounded to float32 first."""
    return np.floor(a.astype(np.float32)).astype(np.int64)


def nearest_taps(n_in: int, n_out: int, scale: float | None, exact: bool, dtype: np.dtype) -> np.ndarray:
    """The input index of each output along one axis (int64, shape (n_out,)):
        nearest:       floor(s * j), PyTorch's (and OpenCV's INTER_NEAREST) legacy rule
        nearest-exact: floor(max(s (j + 0.5) - 0.5, 0) + 0.5), the pixel centre's nearest (Pillow,
                       scipy.ndimage.zoom)
    at most n_in - 1, where s is the axis's scale (see _axis_scale)."""
    ot = _opmath(dtype)
    s = _axis_scale(n_in, n_out, scale, False, ot)
    if exact:
        real = np.maximum(_centres(s, n_out, ot), ot(0))
        idx = _floorf(real.astype(np.float64) + 0.5)
    else:
        idx = _floorf(s * np.arange(n_out).astype(ot))
    return np.minimum(idx, n_in - 1)


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four weights of x[i - 1], x[i], x[i + 1], x[i + 2] at a fraction t past x[i] (Keys'
    cubic convolution with A = -0.75, as PyTorch):
        near(x) = ((A + 2) x - (A + 3)) x^2 + 1        for |x| <= 1
        far(x)  = ((A x - 5A) x + 8A) x - 4A           for 1 < |x| < 2
    """
    a = t.dtype.type(_CUBIC_A)
    one = t.dtype.type(1)

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + one), near(t), near(one - t), far(one - t + one)])


def interp_taps(n_in: int, n_out: int, scale: float | None, align_corners: bool, cubic: bool,
                dtype: np.dtype) -> tuple[np.ndarray, np.ndarray] | None:
    """(indices, weights) of shape (taps, n_out) along one axis, or None where the axis is copied
    (linear with out == in, PyTorch's shortcut, whatever the scale factor).

    The source coordinate r of output j is s j (align_corners) or s (j + 0.5) - 0.5, clipped
    at 0 for linear (not for cubic); i = min(floor(r), n_in - 1), t = r - i clipped to [0, 1].
        linear: x[i] (1 - t) + x[i + 1] t, with x[i + 1] read as x[i] at the last element
        cubic:  the four neighbours x[i - 1 .. i + 2] (indices clipped to the axis) with
                _cubic_weights(t)
    """
    if n_out == n_in and not cubic:
        return None
    ot = _opmath(dtype)
    s = _axis_scale(n_in, n_out, scale, align_corners, ot)
    if align_corners:
        real = s * np.arange(n_out).astype(ot)
    else:
        real = _centres(s, n_out, ot)
        if not cubic:
            real = np.maximum(real, ot(0))
    i = np.minimum(_floorf(real), n_in - 1)
    t = np.clip(real - i.astype(ot), ot(0), ot(1))
    if cubic:
        idx = np.clip(i + np.arange(-1, 3)[:, None], 0, n_in - 1)
        return idx, _cubic_weights(t)
    idx = np.stack([i, i + (i < n_in - 1)])
    return idx, np.stack([ot(1) - t, t])


def _along(a: np.ndarray, axis: int, index: np.ndarray) -> tuple:
    """The index tuple that picks `index` along `axis` of an array of a's rank."""
    return (slice(None),) * axis + (index,)


def _weights_along(w: np.ndarray, ndim: int, axis: int, dtype: np.dtype) -> np.ndarray:
    """w (one weight per position along axis) shaped to broadcast over an array of rank ndim."""
    return w.astype(dtype, copy=False).reshape((-1,) + (1,) * (ndim - 1 - axis))


# ----------------------------------------------------------------------------- the kernels


class UpsampleNearestOp(Function):
    """z = x[..., i_1(j_1), ..., i_k(j_k)]: each output copies one input element, i_d(j) =
    nearest_taps along spatial axis d (mode "nearest" or "nearest-exact")

    dx[..., i, ...] = the sum of g over the outputs that copied element i (np.add.at per axis)
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): x indexed with
        each spatial axis's taps in turn (GetItem, whose backward is the scatter-add of PutAt)."""
        z = x
        for d, idx in enumerate(ctx.taps):
            z = z[(slice(None),) * (2 + d) + (idx,)]
        return z

    @staticmethod
    def forward(ctx, x, *, size, scales, mode):
        taps = [nearest_taps(n, m, None if scales is None else scales[d], mode == "nearest-exact", x.dtype)
                for d, (n, m) in enumerate(zip(x.shape[2:], size))]
        ctx.shape, ctx.taps = x.shape, taps
        z = x
        for d, idx in enumerate(taps):
            z = np.take(z, idx, axis=2 + d)
        return z

    @staticmethod
    def backward(ctx, g):
        shape = list(g.shape)
        for d in reversed(range(len(ctx.taps))):
            shape[2 + d] = ctx.shape[2 + d]
            dx = np.zeros(shape, dtype=g.dtype)
            np.add.at(dx, _along(dx, 2 + d, ctx.taps[d]), g)
            g = dx
        return g


class UpsampleInterpOp(Function):
    """z = the separable interpolation of x: along each spatial axis d in turn,
        z[..., j, ...] = sum_t w_d[t, j] * x[..., i_d[t, j], ...]
    with two taps (linear, bilinear, trilinear: x[i] (1 - t) + x[i + 1] t) or four (bicubic)
    from interp_taps

    dx = along each axis in reverse order, dx[..., i, ...] += w_d[t, j] * g[..., j, ...] for every
         tap (t, j) that reads element i (np.add.at)
    """

    @staticmethod
    def reference(ctx, x):
        """The composition this kernel computes, for backward(create_graph=True): along each
        spatial axis in turn, the sum over the taps of x indexed with them (GetItem) times their
        weights (constants)."""
        z = x
        for d, tap in enumerate(ctx.taps):
            if tap is None:
                continue
            idx, w = tap
            lead = (slice(None),) * (2 + d)
            terms = [z[lead + (idx[t],)] * Tensor._make(_weights_along(w[t], z.ndim, 2 + d, x.dtype), None)
                     for t in range(len(idx))]
            z = terms[0]
            for term in terms[1:]:
                z = z + term
        # every axis copied: still an op of x (graph_backward differentiates the reference's
        # result, and x itself, a leaf, has no node to go through)
        return x[...] if z is x else z

    @staticmethod
    def forward(ctx, x, *, size, scales, mode, align_corners):
        cubic = mode == "bicubic"
        taps = [interp_taps(n, m, None if scales is None else scales[d], align_corners, cubic, x.dtype)
                for d, (n, m) in enumerate(zip(x.shape[2:], size))]
        ctx.shape, ctx.taps = x.shape, taps
        z = x
        for d, tap in enumerate(taps):
            if tap is None:
                continue
            idx, w = tap
            z = sum(np.take(z, idx[t], axis=2 + d) * _weights_along(w[t], z.ndim, 2 + d, x.dtype)
                    for t in range(len(idx)))
        return np.asarray(z, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        shape = list(g.shape)
        for d in reversed(range(len(ctx.taps))):
            if ctx.taps[d] is None:
                continue
            idx, w = ctx.taps[d]
            shape[2 + d] = ctx.shape[2 + d]
            dx = np.zeros(shape, dtype=g.dtype)
            for t in range(len(idx)):
                np.add.at(dx, _along(dx, 2 + d, idx[t]), g * _weights_along(w[t], g.ndim, 2 + d, g.dtype))
            g = dx
        return g


# ----------------------------------------------------------------------------- the functional form


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _output_size(input: Tensor, size: Any, scale_factor: Any, recompute_scale_factor: bool | None
                 ) -> tuple[tuple[int, ...], tuple[float, ...] | None]:
    """(the output's spatial sizes, the scales the kernel uses or None), by PyTorch's rules:
    exactly one of size and scale_factor (a number or one per spatial axis); out = floor(in *
    scale_factor), and the kernel uses the given scale unless recompute_scale_factor (then
    in / out, as with a size)."""
    dim, spatial = input.ndim - 2, tuple(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ShapeError(f"interpolate: only one of size or scale_factor should be defined, got "
                         f"size={size!r} and scale_factor={scale_factor!r}")
    if size is None and scale_factor is None:
        raise ShapeError(f"interpolate: either size or scale_factor should be defined (input of shape "
                         f"{input.shape}){_where()}")
    if recompute_scale_factor and size is not None:
        raise ShapeError("interpolate: recompute_scale_factor is not meaningful with an explicit size "
                         f"(size={size!r})")
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * dim
        if len(sizes) != dim:
            raise ShapeError(f"interpolate: an input with {dim} spatial dimensions {list(spatial)} (shape "
                             f"{input.shape}) needs a size of {dim}, got size={size!r}{_where()}")
        if not all(_is_int(s) for s in sizes):
            raise TypeError(f"interpolate: size must be an int or a tuple of ints, got size={size!r}")
        out, scales = tuple(int(s) for s in sizes), None
    else:
        factors = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * dim
        if len(factors) != dim:
            raise ShapeError(f"interpolate: an input with {dim} spatial dimensions {list(spatial)} (shape "
                             f"{input.shape}) needs a scale_factor of {dim}, got "
                             f"scale_factor={scale_factor!r}{_where()}")
        if not all(isinstance(f, (int, float, np.integer, np.floating)) and not isinstance(f, bool)
                   for f in factors):
            raise TypeError(f"interpolate: scale_factor must be a number or a tuple of numbers, got "
                            f"scale_factor={scale_factor!r}")
        scales = tuple(float(f) for f in factors)
        out = tuple(int(n * f) for n, f in zip(spatial, scales))  # truncation, as PyTorch
        if recompute_scale_factor:
            scales = None
    if min(spatial) < 1 or min(out) < 1:
        names = "DHW"[3 - dim:]
        raise ShapeError(f"interpolate: input and output sizes should be greater than 0, but got input "
                         f"({', '.join(f'{a}: {n}' for a, n in zip(names, spatial))}) and output "
                         f"({', '.join(f'{a}: {n}' for a, n in zip(names, out))}) for an input of shape "
                         f"{input.shape}{_where()}")
    return out, scales


def _check_rank(input: Tensor, mode: str) -> None:
    """3-D, 4-D or 5-D input (N, C, *spatial); linear on 3-D, bilinear and bicubic on 4-D,
    trilinear on 5-D (NotImplementedError, as PyTorch)."""
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode must be one of {', '.join(_MODES)} (or 'lanczos', "
                                  f"which minigrad lacks), got mode={mode!r}")
    if input.ndim not in (3, 4, 5):
        raise NotImplementedError(f"interpolate: only 3-D, 4-D and 5-D inputs (N, C, *spatial) are "
                                  f"supported, got an input of shape {input.shape} for mode {mode!r}"
                                  f"{_where()}")
    rank = _INTERPOLATING.get(mode)
    if rank is not None and input.ndim != rank:
        layout = {3: "(N, C, W)", 4: "(N, C, H, W)", 5: "(N, C, D, H, W)"}[rank]
        raise NotImplementedError(f"interpolate: mode {mode!r} needs a {rank}-D input {layout}, got an input "
                                  f"of shape {input.shape} ({input.ndim}-D){_where()}")


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dimensions of an (N, C, *spatial) input to `size`, or by `scale_factor`.

    Modes: "nearest" (x[floor(j * in / out)]: PyTorch's default), "nearest-exact" (the nearest
    pixel centre), "linear" (3-D input), "bilinear" and "bicubic" (4-D), "trilinear" (5-D),
    "area" (the adaptive average pool to the output size; 3-D, 4-D and 5-D inputs).

    align_corners (the interpolating modes only; None = False): True maps the corner elements
    of input and output onto each other, coordinate j (in - 1) / (out - 1); False maps pixel
    centres, (j + 0.5) / scale - 0.5. With a scale_factor the output is floor(in * scale) and
    the coordinates use that scale itself unless recompute_scale_factor=True (then in / out,
    as with a size). antialias is not implemented.

    Shape:
        input: (N, C, W), (N, C, H, W) or (N, C, D, H, W); output: (N, C, *size), or
        (N, C, floor(W * scale_factor), ...).
    """
    _need_tensor("interpolate", "the input", input)
    if mode in _NEAREST + ("area",):
        if align_corners is not None:
            raise ValueError(f"interpolate: align_corners option can only be set with the interpolating "
                             f"modes: linear | bilinear | bicubic | trilinear, got mode={mode!r} and "
                             f"align_corners={align_corners!r}")
    elif align_corners is None:
        align_corners = False
    _check_rank(input, mode)
    out, scales = _output_size(input, size, scale_factor, recompute_scale_factor)
    if antialias:
        if not (mode in ("bilinear", "bicubic") and input.ndim == 4):
            raise ShapeError(f"interpolate: antialias is restricted to the bilinear and bicubic modes and a "
                             f"4-D input, got mode={mode!r} and an input of shape {input.shape}")
        raise NotImplementedError(f"interpolate: antialias=True (mode {mode!r}) is not implemented in "
                                  "minigrad; use antialias=False")
    if mode == "area":
        if input.ndim == 5:  # adaptive_avg_pool3d: the depth's averaging matrix, then the 2-D pool
            N, C, D, H, W = input.shape
            ad = Tensor(_adaptive_matrix(D, out[0]).astype(input.dtype))
            x = (ad @ input.reshape(N, C, D, H * W)).reshape(N, C * out[0], H, W)
            return adaptive_avg_pool2d(x, out[1:]).reshape(N, C, *out)
        if input.ndim == 3:
            return adaptive_avg_pool2d(input.unsqueeze(2), (1,) + out).squeeze(2)
        return adaptive_avg_pool2d(input, out)
    if mode in _NEAREST:
        return UpsampleNearestOp.apply(input, size=out, scales=scales, mode=mode)
    if input.dtype.kind != "f":
        raise TypeError(f"interpolate: mode {mode!r} needs a floating point input, got dtype {input.dtype} "
                        "(convert it with x.float())")
    return UpsampleInterpOp.apply(input, size=out, scales=scales, mode=mode,
                                  align_corners=bool(align_corners))


# ----------------------------------------------------------------------------- layers


class Upsample(Module):
    """Upsamples an (N, C, W), (N, C, H, W) or (N, C, D, H, W) input, as `torch.nn.Upsample`:
    F.interpolate with the module's size or scale_factor, mode, align_corners and
    recompute_scale_factor.

    Shape:
        - Input: (N, C, W_in), (N, C, H_in, W_in) or (N, C, D_in, H_in, W_in)
        - Output: (N, C, W_out), (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out), where
          W_out = size or floor(W_in * scale_factor) (and so for D and H)
    """

    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:  # as torch: a scale factor of 0 is None
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            return f"scale_factor={self.scale_factor!r}, mode={self.mode!r}"
        return f"size={self.size!r}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-D nearest neighbour upsampling, as `torch.nn.UpsamplingNearest2d`: Upsample with
    mode="nearest".

    Shape:
        - Input: (N, C, H_in, W_in)
        - Output: (N, C, H_out, W_out), H_out = size or floor(H_in * scale_factor)
    """

    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-D bilinear upsampling with aligned corners, as `torch.nn.UpsamplingBilinear2d`:
    Upsample with mode="bilinear" and align_corners=True.

    Shape:
        - Input: (N, C, H_in, W_in)
        - Output: (N, C, H_out, W_out), H_out = size or floor(H_in * scale_factor)
    """

    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
