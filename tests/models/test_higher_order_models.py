"""Hessian-vector products of whole models equal torch's double backward: a transformer
encoder layer (with respect to its parameters and its input) and the GPT's loss (with respect
to every parameter, the embeddings included), in float64, each against the same model exported
with to_torch (the same weights)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
from minigrad.export import to_torch  # noqa: E402
from minigrad.models.gpt import GPT, GPTConfig  # noqa: E402


def _hvp(lib, loss, tensors, vs):
    """d/d tensors of (d loss / d tensors) . v: the Hessian times v, by two backward passes.
    (torch's fused CPU attention has no double backward: its math kernel runs, see _math.)"""
    grads = lib.autograd.grad(loss, tensors, create_graph=True)
    dot = sum((g * lib.tensor(v)).sum() for g, v in zip(grads, vs))
    return [t.numpy() if lib is mg else t.detach().numpy() for t in lib.autograd.grad(dot, tensors)]


def _math():
    """torch's attention on its composed ("math") kernel, the one with a double backward."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(SDPBackend.MATH)


def _assert_close(mine, theirs, names):
    for a, b, name in zip(mine, theirs, names):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=name)


def test_a_transformer_layers_hessian_vector_products_equal_torchs():
    mg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu").double()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 8))
    exported = to_torch(layer, x)
    names = [n for n, _ in layer.named_parameters()]
    vs = [rng.standard_normal(p.shape) for p in layer.parameters()] + [rng.standard_normal(x.shape)]
    mine_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mine = _hvp(mg, (layer(mine_x) ** 2).sum(), [*layer.parameters(), mine_x], vs)
    tparams = dict(exported.named_parameters())
    with _math():
        theirs = _hvp(torch, (exported(their_x) ** 2).sum(), [*(tparams[n] for n in names), their_x], vs)
    _assert_close(mine, theirs, names + ["the input"])
    assert np.abs(mine[-1]).max() > 1e-3  # the input's curvature is there, not a zero


def test_the_gpt_losss_hessian_vector_product_equals_torchs():
    mg.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2, num_layers=2)).double()
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 20, (2, 8)), rng.integers(0, 20, (2, 8))
    exported = to_torch(gpt, x, y, method="loss")
    names = [n for n, _ in gpt.named_parameters()]
    vs = [rng.standard_normal(p.shape) for p in gpt.parameters()]
    mine = _hvp(mg, gpt.loss(mg.tensor(x), mg.tensor(y)), list(gpt.parameters()), vs)
    tparams = dict(exported.named_parameters())
    with _math():
        loss = exported(torch.from_numpy(x), torch.from_numpy(y))
        theirs = _hvp(torch, loss, [tparams[n] for n in names], vs)
    _assert_close(mine, theirs, names)
