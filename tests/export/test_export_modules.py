"""Every minigrad.nn module exported with to_torch computes what minigrad computes: outputs
and every parameter gradient, in float64 (to 1e-10) and float32 (to 1e-5), at the example's
batch size and at another one."""

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
from minigrad.export import TraceError, to_torch  # noqa: E402


def x3(r, B, T=4, C=8):
    return (r.standard_normal((B, T, C)),)


def pad_mask(r, B, T=4):
    """(B, 1, 1, T) bool, True at real tokens: row b hides its last b % T keys."""
    keep = np.ones((B, 1, 1, T), dtype=bool)
    for b in range(B):
        keep[b, ..., T - b % T:] = False
    return keep


def causal(model, x):
    return model(x, x, x, is_causal=True)


def self_attention(model, x, mask):
    return model(x, x, x, mask=mask)


def float_mask(model, x):
    bias = mg.tensor(np.triu(np.full((4, 4), -1e9), 1) + 0.5 * np.eye(4), dtype=x.dtype)
    return model(x, x, x, mask=bias)


def decoder_layer(model, tgt, memory, keep):
    return model(tgt, memory, attend_mask=nn.causal_mask(tgt.shape[1]), memory_attend_mask=keep)


def encoder_stack(model, x, keep):
    return model(x, attend_mask=keep)


def encoder_layer(model, x, keep):
    return model(x, src_key_padding_mask=~keep[:, 0, 0, :])  # PyTorch's sense: True = padding


def lstm_flat(model, x):
    out, (h, c) = model(x)
    return out, h, c


def positional_offset(model, x):
    return model(x, offset=2)


def attention_pair(model, q, k, v, keep):
    return model(q, k, v, mask=keep)


def x3_pair(r, B):
    return x3(r, B) + x3(r, B)


def rnn_no_state(model, x):
    return model(x)


# (module factory, function of (module, *inputs) or None for the module itself, input maker)
MODULES = [
    pytest.param(lambda: nn.Linear(8, 5), None, x3, id="Linear"),
    pytest.param(lambda: nn.Linear(8, 5, bias=False), None, x3, id="Linear-nobias"),
    pytest.param(lambda: nn.Embedding(10, 6, padding_idx=0), None,
                 lambda r, B: (r.integers(0, 10, (B, 5)),), id="Embedding"),
    pytest.param(lambda: nn.LayerNorm(8), None, x3, id="LayerNorm"),
    pytest.param(lambda: nn.LayerNorm((4, 8), bias=False), None, x3, id="LayerNorm-2d-nobias"),
    pytest.param(lambda: nn.Dropout(0.0), None, x3, id="Dropout"),
    pytest.param(lambda: nn.ReLU(), None, x3, id="ReLU"),
    pytest.param(lambda: nn.GELU(), None, x3, id="GELU"),
    pytest.param(lambda: nn.GELU(approximate="tanh"), None, x3, id="GELU-tanh"),
    pytest.param(lambda: nn.Tanh(), None, x3, id="Tanh"),
    pytest.param(lambda: nn.Sigmoid(), None, x3, id="Sigmoid"),
    pytest.param(lambda: nn.Softmax(dim=1), None, x3, id="Softmax"),
    pytest.param(lambda: nn.Identity(), None, x3, id="Identity"),
    pytest.param(lambda: nn.Flatten(), None, x3, id="Flatten"),
    pytest.param(lambda: nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, -1))), None, x3, id="Unflatten"),
    pytest.param(lambda: nn.LeakyReLU(0.2), None, x3, id="LeakyReLU"),
    pytest.param(lambda: nn.ELU(0.5), None, x3, id="ELU"),
    pytest.param(lambda: nn.SiLU(), None, x3, id="SiLU"),
    pytest.param(lambda: nn.Softplus(beta=2.0, threshold=1.0), None, x3, id="Softplus"),
    pytest.param(lambda: nn.Mish(), None, x3, id="Mish"),
    pytest.param(lambda: nn.Hardtanh(-0.5, 1.0), None, x3, id="Hardtanh"),
    pytest.param(lambda: nn.LogSigmoid(), None, x3, id="LogSigmoid"),
    pytest.param(lambda: nn.Softmin(dim=1), None, x3, id="Softmin"),
    pytest.param(lambda: nn.LogSoftmax(dim=-1), None, x3, id="LogSoftmax"),
    pytest.param(lambda: nn.ReLU6(), None, x3, id="ReLU6"),
    pytest.param(lambda: nn.Hardsigmoid(), None, x3, id="Hardsigmoid"),
    pytest.param(lambda: nn.Hardswish(), None, x3, id="Hardswish"),
    pytest.param(lambda: nn.SELU(), None, x3, id="SELU"),
    pytest.param(lambda: nn.CELU(0.5), None, x3, id="CELU"),
    pytest.param(lambda: nn.GLU(), None, x3, id="GLU"),
    pytest.param(lambda: nn.Softsign(), None, x3, id="Softsign"),
    pytest.param(lambda: nn.Tanhshrink(), None, x3, id="Tanhshrink"),
    pytest.param(lambda: nn.Threshold(0.1, -2.0), None, x3, id="Threshold"),
    pytest.param(lambda: nn.Softshrink(0.3), None, x3, id="Softshrink"),
    pytest.param(lambda: nn.Hardshrink(0.3), None, x3, id="Hardshrink"),
    pytest.param(lambda: nn.RReLU(0.2, 0.2), None, x3, id="RReLU"),  # training, one slope: no randomness
    pytest.param(lambda: nn.PReLU(4, 0.1), None, x3, id="PReLU"),
    pytest.param(lambda: nn.Softmax2d(), None, lambda r, B: (r.standard_normal((B, 3, 2, 2)),),
                 id="Softmax2d"),
    pytest.param(lambda: nn.RMSNorm((4, 8)), None, x3, id="RMSNorm"),
    pytest.param(lambda: nn.LocalResponseNorm(3, 0.5, 0.7, 1.5), None, x3, id="LocalResponseNorm"),
    pytest.param(lambda: nn.CrossEntropyLoss(label_smoothing=0.1), None,
                 lambda r, B: (r.standard_normal((B, 5)), r.integers(0, 5, (B,))), id="CrossEntropyLoss"),
    pytest.param(lambda: nn.NLLLoss(reduction="sum"), None,
                 lambda r, B: (r.standard_normal((B, 5)), r.integers(0, 5, (B,))), id="NLLLoss"),
    pytest.param(lambda: nn.MSELoss(), None, x3_pair, id="MSELoss"),
    pytest.param(lambda: nn.L1Loss(reduction="none"), None, x3_pair, id="L1Loss"),
    pytest.param(lambda: nn.SmoothL1Loss(beta=0.5), None, x3_pair, id="SmoothL1Loss"),
    pytest.param(lambda: nn.HuberLoss(delta=0.5), None, x3_pair, id="HuberLoss"),
    pytest.param(lambda: nn.BCELoss(), None,
                 lambda r, B: (r.uniform(0.05, 0.95, (B, 4)), r.uniform(0, 1, (B, 4))), id="BCELoss"),
    pytest.param(lambda: nn.BCEWithLogitsLoss(pos_weight=mg.tensor([1.0, 2.0, 0.5, 3.0])), None,
                 lambda r, B: (r.standard_normal((B, 4)), r.uniform(0, 1, (B, 4))), id="BCEWithLogitsLoss"),
    pytest.param(lambda: nn.KLDivLoss(reduction="batchmean"), None,
                 lambda r, B: (r.standard_normal((B, 4)), r.uniform(0.1, 1, (B, 4))), id="KLDivLoss"),
    pytest.param(lambda: nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3)), None, x3,
                 id="Sequential"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2), self_attention,
                 lambda r, B: x3(r, B) + (pad_mask(r, B),), id="MultiheadAttention-padding"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, fused=False), causal, x3,
                 id="MultiheadAttention-causal-ref"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, bias=False), float_mask, x3,
                 id="MultiheadAttention-float-mask"),
    pytest.param(lambda: nn.MultiheadAttention(8, 2, kdim=6, vdim=5), None,
                 lambda r, B: (r.standard_normal((B, 4, 8)), r.standard_normal((B, 3, 6)),
                               r.standard_normal((B, 3, 5))), id="MultiheadAttention-kdim"),
    pytest.param(lambda: nn.AdditiveAttention(8, 6, 5), attention_pair,
                 lambda r, B: (r.standard_normal((B, 2, 8)), r.standard_normal((B, 4, 6)),
                               r.standard_normal((B, 4, 3)), pad_mask(r, B)), id="AdditiveAttention"),
    pytest.param(lambda: nn.BilinearAttention(8, 6), None,
                 lambda r, B: (r.standard_normal((B, 2, 8)), r.standard_normal((B, 4, 6)),
                               r.standard_normal((B, 4, 3))), id="BilinearAttention"),
    pytest.param(lambda: nn.SinusoidalPositionalEncoding(8, max_len=10), positional_offset, x3,
                 id="SinusoidalPositionalEncoding"),
    pytest.param(lambda: nn.LearnedPositionalEmbedding(10, 8), positional_offset, x3,
                 id="LearnedPositionalEmbedding"),
    pytest.param(lambda: nn.RNNCell(5, 4, nonlinearity="relu"), None,
                 lambda r, B: (r.standard_normal((B, 5)), r.standard_normal((B, 4))), id="RNNCell"),
    pytest.param(lambda: nn.GRUCell(5, 4), None,
                 lambda r, B: (r.standard_normal((B, 5)), r.standard_normal((B, 4))), id="GRUCell"),
    pytest.param(lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), encoder_layer,
                 lambda r, B: x3(r, B) + (pad_mask(r, B),), id="TransformerEncoderLayer"),
    pytest.param(lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu",
                                                    norm_first=True), None, x3,
                 id="TransformerEncoderLayer-prenorm"),
    pytest.param(lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), decoder_layer,
                 lambda r, B: x3(r, B) + (r.standard_normal((B, 5, 8)), pad_mask(r, B, 5)),
                 id="TransformerDecoderLayer"),
    pytest.param(lambda: nn.TransformerEncoder(
                     nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True), 2,
                     norm=nn.LayerNorm(8)),
                 encoder_stack,
                 lambda r, B: x3(r, B) + (pad_mask(r, B),), id="TransformerEncoder"),
    pytest.param(lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2),
                 decoder_layer, lambda r, B: x3(r, B) + (r.standard_normal((B, 5, 8)), pad_mask(r, B, 5)),
                 id="TransformerDecoder"),
    pytest.param(lambda: nn.GroupNorm(2, 4), None, x3, id="GroupNorm"),
    pytest.param(lambda: nn.Bilinear(8, 8, 3), None, x3_pair, id="Bilinear"),
    pytest.param(lambda: nn.RNN(5, 4, num_layers=2, nonlinearity="relu", batch_first=True,
                                bidirectional=True),
                 None, lambda r, B: (r.standard_normal((B, 3, 5)),), id="RNN"),
    pytest.param(lambda: nn.GRU(5, 4, batch_first=True), lambda m, x, h: m(x, h.transpose(0, 1)),
                 lambda r, B: (r.standard_normal((B, 3, 5)), r.standard_normal((B, 1, 4))), id="GRU"),
    pytest.param(lambda: nn.LSTM(5, 4, num_layers=2, batch_first=True, proj_size=2), lstm_flat,
                 lambda r, B: (r.standard_normal((B, 3, 5)),), id="LSTM"),
    pytest.param(lambda: nn.LSTMCell(5, 4), lambda m, x, h, c: m(x, (h, c)),
                 lambda r, B: tuple(r.standard_normal((B, n)) for n in (5, 4, 4)), id="LSTMCell"),
    # batch norm without running statistics: the batch's statistics in training and in eval, so
    # the export is exact in both modes and its state dict (parameters only) is minigrad's
    pytest.param(lambda: nn.BatchNorm1d(4, track_running_stats=False), None, x3, id="BatchNorm1d-NCL"),
    pytest.param(lambda: nn.BatchNorm1d(5, affine=False, track_running_stats=False), None,
                 lambda r, B: (r.standard_normal((B, 5)),), id="BatchNorm1d-NC-affine-off"),
    pytest.param(lambda: nn.BatchNorm2d(3, track_running_stats=False), None,
                 lambda r, B: (r.standard_normal((B, 3, 2, 2)),), id="BatchNorm2d"),
    # convolution and pooling (NCHW / NCL images)
    pytest.param(lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), None,
                 lambda r, B: (r.standard_normal((B, 3, 7, 6)),), id="Conv2d"),
    pytest.param(lambda: nn.Conv2d(4, 6, (2, 3), padding="same", dilation=(2, 1), groups=2, bias=False), None,
                 lambda r, B: (r.standard_normal((B, 4, 5, 5)),), id="Conv2d-same-groups"),
    pytest.param(lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), None,
                 lambda r, B: (r.standard_normal((B, 2, 4, 5)),), id="Conv2d-reflect"),
    pytest.param(lambda: nn.Conv1d(3, 5, 3, stride=2, padding=2), None,
                 lambda r, B: (r.standard_normal((B, 3, 9)),), id="Conv1d"),
    pytest.param(lambda: nn.ConvTranspose2d(4, 6, (3, 2), 2, 1, output_padding=1, groups=2), None,
                 lambda r, B: (r.standard_normal((B, 4, 3, 4)),), id="ConvTranspose2d"),
    pytest.param(lambda: nn.ConvTranspose1d(3, 2, 3, stride=3, dilation=2, bias=False), None,
                 lambda r, B: (r.standard_normal((B, 3, 5)),), id="ConvTranspose1d"),
    pytest.param(lambda: nn.Upsample(scale_factor=1.5, mode="bilinear"), None,
                 lambda r, B: (r.standard_normal((B, 2, 3, 4)),), id="Upsample"),
    pytest.param(lambda: nn.UpsamplingNearest2d(size=(5, 3)), None,
                 lambda r, B: (r.standard_normal((B, 2, 3, 4)),), id="UpsamplingNearest2d"),
    pytest.param(lambda: nn.UpsamplingBilinear2d(scale_factor=2), None,
                 lambda r, B: (r.standard_normal((B, 2, 3, 4)),), id="UpsamplingBilinear2d"),
    pytest.param(lambda: nn.MaxPool2d(3, 2, padding=1, ceil_mode=True), None,
                 lambda r, B: (r.standard_normal((B, 2, 6, 7)),), id="MaxPool2d"),
    pytest.param(lambda: nn.MaxPool1d(2, dilation=2), None,
                 lambda r, B: (r.standard_normal((B, 2, 7)),), id="MaxPool1d"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, padding=1, count_include_pad=False), None,
                 lambda r, B: (r.standard_normal((B, 2, 6, 7)),), id="AvgPool2d"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d((2, 3)), None,
                 lambda r, B: (r.standard_normal((B, 2, 5, 7)),), id="AdaptiveAvgPool2d"),
    pytest.param(lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                       nn.Conv2d(4, 8, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                       nn.Linear(8, 3)), None,
                 lambda r, B: (r.standard_normal((B, 1, 8, 8)),), id="Sequential-cnn"),
]


def _cast(arrays, dtype):
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def run_both(module, exported, fn, arrays, seed):
    """Outputs and gradients (parameters and float inputs) of minigrad and of the export."""
    module.zero_grad()
    exported.zero_grad()
    mins = [mg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    tins = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = module(*mins) if fn is None else fn(module, *mins)
    outs = out if isinstance(out, tuple) else (out,)
    tout = exported(*tins)
    touts = tout if isinstance(tout, tuple) else (tout,)
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(o.shape).astype(o.dtype) for o in outs]
    sum((o * mg.tensor(g)).sum() for o, g in zip(outs, gs)).backward()
    sum((o * torch.from_numpy(g)).sum() for o, g in zip(touts, gs)).backward()
    pairs = [(o.numpy(), t.detach().numpy()) for o, t in zip(outs, touts)]
    tparams = dict(exported.named_parameters())
    pairs += [(p.grad, tparams[n].grad.numpy()) for n, p in module.named_parameters()]
    pairs += [(m.grad, t.grad.numpy()) for m, t in zip(mins, tins) if m.requires_grad]
    return pairs


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-5)], ids=["float64", "float32"])
@pytest.mark.parametrize("make, fn, inputs", MODULES)
def test_module_outputs_and_gradients_equal_minigrad(make, fn, inputs, dtype, tol):
    mg.manual_seed(0)
    module = make().to(dtype)
    rng = np.random.default_rng(0)
    exported = to_torch(module, *_cast(inputs(rng, 2), dtype), method=fn or "forward")
    assert list(exported.state_dict()) == list(module.state_dict())
    for B in (2, 3):
        for mine, theirs in run_both(module, exported, fn, _cast(inputs(rng, B), dtype), seed=B):
            assert mine.shape == theirs.shape
            np.testing.assert_allclose(theirs, mine, rtol=tol, atol=tol)


def test_every_nn_module_is_in_the_table():
    """A new layer in minigrad.nn must be added to MODULES (the list and dict containers have no forward)."""
    tested = {p.id.split("-")[0] for p in MODULES}
    layers = {name for name in dir(nn) if isinstance(getattr(nn, name), type)
              and issubclass(getattr(nn, name), nn.Module)
              and name not in ("Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")}
    assert layers - tested == set()


def test_dropout_trains_in_torch():
    """Dropout in train(): zeros with about probability p, the rest scaled by 1 / (1 - p)."""
    exported = to_torch(nn.Dropout(0.25), np.ones((2, 1000), dtype=np.float32))
    with torch.no_grad():
        y = exported(torch.ones(4, 1000))
        kept = y != 0
        assert 0.7 < kept.float().mean().item() < 0.8
        assert torch.allclose(y[kept], torch.tensor(1 / 0.75))
        exported.eval()
        assert torch.equal(exported(torch.ones(4, 1000)), torch.ones(4, 1000))


# ----------------------------------------------------------------------------- what cannot be exported


def test_calls_that_do_not_fit_the_trace_are_refused():
    exported = to_torch(nn.Linear(3, 2), np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="exported with 1 inputs, called with 2"):
        exported(torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"input 0 of Linear.forward has shape \(2, 4\).*\(B, 3\)"):
        exported(torch.zeros(2, 4))
    with pytest.raises(AttributeError, match="Linear has no method 'los'"):
        to_torch(nn.Linear(3, 2), np.zeros((2, 3)), method="los")


def test_data_dependent_control_flow_is_caught_when_it_changes():
    """A padding mask computed with numpy makes the program dynamic (traced again per call);
    when the new inputs take another path through Python, the call says so."""
    def fn(model, x, keep):
        y = model(x).masked_fill(mg.tensor(~keep.numpy()[..., None]), 0.0)
        return y.relu() if keep.numpy().all() else y.tanh()

    keep = np.ones((2, 4), dtype=bool)
    exported = to_torch(nn.Linear(3, 2), np.zeros((2, 4, 3), dtype=np.float32), keep, method=fn)
    assert exported.dynamic
    exported(torch.zeros(3, 4, 3), torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="ran different ops on these inputs than on the example"):
        exported(torch.zeros(3, 4, 3), torch.zeros(3, 4, dtype=torch.bool))


def test_attention_weights_export_since_they_stay_in_the_graph():
    """need_weights=True runs the composed attention (the weights are differentiable, as in
    PyTorch), so the weights export as well as the output."""
    def weights(model, x):
        return model(x, x, x, need_weights=True, average_attn_weights=False)

    mha = nn.MultiheadAttention(4, 2)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    exported = to_torch(mha, x, method=weights)
    out, w = weights(mha, mg.tensor(x))
    tout, tw = exported(torch.tensor(x))
    np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tw.detach().numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_export_leaves_the_running_statistics_as_they_were():
    """Tracing runs the model in training mode; batch norm's buffers are restored after it."""
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    to_torch(model, x)
    after = model.state_dict()
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


class _Cube(mg.autograd.Function):
    """An op of the user's own: minigrad runs it, but it has no torch twin."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved
        return 3 * x**2 * g


class _Cubes(nn.Module):
    def forward(self, x):
        return _Cube.apply(x)


def test_an_op_without_a_torch_twin_is_refused_naming_it():
    with pytest.raises(TraceError, match="to_torch: .* runs ops with no torch twin in TORCH_OPS: _Cube"):
        to_torch(_Cubes(), np.ones((2, 3), np.float32))
