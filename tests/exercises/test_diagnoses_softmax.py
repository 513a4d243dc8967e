"""The softmax, cross-entropy and positional-encoding mistakes, and `.T` on a batched array: for
each code, a wrong student file the grader must fail with exactly that code (the WRONG table the
catalogue test reads), plus the forward worked case and a matmul error that is not a `.T`."""

import pytest
from test_exercise_diagnoses import ADD, CE_BACKWARD, CE_FORWARD, TABLE
from wrongfile import assert_names_exactly, failed, student_file, wrong_cases

from minigrad.exercises import grade

# The softmax taken with the max subtracted, and its log: right until a probability underflows.
CE_LOG_OF_SOFTMAX = """m = x.max(axis=-1, keepdims=True)
e = np.exp(x - m)
p = e / e.sum(axis=-1, keepdims=True)
ctx.save_for_backward(p, t)
return -np.log(p[np.arange(len(t)), t]).mean()"""
CE_BACKWARD_FROM_P = """p, t = ctx.saved
dx = p.copy()
dx[np.arange(len(t)), t] -= 1
return g * dx / len(t), None"""

TABLE_BY_COLUMN = """pos = np.arange(max_len)[:, None]
angle = pos / 10000 ** (np.arange(d) / d)
pe = np.zeros((max_len, d))
pe[:, 0::2] = np.sin(angle[:, 0::2])
pe[:, 1::2] = np.cos(angle[:, 1::2])
return pe"""
TABLE_IN_HALVES = """pos = np.arange(max_len)[:, None]
angle = pos / 10000 ** (np.arange(0, d, 2) / d)
return np.concatenate([np.sin(angle), np.cos(angle[:, : d // 2])], axis=1)"""

ATTENTION_T = """da = g @ v.T
ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
return ds @ k * ctx.c, ds.T @ q * ctx.c, a.T @ g"""
ATTENTION_FORWARD_T = """s = q @ k.T / math.sqrt(q.shape[-1])
if mask is not None:
    s = s.masked_fill(~mask, -math.inf)
return s.softmax(dim=-1) @ v"""

WRONG = [
    # task, expected code, the body (or bodies) that replace `raise NotImplementedError`
    ("softmax_backward", "softmax_jacobian_diagonal", "return g * a * (1 - a)"),
    ("cross_entropy", "one_hot_columns",
     [CE_FORWARD, CE_BACKWARD.replace("dx[np.arange(len(t)), t] -= 1", "dx[:, t] -= 1")]),
    ("cross_entropy", "one_hot_columns",
     [CE_FORWARD.replace("-logp[np.arange(len(t)), t].mean()", "-logp[:, t].mean()"), CE_BACKWARD]),
    ("cross_entropy", "log_of_softmax_underflows", [CE_LOG_OF_SOFTMAX, CE_BACKWARD_FROM_P]),
    ("positional_encoding", "frequency_from_column", [TABLE_BY_COLUMN, ADD]),
    ("positional_encoding", "sin_cos_halves", [TABLE_IN_HALVES, ADD]),
    ("positional_encoding", "graph_cut_through_data",
     [TABLE, "return Tensor(x.numpy() + table[: x.shape[-2]])"]),
    ("attention_backward", "dot_t_on_batched", ATTENTION_T),  # numpy's .T
    ("attention_forward", "dot_t_on_batched", ATTENTION_FORWARD_T),  # Tensor.T
    ("matmul_backward", "dot_t_on_batched",  # numpy's broadcast error, which names both shapes
     "return unbroadcast(g @ b.T, a.shape), unbroadcast(a.T @ g, b.shape)"),
]


@pytest.mark.parametrize("task, code, body", wrong_cases(WRONG))
def test_the_grader_names_exactly_the_mistake(tmp_path, task, code, body):
    assert_names_exactly(grade(task, student_file(tmp_path, task, body)), code)


def test_a_failing_forward_shows_the_inputs_yours_the_reference_and_the_difference(tmp_path):
    body = [CE_FORWARD.replace("-logp[np.arange(len(t)), t].mean()", "-logp[:, t].mean()"), CE_BACKWARD]
    text = grade("cross_entropy", student_file(tmp_path, "cross_entropy", body)).text()
    assert "worked case (x (3, 4), t (3,)):" in text
    for block in ("x", "t", "yours", "reference", "difference"):
        assert f"    {block}" in text or f"   {block}" in text
    assert "[1 3 0]" in text  # the targets are printed with the logits


def test_the_table_worked_case_is_small(tmp_path):
    path = student_file(tmp_path, "positional_encoding", [TABLE_IN_HALVES, ADD])
    text = grade("positional_encoding", path).text()
    assert "worked case (sinusoidal_table(3, 4)):" in text
    block = text.split("worked case (sinusoidal_table(3, 4)):")[1].split("diagnosis:")[0]
    assert "yours" in block and "reference" in block and "difference" in block
    assert len(block.strip().splitlines()) == 4  # a title row and the 3 positions


def test_huge_logits_name_the_overflow_only_when_there_is_one(tmp_path):
    naive = CE_FORWARD.replace("m = x.max(axis=-1, keepdims=True)", "m = 0.0")  # no max subtracted
    report = grade("cross_entropy", student_file(tmp_path, "cross_entropy", [naive, CE_BACKWARD]))
    assert failed(report) == ["huge logits: the loss and its gradient stay finite and right"]
    assert "overflows unless the row max m is subtracted" in report.text() and report.diagnosis == []
    report = grade("cross_entropy", student_file(tmp_path, "cross_entropy",
                                                 [CE_LOG_OF_SOFTMAX, CE_BACKWARD_FROM_P]))
    assert "row max" not in report.checks[-1].message and "subtract" not in report.checks[-1].message


def test_a_matmul_error_without_a_T_gets_no_diagnosis(tmp_path):
    # dK = dS Q (the transpose forgotten): a matmul error, but .T explains none of it.
    body = """da = g @ v.swapaxes(-1, -2)
ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
return ds @ k * ctx.c, ds @ q * ctx.c, a.swapaxes(-1, -2) @ g"""
    report = grade("attention_backward", student_file(tmp_path, "attention_backward", body))
    assert any("raised ValueError: matmul" in c.message for c in report.checks)
    assert "dot_t_on_batched" not in report.diagnosis


def test_dot_t_is_read_from_the_numbers_of_the_students_frames():
    import numpy as np

    from minigrad.exercises.diagnose import dot_t_on_batched

    ds, q = np.zeros((2, 3, 4)), np.zeros((2, 3, 2))
    for product in (lambda: ds.T @ q, lambda: q.T @ ds):
        try:
            product()
        except ValueError as e:
            assert dot_t_on_batched(e, [{"ds": ds, "q": q}])
    try:
        ds @ q  # no transpose at all: the last-two-axes transpose of neither fixes it
    except ValueError as e:
        assert not dot_t_on_batched(e, [{"ds": ds, "q": q}])
        assert not dot_t_on_batched(e, [])
    assert not dot_t_on_batched(ValueError("operands could not be broadcast together"), [{"ds": ds}])
