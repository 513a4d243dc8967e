"""The diagnoses of the broadcasting, matmul, reduction, layer-norm, Linear and encoder tasks
(see diagnoses.py for what an entry holds)."""

from __future__ import annotations

from .diagnoses import Diagnosis

ENTRIES: list[Diagnosis] = [
    # ------------------------------------------------------------------ mul_broadcast, matmul
    Diagnosis("unbroadcast_trailing_axes", "sum_to_shape sums the trailing axes, not the leading ones",
              ("mul_broadcast",), (
        "Your sum_to_shape removes the extra axes from the wrong end: its result is what summing the "
        "last axes gives, where broadcasting added the missing axes on the left. numpy lines shapes up "
        "from the right, so b (3,) against a (2, 3) is read as (1, 3): b_j is used once per row, and "
        "db_j sums over the rows (axis 0). Look at which axes your sum removes when grad has more axes "
        "than shape."
    )),
    Diagnosis("matmul_no_transpose", "the matmul backward's products lack their transposes",
              ("matmul_backward",), (
        "Your gradient is g @ b (or a @ g) where the math has g @ b^T (and a^T @ g): the product is "
        "taken with a factor as it is, not transposed. With square matrices the shapes agree, so "
        "only the numbers show it; with others the product fails. Write the shapes under "
        "da = g @ b^T, (n, m) @ (m, k), and db = a^T @ g, (k, n) @ (n, m)."
    )),
    # ------------------------------------------------------------------ reductions
    Diagnosis("reduced_axis_not_restored", "g is broadcast against x without the reduced axis",
              ("reductions",), (
        "With keepdim=False the reduced axis is gone from g, and your backward broadcasts g against x "
        "as it is: numpy lines g up with the trailing axes of x, so the gradient lands along the "
        "wrong axis (on a square x), or the broadcast fails. Reducing the first axis hides it, since "
        "there the alignment happens to be right. Look at the shape of g where it meets x, and at "
        "which axis of x each of its axes lines up with."
    )),
    Diagnosis("reduced_axis_restored_twice", "the reduced axis is put back although keepdim kept it",
              ("reductions",), (
        "Your gradient has one axis more than x: with keepdim=True the reduced axis is still in g "
        "(size 1), and your backward inserts it a second time, so g broadcast against x gains an axis "
        "(and, unless dim is the first axis, its numbers land along the wrong one). Summing that extra "
        "axis away is not the fix, since the sum mixes rows that were never broadcast. Put the axis "
        "back only when it was dropped (keepdim=False); look at the line that expands g."
    )),
    Diagnosis("max_tie_to_first", "a tied max sends all of g to the first winner", ("reductions",), (
        "Where several entries tie for the max, your backward gives the whole gradient to the first of "
        "them (as argmax picks one) and nothing to the others. The task splits it equally between the "
        "tied entries: dx_i = g * [x_i == z] / (number of i with x_i == z), which is also what "
        "central differences measure. Look at how your backward chooses the winners."
    )),
    Diagnosis("max_tie_not_split", "every tied max gets all of g", ("reductions",), (
        "Where several entries tie for the max, each of them gets the whole gradient, so a row with two"
        " winners passes on 2 g instead of g. The task splits g equally between the tied entries: "
        "dx_i = g * [x_i == z] / (number of i with x_i == z). Look at the count in that line."
    )),
    Diagnosis("max_ties_counted_over_array", "the ties are counted over the whole array, not per row",
              ("reductions",), (
        "Your backward divides by the number of winners in the whole array, where each reduced row "
        "(each slice along dim) has its own: dx_i = g * [x_i == z] / (number of i in the same slice with "
        "x_i == z). Where no value ties, that count is 1 per slice, and yours is the number of slices, "
        "so every gradient comes out that many times too small. Look at the axis of the sum that counts "
        "the winners (it runs over dim, keeping it)."
    )),
    # ------------------------------------------------------------------ layer_norm_backward
    Diagnosis("layer_norm_no_w", "dx of layer norm leaves out the factor w", ("layer_norm_backward",), (
        "Your dx is what the layer-norm backward gives when w is all ones: the gradient reaching x_hat "
        "is gx = g * w, since y = x_hat * w + b, and your dx is built from g itself. dw and db are "
        "right. Look at which gradient enters the three-term line dx = (gx - mean(gx) - x_hat * "
        "mean(gx * x_hat)) / sigma."
    )),
    # ------------------------------------------------------------------ linear_layer
    Diagnosis("linear_weight_layout", "the weight is stored as (in_features, out_features)",
              ("linear_layer",), (
        "Your weight has the shape (in_features, out_features), where PyTorch's Linear (and the state "
        "dicts, the optimizers and the other layers built on it) store it as (out_features, "
        "in_features): y = x W^T + b. Both layouts compute a product, but a saved model or a "
        "checkpoint with the other layout does not load. Look at the shape you give the weight and "
        "at the product in forward."
    )),
    Diagnosis("linear_init_scale", "the initial values have the wrong scale", ("linear_layer",), (
        "Your initial values are uniform and centred, but over the wrong interval (its bound is "
        "printed above): the task's bound is 1/sqrt(in_features) for both the weight and the bias. "
        "A product of in_features terms grows with sqrt(in_features), and this bound keeps y's "
        "variance about that of x. Look at the number you multiply the draws by."
    )),
    Diagnosis("linear_init_not_centred", "the initial values are not centred on 0", ("linear_layer",), (
        "Your initial values all lie on one side of 0 (their mean is far from 0): mg.rand draws from "
        "[0, 1), and the task's interval is [-1/sqrt(in_features), 1/sqrt(in_features)], centred on 0."
        " Look at how the draw in [0, 1) is mapped onto that interval."
    )),
    Diagnosis("linear_init_not_mg_generator", "the initial values do not come from minigrad's generator",
              ("linear_layer",), (
        "mg.manual_seed does not decide your initial values: the same seed gives different layers, "
        "or different seeds give the same one, so the values come from another generator (numpy's "
        "np.random, or one seeded inside __init__). A model built after mg.manual_seed(s) must be "
        "the same every time, and a different s must give a different model. Look at which "
        "function draws the values."
    )),
    Diagnosis("linear_bias_missing", "the bias is not added (or not created)", ("linear_layer",), (
        "Your layer computes x W^T without the bias: with bias=True the output misses b, or self.bias "
        "is not a Parameter, so the bias never gets a gradient and never learns. Look at "
        "y = x W^T + b in forward, and at what __init__ assigns to self.bias."
    )),
    # ------------------------------------------------------------------ encoder_layer
    Diagnosis("encoder_no_relu", "the MLP has no ReLU between its two linears", ("encoder_layer",), (
        "Your output is what the layer gives when the MLP is linear2(linear1(Z)), with no ReLU between"
        " them. Two linear maps in a row are one linear map, so the MLP adds nothing a single Linear "
        "could not. Look at the line MLP(Z) = linear2(relu(linear1(Z)))."
    )),
    Diagnosis("encoder_norm_used_twice", "one layer norm is used in both places", ("encoder_layer",), (
        "Your output is what the layer gives with one LayerNorm in both places: the forward calls one "
        "norm twice, so the other gets no gradient and never learns, and the one used twice learns "
        "for both places. Each "
        "sub-layer has its own norm: Z = LN1(X + MHA(X)), then X~ = LN2(Z + MLP(Z)). Look at which "
        "norm each line calls."
    )),
    Diagnosis("encoder_mask_ignored", "the mask does not reach the attention", ("encoder_layer",), (
        "With a causal mask your output equals the layer's output without any mask: the mask is not "
        "passed on to self-attention, so every position attends to every other, later ones included. "
        "Look at the call of self.self_attn(x, x, x, mask=mask, need_weights=False)[0]."
    )),
]
