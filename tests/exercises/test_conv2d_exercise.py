"""Exercise 15, conv2d_backward: its numpy reference against PyTorch (values and gradients, over
hypothesis configurations), the reference's input errors, a third way of writing the backward
(the correlation of the stride-dilated g with the flipped kernel) that the grader must accept,
and the known mistakes' predictions, none of which may equal the right answer."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.exercises import TASKS, grade
from minigrad.exercises import references as R
from minigrad.exercises.diagnose import close
from minigrad.exercises.diagnoses import HINTS
from minigrad.exercises.gradients import backward_of, upstream
from minigrad.exercises.task_conv2d_backward import CONFIGS, cases, mistakes
from minigrad.tensor import Tensor

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


@st.composite
def configs(draw):
    """x (N, C, H, W), w (O, C, kH, kW), stride, padding with a non-empty output."""
    stride, padding = draw(st.integers(1, 3)), draw(st.integers(0, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    h = draw(st.integers(max(1, kh - 2 * padding), 6))
    w = draw(st.integers(max(1, kw - 2 * padding), 6))
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return (n, c, h, w), (o, c, kh, kw), stride, padding


def _reference_and_torch(x_shape, w_shape, stride, padding, seed=0):
    rng = np.random.default_rng(seed)
    x, w, b = rng.normal(size=x_shape), rng.normal(size=w_shape), rng.normal(size=w_shape[:1])
    ours = [Tensor(a, requires_grad=True) for a in (x, w, b)]
    out = R.conv2d(*ours, stride=stride, padding=padding)
    g = rng.normal(size=out.shape)
    out.backward(g)
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    want = torch.nn.functional.conv2d(*theirs, stride=stride, padding=padding)
    want.backward(torch.tensor(g))
    return (out.numpy(), *(t.grad for t in ours)), (want.detach().numpy(), *(t.grad.numpy() for t in theirs))


@given(configs())
def test_the_reference_matches_torch(config):
    ours, theirs = _reference_and_torch(*config)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("config", CONFIGS + [((2, 2, 4, 4), (3, 2, 3, 2), 2, 1)])
def test_the_graders_configurations_match_torch(config):
    ours, theirs = _reference_and_torch(*config, seed=3)
    assert all(np.allclose(a, b, rtol=1e-10, atol=1e-10) for a, b in zip(ours, theirs))


def test_the_configurations_cover_the_classic_cases():
    strides = {s for _, _, s, _ in CONFIGS}
    pads = {p for _, _, _, p in CONFIGS}
    assert strides == {1, 2} and pads == {0, 1}
    assert any(x[0] > 1 for x, *_ in CONFIGS) and any(w[2] != w[3] for _, w, _, _ in CONFIGS)
    assert any(w[0] > 1 and w[1] > 1 for _, w, _, _ in CONFIGS)
    # a stride that leaves the last padded row unread, so its gradient must stay 0
    assert any((x[2] + 2 * p - w[2]) % s for x, w, s, p in CONFIGS)


def test_the_reference_passes_gradcheck():
    for case in cases():
        fn = lambda x, w, b, o=case.options: R.conv2d(x, w, b, **o)  # noqa: E731
        assert mg.gradcheck(fn, list(case.inputs.values()))


def test_the_references_errors_name_the_op_and_the_shapes():
    x, b = Tensor(np.zeros((1, 2, 3, 3))), Tensor(np.zeros(4))
    with pytest.raises(ValueError, match=r"conv2d reference: input \(1, 2, 3, 3\), weight \(4, 3, 2, 2\)"):
        R.conv2d(x, Tensor(np.zeros((4, 3, 2, 2))), b)
    with pytest.raises(ValueError, match=r"kernel \(5, 1\) larger than the padded input \(3, 3\)"):
        R.conv2d(x, Tensor(np.zeros((4, 2, 5, 1))), b)


FORWARD = """cols, (ho, wo) = im2col(x, w.shape[2], w.shape[3], stride, padding)
ctx.save_for_backward(x, w, cols)
ctx.stride, ctx.padding = stride, padding
out = np.einsum("ok,nkl->nol", w.reshape(w.shape[0], -1), cols)
return out.reshape(len(x), -1, ho, wo) + b[:, None, None]"""
# dx_pad = the full correlation of the stride-dilated g with the kernel flipped (and in/out swapped);
# padded rows and columns no window reached get no gradient (the `rest`).
BACKWARD = """x, w, cols = ctx.saved
s, p = ctx.stride, ctx.padding
(n, c, h, wd), (o, _, kh, kw) = x.shape, w.shape
ho, wo = g.shape[2:]
gd = np.zeros((n, o, s * (ho - 1) + 1, s * (wo - 1) + 1))
gd[:, :, ::s, ::s] = g
rest = (h + 2 * p - (s * (ho - 1) + kh), wd + 2 * p - (s * (wo - 1) + kw))
gd = np.pad(gd, ((0, 0), (0, 0), (kh - 1, kh - 1 + rest[0]), (kw - 1, kw - 1 + rest[1])))
gcols, (hp, wp) = im2col(gd, kh, kw, 1, 0)
flipped = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3).reshape(c, -1)
dx = (flipped @ gcols).reshape(n, c, hp, wp)[:, :, p:p + h, p:p + wd]
dw = np.einsum("nol,nkl->ok", g.reshape(n, o, -1), cols).reshape(w.shape)
return dx, dw, g.sum(axis=(0, 2, 3))"""


def _filled_stub(tmp_path, forward, backward):
    stub = TASKS["conv2d_backward"].stub()
    first, second = (stub.index("        raise NotImplementedError", i)
                     for i in (0, stub.index("def backward")))
    site = len("        raise NotImplementedError")
    body = [("\n".join("        " + line for line in text.splitlines())) for text in (forward, backward)]
    text = stub[:first] + body[0] + stub[first + site:second] + body[1] + stub[second + site:]
    path = tmp_path / "conv2d_backward.py"
    path.write_text(text)
    return str(path)


def test_a_backward_by_the_flipped_kernel_passes(tmp_path):
    report = grade("conv2d_backward", _filled_stub(tmp_path, FORWARD, BACKWARD))
    assert report.passed, report.text()
    assert [c.name for c in report.checks][1:3] == [
        "forward matches the reference (a correlation: the kernel is not flipped)",
        "backward returns dx, dw, db in the shapes of x, w, b"]


def test_a_flipped_kernel_in_both_directions_is_named_by_the_forward(tmp_path):
    # Consistent forward and backward: gradcheck alone would pass it; the forward check names it.
    flip = "w = w[:, :, ::-1, ::-1].copy()\n"
    back = BACKWARD.replace("x, w, cols = ctx.saved\n", "x, w, cols = ctx.saved\nw = w[:, :, ::-1, ::-1]\n")
    report = grade("conv2d_backward", _filled_stub(tmp_path, flip + FORWARD, back))
    assert report.diagnosis == ["kernel_flipped"] and not report.checks[1].passed
    assert "kernel_flipped" in HINTS and "cross-correlation" in report.text()


def test_no_prediction_equals_the_right_answer():
    """On every case, each known mistake's numbers differ from the reference's: a prediction
    that a right answer could match would only add noise (e.g. no crop when there is no padding)."""
    for case in cases():
        out = R.conv2d(*(Tensor(v) for v in case.inputs.values()), **case.options).numpy()
        g = upstream(out.shape)
        ref = backward_of(R.conv2d, case, g).grads
        for m in mistakes(case, g, ref):
            predicted = {**ref, **m.predict}
            assert not all(close(predicted[n], ref[n]) for n in ref), (case.describe(), m.code, m.note)


def test_the_worked_case_tells_every_mistake_apart():
    from minigrad.exercises.task_conv2d_backward import _case

    worked = _case(np.random.default_rng(2), (2, 2, 4, 4), (3, 2, 3, 2), 2, 1)
    out = R.conv2d(*(Tensor(v) for v in worked.inputs.values()), **worked.options).numpy()
    g = upstream(out.shape)
    ref = backward_of(R.conv2d, worked, g).grads
    predictions = mistakes(worked, g, ref)
    codes = {m.code for m in predictions}
    assert codes == {"padding_cropped_wrong", "stride_ignored_in_backward", "col2im_overwrites",
                     "dw_not_summed_over_batch", "db_not_summed_over_space"}
    for m in predictions:
        for other in predictions:
            if other.code != m.code:
                p, q = {**ref, **m.predict}, {**ref, **other.predict}
                assert not all(close(p[n], q[n]) for n in ref), (m.code, m.note, other.code, other.note)
