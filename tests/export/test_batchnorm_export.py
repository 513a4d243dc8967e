"""Batch norm exported whole: `to_torch` carries running_mean, running_var and
num_batches_tracked as torch buffers, trains and evaluates as torch.nn.BatchNorm does, and
`state_dict_from_torch` brings the buffers back; `minigrad train cnn --engine torch` saves a
checkpoint that minigrad's own commands read, with the running statistics minigrad's own
training gives."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
import minigrad.optim as optim  # noqa: E402
from minigrad import Tensor  # noqa: E402
from minigrad.cli import main  # noqa: E402
from minigrad.export import TraceError, state_dict_from_torch, to_torch  # noqa: E402
from minigrad.export.distributed import _PerShape  # noqa: E402
from minigrad.models.cnn import CNN, CNNConfig  # noqa: E402
from minigrad.models.runs import read_checkpoint  # noqa: E402

BUFFERS = ("running_mean", "running_var", "num_batches_tracked")


def _images(rng, B):
    return (rng.standard_normal((B, 1, 8, 8)) * 2 + 1).astype(np.float32)


def _trained_cnn(steps=3):
    """A tiny CNN (two BatchNorm2d) after a few minigrad SGD steps: running statistics moved."""
    mg.manual_seed(0)
    model = CNN(CNNConfig(channels=(4, 8, 8)))
    opt = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        loss = F.cross_entropy(model(mg.tensor(_images(rng, 16))), mg.tensor(rng.integers(0, 10, 16)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def test_to_torch_exports_the_buffers_and_its_eval_is_minigrads():
    model = _trained_cnn()
    rng = np.random.default_rng(1)
    exported = to_torch(model, _images(rng, 8))
    state, theirs = model.state_dict(), exported.state_dict()
    assert list(theirs) == list(state)  # parameters and buffers, in minigrad's (and torch's) order
    for k in state:
        assert theirs[k].numpy().dtype == state[k].dtype, k
        np.testing.assert_array_equal(theirs[k].numpy(), state[k], err_msg=k)
    assert int(theirs["block1.norm.num_batches_tracked"]) == 3
    exported.eval()
    model.eval()
    for B in (8, 5):
        x = _images(rng, B)
        mine, out = model(mg.tensor(x)).numpy(), exported(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(out, mine, rtol=2e-5, atol=2e-6)  # float32 rounding
    for k, v in exported.state_dict().items():  # eval leaves the buffers alone
        np.testing.assert_array_equal(v.numpy(), state[k], err_msg=k)


CONFIGS = [
    pytest.param("BatchNorm1d", (6, 3), {}, id="1d-NC"),
    pytest.param("BatchNorm1d", (4, 3, 5), {"momentum": None}, id="1d-NCL-cumulative"),
    pytest.param("BatchNorm1d", (5, 2), {"affine": False, "momentum": 0.3}, id="1d-affine-off"),
    pytest.param("BatchNorm2d", (3, 2, 4, 5), {"momentum": 0.3}, id="2d-momentum-0.3"),
    pytest.param("BatchNorm2d", (3, 2, 2, 3), {"bias": False, "eps": 1e-3}, id="2d-no-bias"),
    pytest.param("BatchNorm2d", (4, 2, 3, 3), {"track_running_stats": False}, id="2d-untracked"),
]


@pytest.mark.parametrize("name, shape, kwargs", CONFIGS)
def test_training_in_torch_updates_the_running_statistics_as_minigrad(name, shape, kwargs):
    """k training steps of the export and of minigrad on the same data: the same outputs and
    the same buffers after each; then eval uses them in both."""
    mine = getattr(nn, name)(shape[1], **kwargs).double()
    rng = np.random.default_rng(2)
    exported = to_torch(mine, rng.standard_normal(shape))
    for step in range(4):
        a = rng.standard_normal(shape) * (step + 1) + step
        np.testing.assert_allclose(exported(torch.tensor(a)).detach().numpy(), mine(Tensor(a)).numpy(),
                                   rtol=1e-10, atol=1e-10)
        state = mine.state_dict()
        assert list(exported.state_dict()) == list(state)
        for k, v in exported.state_dict().items():
            np.testing.assert_allclose(v.numpy(), state[k], rtol=1e-12, atol=1e-12, err_msg=k)
    exported.eval()
    mine.eval()
    a = rng.standard_normal(shape)
    np.testing.assert_allclose(exported(torch.tensor(a)).detach().numpy(), mine(Tensor(a)).numpy(),
                               rtol=1e-10, atol=1e-10)


def test_buffers_trained_in_torch_come_back_with_state_dict_from_torch():
    model = _trained_cnn(steps=1)
    rng = np.random.default_rng(3)
    exported = to_torch(model, _images(rng, 8))
    topt = torch.optim.SGD(exported.parameters(), lr=0.1)
    for _ in range(3):  # torch trains: the weights and the running statistics move
        loss = torch.nn.functional.cross_entropy(exported(torch.from_numpy(_images(rng, 8))),
                                                 torch.from_numpy(rng.integers(0, 10, 8)))
        topt.zero_grad()
        loss.backward()
        topt.step()
    back = state_dict_from_torch(exported.state_dict(), model)
    assert list(back) == list(model.state_dict())
    assert back["block2.norm.num_batches_tracked"].dtype == np.int64
    assert int(back["block2.norm.num_batches_tracked"]) == 4
    model.load_state_dict(back)  # strict: every name
    for k, v in exported.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[k], v.numpy(), err_msg=k)
    exported.eval()
    model.eval()
    x = _images(rng, 6)
    np.testing.assert_allclose(model(mg.tensor(x)).numpy(), exported(torch.from_numpy(x)).detach().numpy(),
                               rtol=2e-5, atol=2e-6)
    # and back into torch: a fresh export of the loaded model holds the same buffers
    again = to_torch(model, x).state_dict()
    for k, v in exported.state_dict().items():
        np.testing.assert_array_equal(again[k].numpy(), v.numpy(), err_msg=k)


def test_a_torch_state_dict_without_the_buffers_is_refused_naming_them():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    params_only = {k: torch.from_numpy(v.numpy()) for k, v in model.state_dict().items()
                   if not k.endswith(BUFFERS)}
    with pytest.raises(ValueError, match=r"missing: 1\.running_mean, 1\.running_var, 1\.num_batches_tracked"):
        state_dict_from_torch(params_only, model)


class Offset(nn.Module):
    """A module with a persistent buffer it reads and a non-persistent one."""

    def __init__(self):
        self.lin = nn.Linear(3, 3)
        self.register_buffer("shift", Tensor(np.arange(3, dtype=np.float32)))
        self.register_buffer("scale", Tensor(np.full(3, 2.0, np.float32)), persistent=False)

    def forward(self, x):
        return self.lin(x) * self.scale + self.shift


class Counter(nn.Module):
    """A module that changes a buffer outside its ops (in numpy), with no torch twin."""

    def __init__(self):
        self.register_buffer("calls", Tensor(np.array(0, np.int64)))

    def forward(self, x):
        self.calls.data = self.calls.data + 1
        return x * 2


def test_every_buffer_is_a_buffer_of_the_export_and_one_changed_outside_the_ops_is_refused():
    model = Offset()
    exported = to_torch(model, np.ones((2, 3), np.float32))
    assert list(exported.state_dict()) == list(model.state_dict()) == ["shift", "lin.weight", "lin.bias"]
    assert dict(exported.named_buffers())["scale"].tolist() == [2.0, 2.0, 2.0]  # kept, not saved
    with torch.no_grad():
        exported.shift += 1  # the replay reads the buffer itself, not a copy fixed at export
    model.load_state_dict(state_dict_from_torch(exported.state_dict(), model))
    x = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(exported(torch.from_numpy(x)).detach().numpy(), model(mg.tensor(x)).numpy(),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(TraceError, match="changes the buffers calls outside its ops"):
        to_torch(Counter(), np.ones((2, 3), np.float32))


class _Recipe:
    """Just what `_PerShape` reads of a recipe: a model, and a loss of a batch."""

    def __init__(self):
        mg.manual_seed(0)
        self.model = nn.Sequential(nn.BatchNorm1d(2))  # (B, 2, L) -> (B, 2, L)

    def loss(self, batch):
        y = self.model(batch[0])
        return (y ** 3).mean() + y.mean()


def test_exports_per_shape_share_one_set_of_running_statistics():
    """The torch engine exports once per batch shape; every export updates the first one's
    buffers, which are the ones that go back to the minigrad model."""
    recipe = _Recipe()
    rng = np.random.default_rng(5)
    shapes = _PerShape(recipe, (rng.standard_normal((4, 2, 5)).astype(np.float32),), torch.device("cpu"))
    batches = [rng.standard_normal((4, 2, L)).astype(np.float32) * L + L for L in (5, 7, 5)]
    for b in batches:
        shapes(torch.from_numpy(b)).backward()
    for b in batches:
        recipe.loss((mg.tensor(b),))
    state = recipe.model.state_dict()
    theirs = shapes.main.state_dict()
    assert len(shapes._others) == 2 and int(theirs["0.num_batches_tracked"]) == 3
    for k in ("0.running_mean", "0.running_var"):
        np.testing.assert_allclose(theirs[k].numpy(), state[k], rtol=1e-6, atol=1e-6, err_msg=k)


def test_train_cnn_with_the_torch_engine_saves_the_running_statistics_minigrad_trains(tmp_path, monkeypatch,
                                                                                       capsys):
    """`minigrad train cnn --engine torch --preset tiny --steps 4 --out r` saves its checkpoint
    (with the batch-norm buffers), `minigrad eval` reads it, and the running statistics are
    those of the same run with minigrad's own engine."""
    monkeypatch.chdir(tmp_path)
    runs = {}
    for engine in ("torch", "minigrad"):
        mg.manual_seed(0)  # as a fresh process has it: the initial weights are drawn before the seed
        assert main(["train", "cnn", "--engine", engine, "--preset", "tiny", "--steps", "4",
                     "--out", f"r-{engine}", "--quiet"]) == 0
        runs[engine] = read_checkpoint(str(tmp_path / f"r-{engine}"))
    (meta, weights, _), (_, reference, _) = runs["torch"], runs["minigrad"]
    assert meta["step"] == 4 and weights.keys() == reference.keys()
    for k in ("block1.norm.num_batches_tracked", "block2.norm.num_batches_tracked"):
        assert weights[k].dtype == np.int64 and int(weights[k]) == int(reference[k]) == 4
    for k in ("block1.norm.running_mean", "block1.norm.running_var", "block2.norm.running_mean",
              "block2.norm.running_var"):
        np.testing.assert_allclose(weights[k], reference[k], rtol=1e-5, atol=1e-6, err_msg=k)
    capsys.readouterr()
    assert main(["eval", "r-torch"]) == 0
    assert f"val_loss {meta['history'][-1]['val_loss']:.4f}" in capsys.readouterr().out
