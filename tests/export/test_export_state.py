"""State dicts across the bridge: minigrad -> torch -> minigrad bit for bit, and minigrad's
attention and transformer layers in and out of torch.nn's own classes with equal outputs."""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
from minigrad.export import (  # noqa: E402
    check_same_config,
    from_torch_layer,
    state_dict_from_torch,
    state_dict_to_torch,
    to_torch,
    to_torch_layer,
)
from minigrad.models.bert import BERT, BERTConfig  # noqa: E402
from minigrad.models.gpt import GPT, GPTConfig  # noqa: E402
from minigrad.models.seq2seq import Seq2Seq, Seq2SeqConfig  # noqa: E402

MODELS = [
    pytest.param(lambda: GPT(GPTConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2)), id="gpt"),
    pytest.param(lambda: BERT(BERTConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2)), id="bert"),
    pytest.param(lambda: Seq2Seq(Seq2SeqConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2)),
                 id="seq2seq"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, kdim=6, vdim=5).double(), id="mha-kdim-float64"),
]


@pytest.mark.parametrize("layout", ["minigrad", "torch.nn"])
@pytest.mark.parametrize("make", MODELS)
def test_state_dict_round_trips_bit_for_bit(make, layout):
    mg.manual_seed(0)
    model = make()
    sd = model.state_dict()
    there = state_dict_to_torch(sd, layout=layout)
    if layout == "minigrad":
        assert list(there) == list(sd)
    else:
        assert not any(k.endswith(("q_proj.weight", "k_proj.bias")) for k in there)
    back = state_dict_from_torch(there, model)
    assert list(back) == list(sd)
    for k in sd:
        assert back[k].dtype == sd[k].dtype
        assert back[k].tobytes() == sd[k].numpy().tobytes(), k


def test_packed_layout_is_torch_nn_multihead_attention():
    """in_proj_weight stacks q, k, v; torch.nn's own module loads it strictly."""
    mha = nn.MultiheadAttention(8, 2)
    packed = state_dict_to_torch(mha.state_dict(), layout="torch.nn")
    assert sorted(packed) == ["in_proj_bias", "in_proj_weight", "out_proj.bias", "out_proj.weight"]
    np.testing.assert_array_equal(packed["in_proj_weight"][8:16].numpy(), mha.k_proj.weight.numpy())
    torch.nn.MultiheadAttention(8, 2, batch_first=True).load_state_dict(packed)


def test_export_state_dict_loads_back_with_ddp_prefix():
    mg.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=20, block_size=8, embed_dim=16, num_heads=2, num_layers=1))
    exported = to_torch(gpt, np.zeros((2, 8), dtype=np.int64))
    # as DistributedDataParallel names them
    sd = {f"module.{k}": v for k, v in exported.state_dict().items()}
    back = state_dict_from_torch(sd, gpt)
    assert all(np.array_equal(back[k], v) for k, v in gpt.state_dict().items())


def test_wrong_state_dicts_name_the_problem():
    mha = nn.MultiheadAttention(8, 2)
    sd = state_dict_to_torch(mha.state_dict())
    sd["extra"] = torch.zeros(1)
    del sd["out_proj.bias"]
    sd["q_proj.weight"] = torch.zeros(3, 3)
    problems = r"missing: out_proj.bias \| unexpected: extra \| wrong shape: q_proj"
    with pytest.raises(ValueError, match=problems):
        state_dict_from_torch(sd, mha)
    with pytest.raises(ValueError, match="layout must be one of"):
        state_dict_to_torch(mha.state_dict(), layout="keras")


# ----------------------------------------------------------------------------- torch.nn's layers


def pad_mask(B, T):
    keep = np.ones((B, T), dtype=bool)
    keep[1:, -2:] = False
    return keep


LAYERS = [
    pytest.param(lambda: nn.MultiheadAttention(8, 2), id="mha"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, bias=False, kdim=6, vdim=5), id="mha-kdim-nobias"),
    pytest.param(lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1), id="encoder-postnorm-relu"),
    pytest.param(lambda: nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True,
                                                    layer_norm_eps=1e-6), id="encoder-prenorm-gelu"),
    pytest.param(lambda: nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU(approximate="tanh")),
                 id="encoder-gelu-tanh"),
    pytest.param(lambda: nn.TransformerDecoderLayer(8, 2, 16), id="decoder-postnorm"),
    pytest.param(lambda: nn.TransformerDecoderLayer(8, 2, 16, norm_first=True, bias=False),
                 id="decoder-prenorm"),
]


def call_both(layer, tlayer, rng, dtype):
    """Outputs of a minigrad layer and of a torch.nn one on the same inputs and masks: through
    minigrad's own mask= / attend_mask= (True = may attend) and through PyTorch's keywords
    (True = may not attend), which minigrad reads with PyTorch's meaning."""
    B, T, S = 3, 4, 5
    x = rng.standard_normal((B, T, 8)).astype(dtype)
    keep = pad_mask(B, S)
    if isinstance(layer, nn.MultiheadAttention):
        k = rng.standard_normal((B, S, layer.kdim)).astype(dtype)
        v = rng.standard_normal((B, S, layer.vdim)).astype(dtype)
        mine = layer(mg.tensor(x), mg.tensor(k), mg.tensor(v), mask=keep[:, None, None, :],
                     need_weights=False)[0]
        theirs = tlayer(torch.tensor(x), torch.tensor(k), torch.tensor(v),
                        key_padding_mask=torch.tensor(~keep))[0]
    elif isinstance(layer, nn.TransformerEncoderLayer):
        mine = layer(mg.tensor(x), attend_mask=nn.causal_mask(T))
        same = layer(mg.tensor(x), src_mask=~nn.causal_mask(T))
        np.testing.assert_allclose(same.numpy(), mine.numpy(), rtol=1e-12, atol=1e-12)
        theirs = tlayer(torch.tensor(x), src_mask=torch.tensor(~nn.causal_mask(T).numpy()))
    else:
        memory = rng.standard_normal((B, S, 8)).astype(dtype)
        mine = layer(mg.tensor(x), mg.tensor(memory), attend_mask=nn.causal_mask(T),
                     memory_attend_mask=keep[:, None, None, :])
        same = layer(mg.tensor(x), mg.tensor(memory), tgt_mask=~nn.causal_mask(T),
                     memory_key_padding_mask=mg.tensor(~keep))
        np.testing.assert_allclose(same.numpy(), mine.numpy(), rtol=1e-12, atol=1e-12)
        causal = ~torch.tensor(nn.causal_mask(T).numpy())
        theirs = tlayer(torch.tensor(x), torch.tensor(memory), tgt_mask=causal,
                        memory_key_padding_mask=torch.tensor(~keep))
    return mine.numpy(), theirs.detach().numpy()


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-5)], ids=["float64", "float32"])
@pytest.mark.parametrize("make", LAYERS)
def test_layers_move_into_torch_nn_and_back(make, dtype, tol):
    mg.manual_seed(0)
    rng = np.random.default_rng(0)
    layer = make().to(dtype).eval()
    tlayer = to_torch_layer(layer)  # minigrad -> torch.nn
    assert not tlayer.training
    mine, theirs = call_both(layer, tlayer, rng, dtype)
    np.testing.assert_allclose(theirs, mine, rtol=tol, atol=tol)
    # torch.nn -> minigrad: fresh torch weights into a fresh minigrad layer of the same config
    torch.manual_seed(1)
    for p in tlayer.parameters():
        torch.nn.init.normal_(p, std=0.3)
    mg.manual_seed(2)
    fresh = make().to(dtype).eval()
    from_torch_layer(tlayer, fresh)
    mine, theirs = call_both(fresh, tlayer, rng, dtype)
    np.testing.assert_allclose(theirs, mine, rtol=tol, atol=tol)


def test_layers_with_other_settings_are_refused():
    layer = nn.TransformerEncoderLayer(8, 2, 16, norm_first=True)
    other = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, activation="gelu",
                                             layer_norm_eps=1e-6)
    with pytest.raises(ValueError, match=r"activation: 'relu' vs 'gelu'; norm_first: True vs False; "
                                         r"layer_norm_eps: 1e-05 vs 1e-06"):
        from_torch_layer(other, layer)
    with pytest.raises(ValueError, match="batch_first: True vs False"):
        check_same_config(nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2))
    with pytest.raises(TypeError, match="use to_torch for any module"):
        to_torch_layer(nn.Linear(2, 2))


def test_minigrad_never_imports_torch_and_export_names_the_extra():
    """Importing minigrad, nn and models leaves torch alone; without torch, minigrad.export
    says in one line which pip install brings it."""
    import subprocess
    import sys

    code = ("import sys; import minigrad, minigrad.nn, minigrad.models.gpt, minigrad.cli; "
            "assert 'torch' not in sys.modules; sys.modules['torch'] = None\n"
            "try:\n    import minigrad.export\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "minigrad[torch]"' in out
