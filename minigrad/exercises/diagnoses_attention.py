"""The diagnoses of the attention tasks: attention forward and backward, multi-head, additive attention
(see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
    Diagnosis("attention_exp_overflows", "the softmax overflows at large scores",
              ("attention_forward", "attention_backward", "multi_head", "additive_attention"), (
        'Your output holds nan or inf when the scores are large (order 1000), where the reference stays '
        'finite. exp(s) overflows to inf past s = 709 in float64, and inf / inf is nan (a row whose '
        'every exp underflows to 0 gives 0 / 0). The weights softmax(s) do not change when one number '
        'is subtracted from every score of a row; look at what your softmax takes exp of.'
    ), covers=("masked_row_nan",)),  # without the max, a fully masked row is 0 / 0: fix this first
    Diagnosis("masked_row_nan", "a query with no allowed key gets nan, not 0",
              ("attention_forward", "additive_attention"), (
        'Your output is nan on the row of a query that may attend to no key (every score -inf), and '
        'right on every other row. Such a row\'s max is -inf, so s - max(s) is -inf - (-inf) = nan; '
        'without the max, every exp is 0 and the row\'s weights are 0 / 0 = nan. The task gives that '
        'query weights 0 (and output 0): look at the max your softmax subtracts where it is -inf, and '
        'at the sum it divides by where it is 0 (the given forward of attention_backward handles both).'
    )),
    Diagnosis("mask_inverted", "the mask is read the wrong way round (True taken as masked)",
              ("attention_forward", "additive_attention"), (
        'Your attention weighs exactly the keys the mask forbids and gives the allowed ones weight 0: '
        'the mask is read the wrong way round. In minigrad (as in PyTorch\'s scaled_dot_product_attention) '
        'a bool mask says True = may attend, so the scores to fill with -inf are those where the mask is '
        'False. A causal query then sees the later tokens, and a row whose keys are all allowed comes '
        'out 0. Look at which positions your masked_fill fills.'
    )),
    Diagnosis("scale_wrong_d", "the scores are scaled by the square root of the wrong size",
              ("attention_forward", "attention_backward", "multi_head"), (
        'Your scores are scaled by 1/sqrt of the wrong size: right where every size is the same, wrong '
        'where the sizes differ. The d of S = Q K^T / sqrt(d) is the length of one query (and key) '
        'vector, the axis the product sums over: not the size of a value (dv), nor the number of keys or '
        'queries, nor, with heads, the model width C or the number of heads H: each head\'s queries have '
        'D = C / H features. Look at which shape your scale reads.'
    )),
    Diagnosis("kv_split_with_query_length", "the keys and values are split with the queries' length",
              ("multi_head",), (
        'Your multi-head attention reshapes k (or v) with the number of queries Tq: right for '
        'self-attention, where Tq = Tk, but an error as soon as the keys come from a sequence of another '
        'length (cross-attention, a cache). Split each of q, k and v with its own length: '
        'x.reshape(B, T, H, D) with T = x.shape[1] of that tensor, as split_heads does.'
    )),
    Diagnosis("grads_out_of_order", "the three gradients are returned in the wrong order",
              ("attention_backward",), (
        'Your gradients are each right but returned in the wrong order (dv first, for instance): the '
        'engine gives the i-th gradient backward returns to the i-th input of forward. forward(ctx, q, k, '
        'v) takes q, k, v, so backward returns their gradients in that order. Look at your return line.'
    )),
    Diagnosis("heads_strided", "each head holds every H-th feature, not a block of D",
              ("multi_head",), (
        'Your heads are strided: head h is split from (or merged back into) the features h, h + H, h + '
        '2H, ... instead of the block h*D .. (h+1)*D - 1. The last axis C is taken as (D, H) instead of '
        '(H, D), and the axes moved to put H in front (or back). A reshape splits an axis with its last '
        'new axis varying fastest, so in (B, T, H, D) consecutive features stay in one head. Look at the '
        'order of H and D in your reshape.'
    )),
    Diagnosis("softmax_over_queries", "the softmax normalises over the queries, not the keys",
              ("additive_attention",), (
        'Your weights are normalised over the queries (each column sums to 1) instead of over the keys: '
        'a_ij = softmax_j(e_ij) runs over j, the keys, the last axis of e (B, Tq, Tk), so that each '
        "query's weights sum to 1. With one decoder step (Tq = 1) every weight comes out 1. Look at the "
        'axis of your softmax.'
    )),
    Diagnosis("tanh_missing", "the tanh of the additive score is left out", ("additive_attention",), (
        'Your scores are v . (W_q q_i + W_k k_j), without the tanh: e_ij = v . tanh(W_q q_i + W_k k_j). '
        'Without it the score is linear, and splits into a query part and a key part; the query part is '
        'the same for every key and cancels in the softmax, so every query gets the same weights. Look '
        'at the line that makes e.'
    )),
    Diagnosis("pairs_not_broadcast", "query i is scored against key i only, not against every key",
              ("additive_attention",), (
        'Your scores pair query i with key i only (one score per position, v . tanh(W_q q_i + W_k k_i)), '
        'not every query with every key: W_q q (B, Tq, hidden) and W_k k (B, Tk, hidden) added as they '
        'are line up position by position (and cannot be added at all when Tq != Tk). e_ij needs one '
        'number per (query, key) pair, (B, Tq, Tk); look at the shapes of the two terms where they are '
        'added.'
    )),
]
