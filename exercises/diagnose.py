"""Recognise a student's mistake from numbers alone, and say what to look at.

Every diagnosis is found the same way: from the reference's numbers on a fixed case, compute
what each known mistake would produce (a gradient without the row-sum term, the transpose of
the right one, the reference for an upstream gradient of ones, ...) and compare the student's
numbers with each prediction. The student's source is never read. A task lists its own
mistakes (`Mistake` objects) first; `generic_mistakes` adds the ones every gradient can make.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# code -> the one-paragraph hint: the symptom, the line of the math to look at, never the fix.
HINTS: dict[str, str] = {
    "ignores_upstream_grad": (
        "Your gradients are exactly what the reference gives for an upstream gradient of all "
        "ones. The backward computes dL/dinput = g times the local derivative, and yours leaves "
        "g out (or replaces it by ones). A test that calls out.sum().backward() cannot see this, "
        "because the gradient of a sum is exactly ones; the grader draws a random g. Look at "
        "the first line of your backward, where g should enter."
    ),
    "missing_rowsum_term": (
        "Your dS equals A * dA: the second term of the softmax backward is missing. Each weight "
        "of a row depends on every score of that row (they are normalised together), so the "
        "Jacobian of one row is diag(A) - A A^T, not diag(A). Look at the line "
        "dS = A * (dA - rowsum(dA * A)) of the math."
    ),
    "rowsum_wrong_axis": (
        "The correction term of your softmax backward is summed over the wrong axis (over the "
        "queries, axis -2, instead of over the keys, axis -1), or it lost its kept dimension and "
        "was broadcast along the wrong axis. The softmax normalises each row, so the sum in "
        "rowsum(dA * A) runs over the same axis as the softmax and must keep that axis (size 1) "
        "so it subtracts one number per row."
    ),
    "transposed_grad": (
        "One of your gradients is the transpose of the right one (swapped last two axes). When "
        "the matrix is square the shapes agree, so only the numbers show it. Write the shapes "
        "next to each factor of the product (for S = Q K^T: dQ = dS K is (Tq, Tk)(Tk, d), "
        "dK = dS^T Q is (Tk, Tq)(Tq, d)) and check which side each transpose goes on."
    ),
    "swapped_grads": (
        "Two of your gradients are in each other's place (or each uses the wrong factor). For a "
        "product every input's gradient uses the other factors: d(a * b)/da = b, and for "
        "S = Q K^T, dQ uses K and dK uses Q. backward returns one gradient per forward input, "
        "in the order of forward's arguments."
    ),
    "missing_scale": (
        "Your result is off by exactly sqrt(d_k): the 1/sqrt(d_k) scale of the scores is left "
        "out. It multiplies the scores in the forward, so by the chain rule it also multiplies "
        "dQ and dK in the backward. Look at the line S = Q K^T / sqrt(d_k)."
    ),
    "wrong_scale": (
        "Your result is off by a factor 1/sqrt(d_k): you scaled by 1/d_k instead of "
        "1/sqrt(d_k). Look at the scale in the line S = Q K^T / sqrt(d_k) (and where the "
        "backward reuses it)."
    ),
    "mask_after_softmax": (
        "The mask is applied after the softmax: the rows of the attention weights no longer sum "
        "to 1, and a query's output still changes when a forbidden (later) key changes, so "
        "information leaks. gradcheck cannot see this (your backward matches your forward). "
        "The mask belongs on the scores, before the softmax normalises them."
    ),
    "mask_not_minus_inf": (
        "Masked keys still get attention weight: the scores are masked with 0 or another finite "
        "number, and exp of a finite number is not 0. Look at the value you fill the forbidden "
        "scores with before the softmax: after the softmax they must weigh exactly 0."
    ),
    "sign_error": (
        "Your gradient is the exact negative of the right one. Look for a subtraction written "
        "the wrong way round, or a minus sign in the local derivative of the math."
    ),
    "factor_error": (
        "Your gradient is the right one times a constant (printed above). Look for a factor "
        "of the math counted twice or left out: a 2 from a square, or a 1/N from a mean that "
        "the forward divides by and the backward must too."
    ),
    "layer_norm_missing_term": (
        "One of the two mean terms of the layer-norm backward is missing. x_hat depends on x "
        "directly, through the mean mu and through the standard deviation sigma; each path gives "
        "one term: dx = (gx - mean(gx) - x_hat * mean(gx * x_hat)) / sigma. Look at which path "
        "your backward leaves out."
    ),
    "not_unbroadcast": (
        "A gradient comes back in the broadcast (output) shape, not in its input's shape. When "
        "the forward broadcast an input, each of its elements was used several times, so its "
        "gradient is the sum over the copies: the adjoint of broadcasting is a sum. Sum over "
        "the axes that broadcasting added or stretched (keeping none of them)."
    ),
    "sin_cos_swapped": (
        "Your table has the cosines in the even columns and the sines in the odd ones. The "
        "formula puts sin in column 2i and cos in column 2i + 1 (so position 0 reads 0, 1, 0, "
        "1, ...). Look at which function fills which columns."
    ),
    "wrong_frequency": (
        "Your frequencies are off: the table matches pos / 10000^(i / d) where the formula has "
        "pos / 10000^(2i / d). i counts column pairs, and the exponent uses the even column "
        "index 2i of the pair; look at the exponent."
    ),
    "pre_norm_not_post_norm": (
        "Your layer normalises before each part (pre-norm, X + MHA(LN(X)), as GPT-2 does), where "
        "this layer is post-norm: the layer norm comes after the residual sum, Z = LN1(X + MHA(X)). "
        "Look at where each LayerNorm sits relative to the addition."
    ),
    "missing_residual": (
        "One of the two residual connections is missing: a part's output replaces its input "
        "instead of being added to it. Both lines of the layer add the input back before the "
        "norm: Z = LN1(X + MHA(X)) and X~ = LN2(Z + MLP(Z))."
    ),
    "heads_merged_wrong": (
        "Your heads are split or merged with a reshape alone, without moving the head axis: "
        "reshaping (B, H, T, D) straight to (B, T, H*D) (or (B, T, C) straight to (B, H, T, D)) "
        "keeps the numbers in memory order and mixes positions of different heads. Head h must "
        "hold features h*D .. (h+1)*D - 1 of every position, and the output at position t must "
        "be concat(head_1[t], ..., head_H[t]); look at the axis order around each reshape."
    ),
    "kernel_flipped": (
        "Your forward is the reference with the kernel flipped (rotated by 180 degrees): a "
        "convolution in the signal-processing sense. conv2d in deep learning (PyTorch's too) is a "
        "cross-correlation: out[h, w] reads x_pad[s*h + i, s*w + j] with weight w[i, j] as it is. "
        "Look at the indices your forward pairs each weight with."
    ),
    "dw_not_summed_over_batch": (
        "Your dw is right for one sample, or per sample, but not summed over the batch (or it is "
        "averaged). One kernel is applied to every sample, so its gradient is the sum of every "
        "sample's contribution: dw = sum over n of g_n cols_n^T. Look at the batch axis of the "
        "product that makes dw (and at a loop that assigns dw where it should add to it)."
    ),
    "padding_cropped_wrong": (
        "Your dx is the gradient of the padded input, cropped in the wrong place (off by one, at "
        "the corner, or not at all). The forward padded x by `padding` zeros on each side, so x "
        "sits at rows padding .. padding + H - 1 of x_pad, and the same columns. Look at the crop, "
        "and at what x[p:-p] gives when p = 0."
    ),
    "stride_ignored_in_backward": (
        "Your backward treats the stride as 1: the windows' gradients are put back (or dw reads "
        "x) at consecutive positions, where the forward read window (h, w) at rows s*h + i and "
        "columns s*w + j. The backward must visit exactly the positions the forward read; look at "
        "the step of the slices in your col2im and in dw."
    ),
    "db_not_summed_over_space": (
        "Your db is not the sum of g over the batch and every output position. b[o] is added to "
        "out[n, o, h, w] for every n, h and w, so db[o] sums g[n, o, h, w] over all three axes "
        "(a sum, not a mean), giving one number per output channel."
    ),
    "col2im_overwrites": (
        "Your dx loses contributions where windows overlap: each entry gets the gradient of only "
        "one of the windows that read it (the last one written). An input entry read by several "
        "windows gets the sum of their gradients. Look for an assignment (=) where col2im must "
        "add (+=), or a fancy-indexed += with repeated indices, which numpy does not accumulate "
        "(np.add.at does)."
    ),
    "modifies_input_in_place": (
        "Your code writes into an array it was given (x -= x.max(...) in a forward, g *= a in a "
        "backward). That is right when the array is yours alone and wrong when it is shared: the "
        "same upstream gradient goes to every op that used a tensor (softmax(x1) + softmax(x2)), "
        "and the gradient check perturbs the inputs it hands you. Make a new array instead: "
        "x = x - x.max(...), g = g * a."
    ),
    "fanout_overwritten": (
        "A node used several times gets the gradient of only some of its uses (the last one "
        "written): its gradient is assigned where it must be added to. The chain rule through a "
        "fan-out is a sum: x in x * x + x has dL/dx = 2x + 1, one term per use. Look at the line "
        "that stores a parent's gradient (= where += belongs), and at a local backward whose two "
        "parents are the same node."
    ),
    "visited_before_consumers": (
        "A node's backward runs before every node that uses it has passed it its gradient, so it "
        "passes on an incomplete sum (a depth-first pre-order, or a breadth-first queue, can do "
        "this on a graph where one path to a node is longer than another). A node may run only "
        "after all of its consumers: a reversed depth-first post-order, or Kahn's algorithm "
        "(count each node's consumers, run it when the count reaches zero), gives that order."
    ),
    "leaf_grads_not_accumulated": (
        "After two calls of backward a leaf holds the gradient of one call: your backward resets "
        "the leaves' .grad. As in PyTorch, a leaf's gradient accumulates over calls (training "
        "loops call zero_grad for that reason); only the intermediates start from zero each call. "
        "Look at where your backward sets .grad to zeros, and which nodes it does that for."
    ),
    "recursion_too_deep": (
        "A chain of 10,000 nodes raised RecursionError: your topological order (or backward) "
        "calls itself once per node, and Python stops at about 1,000 nested calls. Raising the "
        "limit only moves the wall; write the walk with a loop and an explicit stack of the nodes "
        "still to visit (a flag per entry says whether its parents are done)."
    ),
}


@dataclass
class Mistake:
    """A known mistake: its code and what it predicts for each output (gradient) by name.

    `predict` holds only the outputs the mistake changes; the others are the reference's.
    """

    code: str
    predict: dict[str, np.ndarray]
    note: str = ""


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-5) -> bool:
    """Same shape and equal to a relative tolerance measured on the larger array's scale."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return bool(np.array_equal(a, b, equal_nan=True))
    scale = max(float(np.abs(a).max(initial=0)), float(np.abs(b).max(initial=0)), 1e-12)
    return bool(np.abs(a - b).max(initial=0) <= rtol * scale + 1e-12)


def fitted_factor(student: np.ndarray, reference: np.ndarray) -> float | None:
    """c with student = c * reference (least squares), when that holds and c is not 1."""
    s, r = np.asarray(student, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if s.shape != r.shape or not np.all(np.isfinite(s)):
        return None
    rr = float((r * r).sum())
    if rr < 1e-20:
        return None
    c = float((s * r).sum()) / rr
    if abs(c - 1) < 1e-3 or abs(c) < 1e-6 or not close(s, c * r):
        return None
    return c


def generic_mistakes(reference: dict[str, np.ndarray], with_ones: dict[str, np.ndarray] | None,
                     student: dict[str, np.ndarray]) -> list[Mistake]:
    """The mistakes any backward can make, predicted from the reference gradients.

    `with_ones` is the reference for an upstream gradient of ones (None when the task has no
    upstream gradient to ignore). Transposes only make sense for gradients of 2 axes or more;
    a swap of two gradients only when both have the same shape.
    """
    out: list[Mistake] = []
    names = list(reference)
    if with_ones is not None:
        out.append(Mistake("ignores_upstream_grad", dict(with_ones)))
        out += [Mistake("ignores_upstream_grad", {n: with_ones[n]}) for n in names]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if reference[a].shape == reference[b].shape:
                out.append(Mistake("swapped_grads", {a: reference[b], b: reference[a]}))
    for n in names:
        if reference[n].ndim >= 2:
            out.append(Mistake("transposed_grad", {n: reference[n].swapaxes(-1, -2)}))
    out.append(Mistake("sign_error", {n: -reference[n] for n in names}))
    out += [Mistake("sign_error", {n: -reference[n]}) for n in names]
    for n in names:
        c = fitted_factor(student.get(n, np.empty(0)), reference[n])
        if c is not None and abs(c + 1) > 1e-3:
            out.append(Mistake("factor_error", {n: c * reference[n]}, note=f"{n}: factor {c:.4g}"))
    return out


def match(student: dict[str, np.ndarray], reference: dict[str, np.ndarray],
          mistakes: list[Mistake]) -> Mistake | None:
    """The first mistake whose prediction reproduces all of the student's numbers."""
    for m in mistakes:
        predicted = {**reference, **m.predict}
        if all(n in student and close(student[n], predicted[n]) for n in predicted):
            return m
    return None

