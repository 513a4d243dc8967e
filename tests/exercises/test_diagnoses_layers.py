"""The broadcasting, matmul, reduction, layer-norm, Linear and encoder mistakes: for each code, a
wrong student file the grader must fail with exactly that code (the WRONG table the catalogue
test reads), and the forward worked case of a Linear without its bias. The right bodies here are
also the starting point of test_checks_layers.py's files."""

import pytest
from test_exercise_diagnoses import DIV, MUL, SUM_TO_SHAPE
from wrongfile import assert_names_exactly, failed, student_file, wrong_cases

from minigrad.exercises import grade

# ----------------------------------------------------------------------------- right bodies
MUL_BROADCAST = [SUM_TO_SHAPE, MUL, DIV]
MATMUL = "return unbroadcast(g @ b.swapaxes(-1, -2), a.shape), unbroadcast(a.swapaxes(-1, -2) @ g, b.shape)"
EXPAND = "g = g if ctx.keepdim else np.expand_dims(g, ctx.dim)\n"
SUM = EXPAND + "return np.broadcast_to(g, ctx.shape)"
MEAN = SUM + " / ctx.shape[ctx.dim]"
MAX = EXPAND + "win = x == z\nreturn g * win / win.sum(axis=ctx.dim, keepdims=True)"
REDUCTIONS = [SUM, MEAN, MAX]
LAYER_NORM = """lead = tuple(range(g.ndim - 1))
gx = g * w
dx = (gx - gx.mean(axis=-1, keepdims=True) - x_hat * (gx * x_hat).mean(axis=-1, keepdims=True)) / sigma
return dx, (g * x_hat).sum(axis=lead), g.sum(axis=lead)"""
INIT = """bound = 1 / math.sqrt(in_features)
self.weight = Parameter((mg.rand(out_features, in_features) * 2 - 1) * bound)
self.bias = Parameter((mg.rand(out_features) * 2 - 1) * bound) if bias else None"""
FORWARD = """y = x @ self.weight.transpose(0, 1)
return y + self.bias if self.bias is not None else y"""
LINEAR = [INIT, FORWARD]
LAYER = """z = self.norm1(x + self.self_attn(x, x, x, mask=mask, need_weights=False)[0])
return self.norm2(z + self.linear2(self.linear1(z).relu()))"""
RIGHT = {"mul_broadcast": MUL_BROADCAST, "matmul_backward": MATMUL, "reductions": REDUCTIONS,
         "layer_norm_backward": LAYER_NORM, "linear_layer": LINEAR, "encoder_layer": LAYER}

# ----------------------------------------------------------------------------- wrong bodies
# sum_to_shape taking the extra axes off the right end (the shapes lined up from the left)
SUM_TRAILING = """while grad.ndim > len(shape):
    grad = grad.sum(axis=-1)
for i, n in enumerate(shape):
    if n == 1:
        grad = grad.sum(axis=i, keepdims=True)
return grad"""
W_DRAW = "(mg.rand(out_features, in_features) * 2 - 1) * bound"
B_DRAW = "Parameter((mg.rand(out_features) * 2 - 1) * bound)"
NUMPY_DRAW = "mg.tensor(np.random.uniform(-bound, bound, (out_features, in_features)))"


def linear(old: str = "", new: str = "", forward: str = FORWARD) -> list[str]:
    return [INIT.replace(old, new) if old else INIT, forward]


WRONG = [
    # task, expected code, the bodies that replace the stub's `raise NotImplementedError` lines
    ("mul_broadcast", "unbroadcast_trailing_axes", [SUM_TRAILING, MUL, DIV]),
    ("mul_broadcast", "swapped_grads",  # db before da
     [SUM_TO_SHAPE, "return sum_to_shape(g * a, b.shape), sum_to_shape(g * b, a.shape)", DIV]),
    ("mul_broadcast", "swapped_grads",
     [SUM_TO_SHAPE, MUL, "return sum_to_shape(-g * a / b**2, b.shape), sum_to_shape(g / b, a.shape)"]),
    ("matmul_backward", "matmul_no_transpose",
     "return unbroadcast(g @ b, a.shape), unbroadcast(a @ g, b.shape)"),
    ("matmul_backward", "matmul_no_transpose",
     "return unbroadcast(g @ b, a.shape), unbroadcast(a.swapaxes(-1, -2) @ g, b.shape)"),
    ("matmul_backward", "swapped_grads",  # db before da
     "return unbroadcast(a.swapaxes(-1, -2) @ g, b.shape), unbroadcast(g @ b.swapaxes(-1, -2), a.shape)"),
    ("reductions", "reduced_axis_not_restored", [SUM, MEAN.replace(EXPAND, ""), MAX]),
    ("reductions", "reduced_axis_not_restored", [SUM.replace(EXPAND, ""), MEAN, MAX]),
    ("reductions", "reduced_axis_not_restored", [SUM, MEAN, MAX.replace(EXPAND, "")]),
    ("reductions", "max_tie_to_first",  # argmax picks one winner
     [SUM, MEAN, EXPAND + "dx = np.zeros_like(x)\n"
      "np.put_along_axis(dx, np.expand_dims(x.argmax(axis=ctx.dim), ctx.dim), g, axis=ctx.dim)\nreturn dx"]),
    ("reductions", "max_tie_not_split", [SUM, MEAN, EXPAND + "return g * (x == z)"]),
    ("layer_norm_backward", "layer_norm_no_w", LAYER_NORM.replace("gx = g * w", "gx = g")),
    ("linear_layer", "linear_weight_layout",
     linear("mg.rand(out_features, in_features)", "mg.rand(in_features, out_features)",
            FORWARD.replace("self.weight.transpose(0, 1)", "self.weight"))),
    ("linear_layer", "linear_init_scale", linear("1 / math.sqrt(in_features)", "1 / in_features")),
    ("linear_layer", "linear_init_scale",  # Glorot's bound
     linear("1 / math.sqrt(in_features)", "math.sqrt(6 / (in_features + out_features))")),
    ("linear_layer", "linear_init_scale",  # the bias alone
     linear(B_DRAW, "Parameter((mg.rand(out_features) * 2 - 1) / math.sqrt(out_features))")),
    ("linear_layer", "linear_init_not_centred", linear(B_DRAW, "Parameter(mg.rand(out_features) * bound)")),
    ("linear_layer", "linear_init_not_centred", linear(W_DRAW, "mg.rand(out_features, in_features) * bound")),
    ("linear_layer", "linear_init_not_mg_generator",
     ["import numpy as np\n" + INIT.replace(W_DRAW, NUMPY_DRAW), FORWARD]),
    ("linear_layer", "linear_init_not_mg_generator",  # a generator of its own, seeded in __init__
     ["import numpy as np\nrng = np.random.default_rng(0)\n"
      + INIT.replace(W_DRAW, NUMPY_DRAW.replace("np.random", "rng")), FORWARD]),
    ("linear_layer", "linear_bias_missing", linear(forward="return x @ self.weight.transpose(0, 1)")),
    ("linear_layer", "linear_bias_missing", linear(f"{B_DRAW} if bias else None", "None")),
    ("encoder_layer", "encoder_no_relu", LAYER.replace("self.linear1(z).relu()", "self.linear1(z)")),
    ("encoder_layer", "encoder_norm_used_twice", LAYER.replace("self.norm2(", "self.norm1(")),
    ("encoder_layer", "encoder_norm_used_twice", LAYER.replace("self.norm1(", "self.norm2(")),
    ("encoder_layer", "encoder_mask_ignored", LAYER.replace(", mask=mask", "")),
]


@pytest.mark.parametrize("task, code, body", wrong_cases(WRONG))
def test_the_grader_names_exactly_the_mistake(tmp_path, task, code, body):
    assert_names_exactly(grade(task, student_file(tmp_path, task, body)), code)


@pytest.mark.parametrize("task", sorted(RIGHT))
def test_the_right_bodies_pass(tmp_path, task):
    report = grade(task, student_file(tmp_path, task, RIGHT[task]))
    assert report.passed, report.text()


def test_a_failing_forward_shows_the_inputs_yours_the_reference_and_the_difference(tmp_path):
    body = linear(forward="return x @ self.weight.transpose(0, 1)")
    report = grade("linear_layer", student_file(tmp_path, "linear_layer", body))
    assert failed(report)[0] == "forward: x W^T + b"
    text = report.text()
    assert "worked case (Linear(3, 4), x (2, 3)):" in text
    head = text[text.index("worked case (Linear"):].splitlines()[1]
    assert head.split() == ["x", "weight", "bias"]
    assert all(w in text for w in ("yours", "reference", "difference"))
    assert "it is x W^T, without b" in text


def test_an_unused_norm_is_named_with_its_parameters(tmp_path):
    body = LAYER.replace("self.norm2(", "self.norm1(")
    report = grade("encoder_layer", student_file(tmp_path, "encoder_layer", body))
    check = next(c for c in report.checks if c.name == "parameter gradients match the reference")
    assert not check.passed
    assert check.message == "no gradient reaches norm2.weight, norm2.bias: nothing in the forward uses them"


def test_the_order_swap_says_which_gradient_went_where(tmp_path):
    body = "return unbroadcast(a.swapaxes(-1, -2) @ g, b.shape), unbroadcast(g @ b.swapaxes(-1, -2), a.shape)"
    report = grade("matmul_backward", student_file(tmp_path, "matmul_backward", body))
    worked = report.checks[2]
    assert worked.name == "gradients on the worked case match the reference" and not worked.passed
    assert worked.message == ("the gradient for a has shape (3, 2, 2), but a has shape (2, 1, 2, 2) "
                              "(db where da belongs, and da for b)")
