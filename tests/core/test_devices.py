"""Devices, as torch's: every tensor is on device("cpu"); "cpu" works wherever torch takes a
device, any other device is refused where a tensor would go there, naming it."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn

CREATORS = [
    lambda d: mg.tensor([1.0, 2.0], device=d), lambda d: mg.zeros(2, 3, device=d),
    lambda d: mg.ones(2, device=d),
    lambda d: mg.empty(2, device=d), lambda d: mg.full((2,), 1.5, device=d), lambda d: mg.arange(4, device=d),
    lambda d: mg.linspace(0, 1, 3, device=d), lambda d: mg.eye(2, device=d), lambda d: mg.randn(2, device=d),
    lambda d: mg.rand(2, device=d), lambda d: mg.randint(0, 5, (3,), device=d),
    lambda d: mg.zeros_like(mg.ones(2), device=d), lambda d: mg.ones_like(mg.ones(2), device=d),
    lambda d: mg.full_like(mg.ones(2), 3.0, device=d), lambda d: mg.empty_like(mg.ones(2), device=d),
    lambda d: mg.randn_like(mg.ones(2), device=d), lambda d: mg.rand_like(mg.ones(2), device=d),
    lambda d: mg.as_tensor([1, 2], device=d),
]


@pytest.mark.parametrize("make", CREATORS)
@pytest.mark.parametrize("where", ["cpu", "cpu:0", mg.device("cpu"), None])
def test_every_creation_function_takes_the_cpu(make, where):
    assert make(where).device == mg.device("cpu")


@pytest.mark.parametrize("make", CREATORS)
def test_any_other_device_is_refused_naming_it(make):
    with pytest.raises(RuntimeError, match="device 'cuda:1' is not available: minigrad computes on the CPU"):
        make("cuda:1")


def test_device_objects_as_torchs():
    d = mg.device("cuda", 0)
    assert (d.type, d.index, str(d), repr(d)) == ("cuda", 0, "cuda:0", "device(type='cuda', index=0)")
    assert mg.device("cpu") == mg.device(mg.device("cpu")) and mg.device("cpu") != "cpu"
    assert hash(mg.device("cpu")) == hash(mg.device("cpu")) and str(mg.device("cpu")) == "cpu"
    with pytest.raises(RuntimeError, match="'foo' is not a device type"):
        mg.device("foo")
    with pytest.raises(AttributeError):
        d.type = "cpu"


def test_to_and_cpu_keep_the_tensor_and_its_graph():
    x = mg.randn(3, requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(device="cpu") is x and not x.is_cuda
    y = x.to("cpu", mg.float64)  # the device, then the dtype: a cast in the graph
    assert y.dtype == np.float64
    (y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad, np.full(3, 2.0, np.float32))
    assert x.to(mg.device("cpu"), dtype=mg.float64).dtype == np.float64
    with pytest.raises(RuntimeError, match="to: device 'cuda' is not available"):
        x.to("cuda")
    with pytest.raises(RuntimeError, match="cuda: device 'cuda:1' is not available"):
        x.cuda(1)
    with pytest.raises(TypeError, match="device was given both"):
        x.to("cpu", device="cpu")


def test_modules_move_to_the_cpu_and_refuse_elsewhere():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    assert model.to("cpu") is model and model.cpu() is model
    assert model.to("cpu", mg.float64)[0].weight.dtype == np.float64
    assert model.to(device=mg.device("cpu"), dtype=mg.float32)[0].weight.dtype == np.float32
    with pytest.raises(RuntimeError, match="Module.to: device 'mps' is not available"):
        model.to("mps")
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        model.cuda()


def test_cuda_and_backends_answer_for_a_machine_without_cuda():
    assert not mg.cuda.is_available() and mg.cuda.device_count() == 0
    assert mg.cuda.manual_seed_all(0) is None and mg.cuda.manual_seed(0) is None
    mg.backends.cuda.matmul.allow_tf32 = True  # as nanoGPT's train.py sets them
    mg.backends.cudnn.allow_tf32 = True
    assert not mg.backends.mps.is_available()


def test_as_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    for text in ("cpu", "cpu:0", "cuda", "cuda:1", "mps"):
        ours, theirs = mg.device(text), torch.device(text)
        assert (ours.type, ours.index, str(ours), repr(ours)) == (theirs.type, theirs.index, str(theirs),
                                                                  repr(theirs))
    assert str(mg.zeros(1).device) == str(torch.zeros(1).device)
    assert (mg.device("cpu") == "cpu") == (torch.device("cpu") == "cpu")
    assert mg.cuda.is_available() == torch.cuda.is_available() and mg.cuda.device_count() == 0
    assert mg.randint(10, (4,)).shape == tuple(torch.randint(10, (4,)).shape)  # randint(high, size)
