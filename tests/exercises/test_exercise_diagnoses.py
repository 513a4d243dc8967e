"""For every diagnosis code, a deliberately wrong student file (the stub with its
`raise NotImplementedError` replaced by a wrong body): the grader must fail it and return
exactly that code, and no other."""


import pytest
from wrongfile import assert_names_exactly, student_file, wrong_cases

from minigrad.exercises import grade

SOFTMAX = "a * (g - (g * a).sum(axis=-1, keepdims=True))"
ATTENTION = """da = g @ v.swapaxes(-1, -2)
ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
dq, dk, dv = ds @ k * ctx.c, ds.swapaxes(-1, -2) @ q * ctx.c, a.swapaxes(-1, -2) @ g
"""


def forward(scores: str, after: str = "") -> str:
    return (f"s = {scores}\nif mask is not None:\n    s = s.masked_fill(~mask, {after or '-math.inf'})\n"
            "return s.softmax(dim=-1) @ v")


SCALED = "q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"

WRONG = [
    # task, expected code, the body that replaces `raise NotImplementedError`
    ("softmax_backward", "missing_rowsum_term", "return g * a"),
    ("softmax_backward", "rowsum_wrong_axis", "return a * (g - (g * a).sum(axis=-2, keepdims=True))"),
    ("softmax_backward", "ignores_upstream_grad", "return a * (1 - a.sum(axis=-1, keepdims=True))"),
    ("softmax_backward", "sign_error", f"return -{SOFTMAX}"),
    ("softmax_backward", "factor_error", f"return 0.5 * {SOFTMAX}"),
    ("softmax_backward", "transposed_grad", f"return ({SOFTMAX}).swapaxes(-1, -2)"),
    ("attention_backward", "missing_rowsum_term",
     ATTENTION.replace("(da - (da * a).sum(axis=-1, keepdims=True))", "da") + "return dq, dk, dv"),
    ("attention_backward", "rowsum_wrong_axis",  # keepdims lost
     ATTENTION.replace("keepdims=True)", ")") + "return dq, dk, dv"),
    ("attention_backward", "transposed_grad", ATTENTION + "return dq, dk.swapaxes(-1, -2), dv"),
    ("attention_backward", "transposed_grad",  # dS^T and dS exchanged (square: same shapes)
     ATTENTION + "return ds.swapaxes(-1, -2) @ k * ctx.c, ds @ q * ctx.c, dv"),
    ("attention_backward", "transposed_grad",  # dK = (dS Q)^T: the shapes agree when square
     ATTENTION + "return dq, (ds @ q * ctx.c).swapaxes(-1, -2), dv"),
    ("attention_backward", "swapped_grads", ATTENTION + "return dk, dq, dv"),
    ("attention_backward", "missing_scale", ATTENTION + "return dq / ctx.c, dk / ctx.c, dv"),
    ("attention_backward", "wrong_scale", ATTENTION + "return dq * ctx.c, dk * ctx.c, dv"),
    ("attention_backward", "ignores_upstream_grad",
     ATTENTION.replace("@ g\n", "@ np.ones_like(g)\n") + "return dq, dk, dv"),
    ("attention_backward", "sign_error", ATTENTION + "return dq, dk, -dv"),
    ("attention_backward", "factor_error", ATTENTION + "return dq, dk, 2 * dv"),
    ("attention_forward", "missing_scale", forward("q @ k.transpose(-2, -1)")),
    ("attention_forward", "wrong_scale", forward("q @ k.transpose(-2, -1) / q.shape[-1]")),
    ("attention_forward", "mask_not_minus_inf", forward(SCALED, after="0.0")),
    ("attention_forward", "mask_not_minus_inf", forward(SCALED, after="-10.0")),
    ("attention_forward", "mask_after_softmax",
     f"a = ({SCALED}).softmax(dim=-1)\nif mask is not None:\n    a = a.masked_fill(~mask, 0.0)\n"
     "return a @ v"),
]
SUM_TO_SHAPE = """lead = len(grad.shape) - len(shape)
grad = grad.sum(axis=tuple(range(lead))) if lead else grad
axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
return grad.sum(axis=axes, keepdims=True) if axes else grad"""
MUL = "return sum_to_shape(g * b, a.shape), sum_to_shape(g * a, b.shape)"
DIV = "return sum_to_shape(g / b, a.shape), sum_to_shape(-g * a / b**2, b.shape)"
WRONG += [
    ("mul_broadcast", "not_unbroadcast", [SUM_TO_SHAPE, "return g * b, g * a", DIV]),
    ("mul_broadcast", "not_unbroadcast", [SUM_TO_SHAPE.replace("keepdims=True", "keepdims=False"), MUL, DIV]),
    ("mul_broadcast", "swapped_grads",
     [SUM_TO_SHAPE, "return sum_to_shape(g * a, a.shape), sum_to_shape(g * b, b.shape)", DIV]),
    ("mul_broadcast", "sign_error", [SUM_TO_SHAPE, MUL, DIV.replace("-g", "g")]),
    ("mul_broadcast", "ignores_upstream_grad", [SUM_TO_SHAPE, MUL.replace("g * ", "0 * g + "), DIV]),
]
LAYER_NORM = """lead = tuple(range(g.ndim - 1))
gx = g * w
dx = (gx - gx.mean(axis=-1, keepdims=True) - x_hat * (gx * x_hat).mean(axis=-1, keepdims=True)) / sigma
return dx, (g * x_hat).sum(axis=lead), g.sum(axis=lead)"""
WRONG += [
    ("layer_norm_backward", "layer_norm_missing_term",
     LAYER_NORM.replace("gx - gx.mean(axis=-1, keepdims=True) - ", "gx - ")),
    ("layer_norm_backward", "layer_norm_missing_term",
     LAYER_NORM.replace(" - x_hat * (gx * x_hat).mean(axis=-1, keepdims=True)", "")),
    ("layer_norm_backward", "not_unbroadcast",
     LAYER_NORM.replace("(g * x_hat).sum(axis=lead), g.sum(axis=lead)", "g * x_hat, g")),
    ("layer_norm_backward", "sign_error", LAYER_NORM.replace("return dx,", "return -dx,")),
    ("layer_norm_backward", "ignores_upstream_grad", LAYER_NORM.replace("gx = g * w", "gx = w + 0 * g")),
]
MATMUL = "return unbroadcast(g @ b.swapaxes(-1, -2), a.shape), unbroadcast(a.swapaxes(-1, -2) @ g, b.shape)"
WRONG += [
    ("matmul_backward", "not_unbroadcast", "return g @ b.swapaxes(-1, -2), a.swapaxes(-1, -2) @ g"),
    ("matmul_backward", "transposed_grad",
     MATMUL.replace("(a.swapaxes(-1, -2) @ g, b.shape)",
                    "((a.swapaxes(-1, -2) @ g).swapaxes(-1, -2), b.shape)")),
    ("matmul_backward", "swapped_grads",
     "return unbroadcast(g @ a.swapaxes(-1, -2), a.shape), unbroadcast(b.swapaxes(-1, -2) @ g, b.shape)"),
    ("matmul_backward", "ignores_upstream_grad", "g = g * 0 + 1\n" + MATMUL),
]
EXPAND = "g = g if ctx.keepdim else np.expand_dims(g, ctx.dim)\n"
SUM = EXPAND + "return np.broadcast_to(g, ctx.shape)"
MEAN = SUM + " / ctx.shape[ctx.dim]"
MAX = EXPAND + "win = x == z\nreturn g * win / win.sum(axis=ctx.dim, keepdims=True)"
WRONG += [
    ("reductions", "factor_error", [SUM, MEAN.replace(" / ctx.shape[ctx.dim]", ""), MAX]),
    ("reductions", "ignores_upstream_grad",
     [SUM.replace("(g, ctx.shape)", "(g * 0 + 1, ctx.shape)"), MEAN, MAX]),
    ("reductions", "sign_error", [SUM, MEAN, MAX.replace("return g", "return -g")]),
]
CE_FORWARD = """m = x.max(axis=-1, keepdims=True)
logp = x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
ctx.save_for_backward(logp, t)
return -logp[np.arange(len(t)), t].mean()"""
CE_BACKWARD = """logp, t = ctx.saved
dx = np.exp(logp)
dx[np.arange(len(t)), t] -= 1
return g * dx / len(t), None"""
WRONG += [
    ("cross_entropy", "factor_error", [CE_FORWARD, CE_BACKWARD.replace(" / len(t)", "")]),
    ("cross_entropy", "factor_error", [CE_FORWARD.replace(".mean()", ".sum()"), CE_BACKWARD]),
    ("cross_entropy", "sign_error", [CE_FORWARD, CE_BACKWARD.replace("g * dx", "-g * dx")]),
    ("cross_entropy", "ignores_upstream_grad", [CE_FORWARD, CE_BACKWARD.replace("g * dx", "dx")]),
]
SPLIT = "B, T, C = x.shape\nreturn x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)"
MERGE = "B, H, T, D = x.shape\nreturn x.transpose(1, 2).reshape(B, T, H * D)"
ATTEND = ("heads = [split_heads(t, num_heads) for t in (q, k, v)]\n"
          "return merge_heads(F.scaled_dot_product_attention(*heads, mask=mask))")
WRONG += [
    ("multi_head", "heads_merged_wrong",
     [SPLIT, "B, H, T, D = x.shape\nreturn x.reshape(B, T, H * D)", ATTEND]),
    ("multi_head", "heads_merged_wrong",
     ["B, T, C = x.shape\nreturn x.reshape(B, num_heads, T, C // num_heads)", MERGE, ATTEND]),
]
TABLE = """pos = np.arange(max_len)[:, None]
angle = pos / 10000 ** (np.arange(0, d, 2) / d)
pe = np.zeros((max_len, d))
pe[:, 0::2] = np.sin(angle)
pe[:, 1::2] = np.cos(angle[:, : d // 2])
return pe"""
ADD = "return x + Tensor(table[: x.shape[-2]])"
WRONG += [
    ("positional_encoding", "sin_cos_swapped",
     [TABLE.replace("pe[:, 0::2] = np.sin(angle)\npe[:, 1::2] = np.cos(angle[:, : d // 2])",
                    "pe[:, 0::2] = np.cos(angle)\npe[:, 1::2] = np.sin(angle[:, : d // 2])"), ADD]),
    ("positional_encoding", "wrong_frequency",  # i / d where 2i / d belongs
     [TABLE.replace("np.arange(0, d, 2) / d", "np.arange(d // 2 + d % 2) / d"), ADD]),
]
ADDITIVE = """q = (query @ w_q.transpose(0, 1)).unsqueeze(2)
k = (keys @ w_k.transpose(0, 1)).unsqueeze(1)
e = (q + k).tanh() @ v
if mask is not None:
    e = e.masked_fill(~mask, -math.inf)
a = e.softmax(dim=-1)
return a @ values, a"""
WRONG += [
    ("additive_attention", "mask_not_minus_inf", ADDITIVE.replace("-math.inf", "0.0")),
    ("additive_attention", "mask_after_softmax",
     ADDITIVE.replace("    e = e.masked_fill(~mask, -math.inf)\na = e.softmax(dim=-1)",
                      "    e = e.softmax(dim=-1).masked_fill(~mask, 0.0)\n"
                      "a = e if mask is not None else e.softmax(dim=-1)")),
]
LAYER = """z = self.norm1(x + self.self_attn(x, x, x, mask=mask, need_weights=False)[0])
return self.norm2(z + self.linear2(self.linear1(z).relu()))"""
WRONG += [
    ("encoder_layer", "pre_norm_not_post_norm", """h = self.norm1(x)
z = x + self.self_attn(h, h, h, mask=mask, need_weights=False)[0]
return z + self.linear2(self.linear1(self.norm2(z)).relu())"""),
    ("encoder_layer", "missing_residual", LAYER.replace("norm2(z + self.linear2", "norm2(self.linear2")),
]
CONV_FORWARD = """n, o = x.shape[0], w.shape[0]
cols, (ho, wo) = im2col(x, w.shape[2], w.shape[3], stride, padding)
ctx.save_for_backward(x, w, cols)
ctx.stride, ctx.padding = stride, padding
return (w.reshape(o, -1) @ cols + b[:, None]).reshape(n, o, ho, wo)"""
CONV_BACKWARD = """x, w, cols = ctx.saved
s, p = ctx.stride, ctx.padding
(n, c, h, wd), (o, _, kh, kw) = x.shape, w.shape
ho, wo = g.shape[2:]
g2 = g.reshape(n, o, -1)
d = (w.reshape(o, -1).T @ g2).reshape(n, c, kh, kw, ho, wo)
dx = np.zeros((n, c, h + 2 * p, wd + 2 * p))
for i in range(kh):
    for j in range(kw):
        dx[:, :, i:i + s * ho:s, j:j + s * wo:s] += d[:, :, i, j]
dw = (g2 @ cols.transpose(0, 2, 1)).sum(axis=0).reshape(w.shape)
return dx[:, :, p:p + h, p:p + wd], dw, g.sum(axis=(0, 2, 3))"""


def conv(backward: tuple[str, str] = ("", ""), forward: tuple[str, str] = ("", "")) -> list[str]:
    """The im2col forward and col2im backward with one replacement (old, new) in either."""
    return [CONV_FORWARD.replace(*forward) if forward[0] else CONV_FORWARD,
            CONV_BACKWARD.replace(*backward) if backward[0] else CONV_BACKWARD]


WRONG += [
    ("conv2d_backward", "kernel_flipped",
     conv(forward=("w.reshape(o, -1) @", "w[:, :, ::-1, ::-1].reshape(o, -1) @"))),
    ("conv2d_backward", "dw_not_summed_over_batch",
     conv((".sum(axis=0).reshape(w.shape)", ".reshape((n,) + w.shape)"))),
    ("conv2d_backward", "dw_not_summed_over_batch",
     conv((".sum(axis=0).reshape(", ".mean(axis=0).reshape("))),
    ("conv2d_backward", "dw_not_summed_over_batch",  # a loop over the batch that assigns dw
     conv(("dw = (g2 @ cols.transpose(0, 2, 1)).sum(axis=0).reshape(w.shape)",
           "for k in range(n):\n    dw = (g2[k] @ cols[k].T).reshape(w.shape)"))),
    ("conv2d_backward", "padding_cropped_wrong", conv(("dx[:, :, p:p + h, p:p + wd]", "dx"))),
    ("conv2d_backward", "padding_cropped_wrong",  # right for p = 1, empty for p = 0
     conv(("dx[:, :, p:p + h, p:p + wd]", "dx[:, :, p:-p, p:-p]"))),
    ("conv2d_backward", "padding_cropped_wrong",
     conv(("dx[:, :, p:p + h, p:p + wd]", "dx[:, :, p + 1:p + 1 + h, p + 1:p + 1 + wd]"))),
    ("conv2d_backward", "padding_cropped_wrong", conv(("dx[:, :, p:p + h, p:p + wd]", "dx[:, :, :h, :wd]"))),
    ("conv2d_backward", "stride_ignored_in_backward",
     conv(("dx[:, :, i:i + s * ho:s, j:j + s * wo:s]", "dx[:, :, i:i + ho, j:j + wo]"))),
    ("conv2d_backward", "db_not_summed_over_space", conv(("g.sum(axis=(0, 2, 3))", "g.sum(axis=0)"))),
    ("conv2d_backward", "db_not_summed_over_space",
     conv(("g.sum(axis=(0, 2, 3))", "g.mean(axis=(0, 2, 3))"))),
    ("conv2d_backward", "col2im_overwrites", conv(("] += d[:, :, i, j]", "] = d[:, :, i, j]"))),
]


WRONG += [  # right alone, wrong where the upstream gradient is shared: g is handed over read-only
    ("softmax_backward", "modifies_input_in_place",
     "g *= a\nreturn g - a * g.sum(axis=-1, keepdims=True)"),
]

ENGINE_ORDER = """order, seen, stack = [], set(), [(root, False)]
while stack:
    node, done = stack.pop()
    if done:
        order.append(node)
    elif id(node) not in seen:
        seen.add(id(node))
        stack.append((node, True))
        stack += [(p, False) for p in node.parents]
return order[::-1]"""
ENGINE_BACKWARD = """order = topological_order(root)
for node in order:
    if node.parents or node.grad is None:
        node.grad = np.zeros_like(node.data)
root.grad = np.ones_like(root.data)
for node in order:
    if node.parents:
        for p, gp in zip(node.parents, node.local_backward(node.grad)):
            p.grad = p.grad + gp"""
WRONG += [
    ("backprop_engine", "fanout_overwritten",
     [ENGINE_ORDER, ENGINE_BACKWARD.replace("p.grad = p.grad + gp", "p.grad = gp")]),
    ("backprop_engine", "visited_before_consumers",  # breadth first, no count of the consumers
     ["order, seen, queue = [], {id(root)}, [root]\nwhile queue:\n    node = queue.pop(0)\n"
      "    order.append(node)\n    for p in node.parents:\n        if id(p) not in seen:\n"
      "            seen.add(id(p))\n            queue.append(p)\nreturn order", ENGINE_BACKWARD]),
    ("backprop_engine", "visited_before_consumers",  # depth-first pre-order
     ["order, seen, stack = [], set(), [root]\nwhile stack:\n    node = stack.pop()\n"
      "    if id(node) in seen:\n        continue\n    seen.add(id(node))\n    order.append(node)\n"
      "    stack += node.parents\nreturn order", ENGINE_BACKWARD]),
    ("backprop_engine", "leaf_grads_not_accumulated",
     [ENGINE_ORDER, ENGINE_BACKWARD.replace("if node.parents or node.grad is None:", "if True:")]),
    ("backprop_engine", "recursion_too_deep",  # micrograd's recursive walk
     ["order, seen = [], set()\n\ndef visit(node):\n    if id(node) not in seen:\n"
      "        seen.add(id(node))\n        for p in node.parents:\n            visit(p)\n"
      "        order.append(node)\n\nvisit(root)\nreturn order[::-1]", ENGINE_BACKWARD]),
]


@pytest.mark.parametrize("task, code, body", wrong_cases(WRONG))
def test_the_grader_names_exactly_the_mistake(tmp_path, task, code, body):
    assert_names_exactly(grade(task, student_file(tmp_path, task, body)), code)


def test_the_worked_case_shows_analytic_numeric_and_difference(tmp_path):
    report = grade("softmax_backward", student_file(tmp_path, "softmax_backward", "return g * a"))
    text = report.text()
    assert "ds: yours (analytic)" in text and "numeric" in text and "difference" in text
    assert "differs from the reference at 9 of 9 elements" in text


def test_ignoring_g_is_right_under_sum_backward(tmp_path):
    # Why the grader's g is random: under out.sum().backward() (g = ones) the wrong file is right.
    import numpy as np

    import minigrad as mg
    import minigrad.nn.functional as F
    from minigrad.exercises.grader import load_file

    body = ATTENTION.replace("@ g\n", "@ np.ones_like(g)\n") + "return dq, dk, dv"
    wrong = load_file(student_file(tmp_path, "attention_backward", body))
    rng = np.random.default_rng(0)
    grads = []
    for op in (wrong.Attention, None):
        q, k, v = (mg.tensor(rng.normal(size=(3, 2)), requires_grad=True) for _ in range(3))
        rng = np.random.default_rng(0)
        out = op.apply(q, k, v) if op else F.scaled_dot_product_attention(q, k, v)
        out.sum().backward()
        grads.append(v.grad)
    assert np.allclose(grads[0], grads[1])


def test_an_engine_error_names_the_op_not_a_library_line(tmp_path):
    """dK = (dS Q)^T has the wrong shape when Tq != d: the engine's error names the op and the
    shapes, and the report does not point into minigrad's own files."""
    body = ATTENTION + "return dq, (ds @ q * ctx.c).swapaxes(-1, -2), dv"
    text = grade("attention_backward", student_file(tmp_path, "attention_backward", body)).text()
    assert "Attention.backward returned a gradient of shape" in text
    assert "autograd.py" not in text
