"""Bad input gets an error that names the op and the shapes or values at fault, never a bare
numpy traceback."""

import numpy as np
import pytest

import minigrad as mg


def x23():
    return mg.ones(2, 3, requires_grad=True)


# (action, exception type, pattern the message must match)
ERRORS = [
    pytest.param(lambda: mg.ones(2, 3) @ mg.ones(4, 5), ValueError,
                 r"matmul: \(2, 3\) @ \(4, 5\): inner dimensions 3 and 4 differ", id="matmul-inner"),
    pytest.param(lambda: x23() + mg.ones(4), ValueError,
                 r"add: shapes \(2, 3\) and \(4,\) do not broadcast", id="add-broadcast"),
    pytest.param(lambda: x23() - np.ones((3, 2)), ValueError,
                 r"sub: shapes \(2, 3\) and \(3, 2\) do not broadcast", id="sub-broadcast"),
    pytest.param(lambda: np.ones(2) * x23(), ValueError,
                 r"mul: shapes \(2,\) and \(2, 3\) do not broadcast", id="rmul-broadcast"),
    pytest.param(lambda: x23() / mg.ones(2), ValueError, r"div: shapes", id="div-broadcast"),
    pytest.param(lambda: x23() ** mg.ones(2), ValueError, r"pow: shapes", id="pow-broadcast"),
    pytest.param(lambda: x23().maximum(mg.ones(2)), ValueError, r"maximum: shapes", id="maximum-broadcast"),
    pytest.param(lambda: mg.where(mg.tensor([True, False, True]), x23(), mg.ones(2, 1, 2)), ValueError,
                 r"where: shapes \(3,\), \(2, 3\) and \(2, 1, 2\) do not broadcast", id="where-broadcast"),
    pytest.param(lambda: mg.where(mg.ones(3), x23(), 0.0), TypeError,
                 "where: the condition must be boolean", id="where-condition"),
    pytest.param(lambda: mg.arange(3).sum().backward(), RuntimeError,
                 "backward: an integer tensor that does not require grad", id="backward-integer"),
    pytest.param(lambda: mg.ones(2).sum().backward(), RuntimeError,
                 "backward: a tensor that does not require grad.*requires_grad=True", id="backward-constant"),
    pytest.param(lambda: mg.tensor(np.arange(3), requires_grad=True), RuntimeError,
                 "only floating-point tensors can require grad, not int64", id="int-requires-grad"),
    pytest.param(lambda: x23().reshape(4, 2), ValueError,
                 r"reshape: cannot view a tensor of shape \(2, 3\) \(6 elements\) as shape \(4, 2\)",
                 id="reshape"),
    pytest.param(lambda: mg.cat([x23(), mg.ones(3, 2)], dim=0), ValueError,
                 r"cat: shapes \(2, 3\), \(3, 2\) do not match outside dim 0", id="cat-mismatch"),
    pytest.param(lambda: mg.cat([]), ValueError, "cat: expected a non-empty sequence", id="cat-empty"),
    pytest.param(lambda: mg.stack([x23(), mg.ones(3, 2)]), ValueError,
                 r"stack: all tensors need the same shape, got \(2, 3\), \(3, 2\)", id="stack-mismatch"),
    pytest.param(lambda: x23().expand(4, 3), ValueError,
                 r"expand: shape \(2, 3\) cannot be expanded to \(4, 3\)", id="expand"),
    pytest.param(lambda: x23().split([1, 1], dim=1), ValueError,
                 r"split: sizes \[1, 1\] do not add up to 3", id="split-sizes"),
    pytest.param(lambda: x23().masked_fill(mg.ones(2, 3), 0.0), TypeError,
                 "masked_fill: the mask must be boolean", id="masked_fill-dtype"),
    pytest.param(lambda: mg.ones(3).masked_fill(mg.tensor([[True], [False]]), 0.0), ValueError,
                 r"masked_fill: mask of shape \(2, 1\) does not broadcast to \(3,\)", id="masked_fill-shape"),
    pytest.param(lambda: x23()[2], IndexError,
                 r"getitem: .*out of bounds.*\(tensor of shape \(2, 3\)\)", id="getitem-out-of-range"),
    pytest.param(lambda: x23()[np.array([0.0])], IndexError,
                 "getitem: index arrays must be integer or boolean", id="getitem-float-index"),
    pytest.param(lambda: x23().mean(dim=1)[:0].mean(), ValueError,
                 "mean: cannot average over an empty dimension", id="mean-empty"),
    pytest.param(lambda: mg.zeros(0, 2).max(dim=0), IndexError,
                 r"max: cannot reduce the empty dim 0", id="max-empty"),
    pytest.param(lambda: mg.zeros(0, 2).amax(dim=0), ValueError,
                 r"max: cannot reduce an empty dimension", id="amax-empty"),
    pytest.param(lambda: x23().item(), ValueError,
                 r"item: only a one-element tensor has an item, not shape \(2, 3\)", id="item"),
    pytest.param(lambda: bool(x23() > 0), ValueError,
                 r"bool: the truth value of a tensor of shape \(2, 3\) is ambiguous", id="bool"),
    pytest.param(lambda: x23().clip(), ValueError,
                 "clip: give at least one of min and max", id="clip-no-bounds"),
    pytest.param(lambda: mg.ones(2).register_hook(print), RuntimeError,
                 "register_hook: this tensor does not require grad", id="hook-without-grad"),
    pytest.param(lambda: x23().sum(dim=(1, -1)), ValueError,
                 r"sum: dim \(1, -1\) repeats an axis", id="repeated-dim"),
    pytest.param(lambda: mg.tensor("text"), TypeError,
                 "tensor: cannot make a tensor from str", id="tensor-from-str"),
    pytest.param(lambda: mg.tensor([[1.0, 2.0], [3.0]]), ValueError,
                 "tensor: cannot make an array from this list: nested lists need equal lengths",
                 id="tensor-ragged"),
    pytest.param(lambda: mg.tensor([[1, 2], [3]], dtype=mg.int64), ValueError,
                 "tensor: cannot make an array from this list", id="tensor-ragged-with-dtype"),
    pytest.param(lambda: mg.ones(4).split(0), ValueError,
                 r"split: split_size must be a positive integer, not 0 \(dim 0 has size 4\)", id="split-0"),
    pytest.param(lambda: mg.ones(4).split(-2), ValueError,
                 r"split: split_size must be a positive integer, not -2", id="split-negative"),
    pytest.param(lambda: mg.ones(4).split([5, -1]), ValueError,
                 r"split: the sizes must be integers >= 0, not \[5, -1\]", id="split-negative-section"),
    pytest.param(lambda: mg.ones(4).split([2, 1.5, 0.5]), ValueError,
                 r"split: the sizes must be integers >= 0, not \[2, 1.5, 0.5\]", id="split-float-section"),
    pytest.param(lambda: mg.ones(4).split(2.0), TypeError,
                 r"split: expected a split size \(int\) or a list of sizes, not 2.0", id="split-float"),
    pytest.param(lambda: mg.ones(4).chunk(0), ValueError,
                 r"chunk: chunks must be positive, not 0", id="chunk-0"),
    pytest.param(lambda: mg.ones(4).chunk(2.5), TypeError,
                 r"chunk: chunks must be an integer, not 2.5", id="chunk-float"),
    pytest.param(lambda: x23().sum(1.0), TypeError,
                 r"sum: dim must be an int or a tuple of ints, not 1.0", id="sum-float-dim"),
    pytest.param(lambda: x23().mean((0, 1.0)), TypeError,
                 r"mean: dim must be an int or a tuple of ints, not \(0, 1.0\)", id="mean-float-in-dim"),
    pytest.param(lambda: mg.zeros(2.5), TypeError,
                 r"zeros: sizes must be integers, got 2.5 in \(2.5,\)", id="zeros-float"),
    pytest.param(lambda: mg.ones((2, 3.0)), TypeError,
                 r"ones: sizes must be integers, got 3.0 in \(2, 3.0\)", id="ones-float"),
    pytest.param(lambda: mg.randn(2, -1), ValueError,
                 r"randn: sizes must not be negative, got -1 in \(2, -1\)", id="randn-negative"),
    pytest.param(lambda: x23().__iadd__(1.0), RuntimeError,
                 "in-place update of a tensor that requires grad", id="in-place-on-requires-grad"),
]


@pytest.mark.parametrize("action, error, match", ERRORS)
def test_bad_input_gets_a_clear_error(action, error, match):
    with pytest.raises(error, match=match):
        action()


# Every op that takes a dim names itself and the dim when the dim does not exist.
BAD_DIMS = [
    pytest.param(lambda x: x.sum(dim=2), "sum", id="sum"),
    pytest.param(lambda x: x.mean(dim=-3), "mean", id="mean"),
    pytest.param(lambda x: x.max(dim=2), "max", id="max"),
    pytest.param(lambda x: x.min(dim=-3), "min", id="min"),
    pytest.param(lambda x: x.amin(dim=(0, 5)), "min", id="amin"),
    pytest.param(lambda x: x.var(dim=2), "var", id="var"),
    pytest.param(lambda x: x.logsumexp(dim=2), "logsumexp", id="logsumexp"),
    pytest.param(lambda x: x.softmax(dim=2), "softmax", id="softmax"),
    pytest.param(lambda x: x.log_softmax(dim=-3), "log_softmax", id="log_softmax"),
    pytest.param(lambda x: x.transpose(0, 2), "transpose", id="transpose"),
    pytest.param(lambda x: x.unsqueeze(3), "unsqueeze", id="unsqueeze"),
    pytest.param(lambda x: x.squeeze(2), "squeeze", id="squeeze"),
    pytest.param(lambda x: x.flatten(0, 2), "flatten", id="flatten"),
    pytest.param(lambda x: x.split(1, dim=2), "split", id="split"),
    pytest.param(lambda x: x.chunk(2, dim=-3), "chunk", id="chunk"),
    pytest.param(lambda x: mg.cat([x, x], dim=2), "cat", id="cat"),
    pytest.param(lambda x: mg.stack([x, x], dim=3), "stack", id="stack"),
]


@pytest.mark.parametrize("action, op", BAD_DIMS)
def test_bad_dim_index_names_the_op_and_the_dim(action, op):
    with pytest.raises(IndexError, match=rf"^{op}: dim -?\d+ is out of range"):
        action(x23())


@pytest.mark.parametrize("dims", [
    pytest.param((0, 5), id="out-of-range"),
    pytest.param((0, 0), id="repeated"),
    pytest.param((0,), id="too-few"),
])
def test_bad_permutation(dims):
    with pytest.raises(ValueError, match=r"^permute: "):
        x23().permute(*dims)


def test_backward_twice_is_a_clear_error():
    y = (x23() * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"backward: the graph through \w+ was already freed"):
        y.backward()


def test_masked_fill_with_a_mask_that_does_not_broadcast_names_both_shapes():
    x = mg.randn(2, 3)
    with pytest.raises(ValueError, match=r"masked_fill: mask of shape \(2,\) does not broadcast to \(2, 3\)"):
        x.masked_fill(mg.tensor([True, False]), 0.0)


def test_split_and_chunk_still_cover_every_element():
    # The checks above must not reject what PyTorch accepts.
    assert [t.shape for t in mg.zeros(0, 2).split(0)] == [(0, 2)]  # size 0 splits an empty dim
    assert [t.shape for t in mg.ones(5).split([2, 0, 3])] == [(2,), (0,), (3,)]
    assert [t.shape for t in mg.ones(5).split(np.int64(2))] == [(2,), (2,), (1,)]
    assert [t.shape for t in mg.ones(5, 2).chunk(2)] == [(3, 2), (2, 2)]
    for size in [(np.array([2, 3]),), ([2, 3],), (np.int64(2), 3)]:
        assert mg.zeros(*size).shape == (2, 3)
