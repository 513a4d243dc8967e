"""The attention tasks' diagnoses (attention_forward, attention_backward, multi_head,
additive_attention): for every mistake a wrong student file, which the grader must fail with
exactly that code; and the forward's worked case shown beside a failing forward check."""

import pytest
from test_exercise_diagnoses import ADDITIVE
from wrongfile import assert_names_exactly, failed, student_file, wrong_cases

from minigrad.exercises import grade

SCALED = "q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"


def forward(scores: str = SCALED, fill: str = "-math.inf", inverted: bool = False) -> str:
    allowed = "mask" if inverted else "~mask"
    return (f"s = {scores}\nif mask is not None:\n    s = s.masked_fill({allowed}, {fill})\n"
            "return s.softmax(dim=-1) @ v")


# A softmax written out, without subtracting the row max: exp(1000) is inf, and inf / inf nan.
OWN_SOFTMAX = "e = s.exp()\nreturn e / e.sum(dim=-1, keepdim=True) @ v"

ATTENTION = """da = g @ v.swapaxes(-1, -2)
ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
dq, dk, dv = ds @ k * ctx.c, ds.swapaxes(-1, -2) @ q * ctx.c, a.swapaxes(-1, -2) @ g
"""
# The given forward "simplified": the row max no longer subtracted before exp.
NO_MAX = ("        m = s.max(axis=-1, keepdims=True)\n"
          "        m = np.where(np.isfinite(m), m, 0.0)  # a fully masked row: exp(-inf) = 0, not nan\n"
          "        e = np.exp(s - m)\n", "        e = np.exp(s)\n")

SPLIT = "B, T, C = x.shape\nreturn x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)"
MERGE = "B, H, T, D = x.shape\nreturn x.transpose(1, 2).reshape(B, T, H * D)"
ATTEND = ("heads = [split_heads(t, num_heads) for t in (q, k, v)]\n"
          "return merge_heads(F.scaled_dot_product_attention(*heads, mask=mask))")
STRIDED_SPLIT = "B, T, C = x.shape\nreturn x.reshape(B, T, C // num_heads, num_heads).permute(0, 3, 1, 2)"
STRIDED_MERGE = "B, H, T, D = x.shape\nreturn x.permute(0, 2, 3, 1).reshape(B, T, H * D)"
OWN_HEADS = """qh, kh, vh = (split_heads(t, num_heads) for t in (q, k, v))
s = qh @ kh.transpose(-2, -1) / qh.shape[-1] ** 0.5
if mask is not None:
    s = s.masked_fill(~mask, float("-inf"))
e = s.exp()
return merge_heads(e / e.sum(dim=-1, keepdim=True) @ vh)"""


# (task, code, body): body fills the stub's `raise NotImplementedError` lines (wrongfile.student_file);
# (body, (old, new)) also edits the stub's given code.
WRONG = [
    ("attention_forward", "mask_inverted", forward(inverted=True)),
    ("attention_forward", "mask_not_minus_inf", forward(fill="-1e9")),  # only the masked row shows it
    ("attention_forward", "mask_not_minus_inf", forward(fill="-5.0")),  # a fitted fill, not 0
    ("attention_forward", "scale_wrong_d", forward("q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])")),
    ("attention_forward", "scale_wrong_d", forward("q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])")),
    ("attention_forward", "attention_exp_overflows",
     forward().replace("return s.softmax(dim=-1) @ v", OWN_SOFTMAX)),
    ("attention_backward", "factor_error", ATTENTION + "return 2 * dq, dk, dv"),
    ("attention_backward", "factor_error", ATTENTION + "return dq, dk / 2, dv"),
    ("attention_backward", "grads_out_of_order", ATTENTION + "return dv, dq, dk"),
    ("attention_backward", "grads_out_of_order", ATTENTION + "return dk, dv, dq"),
    ("attention_backward", "scale_wrong_d",
     ATTENTION.replace("* ctx.c", "/ math.sqrt(v.shape[-1])") + "return dq, dk, dv"),
    ("attention_backward", "attention_exp_overflows", (ATTENTION + "return dq, dk, dv", NO_MAX)),
    ("multi_head", "heads_strided", [STRIDED_SPLIT, MERGE, ATTEND]),
    ("multi_head", "heads_strided", [STRIDED_SPLIT, STRIDED_MERGE, ATTEND]),
    ("multi_head", "heads_strided", [SPLIT, STRIDED_MERGE, ATTEND]),
    ("multi_head", "scale_wrong_d",  # the scale read from q (B, T, C) before the split
     [SPLIT, MERGE, ATTEND.replace("mask=mask)", "mask=mask, scale=q.shape[-1] ** -0.5)")]),
    ("multi_head", "attention_exp_overflows", [SPLIT, MERGE, OWN_HEADS]),
    ("additive_attention", "softmax_over_queries", ADDITIVE.replace("softmax(dim=-1)", "softmax(dim=1)")),
    ("additive_attention", "tanh_missing", ADDITIVE.replace("(q + k).tanh()", "(q + k)")),
    ("additive_attention", "pairs_not_broadcast",
     ADDITIVE.replace(".unsqueeze(2)", "").replace(".unsqueeze(1)", "")),
    ("additive_attention", "mask_inverted", ADDITIVE.replace("~mask", "mask")),
    ("additive_attention", "mask_not_minus_inf", ADDITIVE.replace("-math.inf", "-1e9")),
    ("additive_attention", "mask_not_minus_inf", ADDITIVE.replace("-math.inf", "-10.0")),
    ("additive_attention", "attention_exp_overflows",
     ADDITIVE.replace("a = e.softmax(dim=-1)", "ex = e.exp()\na = ex / ex.sum(dim=-1, keepdim=True)")),
]


def build(tmp_path, task, body) -> str:
    """The student file of a WRONG row (see the comment above WRONG)."""
    body, (old, new) = body if isinstance(body, tuple) else (body, ("", ""))
    path = student_file(tmp_path, task, body)
    if old:
        with open(path) as f:
            text = f.read()
        assert old in text, old
        with open(path, "w") as f:
            f.write(text.replace(old, new))
    return path


@pytest.mark.parametrize("task, code, body", wrong_cases(WRONG))
def test_the_grader_names_exactly_the_mistake(tmp_path, task, code, body):
    assert_names_exactly(grade(task, build(tmp_path, task, body)), code)


def test_a_large_finite_fill_fails_only_on_the_fully_masked_row(tmp_path):
    # The stub asks for -inf and says a row with no allowed key gives 0: -1e9 gives the mean of
    # the values there, and is right everywhere else.
    report = grade("attention_forward", build(tmp_path, "attention_forward", forward(fill="-1e9")))
    assert failed(report) == ["a query with no allowed key gives 0, not nan"]
    assert "the mean of the values" in report.text()


def test_a_failing_forward_shows_its_worked_case(tmp_path):
    body = forward("q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])")
    text = grade("attention_forward", build(tmp_path, "attention_forward", body)).text()
    assert "worked case (q (2, 3, 4), k (2, 5, 4), v (2, 5, 6)):" in text
    head = text.split("worked case", 1)[1].splitlines()
    assert any("yours" in line and "reference" in line and "difference" in line for line in head)


def test_a_failing_forward_shows_small_inputs(tmp_path):
    # The causal case's inputs are small (at most 16 numbers each): they are shown too.
    report = grade("attention_forward", build(tmp_path, "attention_forward", forward(inverted=True)))
    text = report.text()
    assert "worked case (causal mask (4, 4)):" in text
    inputs = text.split("worked case (causal mask (4, 4)):", 1)[1].splitlines()[1]
    assert all(name in inputs for name in ("q", "k", "v", "mask"))


def test_every_fitting_diagnosis_of_one_file_is_shown(tmp_path):
    # The scale read from v and a softmax without the row max: two mistakes, two diagnoses.
    body = forward("q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])").replace(
        "return s.softmax(dim=-1) @ v", OWN_SOFTMAX)
    report = grade("attention_forward", build(tmp_path, "attention_forward", body))
    assert report.diagnosis == ["scale_wrong_d", "attention_exp_overflows"], report.text()
    assert report.text().count("diagnosis: ") == 2


@pytest.mark.parametrize("ret, note", [("2 * dq, dk, dv", "(q: factor 2)"),
                                       ("dq, dk / 2, dv", "(k: factor 0.5)")])
def test_a_factor_on_one_gradient_names_the_gradient_and_the_factor(tmp_path, ret, note):
    report = grade("attention_backward", build(tmp_path, "attention_backward", ATTENTION + f"return {ret}"))
    assert report.diagnosis == ["factor_error"]
    assert note in report.checks[2].message, report.checks[2].message
