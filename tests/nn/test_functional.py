"""minigrad.nn.functional: values, float64 gradchecks, and the errors users meet."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import Tensor, gradcheck
from minigrad.ops.reduce import LogSoftmaxOp, SoftmaxOp
from minigrad.testing import arrays, shapes, well_conditioned

# ----------------------------------------------------------------------------- values and gradients


@st.composite
def linear_cases(draw):
    lead = draw(shapes(min_dims=0, max_dims=2))
    n_in, n_out = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    bias = draw(arrays((n_out,))) if draw(st.booleans()) else None
    return draw(arrays(lead + (n_in,))), draw(arrays((n_out, n_in))), bias


@given(linear_cases())
def test_linear(case):
    x, w, b = case
    y = F.linear(Tensor(x), Tensor(w), None if b is None else Tensor(b)).numpy()
    np.testing.assert_allclose(y, x @ w.T + (0 if b is None else b), atol=1e-12)
    args = [a for a in (x, w, b) if a is not None]
    assert gradcheck(lambda *t: F.linear(*t), args)


ACTIVATIONS = [
    pytest.param(F.relu, lambda x: np.maximum(x, 0), dict(away_from_zero=1e-3), id="relu"),
    pytest.param(F.tanh, np.tanh, {}, id="tanh"),
    pytest.param(F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), {}, id="sigmoid"),
    pytest.param(lambda x: F.softmax(x, dim=0),
                 lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True), dict(min_dims=1), id="softmax0"),
    pytest.param(F.softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True), dict(min_dims=1),
                 id="softmax"),
    pytest.param(F.log_softmax, lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)), dict(min_dims=1),
                 id="log_softmax"),
]


@pytest.mark.parametrize("fn, ref, domain", ACTIVATIONS)
@given(data=st.data())
def test_activations(fn, ref, domain, data):
    domain = dict(domain)
    shape = data.draw(shapes(min_dims=domain.pop("min_dims", 0)))
    x = data.draw(arrays(shape, **domain))
    np.testing.assert_allclose(fn(Tensor(x)).numpy(), ref(x), rtol=1e-12, atol=1e-14)
    assert gradcheck(fn, [x])


def test_softmax_and_log_softmax_are_the_core_kernels():
    x = Tensor(np.zeros((2, 3)), requires_grad=True)
    assert isinstance(F.softmax(x).grad_fn, SoftmaxOp)
    assert isinstance(F.log_softmax(x, dim=0).grad_fn, LogSoftmaxOp)


def _classes_on_dim_1(a):
    """a (*, C) in torch's layout, classes on dim 1: the same losses, read where torch reads them."""
    return a.movedim(-1, 1) if a.ndim >= 3 else a


@given(data=st.data())
def test_nll_loss_of_log_softmax_is_cross_entropy(data):
    x = data.draw(arrays(shapes(min_dims=1, max_dims=3)))
    t = data.draw(st.lists(st.integers(-1, x.shape[-1] - 1), min_size=int(np.prod(x.shape[:-1])),
                           max_size=int(np.prod(x.shape[:-1]))))
    t = np.array(t, dtype=np.int64).reshape(x.shape[:-1])
    for reduction in ("mean", "sum", "none"):
        logp = _classes_on_dim_1(Tensor(x).log_softmax())
        a = F.nll_loss(logp, t, ignore_index=-1, reduction=reduction).numpy()
        b = F.cross_entropy(_classes_on_dim_1(Tensor(x)), t, ignore_index=-1, reduction=reduction).numpy()
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda lp: F.nll_loss(_classes_on_dim_1(lp), t, ignore_index=-1), [x])


@pytest.mark.parametrize("reduction, ref", [
    pytest.param("mean", lambda d: (d * d).mean(), id="mean"),
    pytest.param("sum", lambda d: (d * d).sum(), id="sum"),
    pytest.param("none", lambda d: d * d, id="none"),
])
@given(data=st.data())
def test_mse_loss(reduction, ref, data):
    shape = data.draw(shapes())
    x, y = data.draw(arrays(shape)), data.draw(arrays(shape))
    np.testing.assert_allclose(F.mse_loss(Tensor(x), y, reduction=reduction).numpy(), ref(x - y), atol=1e-12)
    assert gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction), [x, y])


def test_target_as_tensor_or_list():
    x = Tensor(np.array([[2.0, 0.0], [0.0, 2.0]]))
    a = F.cross_entropy(x, mg.tensor([0, 1], dtype=mg.int64)).item()
    b = F.cross_entropy(x, [0, 1]).item()
    assert a == b == pytest.approx(np.log1p(np.exp(-2.0)))


@given(x=well_conditioned(shapes(min_dims=1)))
def test_dropout_zeroes_or_scales(x):
    y = F.dropout(Tensor(x), p=0.25).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / 0.75, rtol=1e-15)


def test_dropout_identity_cases():
    x = Tensor(np.ones(4), requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x


def test_scaled_dot_product_attention_is_exported():
    rng = np.random.default_rng(0)
    q, k, v = (Tensor(rng.standard_normal((2, 3, 4))) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v).numpy()
    s = q.numpy() @ k.numpy().transpose(0, 2, 1) / 2.0
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, a @ v.numpy(), atol=1e-12)


# ----------------------------------------------------------------------------- errors


def _logits(*shape):
    return Tensor(np.zeros(shape))


ERRORS = [
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), np.array([0.0, 1.0])), TypeError,
                 "cross_entropy: target must hold integer ids, not float64", id="ce-float-target"),
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), mg.tensor([0.0, 1.0])), ValueError,
                 "a float target holds class probabilities and must have the input's shape",
                 id="ce-float32-tensor-target"),
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), np.array([0, 3])), ValueError,
                 r"class id 3, out of range for 3 classes .*\[0, 2\] or equal ignore_index=-100",
                 id="ce-id-too-big"),
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), np.array([-1, 0])), ValueError,
                 "class id -1, out of range", id="ce-id-negative"),
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), np.array([0, 1, 2])), ValueError,
                 r"target of shape \(3,\) does not match logits of shape \(2, 3\) .*\(2,\)",
                 id="ce-shape"),
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), np.array([0, 1]), reduction="avg"), ValueError,
                 "reduction must be one of", id="ce-reduction"),
    pytest.param(lambda: F.cross_entropy(_logits(2, 3), np.array([0, 1]), label_smoothing=1.5), ValueError,
                 "label_smoothing must lie in", id="ce-smoothing"),
    pytest.param(lambda: F.cross_entropy(_logits(), np.array(0)), ValueError, "class dimension",
                 id="ce-0d"),
    pytest.param(lambda: F.nll_loss(_logits(2, 3), np.array([5, 0])), ValueError, "nll_loss: target holds",
                 id="nll-range"),
    pytest.param(lambda: F.mse_loss(_logits(2, 3), np.zeros((3, 2))), ValueError,
                 r"mse_loss: input of shape \(2, 3\) and target of shape \(3, 2\)", id="mse-shape"),
    pytest.param(lambda: F.linear(_logits(2, 3), _logits(4, 5)), ValueError,
                 r"linear: input of shape \(2, 3\) does not fit weight of shape \(4, 5\)", id="linear"),
    pytest.param(lambda: F.embedding(np.array([0, 7]), _logits(5, 2)), IndexError,
                 r"id 7 is out of range for an embedding of 5 rows .*\[0, 4\]; the largest given is 7",
                 id="emb-range"),
    pytest.param(lambda: F.embedding(np.array([-1]), _logits(5, 2)), IndexError, "id -1 is out of range",
                 id="emb-negative"),
    pytest.param(lambda: F.embedding(np.array([0.0]), _logits(5, 2)), TypeError, "integer ids",
                 id="emb-float"),
    pytest.param(lambda: F.embedding(np.array([0]), _logits(5, 2), padding_idx=5), ValueError,
                 "padding_idx 5", id="emb-padding"),
    pytest.param(lambda: F.layer_norm(_logits(2, 3), 4), ValueError,
                 r"input of shape \(2, 3\) does not end in normalized_shape \(4,\)", id="ln-shape"),
    pytest.param(lambda: F.layer_norm(_logits(3), (2, 3)), ValueError, "does not end in", id="ln-too-many"),
    pytest.param(lambda: F.layer_norm(_logits(2, 3), 3, weight=_logits(2)), ValueError,
                 r"layer_norm: weight has shape \(2,\) but normalized_shape \(3,\) needs \(3,\)",
                 id="ln-weight"),
    pytest.param(lambda: F.dropout(_logits(2), 1.0), ValueError, r"p must lie in \[0, 1\)", id="dropout-1"),
    pytest.param(lambda: F.dropout(_logits(2), -0.1), ValueError, "p must lie", id="dropout-neg"),
    pytest.param(lambda: F.gelu(_logits(2), approximate="erf"), ValueError, "approximate must be",
                 id="gelu"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_errors_name_the_function_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_ignored_targets_may_be_out_of_range():
    loss = F.cross_entropy(_logits(3, 2), np.array([-100, 1, -100]), reduction="sum")
    assert loss.item() == pytest.approx(np.log(2))
