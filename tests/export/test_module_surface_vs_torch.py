"""Module hooks and containers against torch's: the same calls, the same values and order."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as mnn

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


def _program(lib, nn):
    """One program, run with lib = torch or minigrad: every hook kind on a small model, with
    replacements; returns what the hooks saw and the gradients, as nested lists."""
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleDict({"fc": nn.Linear(3, 3), "act": nn.Tanh()})
            self.gain = nn.ParameterDict({"g": nn.Parameter(lib.ones(3) * 1.5)})

        def forward(self, x, y, mode="mul"):
            h = self.layers.act(self.layers.fc(x)) * self.gain.g
            return (h * y, h + y) if mode == "mul" else (h, y)

    lib.manual_seed(0)
    block = Block()
    with lib.no_grad():
        for i, p in enumerate(block.parameters()):
            p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1),
                               dtype=lib.float32))
    log = []

    def values(ts):
        return [None if t is None else np.asarray(t.detach().numpy()).round(5).tolist() for t in ts]

    block.register_forward_pre_hook(lambda m, args: (args[0] * 2, *args[1:]))
    block.register_forward_pre_hook(lambda m, args, kwargs: log.append(("pre", sorted(kwargs))),
                                    with_kwargs=True)
    block.register_forward_hook(lambda m, args, out: (out[0] + 1, out[1]))
    block.register_full_backward_hook(lambda m, gi, go: log.append(("back", values(gi), values(go))))
    block.layers.fc.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0.5,))
    handle = block.layers.fc.register_forward_hook(lambda m, args, out: log.append("never"))
    handle.remove()
    x = lib.tensor([[0.1, -0.2, 0.3], [0.5, 0.4, -0.6]], requires_grad=True)
    y = lib.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 0.25]], requires_grad=True)
    a, b = block(x, y, mode="mul")
    (a * a).sum().backward(retain_graph=True)
    (a.sum() + (b * b).sum()).backward()
    grads = values([x.grad, y.grad] + [p.grad for p in block.parameters()])
    block.zero_grad(set_to_none=False)
    zeroed = values([p.grad for p in block.parameters()])
    return log, grads, zeroed, list(block.state_dict())


def test_hooks_and_containers_give_torch_values():
    got = _program(mg, mnn)
    want = _program(torch, torch.nn)
    assert got[0][0] == want[0][0] == ("pre", ["mode"])
    assert len(got[0]) == len(want[0]) == 3  # the pre hook, then two backward passes
    for (_, gi, go), (_, tgi, tgo) in zip(got[0][1:], want[0][1:]):
        for mine, theirs in zip(gi + go, tgi + tgo):
            assert (mine is None) == (theirs is None)
            if mine is not None:
                np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    for mine, theirs in zip(got[1], want[1]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    assert got[2] == want[2]
    assert got[3] == want[3]


def _tied(nn):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)
            self.b.weight = self.a.weight
            self.blocks = nn.ModuleList([self.a])  # a module reached twice

    return Tied()


def test_a_tied_weight_is_in_the_state_dict_under_every_name_as_in_torch():
    mine, theirs = _tied(mnn), _tied(torch.nn)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    mine.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(mine.b.weight.numpy(), theirs.a.weight.detach().numpy())
