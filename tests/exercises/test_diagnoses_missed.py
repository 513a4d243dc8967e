"""The mistakes the grader missed on a fresh hidden set (issue 34, section 5): for each kind a
wrong student file that today's grader passed, or named the wrong mistake for, and that it now
fails with the right code (or, where no code fits, fails)."""

import sys

import numpy as np
import pytest
from test_diagnoses_attention import ATTEND, MERGE, SPLIT, forward
from test_exercise_diagnoses import ADDITIVE, ATTENTION, ENGINE_BACKWARD, EXPAND, LAYER_NORM, MAX, MEAN, SUM
from wrongfile import assert_names_exactly, failed, student_file, wrong_cases

from minigrad.exercises import grade
from minigrad.exercises.diagnose import generic_mistakes, match

# multi_head: k and v split with the query's length T (right only where Tq = Tk)
KV_SPLIT_WITH_TQ = """B, T, C = q.shape
H, D = num_heads, C // num_heads
qh, kh, vh = (t.reshape(B, T, H, D).transpose(1, 2) for t in (q, k, v))
return merge_heads(F.scaled_dot_product_attention(qh, kh, vh, mask=mask))"""
# softmax_backward: the result computed in the saved weights (the output's rows then sum to 0)
SOFTMAX_IN_SAVED = "a *= g - (g * a).sum(axis=-1, keepdims=True)\nreturn a"
# linear_layer: a weight of the right shape (out, in), read as (in, out) in the forward
LINEAR_INIT = """bound = 1 / math.sqrt(in_features)
self.weight = Parameter((mg.rand(out_features, in_features) * 2 - 1) * bound)
self.bias = Parameter((mg.rand(out_features) * 2 - 1) * bound) if bias else None"""
LINEAR_RESHAPED = ("y = x @ self.weight.reshape(self.in_features, self.out_features)\n"
                   "return y + self.bias if self.bias is not None else y")
# reductions: the reduced axis put back although keepdim=True kept it
TWICE = "g = np.expand_dims(g, ctx.dim)\nreturn g * np.ones(ctx.shape)"
# a softmax written out, the row max subtracted: a row with every key masked is -inf - (-inf)
OWN_SOFTMAX_MAX = "e = (s - s.amax(dim=-1, keepdim=True)).exp()\nreturn e / e.sum(dim=-1, keepdim=True) @ v"
ROWS = "(g.size // g.shape[-1])"

WRONG = [
    # a) k and v split with the queries' length Tq (right only where Tq = Tk)
    ("multi_head", "kv_split_with_query_length", [SPLIT, MERGE, KV_SPLIT_WITH_TQ]),
    # a) a scale of 1/sqrt(H), right only where H = D
    ("multi_head", "scale_wrong_d",
     [SPLIT, MERGE, ATTEND.replace("mask=mask)", "mask=mask, scale=num_heads ** -0.5)")]),
    # b) a backward that writes into the array its forward returned and saved
    ("softmax_backward", "modifies_saved_in_place", SOFTMAX_IN_SAVED),
    ("layer_norm_backward", "modifies_saved_in_place",
     LAYER_NORM.replace("lead = tuple", "sigma **= -1  # saved: then a product\nlead = tuple")
     .replace(") / sigma", ") * sigma")),
    # c) constant factors on two gradients at once, each with its ratio
    ("attention_backward", "factor_error", ATTENTION.replace("* ctx.c", "/ ctx.c") + "return dq, dk, dv"),
    ("layer_norm_backward", "factor_error",
     LAYER_NORM.replace("(g * x_hat).sum(axis=lead), g.sum(axis=lead)",
                        f"(g * x_hat).sum(axis=lead) / {ROWS}, g.sum(axis=lead) / {ROWS}")),
    # d) a tie count over the whole array: a constant factor only where nothing ties
    ("reductions", "max_ties_counted_over_array",
     [SUM, MEAN, EXPAND + "win = x == z\nreturn g * win / win.sum()"]),
    # e) the reduced axis put back twice with keepdim=True
    ("reductions", "reduced_axis_restored_twice", [SUM, TWICE + " / ctx.shape[ctx.dim]", MAX]),
    ("reductions", "reduced_axis_restored_twice", [TWICE, MEAN, MAX]),
    # f) a query with no allowed key gets nan from a softmax written out
    ("additive_attention", "masked_row_nan",
     ADDITIVE.replace("a = e.softmax(dim=-1)", "ex = (e - e.amax(dim=-1, keepdim=True)).exp()\n"
                      "a = ex / ex.sum(dim=-1, keepdim=True)")),
    ("attention_forward", "masked_row_nan",
     forward().replace("return s.softmax(dim=-1) @ v", OWN_SOFTMAX_MAX)),
    # g) a recursive walk that raises the recursion limit itself, at import or in the call
    ("backprop_engine", "recursion_too_deep",
     ["import sys\nsys.setrecursionlimit(10**6)\norder, seen = [], set()\n\ndef visit(node):\n"
      "    if id(node) not in seen:\n        seen.add(id(node))\n        for p in node.parents:\n"
      "            visit(p)\n        order.append(node)\n\nvisit(root)\nreturn order[::-1]",
      ENGINE_BACKWARD]),
]


@pytest.fixture(autouse=True)
def _recursion_limit():
    """A submission may raise the recursion limit: put it back after each test."""
    limit = sys.getrecursionlimit()
    yield
    sys.setrecursionlimit(limit)


@pytest.mark.parametrize("task, code, body", wrong_cases(WRONG))
def test_the_grader_names_exactly_the_mistake(tmp_path, task, code, body):
    assert_names_exactly(grade(task, student_file(tmp_path, task, body)), code)


def test_k_and_v_split_with_the_querys_length_fail(tmp_path):
    report = grade("multi_head", student_file(tmp_path, "multi_head", [SPLIT, MERGE, KV_SPLIT_WITH_TQ]))
    assert "multi_head_attention matches the reference" in failed(report), report.text()
    assert not report.passed and not report.not_implemented


def test_a_softmax_backward_in_the_saved_weights_says_which_array_changed(tmp_path):
    report = grade("softmax_backward", student_file(tmp_path, "softmax_backward", SOFTMAX_IN_SAVED))
    assert "the output your forward returned (also Softmax's ctx.saved[0])" in report.text()


def test_each_factor_is_printed(tmp_path):
    body = ATTENTION.replace("* ctx.c", "/ ctx.c") + "return dq, dk, dv"
    report = grade("attention_backward", student_file(tmp_path, "attention_backward", body))
    assert "(q: factor 3, k: factor 3)" in report.text()


def test_factors_on_two_gradients_are_found_one_gradient_at_a_time():
    rng = np.random.default_rng(0)
    ref = {n: rng.normal(size=(3, 2)) for n in "abc"}
    got = {"a": 2 * ref["a"], "b": ref["b"] / 5, "c": ref["c"]}
    found = match(got, ref, generic_mistakes(ref, None, got))
    assert found is not None and found.code == "factor_error" and found.note == "a: factor 2, b: factor 0.2"


def test_a_weight_whose_shape_passed_is_not_named_stored_the_wrong_way_round(tmp_path):
    report = grade("linear_layer", student_file(tmp_path, "linear_layer", [LINEAR_INIT, LINEAR_RESHAPED]))
    assert "weight and bias are Parameters of the right shapes" not in failed(report)
    assert failed(report) and "linear_weight_layout" not in report.diagnosis, report.text()


def test_the_deep_check_fails_recursion_whatever_the_limit(tmp_path):
    """The limit raised inside the call (not at import) is caught too, and the grader's own
    profile function (none, or a coverage tool's) is put back."""
    body = ("import sys\nsys.setrecursionlimit(50_000)\norder, seen = [], set()\n\ndef visit(node):\n"
            "    if id(node) not in seen:\n        seen.add(id(node))\n        for p in node.parents:\n"
            "            visit(p)\n        order.append(node)\n\nvisit(root)\nreturn order[::-1]")
    before = sys.getprofile()
    report = grade("backprop_engine", student_file(tmp_path, "backprop_engine", [body, ENGINE_BACKWARD]))
    assert sys.getprofile() is before
    assert report.diagnosis == ["recursion_too_deep"], report.text()
    assert "nested 2002 Python calls" in report.text()


def test_k_and_v_split_with_the_querys_length_say_both_lengths(tmp_path):
    report = grade("multi_head", student_file(tmp_path, "multi_head", [SPLIT, MERGE, KV_SPLIT_WITH_TQ]))
    assert "reshaped with the queries' length Tq = 5, not its own Tk = 6" in report.text()
