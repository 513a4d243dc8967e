"""PyTorch's keywords mean what they mean in PyTorch: MultiheadAttention's key_padding_mask,
attn_mask, need_weights and average_attn_weights; the transformer layers' and stacks' src_mask,
tgt_mask, memory_mask, *_key_padding_mask and batch_first; cross_entropy's and nll_loss's
argument order and probability targets. Each against torch with the same weights; minigrad's
own mask= and attend_mask= (True = may attend) beside them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
TF = torch.nn.functional

E, H = 8, 2


def _from_torch(state: dict) -> dict:
    """A torch state dict with PyTorch's packed in_proj_weight / in_proj_bias split into
    minigrad's q_proj, k_proj and v_proj."""
    out = {}
    for key, value in state.items():
        value = value.detach().numpy()
        prefix, _, last = key.rpartition(".")
        if last in ("in_proj_weight", "in_proj_bias"):
            kind = last.split("_")[-1]
            for part, name in zip(np.split(value, 3), "qkv"):
                out[f"{prefix}.{name}_proj.{kind}" if prefix else f"{name}_proj.{kind}"] = part
        else:
            out[key] = value
    return out


def _pair(kind):
    torch.manual_seed(0)
    if kind == "mha":
        t = torch.nn.MultiheadAttention(E, H, batch_first=True)
        m = nn.MultiheadAttention(E, H)
    elif kind == "encoder":
        t = torch.nn.TransformerEncoderLayer(E, H, 16, 0.0, batch_first=True)
        m = nn.TransformerEncoderLayer(E, H, 16, 0.0)
    elif kind == "decoder":
        t = torch.nn.TransformerDecoderLayer(E, H, 16, 0.0, batch_first=True)
        m = nn.TransformerDecoderLayer(E, H, 16, 0.0)
    elif kind == "encoder-stack":
        t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, 16, 0.0, batch_first=True), 2,
                                        enable_nested_tensor=False)
        m = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 16, 0.0), 2)
    else:
        t = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, 16, 0.0, batch_first=True), 2)
        m = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 16, 0.0), 2)
    m.load_state_dict(_from_torch(t.state_dict()))
    return m.double(), t.double()


def _masks(draw, B, T, S):
    """PyTorch-style masks (True = masked out) that leave every query at least one key."""
    pad = np.zeros((B, S), bool)
    for b in range(B):
        pad[b, draw(st.integers(1, S)):] = True
    attn = np.array(draw(st.lists(st.booleans(), min_size=T * S, max_size=T * S))).reshape(T, S)
    attn[:, 0] = False
    return pad, attn


def _same(a, b, tol=1e-10):
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask and attn_mask")  # torch's own
@settings(max_examples=10)
@given(data=st.data(), B=st.integers(1, 3), T=st.integers(1, 4), S=st.integers(1, 4),
       float_mask=st.booleans(), heads_layout=st.booleans())
def test_multihead_attention_takes_torchs_masks_with_torchs_meaning(data, B, T, S, float_mask, heads_layout):
    m, t = _pair("mha")
    rng = np.random.default_rng(0)
    q, kv = rng.standard_normal((B, T, E)), rng.standard_normal((B, S, E))
    pad, attn = _masks(data.draw, B, T, S)
    if float_mask:
        attn = np.where(attn, -np.inf, rng.standard_normal((T, S)))
    if heads_layout:  # PyTorch's (B * H, T, S)
        attn = np.repeat(attn[None], B * H, axis=0)
    mq, mkv = mg.tensor(q, requires_grad=True), mg.tensor(kv)
    tq, tkv = torch.tensor(q, requires_grad=True), torch.tensor(kv)
    out, w = m(mq, mkv, mkv, key_padding_mask=mg.tensor(pad), attn_mask=mg.tensor(attn), need_weights=True)
    tout, tw = t(tq, tkv, tkv, key_padding_mask=torch.tensor(pad), attn_mask=torch.tensor(attn))
    _same(out, tout)
    _same(w, tw)  # averaged over the heads, as torch's default
    (out.sum() + (w * w).sum()).backward()  # the weights stay differentiable
    (tout.sum() + (tw * tw).sum()).backward()
    np.testing.assert_allclose(mq.grad, tq.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_need_weights_and_average_attn_weights():
    m, t = _pair("mha")
    x = mg.tensor(np.random.default_rng(1).standard_normal((2, 3, E)))
    assert isinstance(m(x, x, x, need_weights=False)[0], mg.Tensor)  # minigrad's default: the output alone
    out, w = m(x, x, x, need_weights=False)
    assert w is None and out.shape == (2, 3, E)
    _, w = m(x, x, x, need_weights=True, average_attn_weights=False)
    tx = torch.tensor(x.numpy())
    _, tw = t(tx, tx, tx, average_attn_weights=False)
    assert w.shape == (2, H, 3, 3)
    _same(w, tw)


def test_minigrads_mask_keeps_the_lectures_sense_beside_torchs():
    m, t = _pair("mha")
    x = mg.tensor(np.random.default_rng(2).standard_normal((2, 4, E)))
    allowed = np.tril(np.ones((4, 4), bool))
    a = m(x, x, x, mask=mg.tensor(allowed), need_weights=False)[0]
    b = m(x, x, x, attn_mask=mg.tensor(~allowed), need_weights=False)[0]
    c = m(x, x, x, is_causal=True, need_weights=False)[0]
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-12)
    pad = np.array([[False, False, True, True], [False, False, False, False]])
    # a key must pass both
    both = m(x, x, x, mask=mg.tensor(allowed), key_padding_mask=mg.tensor(pad), need_weights=False)[0]
    ref = m(x, x, x, mask=mg.tensor(allowed & ~pad[:, None, None, :]), need_weights=False)[0]
    np.testing.assert_allclose(both.numpy(), ref.numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind", ["encoder", "encoder-stack"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_and_stack_take_torchs_masks(kind, norm_first):
    m, t = _pair(kind)
    for layer in (m.layers if kind == "encoder-stack" else [m]):
        layer.norm_first = norm_first
    for layer in (t.layers if kind == "encoder-stack" else [t]):
        layer.norm_first = norm_first
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, E))
    pad = np.array([[False, False, False, True], [False, False, False, False]])
    causal = np.triu(np.ones((4, 4), bool), 1)
    name = "mask" if kind == "encoder-stack" else "src_mask"
    got = m(mg.tensor(x), **{name: mg.tensor(causal)}, src_key_padding_mask=mg.tensor(pad))
    want = t(torch.tensor(x), **{name: torch.tensor(causal)}, src_key_padding_mask=torch.tensor(pad))
    _same(got, want, 1e-9)
    mine = m(mg.tensor(x), attend_mask=mg.tensor(~causal & ~pad[:, None, None, :]))
    np.testing.assert_allclose(mine.numpy(), got.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["decoder", "decoder-stack"])
def test_decoder_layer_and_stack_take_torchs_masks(kind):
    m, t = _pair(kind)
    rng = np.random.default_rng(4)
    x, mem = rng.standard_normal((2, 3, E)), rng.standard_normal((2, 5, E))
    causal = np.triu(np.ones((3, 3), bool), 1)
    mem_pad = np.array([[False] * 5, [False, False, True, True, True]])
    tgt_pad = np.array([[False, False, True], [False] * 3])
    cross = np.zeros((3, 5), bool)
    cross[0, 1] = True
    kw = dict(tgt_mask=causal, memory_mask=cross, tgt_key_padding_mask=tgt_pad,
              memory_key_padding_mask=mem_pad)
    got = m(mg.tensor(x), mg.tensor(mem), **{k: mg.tensor(v) for k, v in kw.items()})
    want = t(torch.tensor(x), torch.tensor(mem), **{k: torch.tensor(v) for k, v in kw.items()})
    _same(got, want, 1e-9)
    mine = m(mg.tensor(x), mg.tensor(mem), attend_mask=mg.tensor(~causal & ~tgt_pad[:, None, None, :]),
             memory_attend_mask=mg.tensor(~cross & ~mem_pad[:, None, None, :]))
    np.testing.assert_allclose(mine.numpy(), got.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["mha", "encoder", "decoder-layer", "decoder"])
def test_batch_first_false_takes_torchs_time_major_layout(kind):
    """(T, B, E) in and out, with torch's masks (whose shapes do not depend on the layout),
    values and input gradients as torch's to float64 rounding."""
    from minigrad.export import state_dict_from_torch

    T, B, S = 5, 3, 4
    rng = np.random.default_rng(0)
    x, mem = rng.standard_normal((T, B, E)), rng.standard_normal((S, B, E))
    pad = np.zeros((B, T), bool)
    pad[0, 3:] = True
    causal = np.triu(np.ones((T, T), bool), 1)
    torch.manual_seed(0)
    if kind == "mha":
        theirs, mine = torch.nn.MultiheadAttention(E, H), nn.MultiheadAttention(E, H, batch_first=False)
    elif kind == "encoder":
        theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, 16, 0.0), 2,
                                             enable_nested_tensor=False)
        mine = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 16, 0.0, batch_first=False), 2)
    elif kind == "decoder-layer":
        theirs, mine = torch.nn.TransformerDecoderLayer(E, H, 16, 0.0), nn.TransformerDecoderLayer(
            E, H, 16, 0.0, batch_first=False)
    else:
        theirs = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, 16, 0.0), 2)
        mine = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 16, 0.0, batch_first=False), 2)
    theirs, mine = theirs.double(), mine.double()
    mine.load_state_dict(state_dict_from_torch(theirs.state_dict(), mine))
    results = []
    for lib, layer in ((mg, mine), (torch, theirs)):
        xt, mt = lib.tensor(x, requires_grad=True), lib.tensor(mem)
        if kind == "mha":
            out, w = layer(xt, xt, xt, key_padding_mask=lib.tensor(pad), attn_mask=lib.tensor(causal))
        elif kind == "encoder":
            out, w = layer(xt, mask=lib.tensor(causal), src_key_padding_mask=lib.tensor(pad)), None
        else:
            out, w = layer(xt, mt, tgt_mask=lib.tensor(causal), tgt_key_padding_mask=lib.tensor(pad),
                           memory_key_padding_mask=lib.tensor(pad[:, :S])), None
        out.sin().sum().backward()
        results.append([out.detach().numpy(), xt.grad.numpy()] + ([] if w is None else [w.detach().numpy()]))
    assert results[0][0].shape == (T, B, E)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_mask_shapes_are_checked():
    assert nn.MultiheadAttention(E, H).batch_first is True  # minigrad's default layout
    m = nn.MultiheadAttention(E, H)
    x = mg.randn(2, 3, E)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, Tk\) = \(2, 3\)"):
        m(x, x, x, key_padding_mask=mg.tensor(np.zeros((2, 1, 1, 3), bool)), need_weights=False)[0]
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(Tq, Tk\) = \(3, 3\) or \(B \*"):
        m(x, x, x, attn_mask=mg.tensor(np.zeros((2, 3, 3), bool)), need_weights=False)[0]
    with pytest.raises(TypeError, match="key_padding_mask must be bool"):
        m(x, x, x, key_padding_mask=mg.tensor(np.zeros((2, 3), np.int64)), need_weights=False)[0]
    layer = nn.TransformerEncoderLayer(E, H, 16)
    with pytest.raises(ValueError, match=r"EncoderLayer: src_key_padding_mask must have shape \(B, Tk\)"):
        layer(x, src_key_padding_mask=mg.tensor(np.zeros(3, bool)))
    with pytest.raises(ValueError, match="add_bias_kv and add_zero_attn are not supported"):
        nn.MultiheadAttention(E, H, add_bias_kv=True)


def test_transformer_layer_arguments_are_in_torchs_positional_order():
    layer = nn.TransformerEncoderLayer(E, H, 16, 0.0, "gelu", 1e-6, True, True)
    assert layer.norm_first and layer.norm1.eps == 1e-6 and layer.activation_name == "gelu"


# ----------------------------------------------------------------------------- losses


@settings(max_examples=15)
@given(N=st.integers(1, 5), C=st.integers(2, 5), smoothing=st.sampled_from([0.0, 0.1, 0.5]),
       reduction=st.sampled_from(["mean", "sum", "none"]), weighted=st.booleans(), probs=st.booleans(),
       seed=st.integers(0, 2**16))
def test_cross_entropy_positional_weight_and_probability_targets(N, C, smoothing, reduction, weighted, probs,
                                                                  seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C))
    target = rng.dirichlet(np.ones(C), N) if probs else rng.integers(0, C, N)
    w = rng.uniform(0.2, 2.0, C) if weighted else None
    mx, tx = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mw, tw = (mg.tensor(w), torch.tensor(w)) if weighted else (None, None)
    # weight by position, as PyTorch's order puts it third
    got = F.cross_entropy(mx, mg.tensor(target), mw, reduction=reduction, label_smoothing=smoothing)
    want = TF.cross_entropy(tx, torch.tensor(target), tw, reduction=reduction, label_smoothing=smoothing)
    _same(got, want, 1e-10)
    g = rng.standard_normal(got.shape)  # reduction="none": a weight per row, so rows cannot swap unseen
    got.backward(g)
    want.backward(torch.from_numpy(g))
    np.testing.assert_allclose(mx.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    module = nn.CrossEntropyLoss(mw, reduction=reduction, label_smoothing=smoothing)
    np.testing.assert_allclose(module(mg.tensor(x), mg.tensor(target)).numpy(), got.numpy(), rtol=1e-12)


def test_nll_loss_positional_order_and_legacy_arguments():
    rng = np.random.default_rng(5)
    logp = np.log(rng.dirichlet(np.ones(4), 6))
    t = np.array([0, 1, 2, 3, 1, 2])
    w = np.array([1.0, 2.0, 0.5, 1.5])
    got = F.nll_loss(mg.tensor(logp), mg.tensor(t), mg.tensor(w), None, 2)  # ignore_index fifth
    want = TF.nll_loss(torch.tensor(logp), torch.tensor(t), torch.tensor(w), None, 2)
    assert got.item() == pytest.approx(want.item(), rel=1e-12)
    with pytest.raises(ValueError, match="cross_entropy: size_average and reduce are deprecated in PyTorch"):
        F.cross_entropy(mg.tensor(logp), mg.tensor(t), None, True)
    with pytest.raises(ValueError, match=r"a float target holds class probabilities and must have the"):
        F.cross_entropy(mg.tensor(logp), mg.tensor(t.astype(np.float64)))


# ----------------------------------------------------------------------------- scaled_dot_product_attention


def _sdpa_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3, 5, 4)) for _ in range(3)]


@pytest.mark.parametrize("args, kw", [
    ((None, 0.0, True), {}), ((None, 0.0, False), {}), ((None, 0.0, True), {"scale": 0.3}), ((None,), {}),
], ids=["causal", "not-causal", "causal-scale", "mask-only"])
def test_sdpa_positional_order_is_torchs(args, kw):
    """(query, key, value, attn_mask, dropout_p, is_causal) by position and scale by keyword,
    as in PyTorch: `sdpa(q, k, v, None, 0.0, True)` is causal attention (it ran with
    dropout_p=True, all zeros)."""
    q, k, v = _sdpa_inputs()
    got = F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), *args, **kw)
    want = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), *args, **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    ref = F.attention_reference(*(mg.tensor(a) for a in (q, k, v)), *args, **kw)
    np.testing.assert_allclose(ref.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_sdpa_positional_mask_and_the_mask_keyword():
    q, k, v = _sdpa_inputs(1)
    allowed = np.random.default_rng(2).random((5, 5)) < 0.7
    allowed[:, 0] = True
    want = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), torch.tensor(allowed))
    for got in (F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), allowed),
                F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), attn_mask=allowed),
                F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), mask=allowed)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(TypeError, match="got both attn_mask and mask"):
        F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), allowed, mask=allowed)
    with pytest.raises(TypeError):  # scale is keyword-only in PyTorch's builtin, too
        TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), None, 0.0, False, 0.5)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(*(mg.tensor(a) for a in (q, k, v)), None, 0.0, False, 0.5)


@pytest.mark.parametrize("args, bad", [((None, True), "dropout_p"), ((None, 0.0, 0.0), "is_causal")])
def test_sdpa_refuses_flags_in_the_old_order(args, bad):
    q, k, v = (mg.tensor(a) for a in _sdpa_inputs())
    with pytest.raises(TypeError, match=f"scaled_dot_product_attention: {bad} must be"):
        F.scaled_dot_product_attention(q, k, v, *args)


@pytest.mark.parametrize("heads, kv_heads", [(4, 2), (4, 1), (3, 3)])
def test_sdpa_grouped_query_attention_as_torch(heads, kv_heads):
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, heads, 5, 3))
    k, v = rng.standard_normal((2, kv_heads, 6, 3)), rng.standard_normal((2, kv_heads, 6, 4))
    want = TF.scaled_dot_product_attention(*(torch.tensor(a, requires_grad=True) for a in (q, k, v)),
                                           enable_gqa=True)
    ours = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    got = F.scaled_dot_product_attention(*ours, enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    TF.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True, is_causal=True).pow(2).sum().backward()
    F.scaled_dot_product_attention(*ours, enable_gqa=True, is_causal=True).pow(2).sum().backward()
    for mine, theirs in zip(ours, (tq, tk, tv)):
        np.testing.assert_allclose(mine.grad, theirs.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_sdpa_grouped_query_attention_refuses_heads_that_do_not_divide():
    q, k = mg.randn(1, 3, 2, 4), mg.randn(1, 2, 2, 4)
    with pytest.raises(ValueError, match="query's 3 heads to be a multiple of the key/value's 2"):
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)


def test_multihead_attention_returns_output_and_weights_as_torch():
    """torch's need_weights=True default: (output, weights averaged over the heads); False gives
    (output, None), the fused path; the output is the same either way."""
    mha = nn.MultiheadAttention(8, 2).double()
    t_mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():
        projections = (mha.q_proj, mha.k_proj, mha.v_proj)
        t_mha.in_proj_weight.copy_(torch.tensor(np.concatenate([p.weight.numpy() for p in projections])))
        t_mha.in_proj_bias.copy_(torch.tensor(np.concatenate([p.bias.numpy() for p in projections])))
        t_mha.out_proj.weight.copy_(torch.tensor(mha.out_proj.weight.numpy()))
        t_mha.out_proj.bias.copy_(torch.tensor(mha.out_proj.bias.numpy()))
    x = np.random.default_rng(3).standard_normal((2, 5, 8))
    out, weights = mha(mg.tensor(x), mg.tensor(x), mg.tensor(x))
    t_out, t_weights = t_mha(*[torch.tensor(x)] * 3)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.numpy(), t_weights.detach().numpy(), rtol=1e-10, atol=1e-12)
    fast, none = mha(mg.tensor(x), mg.tensor(x), mg.tensor(x), need_weights=False)
    assert none is None and t_mha(*[torch.tensor(x)] * 3, need_weights=False)[1] is None
    np.testing.assert_allclose(fast.numpy(), out.numpy(), rtol=1e-10, atol=1e-12)
