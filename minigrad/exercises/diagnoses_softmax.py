"""The diagnoses of the softmax, cross-entropy and positional-encoding tasks, and of a `.T` that
reverses a batched array (see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

# The tasks whose code multiplies batched arrays (numpy's or Tensors), where `.T` can meet 3 axes.
BATCHED_PRODUCTS = ("matmul_backward", "linear_layer", "attention_forward", "attention_backward",
                    "multi_head", "additive_attention", "encoder_layer", "conv2d_backward")

ENTRIES: list[Diagnosis] = [
    Diagnosis("softmax_jacobian_diagonal", "the softmax's Jacobian is taken as diagonal",
              ("softmax_backward",), (
        'Your ds equals g * a * (1 - a): the backward keeps only the diagonal of the Jacobian, '
        'da_j/ds_j = a_j (1 - a_j), as if each weight depended on its own score alone (the sigmoid '
        'rule). A softmax weight depends on every score of its row, da_j/ds_k = a_j ([j = k] - a_k), '
        'so every g_j of the row reaches ds_k. Look at the line ds = a * (g - rowsum(g * a)) of the '
        'math.'
    )),
    Diagnosis("one_hot_columns", "the targets index whole columns, not (row, target) pairs",
              ("cross_entropy",), (
        'Your numbers are what indexing whole columns by the targets gives: x[:, t] (or dx[:, t] -= 1) '
        'selects every row at every target column, an (N, N) block, so each row loses 1 at the '
        'targets of all the rows, not only at its own. Each row i has one target, the pair (i, '
        't_i): look at the line where log p_i,t_i is picked (forward) or [c = t_i] is subtracted '
        '(backward).'
    )),
    Diagnosis("log_of_softmax_underflows", "the log is taken of a softmax that underflowed to 0",
              ("cross_entropy",), (
        'Your loss is infinite where a target logit lies more than about 745 below its row max, although '
        'the max is subtracted: softmax(x - m) is right, but its smallest entries underflow to exactly '
        '0 in floating point (exp(-800) = 0), and log(0) = -inf. The true log-probability there is '
        'finite (about -800). Look at the line log p = x - logsumexp(x) of the math: it never forms '
        'the probability before its log.'
    )),
    Diagnosis("frequency_from_column", "the frequency uses the column index, not the pair's",
              ("positional_encoding",), (
        "Your cosine columns have their own frequency: the exponent uses each column's index j, "
        "pos / 10000^(j / d), so column 2i + 1 gets 10000^((2i + 1) / d) while its sine partner, column "
        "2i, gets 10000^(2i / d). Both columns of a pair share one angle, with the pair's even index "
        "2i in the exponent; look at which index the exponent reads."
    )),
    Diagnosis("sin_cos_halves", "the sines and cosines fill two halves, not alternate columns",
              ("positional_encoding",), (
        'Your table holds the sines in the first half of the columns and the cosines in the second, '
        '[sin | cos] (as some libraries lay it out). The formula of this task interleaves them: sin '
        'in column 2i and cos in column 2i + 1, so each pair of neighbouring columns is one angle '
        '(position 0 reads 0, 1, 0, 1, ...). Look at the columns each function is written into.'
    )),
    Diagnosis("graph_cut_through_data", "the positions are added through .data: the graph is cut",
              ("positional_encoding",), (
        "Your add_positions gives the right numbers, but through .data or numpy arrays: the result "
        'is a new leaf, not connected to x in the graph, so no gradient reaches x (in a model, the '
        'token embeddings would never learn). The addition must be a Tensor operation whose '
        'operands include x itself; look at where x.data appears.'
    )),
    Diagnosis("dot_t_on_batched", ".T on an array of 3 or more axes reverses every axis", BATCHED_PRODUCTS, (
        "The matmul error above fits .T on an array of 3 axes or more: .T (like np.transpose "
        "without axes) reverses every axis, so a (B, T, d) array becomes (d, "
        "T, B), not the (B, d, T) of a transpose of the last two axes, x.swapaxes(-1, -2). On 2 axes "
        "the two agree, which is why the small cases pass. Look at each .T in the line the error "
        "names."
    )),
]
