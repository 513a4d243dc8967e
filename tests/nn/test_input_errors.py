"""A numpy array (or a list) where a Tensor is expected, and an integer input to a float layer,
give an error that names the function, the module and the fix; never a numpy traceback from
inside a kernel ('memoryview' object has no attribute 'reshape')."""

import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F

X = np.ones((2, 3), np.float32)
IDS = np.array([0, 2])
WRAP = r"not a Tensor.*; wrap it with mg\.tensor\(\.\.\.\)"

FUNCTIONS = [
    pytest.param(lambda: F.linear(X, mg.ones(2, 3)), "linear: the input", id="linear"),
    pytest.param(lambda: F.cross_entropy(X, IDS), "cross_entropy: the logits", id="cross_entropy"),
    pytest.param(lambda: F.nll_loss(X, IDS), "nll_loss: the input", id="nll_loss"),
    pytest.param(lambda: F.mse_loss(X, X), "mse_loss: the input", id="mse_loss"),
    pytest.param(lambda: F.layer_norm(X, 3), "layer_norm: the input", id="layer_norm"),
    pytest.param(lambda: F.dropout(X, 0.5, training=False), "dropout: the input", id="dropout-eval"),
    pytest.param(lambda: F.relu(X), "relu: the input", id="relu"),
    pytest.param(lambda: F.gelu(X), "gelu: the input", id="gelu"),
    pytest.param(lambda: F.tanh(X), "tanh: the input", id="tanh"),
    pytest.param(lambda: F.sigmoid(X), "sigmoid: the input", id="sigmoid"),
    pytest.param(lambda: F.softmax(X), "softmax: the input", id="softmax"),
    pytest.param(lambda: F.log_softmax(X), "log_softmax: the input", id="log_softmax"),
    pytest.param(lambda: F.embedding(IDS, np.ones((3, 2))), "embedding: the weight", id="embedding-weight"),
]


@pytest.mark.parametrize("call, start", FUNCTIONS)
def test_functional_names_itself_and_says_to_wrap(call, start):
    with pytest.raises(TypeError, match=rf"^{start} is a numpy array of shape \(\d, \d\), {WRAP}$"):
        call()


def test_a_list_is_named_too():
    with pytest.raises(TypeError, match=rf"relu: the input is a list, {WRAP}"):
        F.relu([1.0, -1.0])


MODULES = [
    pytest.param(lambda: nn.Linear(3, 2), "linear", "Linear", id="Linear"),
    pytest.param(lambda: nn.LayerNorm(3), "layer_norm", "LayerNorm", id="LayerNorm"),
    pytest.param(lambda: nn.GELU(), "gelu", "GELU", id="GELU"),
    pytest.param(lambda: nn.Dropout(0.1).eval(), "dropout", "Dropout", id="Dropout-eval"),
    pytest.param(lambda: nn.Sequential(nn.Linear(3, 3), nn.ReLU()), "linear", r"0 \(Linear\)",
                 id="Sequential"),
    pytest.param(lambda: nn.RNNCell(3, 2), "linear", "RNNCell", id="RNNCell"),
]


@pytest.mark.parametrize("make, fn, where", MODULES)
def test_a_module_call_names_the_function_and_the_module(make, fn, where):
    with pytest.raises(TypeError, match=rf"^{fn}: the input is a numpy array of shape \(2, 3\), "
                                        rf"not a Tensor \(in the module {where}\); wrap it"):
        make()(X)


def test_attention_names_the_projection_that_got_the_array():
    mha = nn.MultiheadAttention(4, 2)
    q = np.ones((1, 2, 4), np.float32)
    with pytest.raises(TypeError, match=r"linear: the input is a numpy array of shape \(1, 2, 4\), "
                                        r"not a Tensor \(in the module q_proj \(Linear\)\)"):
        mha(q, q, q)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_linear_refuses_an_integer_input_and_names_the_layer(dtype):
    # PyTorch: "mat1 and mat2 must have the same dtype"; numpy would quietly give float64.
    x = mg.tensor(np.ones((2, 3), dtype))
    name = np.dtype(dtype).name
    differ = rf"linear: input of dtype {name} and weight of dtype float32 differ"
    fix = r"convert the input with x\.float\(\)"
    with pytest.raises(TypeError, match=rf"{differ} \(in the module Linear\); {fix}"):
        nn.Linear(3, 2)(x)
    with pytest.raises(TypeError, match=rf"^{differ}; "):
        F.linear(x, mg.ones(2, 3))


def test_linear_names_the_layer_by_its_path_inside_a_model():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with pytest.raises(TypeError, match=r"\(in the module 0 \(Linear\)\)"):
        model(mg.tensor(np.ones((2, 3), np.int64)))


def test_float_inputs_still_work():
    layer = nn.Linear(3, 2)
    assert layer(mg.ones(2, 3)).dtype == np.float32
    assert layer(mg.tensor(np.ones((2, 3)))).dtype == np.float64  # float64 gradchecks rely on this


# ----------------------------------------------------------------------------- weights and biases

W, B = np.ones((3, 5), np.float32), np.ones(3, np.float32)
ARGUMENTS = [  # PyTorch refuses numpy arrays there too (a TypeError): refuse clearly
    pytest.param(lambda a: F.linear(mg.ones(2, 5), a), W, "linear: the weight", id="linear-weight"),
    pytest.param(lambda a: F.linear(mg.ones(2, 5), mg.tensor(W), a), B, "linear: the bias", id="linear-bias"),
    pytest.param(lambda a: F.layer_norm(mg.ones(2, 3), 3, a), B, "layer_norm: the weight", id="ln-weight"),
    pytest.param(lambda a: F.layer_norm(mg.ones(2, 3), 3, mg.ones(3), a), B, "layer_norm: the bias",
                 id="ln-bias"),
    pytest.param(lambda a: nn.masked_softmax(a), X, "masked_softmax: scores", id="masked_softmax"),
]


@pytest.mark.parametrize("call, array, start", ARGUMENTS)
def test_an_array_as_weight_bias_or_scores_is_named(call, array, start):
    shape = re.escape(str(array.shape))
    with pytest.raises(TypeError, match=rf"^{start} is a numpy array of shape {shape}, {WRAP}$"):
        call(array)
    with pytest.raises(TypeError, match=rf"^{start} is a list, {WRAP}$"):
        call(array.tolist())


@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 5))
def test_a_mis_shaped_bias_names_linear_and_the_shape_it_needs(n_out, n_in, n_bias):
    assume(n_bias != n_out)
    x, w, b = mg.ones(2, n_in), mg.ones(n_out, n_in), mg.ones(n_bias)
    with pytest.raises(ValueError, match=re.escape(f"linear: bias has shape ({n_bias},) but weight "
                                                   f"({n_out}, {n_in}) needs ({n_out},)")):
        F.linear(x, w, b)


def test_a_mis_shaped_bias_inside_a_module_names_it():
    layer = nn.Linear(5, 3)
    layer.bias = nn.Parameter(mg.zeros(4))
    with pytest.raises(ValueError, match=r"^linear: bias has shape \(4,\) but weight \(3, 5\) needs "
                                         r"\(3,\) \(in the module Linear\)"):
        layer(mg.ones(2, 5))


@pytest.mark.parametrize("name", ["weight", "bias"])
def test_a_mis_shaped_layer_norm_parameter_says_the_shape_it_needs(name):
    params = {"weight": mg.ones(3), "bias": mg.zeros(3)}
    params[name] = mg.ones(4)
    with pytest.raises(ValueError, match=rf"^layer_norm: {name} has shape \(4,\) but normalized_shape "
                                         r"\(3,\) needs \(3,\)$"):
        F.layer_norm(mg.ones(2, 3), 3, **params)
