"""Transformer layers and stacks: gradients, the lecture's formulas (post-norm and pre-norm),
causality, cloning, and options."""

import numpy as np
import pytest
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn

# ----------------------------------------------------------------------------- numpy reference


def _linear(layer, x):
    return x @ layer.weight.numpy().T + layer.bias.numpy()


def _layer_norm(norm, x):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + norm.eps) * norm.weight.numpy() + norm.bias.numpy()


def _mha(m, xq, xkv, causal=False):
    q, k, v = _linear(m.q_proj, xq), _linear(m.k_proj, xkv), _linear(m.v_proj, xkv)
    D, heads = m.head_dim, []
    for h in range(m.num_heads):
        part = slice(h * D, (h + 1) * D)
        s = q[..., part] @ np.swapaxes(k[..., part], -1, -2) / np.sqrt(D)
        if causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        heads.append(a / a.sum(-1, keepdims=True) @ v[..., part])
    return _linear(m.out_proj, np.concatenate(heads, -1))


def _mlp(layer, x):
    return _linear(layer.linear2, np.maximum(_linear(layer.linear1, x), 0))


def encoder_reference(layer, x, causal=False):
    """Z = LN(X + MHA(X)), X~ = LN(Z + MLP(Z)); pre-norm moves LN onto the branch inputs."""
    if layer.norm_first:
        z = x + _mha(layer.self_attn, _layer_norm(layer.norm1, x), _layer_norm(layer.norm1, x), causal)
        return z + _mlp(layer, _layer_norm(layer.norm2, z))
    z = _layer_norm(layer.norm1, x + _mha(layer.self_attn, x, x, causal))
    return _layer_norm(layer.norm2, z + _mlp(layer, z))


def decoder_reference(layer, x, memory, causal=True):
    if layer.norm_first:
        n1 = _layer_norm(layer.norm1, x)
        z = x + _mha(layer.self_attn, n1, n1, causal)
        z = z + _mha(layer.multihead_attn, _layer_norm(layer.norm2, z), memory)
        return z + _mlp(layer, _layer_norm(layer.norm3, z))
    z = _layer_norm(layer.norm1, x + _mha(layer.self_attn, x, x, causal))
    z = _layer_norm(layer.norm2, z + _mha(layer.multihead_attn, z, memory))
    return _layer_norm(layer.norm3, z + _mlp(layer, z))


def _randomize_norms(layer):
    """LayerNorm starts as weight 1, bias 0; random values make the comparison meaningful."""
    rng = np.random.default_rng(99)
    for name, p in layer.named_parameters():
        if ".norm" in f".{name}":
            p.data = rng.standard_normal(p.shape).astype(p.dtype)
    return layer


NORM = [pytest.param(False, id="post-norm"), pytest.param(True, id="pre-norm")]

# ----------------------------------------------------------------------------- layers


@pytest.mark.parametrize("norm_first", NORM)
def test_encoder_layer_matches_lecture_formulas(norm_first):
    mg.manual_seed(0)
    layer = _randomize_norms(nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, norm_first=norm_first))
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    for causal in (False, True):
        out = layer(mg.tensor(x), is_causal=causal)
        np.testing.assert_allclose(out.numpy(), encoder_reference(layer, x, causal), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("norm_first", NORM)
def test_decoder_layer_matches_formulas(norm_first):
    mg.manual_seed(1)
    layer = _randomize_norms(nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, norm_first=norm_first))
    rng = np.random.default_rng(1)
    x, memory = (rng.standard_normal(s).astype(np.float32) for s in [(2, 4, 8), (2, 6, 8)])
    out = layer(mg.tensor(x), mg.tensor(memory), tgt_is_causal=True)
    np.testing.assert_allclose(out.numpy(), decoder_reference(layer, x, memory), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "norm_first, activation",
    [pytest.param(False, "relu", id="post-norm-relu"), pytest.param(True, "gelu", id="pre-norm-gelu")],
)
def test_encoder_layer_gradcheck(norm_first, activation):
    mg.manual_seed(2)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=activation, norm_first=norm_first)
    x = np.random.default_rng(2).standard_normal((2, 3, 4))
    assert gradcheck_module(layer, x, attend_mask=nn.causal_mask(3))


@pytest.mark.parametrize("norm_first", NORM)
def test_decoder_layer_gradcheck(norm_first):
    mg.manual_seed(3)
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, activation="gelu", norm_first=norm_first)
    rng = np.random.default_rng(3)
    x, memory = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 2, 4))
    assert gradcheck_module(layer, x, memory, tgt_is_causal=True, memory_attend_mask=nn.padding_mask([2, 1]))


def test_decoder_is_causal_over_the_target():
    mg.manual_seed(4)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    rng = np.random.default_rng(4)
    x, memory = rng.standard_normal((2, 5, 8)).astype(np.float32), mg.randn(2, 3, 8)
    base = layer(mg.tensor(x), memory, tgt_is_causal=True).numpy()
    for t in range(4):
        x2 = x.copy()
        x2[:, t + 1:] = rng.standard_normal(x2[:, t + 1:].shape)
        out = layer(mg.tensor(x2), memory, tgt_is_causal=True).numpy()
        np.testing.assert_allclose(out[:, : t + 1], base[:, : t + 1], rtol=1e-5, atol=1e-5)
        assert not np.allclose(out[:, t + 1:], base[:, t + 1:])


def test_layer_part_names_as_pytorch():
    enc = {n for n, _ in nn.TransformerEncoderLayer(4, 2, 6).named_children()}
    dec = {n for n, _ in nn.TransformerDecoderLayer(4, 2, 6).named_children()}
    assert {"self_attn", "linear1", "linear2", "norm1", "norm2", "dropout", "dropout1", "dropout2"} == enc
    assert enc | {"multihead_attn", "norm3", "dropout3"} == dec
    assert nn.TransformerEncoderLayer(4, 2, 6, bias=False).linear1.bias is None


def test_activation_options():
    mg.manual_seed(5)
    x = mg.randn(1, 3, 4)
    calls = []

    def swish(t):
        calls.append(t.shape)
        return t * t.sigmoid()

    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=swish)
    assert layer(x).shape == (1, 3, 4) and calls == [(1, 3, 6)]
    with pytest.raises(ValueError, match="'relu', 'gelu' or a callable, not 'tanh'"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")


def test_dropout_is_active_in_training_only():
    mg.manual_seed(6)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    x = mg.randn(2, 3, 4)
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())


# ----------------------------------------------------------------------------- stacks


def test_encoder_stack_deep_copies_the_layer():
    mg.manual_seed(7)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0)
    stack = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(4))
    a, b = stack.layers
    assert a is not layer and a.linear1.weight is not b.linear1.weight
    np.testing.assert_array_equal(a.linear1.weight.numpy(), b.linear1.weight.numpy())  # as in PyTorch
    assert "layers.1.self_attn.q_proj.weight" in dict(stack.named_parameters())
    x = mg.randn(2, 3, 4)
    expected = stack.norm(layer(layer(x, is_causal=True), is_causal=True))
    np.testing.assert_allclose(stack(x, is_causal=True).numpy(), expected.numpy(), rtol=1e-6)


def test_encoder_stack_from_factory_gradcheck():
    mg.manual_seed(8)
    stack = nn.TransformerEncoder(lambda: nn.TransformerEncoderLayer(4, 2, 4, dropout=0.0, norm_first=True),
                                  num_layers=2, norm=nn.LayerNorm(4))
    a, b = stack.layers
    assert not np.array_equal(a.linear1.weight.numpy(), b.linear1.weight.numpy())  # each made anew
    x = np.random.default_rng(8).standard_normal((1, 3, 4))
    assert gradcheck_module(stack, x, is_causal=True)


def test_decoder_stack_applies_each_layer_to_the_same_memory():
    mg.manual_seed(9)
    stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0), num_layers=3)
    assert len(stack.layers) == 3 and stack.norm is None
    x, memory = mg.randn(2, 3, 4), mg.randn(2, 5, 4)
    mask = nn.padding_mask([5, 2])
    expected = x
    for layer in stack.layers:
        expected = layer(expected, memory, memory_attend_mask=mask, tgt_is_causal=True)
    out = stack(x, memory, memory_attend_mask=mask, tgt_is_causal=True)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_stack_errors():
    with pytest.raises(ValueError, match="num_layers must be at least 1"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2), 0)
    with pytest.raises(TypeError, match="expected a layer"):
        nn.TransformerDecoder(3, 2)
