"""nn.RNN, nn.GRU, nn.LSTM and nn.LSTMCell against PyTorch's, with the weights of a torch module
loaded through load_state_dict: outputs, final states, and the gradients of the input, the
initial states and every parameter; and an LSTM model exported with to_torch."""

import itertools

import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
from minigrad.export import to_torch  # noqa: E402

# torch's own notice that its fast CPU kernel has no projections
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported:UserWarning")

# (id, torch factory, minigrad factory): the same arguments to both
KINDS = [
    ("rnn-tanh", lambda **k: torch.nn.RNN(3, 4, **k), lambda **k: nn.RNN(3, 4, **k)),
    ("rnn-relu", lambda **k: torch.nn.RNN(3, 4, nonlinearity="relu", **k),
     lambda **k: nn.RNN(3, 4, nonlinearity="relu", **k)),
    ("gru", lambda **k: torch.nn.GRU(3, 4, **k), lambda **k: nn.GRU(3, 4, **k)),
    ("lstm", lambda **k: torch.nn.LSTM(3, 4, **k), lambda **k: nn.LSTM(3, 4, **k)),
    ("lstm-proj", lambda **k: torch.nn.LSTM(3, 4, proj_size=2, **k),
     lambda **k: nn.LSTM(3, 4, proj_size=2, **k)),
]

CASES = [
    pytest.param(make_t, make_m, layers, bidirectional, batch_first, with_state, batched,
                 id=f"{kind}-L{layers}-{'bi' if bidirectional else 'uni'}-{'bf' if batch_first else 'tf'}-"
                    f"{'hx' if with_state else 'nohx'}-{'batched' if batched else 'unbatched'}")
    for (kind, make_t, make_m), layers, bidirectional, batch_first, with_state, batched
    in itertools.product(KINDS, (1, 2), (False, True), (False, True), (False, True), (True, False))
]


def from_torch(tmodule, mmodule):
    """Load a torch module's state dict (arrays from .detach().numpy()) into the minigrad module."""
    assert list(mmodule.state_dict()) == list(tmodule.state_dict())
    mmodule.load_state_dict({k: v.detach().numpy() for k, v in tmodule.state_dict().items()})
    return mmodule


def flat(x):
    return list(x) if isinstance(x, tuple) else [x]


def compare(tmodule, mmodule, arrays, seed, tol):
    """Run both on the same inputs (arrays: the input, then the state tensors, if any), with one
    random upstream gradient for every result; compare results and every gradient."""
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    mins = [mg.tensor(a, requires_grad=True) for a in arrays]
    pack = (lambda xs: None if len(xs) == 1 else xs[1] if len(xs) == 2 else tuple(xs[1:]))
    tout, tfinal = tmodule(tins[0], pack(tins))
    mout, mfinal = mmodule(mins[0], pack(mins))
    touts, mouts = [tout] + flat(tfinal), [mout] + flat(mfinal)
    rng = np.random.default_rng(seed)
    gs = [rng.standard_normal(tuple(t.shape)).astype(arrays[0].dtype) for t in touts]
    sum((t * torch.from_numpy(g)).sum() for t, g in zip(touts, gs)).backward()
    sum((m * mg.tensor(g)).sum() for m, g in zip(mouts, gs)).backward()
    for i, (t, m) in enumerate(zip(touts, mouts)):
        assert tuple(t.shape) == m.shape and str(t.dtype) == f"torch.{m.dtype}", f"result {i}"
        np.testing.assert_allclose(m.numpy(), t.detach().numpy(), rtol=tol, atol=tol, err_msg=f"result {i}")
    for i, (t, m) in enumerate(zip(tins, mins)):
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=tol, atol=tol,
                                   err_msg=f"gradient of input {i}")
    tparams = dict(tmodule.named_parameters())
    for name, p in mmodule.named_parameters():
        np.testing.assert_allclose(p.grad, tparams[name].grad.numpy(), rtol=tol, atol=tol, err_msg=name)


def state_arrays(t, N, batched, rng, dtype):
    k = t.num_layers * (2 if t.bidirectional else 1)
    lead = (k, N) if batched else (k,)
    sizes = [t.proj_size or t.hidden_size] + ([t.hidden_size] if isinstance(t, torch.nn.LSTM) else [])
    return [rng.standard_normal(lead + (s,)).astype(dtype) for s in sizes]


@pytest.mark.parametrize("make_t, make_m, layers, bidirectional, batch_first, with_state, batched", CASES)
def test_layer_matches_torch(make_t, make_m, layers, bidirectional, batch_first, with_state, batched):
    torch.manual_seed(0)
    kw = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    t = make_t(**kw).double()
    m = from_torch(t, make_m(**kw).double())
    rng = np.random.default_rng(0)
    L, N = 4, 2
    x = rng.standard_normal(((N, L, 3) if batch_first else (L, N, 3)) if batched else (L, 3))
    states = state_arrays(t, N, batched, rng, np.float64) if with_state else []
    compare(t, m, [x] + states, seed=1, tol=1e-10)


@pytest.mark.parametrize("kind, make_t, make_m", KINDS, ids=[k[0] for k in KINDS])
def test_float32_and_bias_free_layers_match_torch(kind, make_t, make_m):
    torch.manual_seed(1)
    kw = dict(num_layers=2, bidirectional=True, bias=False, batch_first=True)
    t = make_t(**kw)
    m = from_torch(t, make_m(**kw))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 3)).astype(np.float32)
    compare(t, m, [x] + state_arrays(t, 3, True, rng, np.float32), seed=2, tol=1e-5)


def test_dropout_in_eval_matches_torch_and_state_dict_goes_back():
    torch.manual_seed(2)
    t = torch.nn.LSTM(3, 4, num_layers=2, dropout=0.5, bidirectional=True).double().eval()
    m = from_torch(t, nn.LSTM(3, 4, num_layers=2, dropout=0.5, bidirectional=True).double().eval())
    compare(t, m, [np.random.default_rng(2).standard_normal((4, 2, 3))], seed=3, tol=1e-10)
    mg.manual_seed(2)
    mine = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    theirs = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in mine.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((4, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(mine(mg.tensor(x))[0].numpy(), theirs(torch.from_numpy(x))[0].detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [True, False], ids=["hx", "nohx"])
@pytest.mark.parametrize("cls", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cell_matches_torch(cls, with_state, batched):
    torch.manual_seed(3)
    t = getattr(torch.nn, cls)(3, 4).double()
    m = from_torch(t, getattr(nn, cls)(3, 4).double())
    rng = np.random.default_rng(4)
    lead = (2,) if batched else ()
    arrays = [rng.standard_normal(lead + (3,))]
    if with_state:
        arrays += [rng.standard_normal(lead + (4,)) for _ in range(2 if cls == "LSTMCell" else 1)]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    mins = [mg.tensor(a, requires_grad=True) for a in arrays]
    pack = (lambda xs: None if len(xs) == 1 else xs[1] if len(xs) == 2 else tuple(xs[1:]))
    touts, mouts = flat(t(tins[0], pack(tins))), flat(m(mins[0], pack(mins)))
    gs = [rng.standard_normal(tuple(o.shape)) for o in touts]
    sum((o * torch.from_numpy(g)).sum() for o, g in zip(touts, gs)).backward()
    sum((o * mg.tensor(g)).sum() for o, g in zip(mouts, gs)).backward()
    for a, b in zip(touts, mouts):
        np.testing.assert_allclose(b.numpy(), a.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(tins, mins):
        np.testing.assert_allclose(b.grad, a.grad.numpy(), rtol=1e-10, atol=1e-12)
    tparams = dict(t.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad, tparams[name].grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


class Tagger(nn.Module):
    """A bidirectional two-layer LSTM with a linear head: scores per time step."""

    def __init__(self):
        self.lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True, proj_size=2)
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        out, (h, c) = self.lstm(x)  # (N, L, 4)
        return self.head(out), h, c


def test_lstm_model_exports_with_to_torch():
    """The export computes what minigrad computes (outputs, final states, every gradient) at
    the example's batch size and at another, and what torch.nn.LSTM with the same weights does."""
    mg.manual_seed(4)
    model = Tagger().double()
    rng = np.random.default_rng(5)
    exported = to_torch(model, rng.standard_normal((2, 6, 3)))
    assert not exported.dynamic and list(exported.state_dict()) == list(model.state_dict())
    reference = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True, proj_size=2).double()
    reference.load_state_dict({k.removeprefix("lstm."): torch.from_numpy(v.numpy())
                               for k, v in model.state_dict().items() if k.startswith("lstm.")})
    for B in (2, 3):
        model.zero_grad()
        x = rng.standard_normal((B, 6, 3))
        mine, theirs = model(mg.tensor(x)), exported(torch.tensor(x))
        g = rng.standard_normal((B, 6, 5))
        (mine[0] * mg.tensor(g)).sum().backward()
        (theirs[0] * torch.from_numpy(g)).sum().backward()
        for a, b in zip(mine, theirs):
            np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-10, atol=1e-12)
        tparams = dict(exported.named_parameters())
        for name, p in model.named_parameters():
            np.testing.assert_allclose(tparams[name].grad.numpy(), p.grad, rtol=1e-10, atol=1e-12,
                                       err_msg=name)
            tparams[name].grad = None
        out, (h, c) = reference(torch.tensor(x))
        np.testing.assert_allclose(h.detach().numpy(), mine[1].numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(c.detach().numpy(), mine[2].numpy(), rtol=1e-10, atol=1e-12)
