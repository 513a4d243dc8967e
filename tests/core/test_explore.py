"""`minigrad.viz.explore`: the page's data against `trace_backward` (order, gradients, fan-out sums),
the lecture's worked example, a tiny GPT folded by modules, a student's own op, escaping, errors;
and the values of a fused kernel's steps in `draw_graph(expand_fused=True, show_values=True)`.
(The page itself, in a browser: test_explore_browser.py.)"""

from __future__ import annotations

import html
import importlib.util
import json
import math
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.viz import draw_graph, explore, trace_backward

# The lecture's worked example: three tokens, d_k = 2 (tutorial 02, the notes' slide).
KEYS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0]])
VALUES = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def worked_example():
    """softmax(Q K^T / sqrt(d_k)) V with Q = K, composed from Tensor ops, every step named."""
    Q = mg.tensor(KEYS, requires_grad=True, name="Q")
    K = mg.tensor(KEYS, requires_grad=True, name="K")
    V = mg.tensor(VALUES, requires_grad=True, name="V")
    scores = Q @ K.T / math.sqrt(2)
    scores.name = "scores"
    weights = scores.softmax(dim=-1)
    weights.name = "weights"
    out = weights @ V
    out.name = "output"
    return (out * out).sum(), (Q, K, V)  # out * out: the output is used twice


def tensor_named(page, name):
    return next(t for t in page.data["tensors"] if t["label"] == name)


def rounded(a):
    return [float(f"{x:.4g}") for x in np.ravel(a)]


def test_the_worked_example_shows_the_notes_numbers():
    loss, _ = worked_example()
    page = explore(loss)
    assert np.allclose(tensor_named(page, "scores")["data"]["v"][:3], [1.414, 0, 0])
    weights = tensor_named(page, "weights")["data"]
    assert weights["shape"] == [3, 3]
    assert np.round(weights["v"][:3], 2).tolist() == [0.67, 0.16, 0.16]
    assert np.round(tensor_named(page, "output")["data"]["v"][:2], 3).tolist() == [0.836, 0.327]
    assert [m for m in page.data["modules"]] == []  # no module: every op shown


def test_steps_are_the_traces_in_the_engines_order():
    loss, leaves = worked_example()
    page = explore(loss)
    again, _ = worked_example()
    reference = trace_backward(again, max_values=64)  # an independent trace of the same graph
    steps = page.data["steps"]
    assert [s["name"] for s in steps] == [s.op for s in reference] == [s.op for s in page.trace]
    for shown, step, ours in zip(steps, reference, page.trace):
        assert shown["op"] == page.node_id(ours.node)
        assert np.allclose(shown["grad"]["v"], rounded(step.grad_values), rtol=1e-3, atol=1e-7)
        assert [g["index"] for g in shown["sent"]] == [g.index for g in step.sent]
        for g, ref in zip(shown["sent"], step.sent):
            assert np.allclose(g["grad"]["v"], rounded(ref.values), rtol=1e-3, atol=1e-7)
    assert all(t.grad is not None for t in leaves)  # explore ran the backward


def test_a_tensor_used_twice_shows_each_gradient_and_their_sum():
    loss, _ = worked_example()
    page = explore(loss)
    mul = next(s for s in page.data["steps"] if s["name"] == "Mul")
    first, second = mul["sent"]  # out * out sends to `output` twice
    assert first["to"] == second["to"] == tensor_named(page, "output")["id"]
    assert (first["part"], second["part"], first["parts"]) == (1, 2, 2)
    out = tensor_named(page, "output")["data"]["v"]
    assert np.allclose(first["total"]["v"], out, rtol=1e-3)  # d(out^2)/d(out) = out + out
    assert np.allclose(second["total"]["v"], 2 * np.array(out), rtol=1e-3)
    matmul = next(s for s in page.data["steps"] if s["out"] == first["to"])
    assert np.allclose(matmul["grad"]["v"], second["total"]["v"])  # what the next step receives


@given(st.integers(1, 4), st.floats(-3, 3))
def test_a_diamond_sums_to_2x_plus_1(n, value):
    x = mg.tensor(np.full(n, value), requires_grad=True, name="x")
    page = explore((x * x + x).sum())
    received = tensor_named(page, "x")["contribs"]
    assert len(received) == 3  # twice from the Mul, once from the Add
    assert np.allclose(received[-1]["total"]["v"], rounded(2 * x.numpy() + 1), rtol=1e-3, atol=1e-6)
    assert np.allclose(x.grad, 2 * x.numpy() + 1)


def test_a_tiny_gpt_is_folded_by_its_modules_and_stays_small():
    from minigrad.models.gpt import GPT, PRESETS, GPTConfig

    mg.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=16, **PRESETS["tiny"]))
    idx = mg.tensor(np.random.default_rng(0).integers(0, 16, (2, 9)))
    page = explore(model.loss(idx[:, :-1], idx[:, 1:]), model=model)
    modules = {m["label"]: m for m in page.data["modules"]}
    assert modules["GPT"]["open"] and not modules["blocks.0 (Block)"]["open"]  # depth=1
    assert not any(m["open"] for m in modules.values() if m["label"] != "GPT")
    assert modules["blocks.0.attn (MultiheadAttention)"]["parent"] == modules["blocks.0 (Block)"]["id"]
    params = {t["label"]: t for t in page.data["tensors"] if t["kind"] == "param"}
    out_proj = modules["blocks.0.attn.out_proj (Linear)"]["id"]
    assert params["blocks.0.attn.out_proj.weight"]["mods"][-1] == out_proj  # a parameter sits in its module
    assert {s["name"] for s in page.data["steps"]} >= {"CrossEntropy", "PackedAttention", "LayerNormOp"}
    big = next(s for s in page.data["steps"] if s["name"] == "CrossEntropy")["sent"][0]["grad"]
    assert "v" not in big and {"min", "max", "mean", "norm"} <= set(big)  # a large gradient: statistics
    assert len(page.html) < 120_000
    assert explore(model.loss(idx[:, :-1], idx[:, 1:]), model=model, depth=None).data["modules"][1]["open"]


def test_a_students_own_op_from_the_exercises():
    path = pathlib.Path(__file__).parents[1] / "exercises" / "correct" / "softmax_backward.py"
    spec = importlib.util.spec_from_file_location("student_softmax", path)
    student = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(student)
    s = mg.tensor([[1.0, 2.0, 0.5]], requires_grad=True, name="s")
    g = mg.tensor([[1.0, -1.0, 2.0]])
    page = explore((student.Softmax.apply(s) * g).sum())
    step = next(x for x in page.data["steps"] if x["name"] == "Softmax")
    a = student.Softmax.apply(mg.tensor(s.numpy())).numpy()
    expected = a * (g.numpy() - (g.numpy() * a).sum(-1, keepdims=True))  # ds = a * (g - rowsum(g * a))
    assert np.allclose(step["sent"][0]["grad"]["v"], rounded(expected), rtol=1e-3)
    assert step["sent"][0]["to_label"] == "s"


def test_names_from_user_code_are_escaped():
    evil = '</script><img src=x onerror="alert(1)">&amp;'
    x = mg.tensor([1.0, 2.0], requires_grad=True, name=evil)
    page = explore((x * 2).sum())
    text = page.html
    assert "<img" not in text and "</script><img" not in text
    blob = re.search(r'id="minigrad-data">(.*?)</script>', text, re.S).group(1)
    assert tensor_named(page, evil)["label"] == evil
    assert any(t["label"] == evil for t in json.loads(blob)["tensors"])
    frame = page._repr_html_()
    assert frame.startswith("<iframe srcdoc=\"") and html.unescape(frame.split('"')[1]) == text


def test_the_page_fetches_nothing_and_saves(tmp_path):
    loss, _ = worked_example()
    page = explore(loss)
    text = page.html
    assert "https://" not in text and not re.search(r"\b(src|href)\s*=", text)
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # the SVG namespace only
    path = page.save(tmp_path / "page.html")
    assert pathlib.Path(path).read_text(encoding="utf-8") == text
    assert "7 ops" in repr(page) and "7 backward steps" in repr(page)


def test_a_given_trace_is_used_as_it_is():
    x = mg.tensor([1.0, -2.0], requires_grad=True)
    y = (x * x).sum()
    trace = trace_backward(y, max_values=64)
    page = explore(y, trace=trace)
    assert page.trace is trace and len(page.data["steps"]) == 2
    assert page.node_id(trace[0].node) == page.data["steps"][0]["op"]
    with pytest.raises(KeyError, match="not in this page's graph"):
        page.node_id(mg.tensor([1.0]))


def test_errors_name_explore_and_the_fix():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="explore: output must be a Tensor"):
        explore([x])
    with pytest.raises(ValueError, match="explore: depth must be None or an integer >= 0"):
        explore(x.sum(), depth=-1)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="explore: the graph of this output was freed"):
        explore(y)
    other = (x * 3).sum()
    with pytest.raises(ValueError, match="trace= must be the trace of this output"):
        explore(other, trace=trace_backward((x * 2).sum()))


def test_a_leaf_output_and_nan_gradients():
    x = mg.tensor([1.5], requires_grad=True, name="x")
    alone = explore(x)  # no op: one tensor, no step
    assert alone.data["steps"] == [] and alone.data["tensors"][0]["kind"] == "output"
    assert x.grad.tolist() == [1.0]
    z = mg.tensor([0.0, 1.0], requires_grad=True)
    with np.errstate(all="ignore"):
        page = explore((z.log() * 0).sum())  # 0 * -inf: the log sends NaN back to z
    sent = page.data["steps"][-1]["sent"][0]["grad"]["v"]
    assert "nan" in sent and json.loads(json.dumps(page.data, allow_nan=False))


# ----------------------------------------------------------------------------- draw_graph's fix


def three_token_attention():
    q = mg.tensor(KEYS, requires_grad=True, name="Q")
    k = mg.tensor(KEYS, requires_grad=True, name="K")
    v = mg.tensor(VALUES, requires_grad=True, name="V")
    return q, k, v


def test_expanded_attention_shows_the_weights_values_after_backward():
    q, k, v = three_token_attention()
    loss = F.scaled_dot_product_attention(q, k, v).sum()
    loss.backward()  # the kernel keeps no intermediate: the drawing recomputes them from q, k, v
    source = draw_graph(loss, expand_fused=True, show_values=True).source
    assert 'weights\\n(3, 3) float64\\ndata [0.6728, 0.1636, 0.1636]\\n[0.1867, 0.7679, 0.04539]' in source
    assert "scores\\n(3, 3) float64\\ndata [1.414, 0, 0]" in source
    assert "q k^T\\n(3, 3) float64\\ndata [2, 0, 0]" in source
    auto = draw_graph(loss, expand_fused=True).source  # "auto": only up to 4 elements
    assert 'weights\\n(3, 3) float64"' in auto


def test_expanded_multihead_attention_shows_the_weights_it_returns():
    mg.manual_seed(0)
    attn = nn.MultiheadAttention(2, 1)
    x = mg.randn(1, 3, 2)
    out, _ = attn(x, x, x, need_weights=False)
    out.backward(mg.tensor(np.random.default_rng(1).normal(size=out.shape).astype(np.float32)))
    source = draw_graph(out, model=attn, expand_fused=True, show_values=True).source
    _, weights = attn(x, x, x, need_weights=True)
    row = "[" + ", ".join(f"{w:.4g}" for w in weights.numpy()[0, 0]) + "]"
    assert f"weights\\n(1, 1, 3, 3) float32\\ndata {row}" in source


def test_expanded_masked_attention_shows_the_masked_weights():
    q, k, v = three_token_attention()
    loss = F.scaled_dot_product_attention(q, k, v, is_causal=True).sum()
    _, weights = F.scaled_dot_product_attention(q, k, v, is_causal=True, need_weights=True)
    source = draw_graph(loss, expand_fused=True, show_values=True).source
    assert "scores\\n(3, 3) float64\\ndata [1.414" in source  # before the mask
    row = "[" + ", ".join(f"{w:.4g}" for w in weights.numpy()[1]) + "]"
    assert f"weights\\n(3, 3) float64\\ndata [1, 0, 0]\\n{row}" in source  # after it


def test_a_large_mask_is_not_kept_and_the_weights_are_left_out():
    from minigrad.nn.attention import helpers

    q = mg.tensor(np.random.default_rng(0).normal(size=(3, 2)), requires_grad=True)
    mask = mg.tensor(np.tri(3, dtype=bool))
    saved = helpers.SMALL_MASK
    helpers.SMALL_MASK = 4  # the 9 entries of this mask count as large
    try:
        loss = F.scaled_dot_product_attention(q, q, q, mask=mask).sum()
    finally:
        helpers.SMALL_MASK = saved
    source = draw_graph(loss, expand_fused=True, show_values=True).source
    assert "scores\\n(3, 3) float64\\ndata [" in source and 'weights\\n(3, 3) float64"' in source


def test_expanded_attention_with_a_float_mask_adds_it_and_prints_no_nan():
    q, k, v = three_token_attention()
    bias = mg.tensor(np.where(np.tril(np.ones((3, 3))) > 0, 0.0, -np.inf))  # causal, as an added mask
    loss = F.scaled_dot_product_attention(q, k, v, mask=bias).sum()
    source = draw_graph(loss, expand_fused=True, show_values=True).source
    assert "scores + bias\\n(3, 3) float64\\ndata [1.414, -inf, -inf]" in source
    assert "weights\\n(3, 3) float64\\ndata [1, 0, 0]" in source and "nan" not in source


def test_a_fused_kernel_lists_its_steps_with_the_weights():
    q, k, v = three_token_attention()
    page = explore(F.scaled_dot_product_attention(q, k, v).sum())
    (attention,) = [op for op in page.data["ops"] if op["name"] == "Attention"]
    inside = {st["result"]: st for st in attention["inside"]}
    assert [st["op"] for st in attention["inside"]][2] == "Softmax over keys"
    assert np.round(inside["weights"]["values"]["v"][:3], 2).tolist() == [0.67, 0.16, 0.16]
    assert inside["attention output"]["values"] is None  # the kernel's output is a tensor of its own
    assert all(op["inside"] is None for op in page.data["ops"] if op["name"] != "Attention")
