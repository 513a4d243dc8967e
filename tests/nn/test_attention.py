"""Attention modules: MultiheadAttention (whole-module gradients, per-head reference, masks,
causality, equivariance, errors), the mask helpers, and additive and bilinear attention."""

import numpy as np
import pytest
from modcheck import gradcheck_module

import minigrad as mg
import minigrad.nn as nn

# ----------------------------------------------------------------------------- multi-head


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_mha_gradcheck_whole_module():
    mg.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2)
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    assert gradcheck_module(mha, x, x.copy(), x.copy(), is_causal=True)


def test_mha_gradcheck_cross_attention_with_padding_mask():
    mg.manual_seed(1)
    mha = nn.MultiheadAttention(4, 2, kdim=3, vdim=5)
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 2, 4)), rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 5))
    assert gradcheck_module(mha, q, k, v, mask=nn.padding_mask([3, 1]))


@pytest.mark.parametrize("fused", [pytest.param(True, id="fused"), pytest.param(False, id="composed")])
def test_mha_matches_per_head_loop(fused):
    mg.manual_seed(2)
    B, T, E, H = 2, 4, 6, 3
    mha = nn.MultiheadAttention(E, H, fused=fused)
    x = np.random.default_rng(2).standard_normal((B, T, E)).astype(np.float32)
    out, w = mha(mg.tensor(x), mg.tensor(x), mg.tensor(x), need_weights=True, average_attn_weights=False)

    def proj(layer, a):
        return a @ layer.weight.numpy().T + layer.bias.numpy()

    q, k, v = proj(mha.q_proj, x), proj(mha.k_proj, x), proj(mha.v_proj, x)
    D = E // H
    heads, weights = [], []
    for h in range(H):
        part = slice(h * D, (h + 1) * D)
        a = _softmax(q[..., part] @ k[..., part].transpose(0, 2, 1) / np.sqrt(D))
        heads.append(a @ v[..., part])
        weights.append(a)
    expected = proj(mha.out_proj, np.concatenate(heads, axis=-1))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), np.stack(weights, axis=1), rtol=1e-5, atol=1e-7)


def test_mha_fused_and_composed_agree_with_dropout():
    mg.manual_seed(3)
    mha = nn.MultiheadAttention(4, 2, dropout=0.3).double()
    x = mg.randn(2, 5, 4, dtype=np.float64, requires_grad=True)
    results = []
    for fused in (True, False):
        mha.fused, x.grad = fused, None
        mha.zero_grad()
        mg.manual_seed(9)
        out = mha(x, x, x, is_causal=True, need_weights=False)[0]
        out.backward(np.ones(out.shape))
        results.append((out.numpy(), x.grad.numpy().copy(), mha.q_proj.weight.grad.numpy().copy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_mha_dropout_only_in_training():
    mg.manual_seed(4)
    mha = nn.MultiheadAttention(4, 2, dropout=0.5)
    x = mg.randn(2, 6, 4)
    train_a = mha(x, x, x, need_weights=False)[0].numpy()
    train_b = mha(x, x, x, need_weights=False)[0].numpy()
    mha.eval()
    eval_a, eval_b = mha(x, x, x, need_weights=False)[0].numpy(), mha(x, x, x, need_weights=False)[0].numpy()
    assert not np.allclose(train_a, train_b)
    np.testing.assert_array_equal(eval_a, eval_b)
    mha.dropout = 0.0
    np.testing.assert_array_equal(mha.train()(x, x, x, need_weights=False)[0].numpy(), eval_a)


def test_mha_causal_later_tokens_do_not_change_earlier_outputs():
    mg.manual_seed(5)
    mha = nn.MultiheadAttention(8, 2)
    x = np.random.default_rng(5).standard_normal((2, 6, 8)).astype(np.float32)
    base = mha(*[mg.tensor(x)] * 3, is_causal=True, need_weights=False)[0].numpy()
    for t in range(6):
        x2 = x.copy()
        x2[:, t + 1:] = 5.0
        out = mha(*[mg.tensor(x2)] * 3, is_causal=True, need_weights=False)[0].numpy()
        np.testing.assert_allclose(out[:, : t + 1], base[:, : t + 1], rtol=1e-5, atol=1e-6)


def test_mha_padded_keys_get_zero_weight_and_do_not_matter():
    mg.manual_seed(6)
    mha = nn.MultiheadAttention(4, 2)
    tokens = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    mask = nn.padding_mask(mg.tensor(tokens), pad=0)
    np.testing.assert_array_equal(mask.numpy(), nn.padding_mask([3, 2], max_len=4).numpy())
    x = np.random.default_rng(6).standard_normal((2, 4, 4)).astype(np.float32)
    out, w = mha(mg.tensor(x), mg.tensor(x), mg.tensor(x), mask=mask, need_weights=True,
                 average_attn_weights=False)
    assert np.all(w.numpy()[0, :, :, 3] == 0) and np.all(w.numpy()[1, :, :, 2:] == 0)
    np.testing.assert_allclose(w.numpy().sum(-1), 1, rtol=1e-6)
    x2 = x.copy()
    x2[tokens == 0] = 100.0  # change the padded keys and values only
    out2 = mha(mg.tensor(x), mg.tensor(x2), mg.tensor(x2), mask=mask, need_weights=False)[0]
    np.testing.assert_allclose(out2.numpy(), out.numpy(), rtol=1e-5, atol=1e-6)


def test_mha_3d_mask_is_per_sequence_and_shared_by_heads():
    mg.manual_seed(7)
    mha = nn.MultiheadAttention(4, 2)
    x = mg.randn(2, 3, 4)
    mask = np.random.default_rng(7).random((2, 3, 3)) < 0.7
    mask[..., 0] = True
    a = mha(x, x, x, mask=mask, need_weights=False)[0].numpy()
    b = mha(x, x, x, mask=mask[:, None], need_weights=False)[0].numpy()
    np.testing.assert_array_equal(a, b)


def test_self_attention_without_positions_is_permutation_equivariant():
    mg.manual_seed(8)
    mha = nn.MultiheadAttention(6, 3)
    x = np.random.default_rng(8).standard_normal((2, 5, 6)).astype(np.float32)
    perm = np.array([3, 0, 4, 1, 2])
    out = mha(*[mg.tensor(x)] * 3, need_weights=False)[0].numpy()
    out_perm = mha(*[mg.tensor(x[:, perm])] * 3, need_weights=False)[0].numpy()
    np.testing.assert_allclose(out_perm, out[:, perm], rtol=1e-5, atol=1e-6)


def test_mha_cross_attention_shapes():
    mha = nn.MultiheadAttention(8, 4, kdim=5, vdim=3)
    out, w = mha(mg.randn(2, 3, 8), mg.randn(2, 7, 5), mg.randn(2, 7, 3), need_weights=True,
                 average_attn_weights=False)
    assert out.shape == (2, 3, 8) and w.shape == (2, 4, 3, 7)
    assert mha.k_proj.weight.shape == (8, 5) and mha.v_proj.weight.shape == (8, 3)


@pytest.mark.parametrize(
    "args, mask, match",
    [
        pytest.param([(2, 3, 5)] * 3, None, r"query must have shape \(B, T, 4\), got \(2, 3, 5\)",
                     id="query-E"),
        pytest.param([(2, 3, 4), (2, 3, 4), (2, 2, 4)], None, "share", id="key-value-T"),
        pytest.param([(3, 4)] * 3, None, "query must have shape", id="unbatched"),
        pytest.param([(2, 3, 4)] * 3, np.ones((2, 3), bool), r"\(2, 3\).*\(2, 2, 3, 3\)", id="mask-2d"),
        pytest.param([(2, 3, 4)] * 3, np.ones((3, 3, 3), bool), r"\(3, 3, 3\).*\(2, 2, 3, 3\)", id="mask-3d"),
        pytest.param([(2, 3, 4)] * 3, np.ones((1, 3, 3), bool)[None, None], "mask of shape", id="mask-5d"),
    ],
)
def test_mha_clear_errors(args, mask, match):
    mha = nn.MultiheadAttention(4, 2)
    with pytest.raises(ValueError, match=match):
        mha(*(mg.randn(*s) for s in args), mask=mask)


def test_mha_heads_must_divide_embed_dim():
    with pytest.raises(ValueError, match="embed_dim 6 is not divisible by num_heads 4"):
        nn.MultiheadAttention(6, 4)


def test_mha_parameter_names_and_layouts():
    names = dict(nn.MultiheadAttention(4, 2).named_parameters())
    assert sorted(names) == sorted(f"{p}.{w}" for p in ("q_proj", "k_proj", "v_proj", "out_proj")
                                   for w in ("weight", "bias"))
    assert all(names[f"{p}_proj.bias"].numpy().sum() == 0 for p in "qkv")


def test_causal_and_padding_mask_helpers():
    np.testing.assert_array_equal(nn.causal_mask(3).numpy(), np.tril(np.ones((3, 3), bool)))
    np.testing.assert_array_equal(nn.causal_mask(2, 3).numpy(), [[True, False, False], [True, True, False]])
    m = nn.padding_mask(np.array([2, 0]), max_len=3)
    assert m.shape == (2, 1, 1, 3)
    np.testing.assert_array_equal(m.numpy()[:, 0, 0], [[True, True, False], [False, False, False]])
    with pytest.raises(ValueError, match="pad="):
        nn.padding_mask(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="max_len=2"):
        nn.padding_mask([3, 1], max_len=2)


# ----------------------------------------------------------------------------- single-head scores


def _scores(module, q, k):
    if isinstance(module, nn.AdditiveAttention):
        w_q, w_k = module.w_q.weight.numpy(), module.w_k.weight.numpy()
        hidden = np.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None])
        return (hidden @ module.v.weight.numpy().T)[..., 0]
    return q @ module.weight.numpy() @ k.transpose(0, 2, 1)


@pytest.mark.parametrize(
    "make", [pytest.param(lambda: nn.AdditiveAttention(3, 4, 5), id="additive"),
             pytest.param(lambda: nn.BilinearAttention(3, 4), id="bilinear")],
)
def test_single_head_attention_formula_mask_and_gradcheck(make):
    mg.manual_seed(10)
    module = make()
    rng = np.random.default_rng(10)
    q, k, v = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 2))
    mask = nn.padding_mask([4, 2])
    context, w = module(mg.tensor(q), mg.tensor(k), mg.tensor(v), mask=mask)
    s = _scores(module, q, k)
    s[1, :, 2:] = -np.inf
    expected = _softmax(s)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(context.numpy(), expected @ v, rtol=1e-5, atol=1e-6)
    assert np.all(w.numpy()[1, :, 2:] == 0)
    assert gradcheck_module(module, q, k, v, mask=mask)
    with pytest.raises(ValueError, match=r"keys must have shape \(B, Tk, 4\)"):
        module(mg.tensor(q), mg.tensor(q), mg.tensor(v))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\)"):
        module(mg.tensor(q), mg.tensor(k), mg.tensor(v), mask=np.ones((3, 4), bool))


def test_additive_attention_with_keys_projected_once_is_the_same():
    mg.manual_seed(0)
    attn = nn.AdditiveAttention(3, 4, 5)
    q, k, v = mg.randn(2, 1, 3), mg.randn(2, 6, 4), mg.randn(2, 6, 2)
    ctx, w = attn(q, k, v)
    ctx2, w2 = attn(q, k, v, projected_keys=attn.project_keys(k))
    np.testing.assert_array_equal(ctx.numpy(), ctx2.numpy())
    np.testing.assert_array_equal(w.numpy(), w2.numpy())
