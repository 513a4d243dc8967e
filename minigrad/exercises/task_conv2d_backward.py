"""Exercise 15 · conv2d_backward: a 2-D cross-correlation (NCHW, stride, padding), forward and
backward: dx by col2im (a scatter-add) and a crop, dw summed over the batch, db over n, h, w."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.tensor import Tensor

from . import references
from .catalogue import Task
from .diagnose import Mistake, close, match
from .grader import Check
from .gradients import Case, backward_of, forward_detail, gradient_checks, upstream
from .transcript import Fail, run_student

# x (N, C, H, W), w (O, C, kH, kW), stride, padding: stride 1 and 2, padding 0 and 1, a batch,
# several channels, non-square kernels, strides that leave rows unread, a 1 x 1 output.
CONFIGS = [((1, 1, 3, 3), (1, 1, 1, 1), 1, 0), ((2, 2, 5, 5), (3, 2, 3, 3), 1, 1),
           ((1, 3, 5, 4), (2, 3, 2, 3), 2, 0), ((2, 1, 4, 5), (2, 1, 3, 1), 2, 1),
           ((1, 2, 3, 3), (2, 2, 3, 3), 1, 0), ((2, 2, 6, 5), (1, 2, 2, 2), 2, 1),
           ((1, 1, 2, 2), (2, 1, 3, 3), 1, 1)]


def _case(rng: np.random.Generator, x: tuple, w: tuple, stride: int, padding: int) -> Case:
    inputs = {"x": rng.normal(0, 1, x), "w": rng.normal(0, 1, w), "b": rng.normal(0, 1, w[:1])}
    label = f"x {x}, w {w}, b {w[:1]}, stride {stride}, padding {padding}"
    return Case(inputs, {"stride": stride, "padding": padding}, label)


def cases() -> list[Case]:
    rng = np.random.default_rng(14)
    return [_case(rng, *config) for config in CONFIGS]


def small_cases() -> list[Case]:
    """The forward's first cases, small enough to print whole (at most 16 numbers an array):
    stride 1 without padding, stride 2 with padding (one channel, then two in and out), a batch of 2."""
    rng = np.random.default_rng(3)
    return [_case(rng, (1, 1, 3, 3), (1, 1, 2, 2), 1, 0), _case(rng, (1, 1, 4, 4), (1, 1, 2, 2), 2, 1),
            _case(rng, (1, 2, 2, 3), (2, 2, 2, 2), 2, 1), _case(rng, (2, 1, 2, 3), (2, 1, 2, 2), 1, 0)]


# ----------------------------------------------------------------------------- the mistakes


def _windows(x_pad: np.ndarray, kh: int, kw: int, out: tuple[int, int], step: int) -> np.ndarray:
    """(N, C, kh, kw, Ho, Wo): window (h, w) read at rows step*h + i, columns step*w + j."""
    ho, wo = out
    return np.stack([np.stack([x_pad[:, :, i:i + step * ho:step, j:j + step * wo:step] for j in range(kw)], 2)
                     for i in range(kh)], 2)


def _scatter(d: np.ndarray, padded: tuple, step: int, overwrite: str = "") -> np.ndarray:
    """col2im: each window's gradient d (N, C, kh, kw, Ho, Wo) put back where it was read, added
    (or, with overwrite "ij" / "ji", assigned in that loop order: the last window wins)."""
    n, c, kh, kw, ho, wo = d.shape
    out = np.zeros(padded)
    offsets = [(i, j) for i in range(kh) for j in range(kw)]
    for i, j in sorted(offsets, key=lambda o: o[::-1]) if overwrite == "ji" else offsets:
        where = (slice(None), slice(None), slice(i, i + step * ho, step), slice(j, j + step * wo, step))
        out[where] = d[:, :, i, j] if overwrite else out[where] + d[:, :, i, j]
    return out


def mistakes(case: Case, g: np.ndarray, ref: dict) -> list[Mistake]:
    """What each classic conv2d-backward mistake returns on this case (dx, dw or db)."""
    x, w = case.inputs["x"], case.inputs["w"]
    s, p = case.options["stride"], case.options["padding"]
    (n, _, h, wd), (_, _, kh, kw) = x.shape, w.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    out_size = g.shape[2:]
    d = np.einsum("ocij,nohw->ncijhw", w, g)  # each window's gradient

    def crop(a: np.ndarray, top: int = p, left: int = p) -> np.ndarray:
        return a[:, :, top:top + h, left:left + wd]

    dx_pad = _scatter(d, x_pad.shape, s)
    # Each prediction only where it differs from the right answer (no padding: nothing to crop).
    out = []
    if p == 0:  # x[p:-p] is empty when p = 0
        out.append(Mistake("padding_cropped_wrong", {"x": dx_pad[:, :, 0:0, 0:0]}, "p:-p with p = 0"))
    else:
        out += [Mistake("padding_cropped_wrong", {"x": dx_pad}, "dx in the padded shape: not cropped"),
                Mistake("padding_cropped_wrong", {"x": crop(dx_pad, 0, 0)}, "cropped at the corner"),
                Mistake("padding_cropped_wrong", {"x": dx_pad[:, :, p:h, p:wd]}, "cropped p:H")]
    # Off by one: numpy clips a slice that runs past an end, so at p = 0 these come out short.
    out += [Mistake("padding_cropped_wrong", {"x": crop(dx_pad, p + k, p + k)}, f"cropped one off ({k:+d})")
            for k in (-1, 1)]
    if s > 1:
        dx1 = crop(_scatter(d, x_pad.shape, 1))
        dw1 = np.einsum("nohw,ncijhw->ocij", g, _windows(x_pad, kh, kw, out_size, 1))
        out += [Mistake("stride_ignored_in_backward", {"x": dx1}),
                Mistake("stride_ignored_in_backward", {"w": dw1}),
                Mistake("stride_ignored_in_backward", {"x": dx1, "w": dw1})]
    if (kh > s and out_size[0] > 1) or (kw > s and out_size[1] > 1):  # windows overlap
        out += [Mistake("col2im_overwrites", {"x": crop(_scatter(d, x_pad.shape, s, order))})
                for order in ("ij", "ji")]
    per_sample = np.einsum("nohw,ncijhw->nocij", g, _windows(x_pad, kh, kw, out_size, s))
    if n > 1:
        out += [Mistake("dw_not_summed_over_batch", {"w": dw}, note)
                for dw, note in ((per_sample, "one dw per sample"),
                                 (per_sample[-1], "the last sample's dw only"),
                                 (per_sample[0], "the first sample's dw only"),
                                 (per_sample.mean(axis=0), "the mean over the batch"))]
    out += [Mistake("db_not_summed_over_space", {"b": db}, note)
            for db, note in ((g.sum(axis=0), "db has the output's shape (O, Ho, Wo)"), (g, "db is g"),
                             (g.sum(axis=(0, 2)), "summed over the rows only"),
                             (g.sum(axis=(0, 3)), "summed over the columns only"),
                             (g.mean(axis=(2, 3)).sum(axis=0), "the mean over the positions"),
                             (g.mean(axis=(0, 2, 3)), "the mean over the batch and the positions"))
            if db.shape != (g.shape[1],) or g[0, 0].size > 1]
    return out


# ----------------------------------------------------------------------------- the checks


def checks(sub: Any) -> list[Check]:
    def student(x, w, b, stride=1, padding=0):
        return sub.Conv2d.apply(x, w, b, stride=stride, padding=padding)

    worked = _case(np.random.default_rng(2), (2, 2, 4, 4), (3, 2, 3, 2), 2, 1)
    all_cases = cases()

    def forward() -> str:
        """The small cases first: the first case that differs is shown whole."""
        forward_cases = [*small_cases(), worked, *all_cases]
        for case in forward_cases:
            x, w, b = case.inputs.values()
            got = run_student("forward", lambda case=case: _output(student, case))
            want = references.conv2d(Tensor(x), Tensor(w), Tensor(b), **case.options)._data
            if got.shape != want.shape:
                raise Fail(f"on {case.describe()}: output of shape {got.shape}, expected {want.shape} "
                           "(N, O, Ho, Wo), Ho = (H + 2 padding - kH) // stride + 1",
                           forward_detail(case.describe(), case.inputs, got, want))
            if not close(got, want, rtol=1e-9):
                flipped = references.conv2d(Tensor(x), Tensor(w[:, :, ::-1, ::-1].copy()), Tensor(b),
                                            **case.options)._data
                raise Fail(f"on {case.describe()}: the output differs from the reference",
                           forward_detail(case.describe(), case.inputs, got, want),
                           ["kernel_flipped"] if close(got, flipped, rtol=1e-9) else [])
        return f"{len(forward_cases)} cases: stride 1 and 2, padding 0 and 1, non-square kernels"

    def shapes() -> str:
        """A gradient in the wrong shape (dw per sample, dx uncropped, ...), named before the
        values are compared: over every case, since a crop can be right at one padding only."""
        for case in [worked, *all_cases]:
            out = references.conv2d(*(Tensor(v) for v in case.inputs.values()), **case.options)._data
            g = upstream(out.shape)
            got = run_student("backward",
                              lambda case=case, g=g: backward_of(student, case, g, sub.Conv2d).grads)
            wrong = [n for n, v in case.inputs.items() if got[n] is not None and got[n].shape != v.shape]
            if wrong:
                ref = backward_of(references.conv2d, case, g).grads
                found = match({k: v for k, v in got.items() if v is not None}, ref, mistakes(case, g, ref))
                n = wrong[0]
                note = f" ({found.note})" if found is not None and found.note else ""
                raise Fail(f"on {case.describe()}: the gradient for {n} has shape {got[n].shape}, but {n} "
                           f"has shape {case.inputs[n].shape}{note}", diagnosis=[found.code] if found else [])
        return f"{1 + len(all_cases)} cases"

    return [("forward matches the reference (a correlation: the kernel is not flipped)", forward),
            ("backward returns dx, dw, db in the shapes of x, w, b", shapes),
            *gradient_checks(student, references.conv2d, worked, all_cases, sub.Conv2d, mistakes,
                             must_reduce=True)]


def _output(student: Any, case: Case) -> np.ndarray:
    """The student's forward on copies of the case's inputs (run in the student's process): its
    output's array."""
    got = student(*(Tensor(v.copy()) for v in case.inputs.values()), **case.options)
    if not isinstance(got, Tensor):
        raise Fail(f"Conv2d.apply returned a {type(got).__name__}, not a Tensor")
    return got._data


# minigrad's own convolution: the functional and the Module (nn.conv), and the kernel
# (nn.conv_kernels.Conv2dOp) with its dx (input_grad). Not im2col: the stub gives it.
TASK = Task("conv2d_backward", "2-D convolution: forward, and dx by col2im, dw and db summed", ("Conv2d",),
            checks, library=("conv2d", "Conv2d", "Conv2dOp", "_conv", "input_grad"))
