"""The attention tasks' checks, one by one (attention_forward, attention_backward, multi_head,
additive_attention): for every check a file that it fails, with the other checks' outcome as
stated, so that a check made to always pass (or a tolerance loosened) fails a test here. A
tolerance is pinned by two perturbed files, one 10x inside it (passes) and one 10x outside (fails).

A row: (body, the checks failed, each named by a part of its name). The bodies fill the stubs
(wrongfile.student_file); a (body, (old, new)) pair also edits the stub's given code."""

from pathlib import Path

import pytest
from test_diagnoses_attention import (
    ADDITIVE,
    ATTEND,
    ATTENTION,
    MERGE,
    NO_MAX,
    OWN_HEADS,
    OWN_SOFTMAX,
    SCALED,
    SPLIT,
    build,
    forward,
)
from wrongfile import failed

from minigrad.exercises import grade

CORRECT = Path(__file__).parent / "correct"

# ----------------------------------------------------------------------------- attention_forward
FORWARD = forward().replace("return s.softmax(dim=-1) @ v",
                            "out = s.softmax(dim=-1) @ v\n{extra}\nreturn out")
# q enters the graph scaled by 1 + d while its value stays q: only dq is off, by the factor 1 + d
GRAD_Q = "q = q * (1 + {d}) - q.detach() * {d}\n"
FULLY_MASKED = ("import numpy as np\nif mask is not None:\n"
                "    out = out + Tensor({d} * np.asarray(~mask.numpy()).all(axis=-1, keepdims=True))")


MASKED_ONLY = "if mask is not None and v.shape[-1] == 2 and q.shape[-1] > 2 and q.shape[-2] < 5:\n"
LEAKING = "if mask is not None and q.shape[-2] == 5:\n    out = out + {d} * v[..., -1:, :].sum()"


def fwd(extra: str = "", before: str = "") -> str:
    return before + FORWARD.format(extra=extra)


UNMASKED, MASKED = "forward without a mask", "with masks"
ROWS, LEAK, EMPTY = "the weights of each row", "causal mask:", "a query with no"
PERM, LARGE = "permutation", "large scores"
WORKED, GRADCHECK, CASES = "gradients on the worked", "gradcheck", "gradients match the reference on random"

ATTENTION_FORWARD = [
    (fwd(), []),
    # realistic mistakes, each failing the checks that see it
    (forward("q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])"), [UNMASKED, MASKED, CASES]),
    (f"a = ({SCALED}).softmax(dim=-1)\nif mask is not None:\n"
     "    a = a.masked_fill(~mask, 0.0)\nreturn a @ v", [MASKED, ROWS, LEAK, WORKED, CASES]),
    (forward(fill="-1e9"), [EMPTY]),
    (forward().replace("return s.softmax(dim=-1) @ v", OWN_SOFTMAX), [EMPTY, LARGE]),
    # forward tolerances (rtol 1e-9 on the output's scale)
    (fwd("if mask is None:\n    out = out * (1 + 1e-8)"), [UNMASKED, LARGE]),
    (fwd("if mask is None and float(abs(s.numpy()).max()) < 500:\n    out = out * (1 + 1e-8)"), [UNMASKED]),
    (fwd("if mask is None:\n    out = out * (1 + 1e-10)"), []),
    (fwd("if mask is not None:\n    out = out * (1 + 1e-8)"), [MASKED, ROWS]),
    (fwd(MASKED_ONLY + "    out = out * (1 + 1e-8)"), [MASKED]),
    (fwd("if v.shape[-1] == 1:  # only the row-sum check has v = 1\n    out = out * (1 + 1e-8)"), [ROWS]),
    (fwd("if v.shape[-1] == 1:\n    out = out * (1 + 1e-10)"), []),
    (fwd("if mask is not None:\n    out = out * (1 + 1e-10)"), []),
    (fwd("if float(abs(s.numpy()[np.isfinite(s.numpy())]).max()) > 500:\n    out = out * (1 + 1e-8)",
         "import numpy as np\n"), [LARGE]),
    (fwd("if float(abs(s.numpy()[np.isfinite(s.numpy())]).max()) > 500:\n    out = out * (1 + 1e-10)",
         "import numpy as np\n"), []),
    # the causal leak (1e-12): this perturbation leaks 2.79 d into tokens 0..2
    (fwd(LEAKING.format(d="3.6e-12")), [LEAK]),
    (fwd(LEAKING.format(d="3.6e-14")), []),
    # the fully masked row (1e-12)
    (fwd(FULLY_MASKED.format(d="1e-11")), [EMPTY]),
    (fwd(FULLY_MASKED.format(d="1e-13")), []),
    # equivariance (rtol 1e-9): this perturbation crosses it at d = 4.6e-9
    (fwd("if mask is None and tuple(q.shape) == (4, 3) and tuple(k.shape) == (5, 3):\n"
         "    out = out + 4.6e-8 * k[..., :1, :1]"), [PERM]),
    (fwd("if mask is None and tuple(q.shape) == (4, 3) and tuple(k.shape) == (5, 3):\n"
         "    out = out + 4.6e-10 * k[..., :1, :1]"), []),
    # the gradient comparisons (rtol 1e-5) and gradcheck (1e-5 + 1e-3 |numeric|)
    (fwd(before=GRAD_Q.format(d="1e-2")), [WORKED, GRADCHECK, CASES]),
    (fwd(before=GRAD_Q.format(d="1e-4")), [WORKED, CASES]),
    (fwd(before=GRAD_Q.format(d="1e-6")), []),
    (fwd(before="if tuple(q.shape) == (3, 3):\n    " + GRAD_Q.format(d="1e-4")), [WORKED]),
    (fwd(before="if q.ndim == 3:\n    " + GRAD_Q.format(d="1e-4")), [CASES]),
    (fwd(before="if q.ndim == 3:\n    " + GRAD_Q.format(d="1e-6")), []),
]

# ----------------------------------------------------------------------------- attention_backward
BACKWARD = ATTENTION + "return dq, dk, dv"
FORWARD_OUT = ("        return a @ v  # (..., Tq, dv)\n", "        return a @ v * (1 + {d})\n")


def scaled_output(d: str) -> tuple[str, tuple[str, str]]:
    return BACKWARD, (FORWARD_OUT[0], FORWARD_OUT[1].format(d=d))


BWD_FORWARD = "forward matches"
ATTENTION_BACKWARD = [
    (BACKWARD, []),
    ((BACKWARD, NO_MAX), [BWD_FORWARD, GRADCHECK, CASES]),
    (ATTENTION.replace("* ctx.c", "/ math.sqrt(v.shape[-1])") + "return dq, dk, dv", [GRADCHECK, CASES]),
    (ATTENTION + "return dv, dq, dk", [WORKED, GRADCHECK, CASES]),
    (scaled_output("1e-8"), [BWD_FORWARD]),  # np.allclose(rtol=1e-9, atol=1e-12)
    (scaled_output("1e-10"), []),
    (ATTENTION + "return dq * (1 + 1e-2), dk, dv", [WORKED, GRADCHECK, CASES]),
    (ATTENTION + "return dq * (1 + 1e-4), dk, dv", [WORKED, CASES]),
    (ATTENTION + "return dq * (1 + 1e-6), dk, dv", []),
    (ATTENTION + "return dq * (1 + (1e-4 if q.shape == (3, 3) else 0)), dk, dv", [WORKED]),
    (ATTENTION + "return dq * (1 + (1e-4 if q.shape != (3, 3) else 0)), dk, dv", [CASES]),
    (ATTENTION + "return dq * (1 + (1e-6 if q.shape != (3, 3) else 0)), dk, dv", []),
]

# ----------------------------------------------------------------------------- multi_head
SPLIT_CHECK, MERGE_CHECK = "split_heads:", "merge_heads:"
ATTEND_CHECK, OWN = "multi_head_attention matches", "each head"
STRIDED = "B, T, C = x.shape\nreturn x.reshape(B, T, C // num_heads, num_heads).permute(0, 3, 1, 2)"
OUT = "out = merge_heads(F.scaled_dot_product_attention(*heads, mask=mask))\n{extra}\nreturn out"
ATTEND_OUT = ATTEND.replace("return merge_heads(F.scaled_dot_product_attention(*heads, mask=mask))", OUT)


def heads(extra: str = "", before: str = "", split: str = SPLIT, merge: str = MERGE) -> list[str]:
    return [split, merge, before + ATTEND_OUT.format(extra=extra)]


APART = "if float(abs(q.numpy()).max()) < 10:\n    out = out + {d} * q[..., :1].sum()"
LARGE_Q = "if float(abs(q.numpy()).max()) > 10:\n    out = out * (1 + {d})"
MULTI_HEAD = [
    (heads(), []),
    (heads(split=STRIDED), [SPLIT_CHECK, MERGE_CHECK, ATTEND_CHECK, OWN, LARGE, WORKED, CASES]),
    ([SPLIT, "B, H, T, D = x.shape\nreturn x.reshape(B, T, H * D)", ATTEND],
     [MERGE_CHECK, ATTEND_CHECK, OWN, LARGE, WORKED, CASES]),
    ([SPLIT, MERGE, ATTEND.replace("mask=mask)", "mask=mask, scale=q.shape[-1] ** -0.5)")],
     [ATTEND_CHECK, LARGE, WORKED, CASES]),
    ([SPLIT, MERGE, OWN_HEADS], [LARGE]),
    # split and merge: close(rtol=1e-5)
    (heads(split=SPLIT + " * (1 + 1e-4)"), [SPLIT_CHECK, MERGE_CHECK, ATTEND_CHECK, LARGE, WORKED, CASES]),
    (heads(split=SPLIT + " * (1 + 1e-6)"), [ATTEND_CHECK, LARGE]),
    (heads(merge=MERGE + " * (1 + 1e-4)"), [MERGE_CHECK, ATTEND_CHECK, LARGE, WORKED, CASES]),
    (heads(merge=MERGE + " * (1 + 1e-6)"), [ATTEND_CHECK, LARGE]),
    # the output: close(rtol=1e-9)
    (heads("if float(abs(q.numpy()).max()) < 10:\n    out = out * (1 + 1e-8)"), [ATTEND_CHECK]),
    (heads("if float(abs(q.numpy()).max()) < 10:\n    out = out * (1 + 1e-10)"), []),
    (heads(LARGE_Q.format(d="1e-8")), [LARGE]),
    (heads(LARGE_Q.format(d="1e-10")), []),
    # heads kept apart: close(rtol=1e-9) on the other heads' features; this perturbation crosses it
    # at d = 1.1e-10 (at 3x that, only this check sees it)
    (heads(APART.format(d="1.1e-9")), [ATTEND_CHECK, OWN]),
    (heads(APART.format(d="3.3e-10")), [OWN]),
    (heads(APART.format(d="1.1e-11")), []),
    (heads(before=GRAD_Q.format(d="1e-2")), [WORKED, GRADCHECK, CASES]),
    (heads(before=GRAD_Q.format(d="1e-4")), [WORKED, CASES]),
    (heads(before=GRAD_Q.format(d="1e-6")), []),
    # the worked case has C = 10, the random shapes C < 10, the forward checks C = 12
    (heads(before="if q.shape[-1] == 10:\n    " + GRAD_Q.format(d="1e-4")), [WORKED]),
    (heads(before="if q.shape[-1] < 10:\n    " + GRAD_Q.format(d="1e-4")), [CASES]),
    (heads(before="if q.shape[-1] < 10:\n    " + GRAD_Q.format(d="1e-6")), []),
]

# ----------------------------------------------------------------------------- additive_attention
WEIGHTS_CHECK, MASKED_ROWS = "context and weights", "weights: rows sum to 1"
ADD_OUT = ADDITIVE.replace("return a @ values, a", "{extra}\nreturn a @ values, a")


def additive(extra: str = "", before: str = "") -> str:
    return before + ADD_OUT.format(extra=extra)


ALL_MASKED = ("import numpy as np\nif mask is not None:\n"
              "    a = a + Tensor({d} * np.asarray(~mask.numpy()).all(axis=-1, keepdims=True))")
WEIGHTS_ONLY = "context = a @ values\n" + ALL_MASKED + "\nreturn context, a"  # the context stays 0
CONTEXT_ONLY = ("import numpy as np\nc = a @ values\nif mask is not None:\n"  # the weights stay 0
                "    c = c + Tensor({d} * (~mask.numpy()).all(axis=-1, keepdims=True))\nreturn c, a")
LARGE_E = "if float(abs(e.numpy()[abs(e.numpy()) < 1e300]).max()) > 500:\n    a = a * (1 + {d})"
CONTEXT = "return (a @ values) * (1 + {d}), a"
GRAD_QUERY = "query = query * (1 + {d}) - query.detach() * {d}\n"
ADDITIVE_ATTENTION = [
    (additive(), []),
    (ADDITIVE.replace("(q + k).tanh()", "(q + k)"), [WEIGHTS_CHECK, WORKED, CASES]),
    (ADDITIVE.replace("softmax(dim=-1)", "softmax(dim=1)"),
     [WEIGHTS_CHECK, MASKED_ROWS, LARGE, WORKED, CASES]),
    (ADDITIVE.replace("-math.inf", "-1e9"), [EMPTY]),
    (ADDITIVE.replace("a = e.softmax(dim=-1)", "ex = e.exp()\na = ex / ex.sum(dim=-1, keepdim=True)"),
     [EMPTY, LARGE]),
    # weights and context: close(rtol=1e-9)
    (additive("if mask is None:\n    a = a * (1 + 1e-8)"), [WEIGHTS_CHECK, LARGE]),
    (additive("if mask is None and float(abs(e.numpy()).max()) < 500:\n    a = a * (1 + 1e-8)"),
     [WEIGHTS_CHECK]),
    (additive("if mask is None:\n    a = a * (1 + 1e-10)"), []),
    (additive().replace("return a @ values, a", CONTEXT.format(d="1e-8")), [WEIGHTS_CHECK, LARGE]),
    (additive().replace("return a @ values, a", CONTEXT.format(d="1e-10")), []),
    # the row sums (rtol 1e-9) and masked keys' weight (exactly 0: exp(-600) is 1e-261, exp(-1e4) is 0)
    (additive("if mask is not None:\n    a = a * (1 + 1e-8)"), [WEIGHTS_CHECK, MASKED_ROWS]),
    (additive("if mask is not None and keys.shape[1] == 4 and query.shape[0] == 1:\n    a = a * (1 + 1e-8)"),
     [MASKED_ROWS]),
    (additive("if mask is not None:\n    a = a * (1 + 1e-10)"), []),
    (ADDITIVE.replace("-math.inf", "-600.0"), [MASKED_ROWS, EMPTY]),
    (ADDITIVE.replace("-math.inf", "-1e4"), [EMPTY]),
    # the fully masked row (1e-12)
    (additive(ALL_MASKED.format(d="1e-11")), [EMPTY]),
    (additive(ALL_MASKED.format(d="1e-13")), []),
    (ADDITIVE.replace("return a @ values, a", WEIGHTS_ONLY.format(d="1e-11")), [EMPTY]),
    (ADDITIVE.replace("return a @ values, a", WEIGHTS_ONLY.format(d="1e-13")), []),
    (ADDITIVE.replace("return a @ values, a", CONTEXT_ONLY.format(d="1e-11")), [EMPTY]),
    (ADDITIVE.replace("return a @ values, a", CONTEXT_ONLY.format(d="1e-13")), []),
    (additive(LARGE_E.format(d="1e-8")), [LARGE]),
    (additive(LARGE_E.format(d="1e-10")), []),
    (additive(before=GRAD_QUERY.format(d="1e-2")), [WORKED, GRADCHECK, CASES]),
    (additive(before=GRAD_QUERY.format(d="1e-4")), [WORKED, CASES]),
    (additive(before=GRAD_QUERY.format(d="1e-6")), []),
    (additive(before="if query.shape[-1] == 2:\n    " + GRAD_QUERY.format(d="1e-4")), [WORKED]),
    (additive(before="if query.shape[0] == 2:\n    " + GRAD_QUERY.format(d="1e-4")), [CASES]),
    (additive(before="if query.shape[0] == 2:\n    " + GRAD_QUERY.format(d="1e-6")), []),
]

TABLE = {"attention_forward": ATTENTION_FORWARD, "attention_backward": ATTENTION_BACKWARD,
         "multi_head": MULTI_HEAD, "additive_attention": ADDITIVE_ATTENTION}
PARAMS = [pytest.param(task, body, fails, id=f"{task}-{i}")
          for task, rows in TABLE.items() for i, (body, fails) in enumerate(rows)]


@pytest.mark.parametrize("task, body, fails", PARAMS)
def test_each_check_decides_its_own_file(tmp_path, task, body, fails):
    report = grade(task, build(tmp_path, task, body))
    assert not report.not_implemented
    names = failed(report)
    matches = {p: [c.name for c in report.checks if p in c.name] for p in fails}
    assert all(len(m) == 1 for m in matches.values()), matches  # each part names one check
    assert names == [c.name for c in report.checks if any(p in c.name for p in fails)], report.text()


# Checks no file fails alone: a gradient outside gradcheck's tolerance is outside the comparisons'
# too, and split_heads and merge_heads are used by every later check of multi_head.
NEVER_ALONE = {"gradcheck", "split_heads:", "merge_heads:"}


@pytest.mark.parametrize("task", list(TABLE))
def test_every_check_fails_alone_in_some_row(task):
    names = [c.name for c in grade(task, str(CORRECT / f"{task}.py")).checks][1:]  # without "defines"
    alone = {fails[0] for _, fails in TABLE[task] if len(fails) == 1}
    for name in names:
        assert any(p in name for _, fails in TABLE[task] for p in fails), f"no row fails {name!r}"
        assert any(p in name for p in alone | NEVER_ALONE), f"no row fails {name!r} alone"
