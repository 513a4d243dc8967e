"""The grader's checks of conv2d_backward and backprop_engine, one by one: for every check a
realistic wrong file that fails it, with the exact list of the checks that file fails (so a check
made to always pass, or to fail more often, breaks a row), and every tolerance pinned by a file
just inside it (passes) and one just outside it (fails): conv2d's forward rtol 1e-9 and the
gradients' 1e-5 and gradcheck's, the kernel-flip rule's 1e-9, the engine's `close` (1e-5) and the
long chain's allclose, the fan-out rule, the 10,000-node chain and its time limit."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_exercise_diagnoses import ENGINE_BACKWARD, ENGINE_ORDER, conv
from wrongfile import assert_fails_exactly, edited_file

from minigrad.exercises import TASKS, grade
from minigrad.exercises import references as R
from minigrad.exercises import task_backprop_engine as engine
from minigrad.exercises import task_conv2d_backward as conv_task
from minigrad.exercises.instructor import check_names
from minigrad.tensor import Tensor

# conv2d_backward's checks (name prefixes)
FORWARD, SHAPES = "forward matches the reference", "backward returns dx, dw, db in the shapes"
W, G, C = ("gradients on the worked case match the reference", "gradcheck (finite differences",
           "gradients match the reference on random shapes")
GRADIENTS = (W, G, C)
# backprop_engine's
ORDER, CHAIN, LEAF, SHARED = ("topological_order:", "backward: a chain of four leaves",
                              "backward: a leaf used three times", "backward: a node used by three nodes")
UNUSED, TWICE, DEEP = "backward: an unused branch", "backward twice:", "a chain of 10000 nodes"
VALUES = (CHAIN, LEAF, SHARED, UNUSED, TWICE)

RESULT = "return (w.reshape(o, -1) @ cols + b[:, None]).reshape(n, o, ho, wo)"
FLIP = ("w.reshape(o, -1) @", "w[:, :, ::-1, ::-1].reshape(o, -1) @")
DX = "return dx[:, :, p:p + h, p:p + wd], dw,"


def forward_times(factor: str, flip: bool = False) -> list[str]:
    body = conv(forward=(RESULT, f"{RESULT} * (1 + {factor})"))
    return [body[0].replace(*FLIP) if flip else body[0], body[1]]


def dx_times(factor: str) -> list[str]:
    return conv((DX, f"return dx[:, :, p:p + h, p:p + wd] * (1 + {factor}), dw,"))


# A Conv2d that is not a Function: a class of numpy functions, so apply returns an array.
PLAIN = [("from minigrad import Function\n", ""), ("class Conv2d(Function):", "class Conv2d:"),
         ("    def backward(ctx, g):", "    def apply(x, w, b, stride=1, padding=0):\n"
          "        ctx = SimpleNamespace(save_for_backward=lambda *saved: None)\n        return "
          "Conv2d.forward(ctx, x.numpy(), w.numpy(), b.numpy(), stride=stride, padding=padding)\n"
          "\n    @staticmethod\n    def backward(ctx, g):"),
         ("import numpy as np\n", "from types import SimpleNamespace\n\nimport numpy as np\n")]

NO_SEEN_SET = ("order, stack = [], [(root, False)]\nwhile stack:\n    node, done = stack.pop()\n"
               "    if done:\n        order.append(node)\n    else:\n        stack.append((node, True))\n"
               "        stack += [(p, False) for p in node.parents]\nreturn order[::-1]")
BREADTH_FIRST = ("order, seen, queue = [], {id(root)}, [root]\nwhile queue:\n    node = queue.pop(0)\n"
                 "    order.append(node)\n    for p in node.parents:\n        if id(p) not in seen:\n"
                 "            seen.add(id(p))\n            queue.append(p)\nreturn order")
RECURSIVE = ("order, seen = [], set()\n\ndef visit(node):\n    if id(node) not in seen:\n"
             "        seen.add(id(node))\n        for p in node.parents:\n            visit(p)\n"
             "        order.append(node)\n\nvisit(root)\nreturn order[::-1]")
FIRST_USE = "p.grad = gp if p.grad is None else p.grad + gp"  # a leaf's first gradient, as it comes
TOLERANT = ENGINE_BACKWARD.replace("if node.parents or node.grad is None:", "if node.parents:").replace(
    "p.grad = p.grad + gp", FIRST_USE)
# A tape (a Wengert list): every Node made is recorded; backward plays the tape back in reverse,
# which is a valid order, but runs the nodes L does not depend on too.
TAPE = [("class Node:", "TAPE = []  # every node, in the order made\n\n\nclass Node:"),
        ("        self.grad = None\n", "        self.grad = None\n        TAPE.append(self)\n")]
TAPE_BACKWARD = ("for node in TAPE:\n    if node.parents:\n        node.grad = np.zeros_like(node.data)\n"
                 "root.grad = np.ones_like(root.data)\nfor node in reversed(TAPE):\n    if node.parents:\n"
                 "        for p, gp in zip(node.parents, node.local_backward(node.grad)):\n"
                 f"            {FIRST_USE}")
# zero_grad in place on the intermediates; b got the add s's own g array as its gradient: zeroing
# s.grad at the second call zeroes b.grad, which then holds the second call's gradient only
IN_PLACE_ZERO = TOLERANT.replace(
    "        node.grad = np.zeros_like(node.data)",
    "        if node.grad is None:\n            node.grad = np.zeros_like(node.data)\n        else:\n"
    "            node.grad[...] = 0")
ROOT = "root.grad = np.ones_like(root.data)"
# A leaf's first gradient kept as the array it came in (from the add s: s's own g), later ones
# added in place: s.grad changes with it. And the same for the intermediates, reset to None.
KEEPS_FIRST = TOLERANT.replace(FIRST_USE, "if p.grad is None:\n                p.grad = gp\n"
                                          "            else:\n                p.grad += gp")
KEEPS_EVERY_FIRST = KEEPS_FIRST.replace("node.grad = np.zeros_like(node.data)", "node.grad = None")


def engine_body(order: str = ENGINE_ORDER, backward: str = ENGINE_BACKWARD) -> list[str]:
    return [order, backward]


# id, task, the bodies, edits of the stub's given code (old, new), the checks it fails (name
# prefixes, in order), the diagnosis (None: not asserted)
ROWS = [
    # ------------------------------------------------------------------ conv2d_backward
    ("conv-right", "conv2d_backward", conv(), [], (), []),
    ("conv-forward-inside", "conv2d_backward", forward_times("1e-10"), [], (), []),  # rtol 1e-9
    ("conv-forward-outside", "conv2d_backward", forward_times("1e-8"), [], (FORWARD,), []),
    ("conv-kernel-flipped", "conv2d_backward", conv(forward=FLIP), [], (FORWARD, G), ["kernel_flipped"]),
    # the flip rule's own rtol 1e-9: a flipped forward off by 1e-10 is still named, by 1e-8 not
    ("conv-flipped-inside", "conv2d_backward", forward_times("1e-10", flip=True), [], (FORWARD, G),
     ["kernel_flipped"]),
    ("conv-flipped-outside", "conv2d_backward", forward_times("1e-8", flip=True), [], (FORWARD, G), []),
    ("conv-forward-batch-mixed", "conv2d_backward",  # (O, N) read as (N, O): right for a batch of one
     conv(forward=(".reshape(n, o, ho, wo)", ".reshape(o, n, ho, wo).transpose(1, 0, 2, 3)")), [],
     (FORWARD, G), []),
    ("conv-forward-no-bias", "conv2d_backward", conv(forward=(" + b[:, None]", "")), [], (FORWARD, G), []),
    ("conv-forward-not-reshaped", "conv2d_backward", conv(forward=(".reshape(n, o, ho, wo)", "")), [],
     (FORWARD, SHAPES, *GRADIENTS), []),
    ("conv-not-a-function", "conv2d_backward", conv(), PLAIN, (FORWARD, SHAPES, *GRADIENTS), []),
    ("conv-dw-per-sample", "conv2d_backward",
     conv((".sum(axis=0).reshape(w.shape)", ".reshape((n,) + w.shape)")), [], (SHAPES, W, C),
     ["dw_not_summed_over_batch"]),
    ("conv-crop-p:-p", "conv2d_backward",  # right at padding 1 (the worked case), empty at padding 0
     conv(("dx[:, :, p:p + h, p:p + wd]", "dx[:, :, p:-p, p:-p]")), [], (SHAPES, G, C),
     ["padding_cropped_wrong"]),
    ("conv-stride-ignored", "conv2d_backward",
     conv(("dx[:, :, i:i + s * ho:s, j:j + s * wo:s]", "dx[:, :, i:i + ho, j:j + wo]")), [], GRADIENTS,
     ["stride_ignored_in_backward"]),
    ("conv-db-mean", "conv2d_backward", conv(("g.sum(axis=(0, 2, 3))", "g.mean(axis=(0, 2, 3))")), [],
     GRADIENTS, ["db_not_summed_over_space"]),
    # compare's rtol 1e-5 (worked case and random shapes), gradcheck's rtol (1e-4 passes it, 1e-2 not)
    ("conv-dx-inside", "conv2d_backward", dx_times("1e-6"), [], (), []),
    ("conv-dx-outside-compare", "conv2d_backward", dx_times("1e-4"), [], (W, C), []),
    ("conv-dx-outside-gradcheck", "conv2d_backward", dx_times("1e-2"), [], GRADIENTS, ["factor_error"]),
    # ------------------------------------------------------------------ backprop_engine
    ("engine-right", "backprop_engine", engine_body(), [], (), []),
    ("engine-leaves-first", "backprop_engine",  # backward reverses it back: only the order is wrong
     engine_body(ENGINE_ORDER.replace("order[::-1]", "order"), ENGINE_BACKWARD.replace(
         "order = topological_order(root)", "order = topological_order(root)[::-1]")), [], (ORDER,), []),
    ("engine-no-seen-set", "backprop_engine", engine_body(NO_SEEN_SET), [], (ORDER, SHARED, TWICE), []),
    ("engine-breadth-first", "backprop_engine", engine_body(BREADTH_FIRST), [], (ORDER, SHARED, TWICE),
     ["visited_before_consumers"]),
    ("engine-order-without-leaves", "backprop_engine",  # "leaves have no backward": left out of the order
     engine_body(ENGINE_ORDER.replace("        order.append(node)",
                                      "        if node.parents:\n            order.append(node)"), TOLERANT),
     [], (ORDER, DEEP), []),
    ("engine-order-from-the-tape", "backprop_engine",  # the graphs made before are on the tape too
     engine_body("return list(reversed(TAPE))", TOLERANT), TAPE, (ORDER, UNUSED, DEEP), []),
    ("engine-backward-from-the-tape", "backprop_engine", engine_body(backward=TAPE_BACKWARD), TAPE,
     (UNUSED,), []),
    ("engine-fanout-overwritten", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace("p.grad = p.grad + gp", "p.grad = gp")), [],
     (LEAF, SHARED, TWICE), ["fanout_overwritten"]),
    # the fan-out rule's tolerance (close, 1e-5): an overwrite off by 1e-6 is named, by 1e-4 not
    ("engine-fanout-inside", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace("p.grad = p.grad + gp", "p.grad = gp * (1 + 1e-6)")), [],
     (LEAF, SHARED, TWICE, DEEP), ["fanout_overwritten"]),  # (1 + 1e-6) ** 10000 is not 1
    ("engine-fanout-outside", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace("p.grad = p.grad + gp", "p.grad = gp * (1 + 1e-4)")), [],
     (*VALUES, DEEP), []),
    ("engine-first-gradient-kept", "backprop_engine", engine_body(backward=KEEPS_FIRST), [], (LEAF,), []),
    ("engine-every-first-gradient-kept", "backprop_engine", engine_body(backward=KEEPS_EVERY_FIRST), [],
     (LEAF, SHARED, TWICE), []),
    ("engine-leaves-reset", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace("if node.parents or node.grad is None:", "if True:")), [],
     (TWICE,), ["leaf_grads_not_accumulated"]),
    ("engine-intermediates-accumulate", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace("if node.parents or node.grad is None:",
                                                  "if node.grad is None:")), [], (TWICE,), []),
    ("engine-zero-grad-in-place", "backprop_engine", engine_body(backward=IN_PLACE_ZERO), [], (TWICE,), []),
    ("engine-recursive", "backprop_engine", engine_body(RECURSIVE), [], (DEEP,), ["recursion_too_deep"]),
    ("engine-order-capped", "backprop_engine",  # a guard against cycles that cuts long graphs
     engine_body(ENGINE_ORDER.replace("while stack:", "while stack and len(order) < 5000:"), TOLERANT), [],
     (DEEP,), []),
    # the value comparisons' rtol 1e-5 (close, and the long chain's allclose)
    ("engine-root-inside", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace(ROOT, f"{ROOT} * (1 + 1e-6)")), [], (), []),
    ("engine-root-outside", "backprop_engine",
     engine_body(backward=ENGINE_BACKWARD.replace(ROOT, f"{ROOT} * (1 + 1e-4)")), [], (*VALUES, DEEP), []),
]


@pytest.mark.parametrize("task, body, edits, fails, codes", [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_each_check_fails_exactly_the_files_it_should(tmp_path, task, body, edits, fails, codes):
    assert_fails_exactly(grade(task, edited_file(tmp_path, task, body, edits)), fails, codes)


@pytest.mark.parametrize("task", ["conv2d_backward", "backprop_engine"])
def test_every_check_has_a_row_that_fails_it(task):
    names = check_names(TASKS[task])
    hit = {n for r in ROWS if r[1] == task for f in r[4] for n in names if n.startswith(f)}
    assert hit == set(names), set(names) - hit
    assert sum(r[1] == task and r[4] == () for r in ROWS) >= 2  # the right file, and one inside a tolerance


@pytest.mark.parametrize("task", ["conv2d_backward", "backprop_engine"])
def test_the_correct_files_pass_every_check(task):
    report = grade(task, str(Path(__file__).parent / "correct" / f"{task}.py"))
    assert report.passed and [c.name for c in report.checks][1:] == check_names(TASKS[task])


def report_of(tmp_path, task, row_id):
    row = next(r for r in ROWS if r[0] == row_id)
    return grade(task, edited_file(tmp_path, task, row[2], row[3]))


def test_a_failing_conv_forward_shows_a_small_worked_case(tmp_path):
    report = report_of(tmp_path, "conv2d_backward", "conv-kernel-flipped")
    forward = report.checks[1]
    assert not forward.passed and forward.message.startswith("on x (1, 1, 3, 3), w (1, 1, 2, 2), b (1,)")
    lines = forward.detail.splitlines()
    assert lines[0] == "worked case (x (1, 1, 3, 3), w (1, 1, 2, 2), b (1,), stride 1, padding 0):"
    assert lines[1].split() == ["x", "w", "b"] and lines[5].split() == ["yours", "reference", "difference"]
    assert len(lines) == 8 and forward.detail in report.text()  # every array whole: 9, 4, 1 and 4 numbers
    case = conv_task.small_cases()[0]
    x, w, b = case.inputs.values()
    want = R.conv2d(Tensor(x), Tensor(w), Tensor(b), **case.options).numpy()[0, 0]
    yours = R.conv2d(Tensor(x), Tensor(w[:, :, ::-1, ::-1].copy()), Tensor(b), **case.options).numpy()[0, 0]
    shown = [[float(v) for v in re.findall(r"-?\d+\.\d+", line)] for line in lines[6:8]]
    np.testing.assert_allclose(shown, np.concatenate([yours, want, yours - want], axis=1), atol=1e-4)


def test_the_small_forward_cases_print_whole():
    for case in conv_task.small_cases():
        out = R.conv2d(*(Tensor(v) for v in case.inputs.values()), **case.options).numpy()
        assert all(v.size <= 16 for v in case.inputs.values()) and out.size <= 16, case.describe()


def test_a_forward_of_the_wrong_shape_shows_both_outputs(tmp_path):
    check = report_of(tmp_path, "conv2d_backward", "conv-forward-not-reshaped").checks[1]
    assert "output of shape (1, 1, 4), expected (1, 1, 2, 2)" in check.message
    assert "yours" in check.detail and "reference" in check.detail and "difference" not in check.detail


def test_a_conv2d_that_is_not_a_function_is_told_so(tmp_path):
    check = report_of(tmp_path, "conv2d_backward", "conv-not-a-function").checks[1]
    assert check.message == "Conv2d.apply returned a ndarray, not a Tensor"


@pytest.mark.parametrize("row_id, check, words", [
    ("engine-order-without-leaves", ORDER, "on a chain: the order has 6 nodes, the graph reachable from"),
    ("engine-order-from-the-tape", ORDER, "(not reachable: "),
    ("engine-backward-from-the-tape", UNUSED, "the backward of d2, d ran, but L does not depend on it"),
    ("engine-zero-grad-in-place", TWICE, "on a chain: after two calls, b.grad is the gradient of one call"),
    ("engine-leaves-reset", TWICE, "after two calls of backward, w.grad and x.grad are the gradient of one"),
    ("engine-intermediates-accumulate", TWICE, "holds the sum of both calls"),
    ("engine-order-capped", DEEP, "on a chain of 10000 nodes, the order has 5000 nodes, not 10002 and x"),
    ("engine-no-seen-set", SHARED, "local backward ran twice in one call"),
    ("engine-first-gradient-kept", LEAF, "s ran with the right gradient, then its .grad changed: is its"),
    ("engine-every-first-gradient-kept", SHARED, "s2 ran with the right gradient, then its .grad changed"),
    ("engine-root-outside", CHAIN, "L.grad differs from the reference")])
def test_each_engine_condition_says_what_it_saw(tmp_path, row_id, check, words):
    report = report_of(tmp_path, "backprop_engine", row_id)
    c = next(c for c in report.checks if c.name.startswith(check))
    assert not c.passed and words in c.message, report.text()


def test_the_unused_branch_shows_the_gradient_that_reached_c(tmp_path):
    c = report_of(tmp_path, "backprop_engine", "engine-backward-from-the-tape").checks[5]
    assert c.name.startswith(UNUSED) and c.detail.startswith("c, which only d uses, has .grad [")


@pytest.mark.parametrize("seconds, passes", [(9.5, True), (10.5, False)])
def test_the_long_chain_time_limit_is_10_seconds(tmp_path, monkeypatch, seconds, passes):
    """The clock the check reads is replaced: each reading `seconds` later than the one before."""
    clock = iter(np.arange(100) * seconds)
    monkeypatch.setattr(engine, "time", SimpleNamespace(perf_counter=lambda: float(next(clock))))
    report = grade("backprop_engine", str(Path(__file__).parent / "correct" / "backprop_engine.py"))
    deep = report.checks[-1]
    assert deep.name.startswith(DEEP) and deep.passed == passes, report.text()
    assert f"{seconds:.1f} s" in deep.message if not passes else deep.message.endswith(f"{seconds:.2f} s")


def test_the_fanout_rule_names_only_a_proper_part_of_the_sum():
    sent = [np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([2.0, 2.0])]
    assert engine._partial_sum(sent[0] + sent[2], sent) and engine._partial_sum(sent[1], sent)
    assert not engine._partial_sum(sum(sent), sent)  # the whole sum is the right answer, not a part
    assert not engine._partial_sum(2 * sent[0], sent) and not engine._partial_sum(None, sent)
    assert not engine._partial_sum(sent[0], sent[:1])  # one gradient sent: nothing to overwrite
    assert engine._partial_sum(sent[1] * (1 + 1e-6), sent)
    assert not engine._partial_sum(sent[1] * (1 + 1e-4), sent)
