"""The diagnoses every task shares, and those of the gradient, softmax, scale, mask, layer-norm,
broadcasting, positional, encoder, heads, convolution and engine tasks written first.

Each entry: the code the grader returns, a one-line title, the tasks that can give it, and the
one-paragraph hint: the symptom, the line of the math to look at, never the fix.
"""

from __future__ import annotations

from .diagnoses import GRADIENT_TASKS, Diagnosis

ENTRIES = [
    Diagnosis("ignores_upstream_grad", "the upstream gradient g is ignored", GRADIENT_TASKS, (
        'Your gradients are exactly what the reference gives for an upstream gradient of all ones. '
        'The backward computes dL/dinput = g times the local derivative, and yours leaves g out (or '
        'replaces it by ones). A test that calls out.sum().backward() cannot see this, because the '
        'gradient of a sum is exactly ones; the grader draws a random g. Look at the first line of '
        'your backward, where g should enter.'
    )),
    Diagnosis("missing_rowsum_term", "the softmax backward lacks its row-sum term",
              ('softmax_backward', 'attention_backward'), (
        'Your dS equals A * dA: the second term of the softmax backward is missing. Each weight of a '
        'row depends on every score of that row (they are normalised together), so the Jacobian of '
        'one row is diag(A) - A A^T, not diag(A). Look at the line dS = A * (dA - rowsum(dA * A)) of '
        'the math.'
    )),
    Diagnosis("rowsum_wrong_axis", "the softmax backward's row sum runs over the wrong axis",
              ('softmax_backward', 'attention_backward'), (
        'The correction term of your softmax backward is summed over the wrong axis (over the '
        'queries, axis -2, instead of over the keys, axis -1), or it lost its kept dimension and was '
        'broadcast along the wrong axis. The softmax normalises each row, so the sum in rowsum(dA * '
        'A) runs over the same axis as the softmax and must keep that axis (size 1) so it subtracts '
        'one number per row.'
    )),
    Diagnosis("transposed_grad", "a gradient is the transpose of the right one", GRADIENT_TASKS, (
        'One of your gradients is the transpose of the right one (swapped last two axes). When the '
        'matrix is square the shapes agree, so only the numbers show it. Write the shapes next to '
        'each factor of the product (for S = Q K^T: dQ = dS K is (Tq, Tk)(Tk, d), dK = dS^T Q is (Tk,'
        ' Tq)(Tq, d)) and check which side each transpose goes on.'
    )),
    Diagnosis("swapped_grads", "two gradients are in each other's place", GRADIENT_TASKS, (
        "Two of your gradients are in each other's place (or each uses the wrong factor). For a "
        "product every input's gradient uses the other factors: d(a * b)/da = b, and for S = Q K^T, "
        'dQ uses K and dK uses Q. backward returns one gradient per forward input, in the order of '
        "forward's arguments."
    )),
    Diagnosis("missing_scale", "the 1/sqrt(d_k) scale is left out",
              ('attention_forward', 'attention_backward'), (
        'Your result is off by exactly sqrt(d_k): the 1/sqrt(d_k) scale of the scores is left out. It'
        ' multiplies the scores in the forward, so by the chain rule it also multiplies dQ and dK in '
        'the backward. Look at the line S = Q K^T / sqrt(d_k).'
    )),
    Diagnosis("wrong_scale", "scaled by 1/d_k instead of 1/sqrt(d_k)",
              ('attention_forward', 'attention_backward'), (
        'Your result is off by a factor 1/sqrt(d_k): you scaled by 1/d_k instead of 1/sqrt(d_k). Look'
        ' at the scale in the line S = Q K^T / sqrt(d_k) (and where the backward reuses it).'
    )),
    Diagnosis("mask_after_softmax", "the mask is applied after the softmax",
              ('attention_forward', 'additive_attention'), (
        'The mask is applied after the softmax: the rows of the attention weights no longer sum to 1,'
        " and a query's output still changes when a forbidden (later) key changes, so information "
        'leaks. gradcheck cannot see this (your backward matches your forward). The mask belongs on '
        'the scores, before the softmax normalises them.'
    )),
    Diagnosis("mask_not_minus_inf", "masked scores are filled with a finite number",
              ('attention_forward', 'additive_attention'), (
        'Your masked scores are filled with a finite number where the task says -inf, and exp of a '
        'finite number is not 0. With a small one (0, -10) the masked keys keep some weight and the '
        'output still depends on them; with a huge one (-1e9) they weigh 0 while the row has an allowed '
        'key, but a row with none gets equal weights on every key (the mean of the values) where the '
        'task asks for weights 0. Look at the value you fill the forbidden scores with before the '
        'softmax.'
    )),
    Diagnosis("sign_error", "a gradient has the wrong sign", GRADIENT_TASKS, (
        'Your gradient is the exact negative of the right one. Look for a subtraction written the '
        'wrong way round, or a minus sign in the local derivative of the math.'
    )),
    Diagnosis("factor_error", "a gradient is off by a constant factor", GRADIENT_TASKS, (
        'Your gradient is the right one times a constant: each gradient off by one is printed above '
        'with its ratio to the right one (dq and dk can be off together, "q: factor 3, k: factor 3"). '
        'Look for a factor of the math counted twice or left out: a 2 from a square, a 1/N from a '
        'mean that the forward divides by and the backward must too (or a sum over N rows that the '
        'backward divides by N), or a scale used upside down (sqrt(d) where 1/sqrt(d) belongs is d '
        'times too big).'
    )),
    Diagnosis("layer_norm_missing_term", "a mean term of the layer-norm backward is missing",
              ('layer_norm_backward',), (
        'One of the two mean terms of the layer-norm backward is missing. x_hat depends on x '
        'directly, through the mean mu and through the standard deviation sigma; each path gives one '
        'term: dx = (gx - mean(gx) - x_hat * mean(gx * x_hat)) / sigma. Look at which path your '
        'backward leaves out.'
    )),
    Diagnosis("not_unbroadcast", "a gradient is not summed back to its input's shape",
              ("mul_broadcast", "matmul_backward", "reductions", "layer_norm_backward", "conv2d_backward"), (
        "A gradient comes back in the broadcast (output) shape, not in its input's shape. When the "
        'forward broadcast an input, each of its elements was used several times, so its gradient is '
        'the sum over the copies: the adjoint of broadcasting is a sum. Sum over the axes that '
        'broadcasting added or stretched (keeping none of them).'
    )),
    Diagnosis("sin_cos_swapped", "sines and cosines are in each other's columns", ('positional_encoding',), (
        'Your table has the cosines in the even columns and the sines in the odd ones. The formula '
        'puts sin in column 2i and cos in column 2i + 1 (so position 0 reads 0, 1, 0, 1, ...). Look '
        'at which function fills which columns.'
    )),
    Diagnosis("wrong_frequency", "the frequencies use i where the formula has 2i", ('positional_encoding',), (
        'Your frequencies are off: the table matches pos / 10000^(i / d) where the formula has pos / '
        '10000^(2i / d). i counts column pairs, and the exponent uses the even column index 2i of the'
        ' pair; look at the exponent.'
    )),
    Diagnosis("pre_norm_not_post_norm", "the layer norms come before each part (pre-norm)",
              ('encoder_layer',), (
        'Your layer normalises before each part (pre-norm, X + MHA(LN(X)), as GPT-2 does), where this'
        ' layer is post-norm: the layer norm comes after the residual sum, Z = LN1(X + MHA(X)). Look '
        'at where each LayerNorm sits relative to the addition.'
    )),
    Diagnosis("missing_residual", "a residual connection is missing", ('encoder_layer',), (
        "One of the two residual connections is missing: a part's output replaces its input instead "
        'of being added to it. Both lines of the layer add the input back before the norm: Z = LN1(X '
        '+ MHA(X)) and X~ = LN2(Z + MLP(Z)).'
    )),
    Diagnosis("heads_merged_wrong", "heads split or merged by a reshape alone", ('multi_head',), (
        'Your heads are split or merged with a reshape alone, without moving the head axis: reshaping'
        ' (B, H, T, D) straight to (B, T, H*D) (or (B, T, C) straight to (B, H, T, D)) keeps the '
        'numbers in memory order and mixes positions of different heads. Head h must hold features '
        'h*D .. (h+1)*D - 1 of every position, and the output at position t must be concat(head_1[t],'
        ' ..., head_H[t]); look at the axis order around each reshape.'
    )),
    Diagnosis("kernel_flipped", "the kernel is flipped (a convolution, not a cross-correlation)",
              ('conv2d_backward',), (
        'Your forward is the reference with the kernel flipped (rotated by 180 degrees): a '
        "convolution in the signal-processing sense. conv2d in deep learning (PyTorch's too) is a "
        'cross-correlation: out[h, w] reads x_pad[s*h + i, s*w + j] with weight w[i, j] as it is. '
        'Look at the indices your forward pairs each weight with.'
    )),
    Diagnosis("dw_not_summed_over_batch", "dw is not summed over the batch", ('conv2d_backward',), (
        'Your dw is right for one sample, or per sample, but not summed over the batch (or it is '
        'averaged). One kernel is applied to every sample, so its gradient is the sum of every '
        "sample's contribution: dw = sum over n of g_n cols_n^T. Look at the batch axis of the "
        'product that makes dw (and at a loop that assigns dw where it should add to it).'
    ), covers=("not_unbroadcast",)),
    Diagnosis("padding_cropped_wrong", "dx is cropped from the padded input in the wrong place",
              ('conv2d_backward',), (
        'Your dx is the gradient of the padded input, cropped in the wrong place (off by one, at the '
        'corner, or not at all). The forward padded x by `padding` zeros on each side, so x sits at '
        'rows padding .. padding + H - 1 of x_pad, and the same columns. Look at the crop, and at '
        'what x[p:-p] gives when p = 0.'
    )),
    Diagnosis("stride_ignored_in_backward", "the backward treats the stride as 1", ('conv2d_backward',), (
        "Your backward treats the stride as 1: the windows' gradients are put back (or dw reads x) at"
        ' consecutive positions, where the forward read window (h, w) at rows s*h + i and columns s*w'
        ' + j. The backward must visit exactly the positions the forward read; look at the step of '
        'the slices in your col2im and in dw.'
    )),
    Diagnosis("db_not_summed_over_space", "db is not summed over the batch and every position",
              ('conv2d_backward',), (
        'Your db is not the sum of g over the batch and every output position. b[o] is added to '
        'out[n, o, h, w] for every n, h and w, so db[o] sums g[n, o, h, w] over all three axes (a '
        'sum, not a mean), giving one number per output channel.'
    ), covers=("not_unbroadcast",)),
    Diagnosis("col2im_overwrites", "overlapping windows overwrite each other's gradient",
              ('conv2d_backward',), (
        'Your dx loses contributions where windows overlap: each entry gets the gradient of only one '
        'of the windows that read it (the last one written). An input entry read by several windows '
        'gets the sum of their gradients. Look for an assignment (=) where col2im must add (+=), or a'
        ' fancy-indexed += with repeated indices, which numpy does not accumulate (np.add.at does).'
    )),
    Diagnosis("modifies_input_in_place", "an input array is changed in place", GRADIENT_TASKS, (
        'Your code writes into an array it was given (x -= x.max(...) in a forward, g *= a in a '
        'backward). That is right when the array is yours alone and wrong when it is shared: the same'
        ' upstream gradient goes to every op that used a tensor (softmax(x1) + softmax(x2)), and the '
        'gradient check perturbs the inputs it hands you. Make a new array instead: x = x - '
        'x.max(...), g = g * a.'
    )),
    Diagnosis("modifies_saved_in_place", "backward changes an array the forward returned or saved",
              GRADIENT_TASKS, (
        'Your backward writes into an array the forward returned or saved (a *= ... on the saved '
        'weights, x_hat -= ...): the gradient it returns can be right, but the forward\'s output is no '
        'longer what the forward computed (a softmax output whose rows sum to 0), and everything that '
        'reads it later (the next layer\'s backward, a second backward, the loss printed after the '
        'step) reads wrong numbers. The arrays on ctx are shared with the rest of the graph: build the '
        'gradient in a new array (ds = a * (...), not a *= ...).'
    )),
    Diagnosis("fanout_overwritten", "a node used twice keeps only one use's gradient", ('backprop_engine',), (
        'A node used several times gets the gradient of only some of its uses (the last one written):'
        ' its gradient is assigned where it must be added to. The chain rule through a fan-out is a '
        'sum: x in x * x + x has dL/dx = 2x + 1, one term per use. Look at the line that stores a '
        "parent's gradient (= where += belongs), and at a local backward whose two parents are the "
        'same node.'
    )),
    Diagnosis("visited_before_consumers", "a node runs before all of its consumers", ('backprop_engine',), (
        "A node's backward runs before every node that uses it has passed it its gradient, so it "
        'passes on an incomplete sum (a depth-first pre-order, or a breadth-first queue, can do this '
        'on a graph where one path to a node is longer than another). A node may run only after all '
        "of its consumers: a reversed depth-first post-order, or Kahn's algorithm (count each node's "
        'consumers, run it when the count reaches zero), gives that order.'
    )),
    Diagnosis("leaf_grads_not_accumulated", "leaf gradients do not accumulate over backward calls",
              ('backprop_engine',), (
        'After two calls of backward a leaf holds the gradient of one call: your backward resets the '
        "leaves' .grad. As in PyTorch, a leaf's gradient accumulates over calls (training loops call "
        'zero_grad for that reason); only the intermediates start from zero each call. Look at where '
        'your backward sets .grad to zeros, and which nodes it does that for.'
    )),
    Diagnosis("recursion_too_deep", "the walk recurses once per node", ('backprop_engine',), (
        'A chain of 10,000 nodes raised RecursionError, or nested one Python call per node: your '
        'topological order (or backward) calls itself once per node, and Python stops at about 1,000 '
        'nested calls. Raising the limit (sys.setrecursionlimit) only moves the wall, and the grader '
        'measures the nesting itself; write the walk with a loop and an explicit stack of the nodes '
        'still to visit (a flag per entry says whether its parents are done).'
    )),
]
