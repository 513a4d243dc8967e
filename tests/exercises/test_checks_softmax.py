"""Each check of softmax_backward, cross_entropy and positional_encoding decides an outcome on its
own: for every check a wrong student file that fails it, with the exact list of checks it fails
(so a check made to always pass, or a changed order, breaks a row), and the tolerances pinned by
two files, one just inside (it passes) and one just outside (it fails)."""

from pathlib import Path

import pytest
from test_diagnoses_softmax import (
    ADD,
    CE_BACKWARD,
    CE_BACKWARD_FROM_P,
    CE_FORWARD,
    CE_LOG_OF_SOFTMAX,
    TABLE,
    TABLE_BY_COLUMN,
)
from wrongfile import failed, student_file

from minigrad.exercises import grade

# softmax_backward's checks
SB_FORWARD, SB_ROWS = "forward matches the reference", "forward: rows sum to 1, huge scores stay finite"
WORKED, GRADCHECK = "gradients on the worked case", "gradcheck (finite differences"
CASES = "gradients match the reference on random shapes"
SB_HUGE = "backward at huge scores (1000)"
# cross_entropy's and positional_encoding's own
CE_FORWARD_CHECK, CE_HUGE = "forward matches the reference", "huge logits: the loss and its gradient"
PE_TABLE, PE_PAIRS = "sinusoidal_table matches the formula", "every pair is a sine and a cosine"
PE_ADDED, PE_GRAPH = "add_positions adds the first T rows", "add_positions keeps x in the graph"

SOFTMAX = "return a * (g - (g * a).sum(axis=-1, keepdims=True))"
ROW_MAX = "e = np.exp(s - s.max(axis=-1, keepdims=True))  # minus the row max: exp never overflows"
NORMALISE = "a = e / e.sum(axis=-1, keepdims=True)"
# One max for the whole array, and a guard against 0 / 0 copied from the attention forward.
GLOBAL_MAX = [(ROW_MAX, "e = np.exp(s - s.max())"),
              (NORMALISE, "total = e.sum(axis=-1, keepdims=True)\n"
                          "        a = e / np.where(total == 0, 1.0, total)")]


def scaled_logits(eps: str) -> str:
    shifted = "(s - s.max(axis=-1, keepdims=True))"
    return ROW_MAX.replace(shifted, f"({shifted} * (1 + {eps}))")


def ce_loss_times(factor: str, only_huge: bool = False) -> str:
    scale = f"(1 + {factor})" if not only_huge else f"(1 + {factor} * (np.abs(x).max() > 100))"
    return CE_FORWARD.replace(".mean()", f".mean() * {scale}")


# A stable forward that also keeps x, and a backward that takes the softmax of x without the max.
CE_KEEPS_X = CE_FORWARD.replace("ctx.save_for_backward(logp, t)", "ctx.save_for_backward(logp, t)\nctx.x = x")
CE_NAIVE_BACKWARD = CE_BACKWARD.replace("dx = np.exp(logp)",
                                        "dx = np.exp(ctx.x) / np.exp(ctx.x).sum(axis=-1, keepdims=True)")
CE_CLIPPED = CE_LOG_OF_SOFTMAX.replace("np.log(p[np.arange(len(t)), t])",
                                       "np.log(np.clip(p[np.arange(len(t)), t], 1e-12, None))")

ROWS = [
    # task, the bodies, edits (old, new) of the stub's given code, the checks it fails (name prefixes)
    ("softmax_backward", SOFTMAX, [], []),
    ("softmax_backward", SOFTMAX, [(ROW_MAX, scaled_logits("1e-9"))], [SB_FORWARD]),  # rtol 1e-10: outside
    ("softmax_backward", SOFTMAX, [(ROW_MAX, scaled_logits("1e-11"))], []),  # and inside
    ("softmax_backward", SOFTMAX, GLOBAL_MAX, [SB_ROWS, SB_HUGE]),
    ("softmax_backward", SOFTMAX, [(ROW_MAX, "e = np.exp(s)")], [SB_ROWS, SB_HUGE]),  # exp(1000) = inf
    ("softmax_backward", "return g * a", [], [WORKED, GRADCHECK, CASES, SB_HUGE]),
    ("softmax_backward", SOFTMAX.replace("axis=-1", "axis=1"), [], [GRADCHECK, CASES]),  # right on 2 axes
    ("softmax_backward",  # the backward recomputes the softmax from s, without the max
     "s = ctx.s\ne = np.exp(s)\na = e / e.sum(axis=-1, keepdims=True)\n" + SOFTMAX,
     [("ctx.save_for_backward(a)", "ctx.save_for_backward(a)\n        ctx.s = s")], [SB_HUGE]),
    ("cross_entropy", [CE_FORWARD, CE_BACKWARD], [], []),
    ("cross_entropy", [CE_FORWARD.replace("-logp[np.arange(len(t)), t].mean()", "-logp[:, t].mean()"),
                       CE_BACKWARD], [], [CE_FORWARD_CHECK, GRADCHECK]),
    ("cross_entropy", [CE_FORWARD, CE_BACKWARD.replace("dx[np.arange(len(t)), t] -= 1", "dx[:, t] -= 1")], [],
     [WORKED, GRADCHECK, CASES, CE_HUGE]),
    ("cross_entropy", [CE_FORWARD, CE_BACKWARD.replace(" / len(t)", "")], [],
     [WORKED, GRADCHECK, CASES, CE_HUGE]),
    ("cross_entropy", [ce_loss_times("1e-8"), CE_BACKWARD], [], [CE_FORWARD_CHECK, CE_HUGE]),  # rtol 1e-9
    ("cross_entropy", [ce_loss_times("1e-10"), CE_BACKWARD], [], []),
    ("cross_entropy", [ce_loss_times("1e-8", only_huge=True), CE_BACKWARD], [], [CE_HUGE]),  # its own rtol
    ("cross_entropy", [ce_loss_times("1e-10", only_huge=True), CE_BACKWARD], [], []),
    ("cross_entropy", [CE_FORWARD.replace("m = x.max(axis=-1, keepdims=True)", "m = 0.0"), CE_BACKWARD], [],
     [CE_HUGE]),  # overflow
    ("cross_entropy", [CE_LOG_OF_SOFTMAX, CE_BACKWARD_FROM_P], [], [CE_HUGE]),  # log(0)
    # finite but wrong at huge logits: a check comparing the student's loss with itself passes it
    ("cross_entropy", [CE_CLIPPED, CE_BACKWARD_FROM_P], [], [CE_HUGE]),
    ("cross_entropy", [CE_KEEPS_X, CE_NAIVE_BACKWARD], [], [CE_HUGE]),  # the gradient at huge logits
    ("positional_encoding", [TABLE, ADD], [], []),
    ("positional_encoding",
     [TABLE.replace("np.arange(0, d, 2) / d", "np.arange(d // 2 + d % 2) / d"), ADD], [], [PE_TABLE]),
    ("positional_encoding",  # rtol 1e-9
     [TABLE.replace("return pe", "return pe * (1 + 1e-8)"), ADD], [], [PE_TABLE]),
    ("positional_encoding", [TABLE.replace("return pe", "return pe * (1 + 1e-10)"), ADD], [], []),
    ("positional_encoding", [TABLE_BY_COLUMN, ADD], [], [PE_TABLE, PE_PAIRS]),  # the pairs' angles differ
    ("positional_encoding",  # ones for the positions: every row the same (the pairs are fine, the rows not)
     [TABLE.replace("np.arange(max_len)", "np.ones(max_len)"), ADD], [], [PE_TABLE, PE_PAIRS]),
    ("positional_encoding", [TABLE, ADD.replace("x.shape[-2]", "x.shape[0]")], [],
     [PE_ADDED, PE_GRAPH, GRADCHECK, CASES]),  # the batch axis: a wrong row, then shapes that do not add
    ("positional_encoding",  # rtol 1e-5
     [TABLE, ADD.replace("Tensor(table", "Tensor(1.0001 * table")], [], [PE_ADDED]),
    ("positional_encoding", [TABLE, ADD.replace("Tensor(table", "Tensor(1.0000001 * table")], [], []),
    ("positional_encoding", [TABLE, "return Tensor(x.numpy() + table[: x.shape[-2]])"], [],
     [PE_GRAPH, WORKED, GRADCHECK, CASES]),
    ("positional_encoding", [TABLE, "x.data = x.data + table[: x.shape[-2]]\nreturn x"], [],
     [PE_GRAPH, GRADCHECK]),
]


def edited_file(tmp_path: Path, task: str, body, edits: list[tuple[str, str]]) -> str:
    path = Path(student_file(tmp_path, task, body))
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    return str(path)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("task, body, edits, fails",
                         [pytest.param(*r, id=f"{r[0]}-{i}") for i, r in enumerate(ROWS)])
def test_each_check_decides_on_its_own(tmp_path, task, body, edits, fails):
    report = grade(task, edited_file(tmp_path, task, body, edits))
    names = failed(report)
    assert len(names) == len(fails) and all(n.startswith(f) for n, f in zip(names, fails)), report.text()
    assert report.passed == (not fails) and not report.not_implemented


def test_every_check_of_these_tasks_is_failed_by_some_row():
    from types import SimpleNamespace

    from minigrad.exercises import TASKS

    for task in ("softmax_backward", "cross_entropy", "positional_encoding"):
        stub = SimpleNamespace(**{n: None for n in TASKS[task].defines})
        names = [name for name, _ in TASKS[task].checks(stub)]
        caught = {f for t, _, _, fails in ROWS if t == task for f in fails}
        missing = [n for n in names if not any(n.startswith(f) for f in caught)]
        assert missing == [], (task, missing)
