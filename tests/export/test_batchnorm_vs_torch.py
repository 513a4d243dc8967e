"""nn.BatchNorm1d, nn.BatchNorm2d and F.batch_norm against torch over several training steps
and then eval (outputs, gradients, running statistics, num_batches_tracked), state dicts in
both directions, and what `to_torch` exports of a module with batch norm."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
from minigrad import Tensor  # noqa: E402
from minigrad.export import to_torch  # noqa: E402

CONFIGS = [
    pytest.param("BatchNorm1d", (5, 3), {}, id="1d-NC"),
    pytest.param("BatchNorm1d", (4, 3, 6), {"momentum": None}, id="1d-NCL-cumulative"),
    pytest.param("BatchNorm1d", (2, 3), {"affine": False, "momentum": None}, id="1d-N2-affine-off"),
    pytest.param("BatchNorm1d", (4, 3, 1), {"track_running_stats": False}, id="1d-L1-untracked"),
    pytest.param("BatchNorm2d", (3, 2, 4, 5), {"momentum": 0.3}, id="2d-momentum-0.3"),
    pytest.param("BatchNorm2d", (2, 3, 1, 1), {"affine": False}, id="2d-1x1-affine-off"),
    pytest.param("BatchNorm2d", (3, 2, 2, 3), {"bias": False, "eps": 1e-3}, id="2d-no-bias"),
    pytest.param("BatchNorm2d", (2, 1, 3, 1), {"track_running_stats": False, "affine": False},
                 id="2d-C1-untracked-affine-off"),
]


def _pair(name: str, C: int, kwargs: dict, dtype):
    """A torch module with random weights and the minigrad module with its state dict loaded."""
    theirs = getattr(torch.nn, name)(C, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    with torch.no_grad():
        if theirs.weight is not None:
            theirs.weight.uniform_(0.5, 1.5)
        if theirs.bias is not None:
            theirs.bias.uniform_(-1, 1)
    mine = getattr(nn, name)(C, **kwargs).to(dtype)
    mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return mine, theirs


def _step(mine, theirs, a, g, tol):
    """One forward and backward of both; compares outputs, gradients and every buffer."""
    x, t = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = mine(x), theirs(t)
    assert out.dtype == a.dtype and out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    out.backward(g)
    tout.backward(torch.from_numpy(g))
    pairs = [(x.grad, t.grad)]
    pairs += [(getattr(mine, n).grad, getattr(theirs, n).grad) for n in ("weight", "bias")
              if getattr(theirs, n) is not None]
    for mg_grad, t_grad in pairs:
        np.testing.assert_allclose(mg_grad, t_grad.numpy(), rtol=10 * tol, atol=10 * tol)
    state, tstate = mine.state_dict(), theirs.state_dict()
    assert list(state) == list(tstate)
    for k, v in tstate.items():
        assert state[k].dtype == v.numpy().dtype and state[k].shape == tuple(v.shape)
        np.testing.assert_allclose(state[k], v.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-4)], ids=["float64", "float32"])
@pytest.mark.parametrize("name, shape, kwargs", CONFIGS)
def test_training_steps_then_eval_match_torch(name, shape, kwargs, dtype, tol):
    mine, theirs = _pair(name, shape[1], kwargs, dtype)
    rng = np.random.default_rng(0)
    for step in range(3):
        a = (rng.standard_normal(shape) * (step + 1) + step).astype(dtype)
        _step(mine, theirs, a, rng.standard_normal(shape).astype(dtype), tol)
        for p, tp in zip(mine.parameters(), theirs.parameters()):  # the same SGD step on both
            p.data = p.data - 0.1 * p.grad
            with torch.no_grad():
                tp -= 0.1 * tp.grad
            p.grad, tp.grad = None, None
    mine.eval()
    theirs.eval()
    for _ in range(2):  # eval leaves the buffers alone: the second call checks they did not move
        a, g = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
        _step(mine, theirs, a, g, tol)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_functional_batch_norm_matches_torch(training, affine):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5)) * 2 + 1
    w = rng.uniform(0.5, 1.5, 4) if affine in ("weight", "both") else None
    b = rng.standard_normal(4) if affine in ("bias", "both") else None
    mean, var = rng.standard_normal(4), rng.uniform(0.5, 2, 4)
    mine_stats = [Tensor(mean.copy()), Tensor(var.copy())]
    their_stats = [torch.tensor(mean), torch.tensor(var)]
    out = F.batch_norm(Tensor(a), *mine_stats, None if w is None else Tensor(w),
                       None if b is None else Tensor(b), training=training, momentum=0.2, eps=1e-4)
    tout = torch.nn.functional.batch_norm(torch.tensor(a), *their_stats,
                                          None if w is None else torch.tensor(w),
                                          None if b is None else torch.tensor(b),
                                          training=training, momentum=0.2, eps=1e-4)
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12, atol=1e-12)
    for m, t in zip(mine_stats, their_stats):
        np.testing.assert_allclose(m.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_torch_state_dict_loads_and_minigrads_loads_into_torch():
    rng = np.random.default_rng(2)
    theirs = torch.nn.BatchNorm2d(3)
    for _ in range(3):
        theirs(torch.tensor(rng.standard_normal((4, 3, 2, 2)).astype(np.float32) * 3 + 1))
    mine = nn.BatchNorm2d(3)
    result = mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    assert mine.num_batches_tracked.numpy() == 3 and mine.num_batches_tracked.dtype == np.int64
    a = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    mine.eval()
    theirs.eval()
    np.testing.assert_allclose(mine(mg.tensor(a)), theirs(torch.tensor(a)).detach(), rtol=1e-6,
                               atol=1e-6)
    mine.train()
    mine(mg.tensor(a))
    fresh = torch.nn.BatchNorm2d(3)
    fresh.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in mine.state_dict().items()})  # strict
    assert fresh.num_batches_tracked.item() == 4


@pytest.mark.parametrize("name, shape", [("BatchNorm1d", (1, 3)), ("BatchNorm1d", (1, 3, 1)),
                                         ("BatchNorm2d", (1, 3, 1, 1))])
def test_one_value_per_channel_is_refused_in_training_as_torch(name, shape):
    message = "Expected more than 1 value per channel when training"
    with pytest.raises(ValueError, match=message):
        getattr(torch.nn, name)(3)(torch.zeros(shape))
    with pytest.raises(ValueError, match=message):
        getattr(nn, name)(3)(mg.zeros(*shape))


# ----------------------------------------------------------------------------- to_torch


def _net():
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU()).double()


def _grads(out, params, g):
    out.backward(g)
    return [p.grad for p in params]


def test_exported_training_forward_is_the_batch_statistics_function():
    """In training mode the export computes what minigrad computes (the batch's statistics),
    at another batch size too, and updates its running statistics as minigrad updates its own."""
    rng = np.random.default_rng(3)
    model = _net()
    exported = to_torch(model, rng.standard_normal((4, 4)))
    assert not exported.dynamic and list(exported.state_dict()) == list(model.state_dict())
    for B in (4, 7):
        a, g = rng.standard_normal((B, 4)), rng.standard_normal((B, 3))
        model.zero_grad()
        exported.zero_grad()
        out = model(mg.tensor(a))
        mine = _grads(out, model.parameters(), mg.tensor(g))
        tout = exported(torch.tensor(a))
        theirs = _grads(tout, exported.parameters(), torch.tensor(g))
        np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=1e-10, atol=1e-10)
        for m, t in zip(mine, theirs):
            np.testing.assert_allclose(t.numpy(), m, rtol=1e-10, atol=1e-10)
        for k, v in exported.state_dict().items():
            np.testing.assert_allclose(v.numpy(), model.state_dict()[k], rtol=1e-12, atol=1e-12, err_msg=k)


def _evaluate(model, x):
    with nn.evaluating(model):
        return model(x)


def test_exported_eval_function_uses_the_running_statistics():
    """Exporting a method that evaluates (`nn.evaluating`) records the eval-mode function, the
    running statistics as constants: it equals minigrad's eval and torch.nn.BatchNorm2d's."""
    rng = np.random.default_rng(4)
    model = nn.BatchNorm2d(3).double()
    for _ in range(3):
        model(mg.tensor(rng.standard_normal((4, 3, 2, 2)) * 2 + 1))
    reference = torch.nn.BatchNorm2d(3).double().eval()
    reference.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in model.state_dict().items()})
    before = model.state_dict()
    exported = to_torch(model, rng.standard_normal((2, 3, 2, 2)), method=_evaluate)
    for k, v in model.state_dict().items():  # tracing an evaluation leaves the buffers alone
        np.testing.assert_array_equal(v, before[k])
    assert not exported.dynamic
    for B in (2, 5):
        a, g = rng.standard_normal((B, 3, 2, 2)), rng.standard_normal((B, 3, 2, 2))
        model.zero_grad()
        exported.zero_grad()
        out = _evaluate(model, mg.tensor(a))
        mine = _grads(out, model.parameters(), mg.tensor(g))
        tout = exported(torch.tensor(a))
        theirs = _grads(tout, exported.parameters(), torch.tensor(g))
        np.testing.assert_allclose(tout.detach().numpy(), out.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(reference(torch.tensor(a)).detach().numpy(), out.numpy(), rtol=1e-12,
                                   atol=1e-12)
        for m, t in zip(mine, theirs):
            np.testing.assert_allclose(t.numpy(), m, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"momentum": None, "affine": False}, {"bias": False, "eps": 1e-3},
                                    {"track_running_stats": False}])
def test_repr_and_initial_state_are_torchs(kwargs):
    for name in ("BatchNorm1d", "BatchNorm2d"):
        mine, theirs = getattr(nn, name)(4, **kwargs), getattr(torch.nn, name)(4, **kwargs)
        assert repr(mine) == repr(theirs)
        state = mine.state_dict()
        for k, v in theirs.state_dict().items():
            assert state[k].dtype == v.numpy().dtype
            np.testing.assert_array_equal(state[k], v.numpy())
