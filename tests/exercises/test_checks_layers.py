"""The grader's checks of mul_broadcast, matmul_backward, reductions, layer_norm_backward,
linear_layer and encoder_layer, one by one: for every check a realistic wrong file that fails it,
with the exact list of the checks that file fails (so a check made to always pass, or to fail
more often, breaks a row), and every tolerance pinned by a file just inside it (passes) and one
just outside it (fails): a result off by 0.1x the tolerance and one off by 10x."""

from pathlib import Path

import pytest
from test_diagnoses_layers import (
    B_DRAW,
    DIV,
    EXPAND,
    FORWARD,
    INIT,
    LAYER,
    LAYER_NORM,
    MATMUL,
    MAX,
    MEAN,
    MUL,
    MUL_BROADCAST,
    REDUCTIONS,
    RIGHT,
    SUM,
    SUM_TO_SHAPE,
    W_DRAW,
    WRONG,
    linear,
)
from wrongfile import assert_fails_exactly, edited_file

from minigrad.exercises import TASKS, grade
from minigrad.exercises.instructor import check_names

W, G, C = ("gradients on the worked case match the reference", "gradcheck (finite differences",
           "gradients match the reference on random shapes")
GRADIENTS = (W, G, C)
INIT_W, INIT_B = ("initialisation: uniform in +-1/sqrt(in_features): the weight",
                  "initialisation: uniform in +-1/sqrt(in_features): the bias")
GENERATOR, PARAMETERS = "initialisation: from mg's generator", "weight and bias are Parameters"
EQUIVARIANCE, PARAMETER_GRADS = "permutation equivariance", "parameter gradients match"


def on(op: str, *checks: str) -> tuple[str, ...]:
    return tuple(f"{op}: {c}" for c in checks)


def wrong(task: str, code: str) -> object:
    """The body of the WRONG row (test_diagnoses_layers.py) of this task and code."""
    return next(body for t, c, body in WRONG if (t, c) == (task, code))


UNBROADCAST = "from minigrad import unbroadcast\nreturn "
LIBRARY_UNBROADCAST = [UNBROADCAST + "unbroadcast(g * b, a.shape), unbroadcast(g * a, b.shape)",
                       UNBROADCAST + "unbroadcast(g / b, a.shape), unbroadcast(-g * a / b**2, b.shape)"]
SUM_RESULT = "grad.sum(axis=axes, keepdims=True) if axes else grad"
MEAN_FORWARD = "x.mean(axis=dim, keepdims=keepdim)"
DA = "g @ b.swapaxes(-1, -2)"
BIAS_DRAW = "* 2 - 1) * bound) if"


def folded(part: int) -> list[str]:
    """The right Linear with the weight's rows out_features // part made positive: the mean moves
    by bound / (2 part), the std hardly (the values stay within the bound)."""
    fold = (f"w = ({W_DRAW}).numpy()\nw[: out_features // {part}] = abs(w[: out_features // {part}])\n"
            "self.weight = Parameter(mg.tensor(w))")
    return linear(f"self.weight = Parameter({W_DRAW})", fold)


def bias_times(factor: str) -> list[str]:
    """The right Linear with its bias draws multiplied by `factor`."""
    return linear(BIAS_DRAW, BIAS_DRAW.replace("bound)", f"bound * {factor})"))
LAST = "return self.norm2(z + self.linear2(self.linear1(z).relu()))"


def times(factor: str, text: str, what: str) -> str:
    """`text` with the expression `what` multiplied by `factor`."""
    assert what in text
    return text.replace(what, f"({what}) * {factor}")


# id, task, the bodies, edits of the given code (old, new), the checks it fails (name prefixes),
# the diagnosis (None: not asserted)
ROWS = [
    # ------------------------------------------------------------------ mul_broadcast
    ("mul-forward-edited", "mul_broadcast", MUL_BROADCAST, [("return a / b", "return b / a")],
     ("forward", "Div: gradcheck"), None),
    ("mul-forward-inside", "mul_broadcast", MUL_BROADCAST, [("return a * b", "return a * b * (1 + 1e-6)")],
     (), []),
    ("mul-forward-outside", "mul_broadcast", MUL_BROADCAST, [("return a * b", "return a * b * (1 + 1e-4)")],
     ("forward",), []),
    ("sum_to_shape-alone", "mul_broadcast",  # the backwards use the library's unbroadcast
     [SUM_TO_SHAPE.replace("keepdims=True", "keepdims=False"), *LIBRARY_UNBROADCAST], [], ("sum_to_shape",),
     ["not_unbroadcast"]),
    ("sum_to_shape-inside", "mul_broadcast",
     [times("(1 + 1e-6)", SUM_TO_SHAPE, SUM_RESULT), *LIBRARY_UNBROADCAST], [], (), []),
    ("sum_to_shape-outside", "mul_broadcast",
     [times("(1 + 1e-4)", SUM_TO_SHAPE, SUM_RESULT), *LIBRARY_UNBROADCAST], [], ("sum_to_shape",), []),
    ("mul-g-ignored", "mul_broadcast", [SUM_TO_SHAPE, MUL.replace("g * ", "0 * g + "), DIV], [],
     on("Mul", *GRADIENTS), ["ignores_upstream_grad"]),
    ("div-sign", "mul_broadcast", [SUM_TO_SHAPE, MUL, DIV.replace("-g", "g")], [], on("Div", *GRADIENTS),
     ["sign_error"]),
    # compare's rtol 1e-5 (worked case and random shapes), gradcheck's rtol 1e-3, the factor threshold 1e-3
    ("mul-da-inside", "mul_broadcast", [SUM_TO_SHAPE, times("(1 + 1e-6)", MUL, "g * b"), DIV], [], (), []),
    ("mul-da-outside-compare", "mul_broadcast", [SUM_TO_SHAPE, times("(1 + 1e-4)", MUL, "g * b"), DIV], [],
     on("Mul", W, C), []),
    ("mul-da-outside-gradcheck", "mul_broadcast", [SUM_TO_SHAPE, times("(1 + 1e-2)", MUL, "g * b"), DIV], [],
     on("Mul", *GRADIENTS), ["factor_error"]),
    ("div-db-inside", "mul_broadcast", [SUM_TO_SHAPE, MUL, times("(1 + 1e-6)", DIV, "-g * a / b**2")], [], (),
     []),
    ("div-db-outside-compare", "mul_broadcast",
     [SUM_TO_SHAPE, MUL, times("(1 + 1e-4)", DIV, "-g * a / b**2")], [], on("Div", W, C), []),
    ("div-db-outside-gradcheck", "mul_broadcast",
     [SUM_TO_SHAPE, MUL, times("(1 + 1e-2)", DIV, "-g * a / b**2")], [], on("Div", *GRADIENTS),
     ["factor_error"]),
    # ------------------------------------------------------------------ matmul_backward
    ("matmul-forward-np.dot", "matmul_backward", MATMUL,  # np.dot contracts batched arrays differently
     [("return a @ b", "return np.dot(a, b)"),
      ("from minigrad import", "import numpy as np\nfrom minigrad import")],
     ("forward", *GRADIENTS), None),
    ("matmul-forward-inside", "matmul_backward", MATMUL, [("return a @ b", "return (a @ b) * (1 + 1e-6)")],
     (), []),
    ("matmul-forward-outside", "matmul_backward", MATMUL, [("return a @ b", "return (a @ b) * (1 + 1e-4)")],
     ("forward",), []),
    ("matmul-no-transpose", "matmul_backward", wrong("matmul_backward", "matmul_no_transpose"), [], GRADIENTS,
     ["matmul_no_transpose"]),
    ("matmul-da-inside", "matmul_backward", times("(1 + 1e-6)", MATMUL, DA), [], (), []),
    ("matmul-da-outside-compare", "matmul_backward", times("(1 + 1e-4)", MATMUL, DA), [], (W, C), []),
    ("matmul-da-outside-gradcheck", "matmul_backward", times("(1 + 1e-2)", MATMUL, DA), [], GRADIENTS,
     ["factor_error"]),
    # ------------------------------------------------------------------ reductions
    ("reductions-forward-keepdim", "reductions", REDUCTIONS,
     [("return x.sum(axis=dim, keepdims=keepdim)", "return x.sum(axis=dim, keepdims=True)")],
     ("forward", *on("Sum", *GRADIENTS)), None),
    ("reductions-forward-inside", "reductions", REDUCTIONS,
     [(MEAN_FORWARD, f"{MEAN_FORWARD} * (1 + 1e-6)")], (), []),
    ("reductions-forward-outside", "reductions", REDUCTIONS,
     [(MEAN_FORWARD, f"{MEAN_FORWARD} * (1 + 1e-4)")], ("forward",), []),
    ("sum-g-ignored", "reductions", [SUM.replace("(g, ctx.shape)", "(g * 0 + 1, ctx.shape)"), MEAN, MAX], [],
     on("Sum", *GRADIENTS), ["ignores_upstream_grad"]),
    ("mean-no-division", "reductions", [SUM, MEAN.replace(" / ctx.shape[ctx.dim]", ""), MAX], [],
     on("Mean", *GRADIENTS), ["factor_error"]),
    ("mean-axis-not-restored", "reductions", [SUM, MEAN.replace(EXPAND, ""), MAX], [], on("Mean", G, C),
     ["reduced_axis_not_restored"]),
    ("max-sign", "reductions", [SUM, MEAN, MAX.replace("return g", "return -g")], [], on("Max", *GRADIENTS),
     ["sign_error"]),
    ("max-tie-to-first", "reductions", wrong("reductions", "max_tie_to_first"), [], on("Max", W),
     ["max_tie_to_first"]),
    ("mean-inside", "reductions", [SUM, MEAN + " * (1 + 1e-6)", MAX], [], (), []),
    ("mean-outside-compare", "reductions", [SUM, MEAN + " * (1 + 1e-4)", MAX], [], on("Mean", W, C), []),
    ("mean-outside-gradcheck", "reductions", [SUM, MEAN + " * (1 + 1e-2)", MAX], [], on("Mean", *GRADIENTS),
     ["factor_error"]),
    # ------------------------------------------------------------------ layer_norm_backward
    ("layer-norm-forward-ddof", "layer_norm_backward", LAYER_NORM,
     [("((x - mu) ** 2).mean(axis=-1, keepdims=True)", "x.var(axis=-1, ddof=1, keepdims=True)")],
     ("forward", *GRADIENTS), None),
    ("layer-norm-forward-inside", "layer_norm_backward", LAYER_NORM,  # its rtol is 1e-8
     [("return x_hat * w + b", "return (x_hat * w + b) * (1 + 1e-10)")], (), []),
    ("layer-norm-forward-outside", "layer_norm_backward", LAYER_NORM,
     [("return x_hat * w + b", "return (x_hat * w + b) * (1 + 1e-6)")], ("forward",), []),
    ("layer-norm-no-w", "layer_norm_backward", LAYER_NORM.replace("gx = g * w", "gx = g"), [], GRADIENTS,
     ["layer_norm_no_w"]),
    ("layer-norm-dx-inside", "layer_norm_backward",
     LAYER_NORM.replace("return dx,", "return dx * (1 + 1e-6),"), [], (), []),
    ("layer-norm-dx-outside-compare", "layer_norm_backward",
     LAYER_NORM.replace("return dx,", "return dx * (1 + 1e-4),"), [], (W, C), []),
    ("layer-norm-dx-outside-gradcheck", "layer_norm_backward",
     LAYER_NORM.replace("return dx,", "return dx * (1 + 1e-2),"), [], GRADIENTS, ["factor_error"]),
    # ------------------------------------------------------------------ linear_layer
    ("linear-layout", "linear_layer", wrong("linear_layer", "linear_weight_layout"), [],
     (PARAMETERS, "forward", *GRADIENTS), ["linear_weight_layout"]),
    ("linear-no-bias-parameter", "linear_layer", linear(f"{B_DRAW} if bias else None", "None"), [],
     (PARAMETERS, INIT_B), ["linear_bias_missing"]),
    ("linear-weight-not-centred", "linear_layer",
     linear(W_DRAW, "mg.rand(out_features, in_features) * bound"), [], (INIT_W,),
     ["linear_init_not_centred"]),
    ("linear-bias-scale", "linear_layer",
     linear(B_DRAW, "Parameter((mg.rand(out_features) * 2 - 1) / math.sqrt(out_features))"), [], (INIT_B,),
     ["linear_init_scale"]),
    ("linear-weight-normal", "linear_layer", linear(W_DRAW, "mg.randn(out_features, in_features) * bound"),
     [], (INIT_W,), []),  # not uniform: no scale is named
    ("linear-numpy", "linear_layer", wrong("linear_layer", "linear_init_not_mg_generator"), [], (GENERATOR,),
     ["linear_init_not_mg_generator"]),
    ("linear-forward-no-bias", "linear_layer", linear(forward="return x @ self.weight.transpose(0, 1)"), [],
     ("forward", W, C), ["linear_bias_missing"]),
    ("linear-forward-on-data", "linear_layer",  # the graph is cut: the values are right, no gradient flows
     linear(forward="return Tensor(x.numpy() @ self.weight.numpy().T + self.bias.numpy())"),
     [("import math", "from minigrad import Tensor\nimport math")], ("forward", *GRADIENTS), None),
    ("linear-forward-inside", "linear_layer", linear(forward=times("(1 + 1e-6)", FORWARD, "y + self.bias")),
     [], (), []),
    ("linear-forward-outside", "linear_layer", linear(forward=times("(1 + 1e-4)", FORWARD, "y + self.bias")),
     [], ("forward", W, C), []),
    # the init tolerances: the std within 3%, the values within the bound, the mean within 0.03 bound
    ("linear-weight-std-inside", "linear_layer", linear(W_DRAW, W_DRAW + " * 0.99"), [], (), []),
    ("linear-weight-std-outside", "linear_layer", linear(W_DRAW, W_DRAW + " * 0.95"), [], (INIT_W,),
     ["linear_init_scale"]),
    ("linear-weight-bound-inside", "linear_layer", linear(W_DRAW, W_DRAW + " * 0.9999"), [], (), []),
    ("linear-weight-bound-outside", "linear_layer", linear(W_DRAW, W_DRAW + " * 1.001"), [], (INIT_W,),
     ["linear_init_scale"]),
    ("linear-weight-mean-inside", "linear_layer", folded(50), [], (), []),  # mean 0.01 bound
    ("linear-weight-mean-outside", "linear_layer", folded(10), [], (INIT_W,), []),  # 0.05 bound
    ("linear-bias-std-inside", "linear_layer", bias_times("0.99"), [], (), []),
    ("linear-bias-std-outside", "linear_layer", bias_times("0.95"), [], (INIT_B,), ["linear_init_scale"]),
    ("linear-bias-bound-inside", "linear_layer", bias_times("0.9999"), [], (), []),
    ("linear-bias-bound-outside", "linear_layer", bias_times("1.001"), [], (INIT_B,), ["linear_init_scale"]),
    # ------------------------------------------------------------------ encoder_layer
    ("encoder-no-relu", "encoder_layer", wrong("encoder_layer", "encoder_no_relu"), [],
     ("forward", PARAMETER_GRADS, W, C), ["encoder_no_relu"]),
    ("encoder-causal-by-default", "encoder_layer",  # a mask of its own when none is given
     "import numpy as np\nif mask is None:\n    mask = Tensor(np.tri(x.shape[1], dtype=bool))\n" + LAYER, [],
     ("forward", EQUIVARIANCE, PARAMETER_GRADS, W), None),
    ("encoder-mlp-input-detached", "encoder_layer",  # the same numbers, a cut graph
     LAYER.replace("self.linear1(z).relu()", "self.linear1(z.detach()).relu()"), [],
     (PARAMETER_GRADS, *GRADIENTS), None),
    ("encoder-mask-ignored", "encoder_layer", wrong("encoder_layer", "encoder_mask_ignored"), [],
     ("forward", C), ["encoder_mask_ignored"]),
    ("encoder-inside", "encoder_layer", LAYER.replace(LAST, times("(1 + 1e-6)", LAST, LAST[7:])), [], (), []),
    ("encoder-outside", "encoder_layer", LAYER.replace(LAST, times("(1 + 1e-4)", LAST, LAST[7:])), [],
     ("forward", PARAMETER_GRADS, W, C), []),
]


@pytest.mark.parametrize("task, body, edits, fails, codes", [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_each_check_fails_exactly_the_files_it_should(tmp_path, task, body, edits, fails, codes):
    assert_fails_exactly(grade(task, edited_file(tmp_path, task, body, edits)), fails, codes)


@pytest.mark.parametrize("task", sorted(RIGHT))
def test_every_check_has_a_row_that_fails_it(task):
    names = check_names(TASKS[task])
    hit = {n for r in ROWS if r[1] == task for f in r[4] for n in names if n.startswith(f)}
    assert hit == set(names), set(names) - hit
    assert any(r[1] == task and r[4] == () for r in ROWS)  # and a file just inside every tolerance passes


@pytest.mark.parametrize("task", sorted(RIGHT))
def test_the_correct_files_pass_every_check(task):
    correct = Path(__file__).parent / "correct" / f"{task}.py"
    report = grade(task, str(correct))
    assert report.passed and [c.name for c in report.checks][1:] == check_names(TASKS[task])


def test_the_init_statistics_do_not_depend_on_the_order_of_the_draws(tmp_path):
    # The bias drawn before the weight gets other numbers from the generator: still inside every tolerance.
    body = linear(INIT.split("\n", 1)[1], "\n".join(reversed(INIT.split("\n")[1:])))
    assert body[0].index("self.bias") < body[0].index("self.weight")
    report = grade("linear_layer", edited_file(tmp_path, "linear_layer", body, []))
    assert report.passed, report.text()


def test_the_mean_tolerance_is_what_fails_a_shifted_weight(tmp_path):
    report = grade("linear_layer", edited_file(tmp_path, "linear_layer", folded(10), []))
    check = next(c for c in report.checks if c.name == INIT_W)
    assert not check.passed and "has mean 0" in check.message
    assert check.message.startswith("weight: mean 0.00")
