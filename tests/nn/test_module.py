"""The module system: parameters found by walking attributes, names, state dicts, modes, repr."""

from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad import Tensor
from minigrad.nn import Module, ModuleList, Parameter, Sequential


class Block(Module):
    def __init__(self, dim: int):
        self.linear = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x + self.linear(x).relu())


class Net(Module):
    """Parameters and modules in every kind of container the walker must see into."""

    def __init__(self):
        self.scale = Parameter(np.ones(2, dtype=np.float32))
        self.blocks = [Block(2), Block(2)]  # a plain list
        self.pair = (nn.Linear(2, 3), Parameter(np.zeros((3,), dtype=np.float32)))  # a tuple
        self.heads = {"a": nn.Linear(2, 1), "b": [nn.Linear(2, 1, bias=False)]}  # a dict of a list
        self.not_a_param = Tensor(np.zeros(5))  # plain tensors are not parameters
        self.name = "net"

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = block(x * self.scale)
        return self.heads["a"](x) + self.heads["b"][0](x)


NET_NAMES = [
    "scale",
    "pair.1",
    "blocks.0.linear.weight", "blocks.0.linear.bias", "blocks.0.norm.weight", "blocks.0.norm.bias",
    "blocks.1.linear.weight", "blocks.1.linear.bias", "blocks.1.norm.weight", "blocks.1.norm.bias",
    "pair.0.weight", "pair.0.bias",
    "heads.a.weight", "heads.a.bias",
    "heads.b.0.weight",
]


# ----------------------------------------------------------------------------- finding parameters


def test_parameters_are_found_in_attributes_lists_tuples_and_dicts():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert sorted(names) == sorted(NET_NAMES)
    assert names[:2] == ["scale", "pair.1"]  # a module's own parameters come before its children's
    assert names.index("blocks.0.linear.weight") < names.index("blocks.1.linear.weight")
    assert all(isinstance(p, Parameter) for p in net.parameters())
    assert net.num_parameters() == 2 + 3 + 2 * (6 + 4) + (6 + 3) + (2 + 1) + 2  # 39


def test_named_modules_and_children():
    net = Net()
    modules = [n for n, _ in net.named_modules()]
    assert modules[0] == "" and modules.count("") == 1
    assert sorted(modules[1:]) == sorted([
        "blocks.0", "blocks.0.linear", "blocks.0.norm", "blocks.1", "blocks.1.linear", "blocks.1.norm",
        "pair.0", "heads.a", "heads.b.0",
    ])
    assert sorted(n for n, _ in net.named_children()) == ["blocks.0", "blocks.1", "heads.a", "heads.b.0",
                                                          "pair.0"]
    assert modules.index("blocks.0") < modules.index("blocks.0.linear") < modules.index("blocks.1")
    assert len(list(net.modules())) == 10


def test_sequential_and_module_list_names():
    seq = Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and list(seq)[2] is seq[2]

    class Stack(Module):
        def __init__(self):
            self.blocks = ModuleList([nn.Linear(2, 2) for _ in range(2)]).append(nn.Linear(2, 1))

    names = [n for n, _ in Stack().named_parameters()]
    assert names == ["blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                     "blocks.2.weight", "blocks.2.bias"]


def test_tied_weights_are_yielded_once():
    class Tied(Module):
        def __init__(self):
            self.embed = nn.Embedding(5, 3)
            self.head = nn.Linear(3, 5, bias=False)
            self.head.weight = self.embed.weight  # weight tying, as in GPT
            self.again = [self.embed]  # the same module reached twice

    model = Tied()
    assert [n for n, _ in model.named_parameters()] == ["embed.weight"]
    assert model.num_parameters() == 15
    assert [n for n, _ in model.named_modules()] == ["", "embed", "head"]
    assert list(model.state_dict()) == ["embed.weight", "head.weight", "again.0.weight"]  # as torch
    out = model.head(model.embed(np.array([1, 2])))
    out.backward(np.ones((2, 5), dtype=np.float32))
    w = model.embed.weight.numpy()
    h = w[[1, 2]]  # (2, 3) the embedded ids
    expected = np.broadcast_to(h.sum(axis=0), (5, 3)).copy()  # from the head: g^T h
    expected[[1, 2]] += w.sum(axis=0)  # from the lookup: rows 1 and 2 get g W
    assert model.embed.weight.grad.numpy() is model.head.weight.grad.numpy()  # one array, both uses summed
    np.testing.assert_allclose(model.embed.weight.grad, expected, rtol=1e-6)


def test_shared_gradient_accumulates_from_both_uses():
    lin = nn.Linear(2, 2, bias=False)
    seq = Sequential(lin, lin)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight"]
    x = Tensor(np.array([[1.0, 2.0]], dtype=np.float32))
    seq(x).sum().backward()
    w = lin.weight.numpy()
    ones = np.ones((1, 2), dtype=np.float32)
    expected = ones.T @ (x.numpy() @ w.T) + (ones @ w).T @ x.numpy()  # d/dW of sum(x W^T W^T)
    np.testing.assert_allclose(lin.weight.grad, expected, rtol=1e-6)


# ----------------------------------------------------------------------------- state dicts


def test_state_dict_round_trip():
    mg.manual_seed(0)
    a = Net()
    mg.manual_seed(1)
    b = Net()
    state = a.state_dict()
    assert list(state) == [n for n, _ in a.named_parameters()]
    # as torch's: Tensors cut from the graph that share the parameters' memory
    assert all(isinstance(v, Tensor) and not v.requires_grad for v in state.values())
    state["scale"][0] = 99.0
    assert a.scale.numpy()[0] == 99.0
    snapshot = {k: v.clone() for k, v in state.items()}  # a copy, as one keeps in torch
    state["scale"][0] = 1.0
    assert snapshot["scale"].numpy()[0] == 99.0 and a.scale.numpy()[0] == 1.0
    b.load_state_dict(state)
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy(), err_msg=name)
        assert pb.dtype == np.float32
    x = Tensor(np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32))
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())


def test_load_accepts_tensors_and_casts_to_the_parameter_dtype():
    lin = nn.Linear(2, 1)
    lin.load_state_dict({"weight": Tensor(np.array([[1.0, 2.0]])), "bias": np.array([0.5])})
    assert lin.weight.dtype == np.float32 and lin.bias.dtype == np.float32
    np.testing.assert_array_equal(lin.weight.numpy(), [[1, 2]])


STRICT_ERRORS = [
    pytest.param(lambda s: s.pop("0.bias"), r"missing: 0\.bias", id="missing"),
    pytest.param(lambda s: s.update({"0.extra": np.zeros(1), "9.weight": np.zeros(1)}),
                 r"unexpected: 0\.extra, 9\.weight", id="unexpected"),
    pytest.param(lambda s: s.update({"2.weight": np.zeros((3, 1))}),
                 r"wrong shape: 2\.weight: checkpoint \(3, 1\), model \(1, 3\)", id="wrong-shape"),
    pytest.param(lambda s: (s.pop("0.weight"), s.update({"junk": np.zeros(1)})),
                 r"missing: 0\.weight \| unexpected: junk", id="missing-and-unexpected"),
]


@pytest.mark.parametrize("edit, message", STRICT_ERRORS)
def test_strict_load_names_the_problems_and_loads_nothing(edit, message):
    seq = Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    before = seq.state_dict()
    state = {k: v + 1 for k, v in before.items()}  # every entry differs from the model
    edit(state)
    with pytest.raises(ValueError, match=message):
        seq.load_state_dict(state)
    for name, value in seq.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=f"{name} was half-loaded")


def test_non_strict_load_skips_missing_and_unexpected_but_not_wrong_shapes():
    seq = Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    seq.load_state_dict({"0.bias": np.array([1.0, 2.0, 3.0]), "extra": np.zeros(2)}, strict=False)
    np.testing.assert_array_equal(seq[0].bias.numpy(), [1, 2, 3])
    with pytest.raises(ValueError, match=r"wrong shape: 0\.bias"):
        seq.load_state_dict({"0.bias": np.zeros(4)}, strict=False)


# ----------------------------------------------------------------------------- modes, grads, dtype


def test_train_and_eval_reach_every_module():
    net = Net()
    drop = nn.Dropout(0.5)
    net.heads["b"].append(drop)
    assert net.eval() is net
    assert all(not m.training for m in net.modules()) and not drop.training
    x = Tensor(np.ones((2, 2), dtype=np.float32))
    assert drop(x) is x
    net.train()
    assert all(m.training for m in net.modules())
    net.train(False)
    assert not net.blocks[1].norm.training


@pytest.mark.parametrize("raises", [False, True], ids=["returns", "raises"])
def test_evaluating_restores_each_modules_own_flag(raises):
    """Inside the block every module is in eval mode; after it (also after an exception) each
    module has the flag it had before, so a submodule frozen in eval mode stays frozen, which
    `model.train(was_training)` would have undone."""
    net = Net()
    drop = nn.Dropout(0.5)
    net.heads["b"].append(drop)
    net.train()
    net.blocks[1].eval()  # a frozen part of a training model
    before = {name: m.training for name, m in net.named_modules()}
    assert sorted(before.values()).count(False) == len(list(net.blocks[1].modules())) >= 2
    x = Tensor(np.ones((2, 2), dtype=np.float32))

    class Boom(Exception):
        pass

    try:
        with nn.evaluating(net) as inside:
            assert inside is net
            assert not any(m.training for m in net.modules())
            assert drop(x) is x  # dropout is off
            if raises:
                raise Boom
    except Boom:
        pass
    assert {name: m.training for name, m in net.named_modules()} == before
    with nn.evaluating(net.eval()):
        pass
    assert not any(m.training for m in net.modules())  # eval stays eval


def test_zero_grad_clears_every_parameter():
    seq = Sequential(nn.Linear(2, 3), nn.GELU(), nn.Linear(3, 1))
    seq(Tensor(np.ones((4, 2), dtype=np.float32))).sum().backward()
    assert all(p.grad is not None for p in seq.parameters())
    seq.zero_grad()
    assert all(p.grad is None for p in seq.parameters())


def test_to_float64_casts_every_parameter_in_place():
    net = Net()
    ids = [id(p) for p in net.parameters()]
    assert net.to(np.float64) is net
    assert [id(p) for p in net.parameters()] == ids  # the same Parameter objects
    assert all(p.dtype == np.float64 and p.requires_grad for p in net.parameters())
    out = net(Tensor(np.ones((1, 2))))
    assert out.dtype == np.float64
    assert all(p.dtype == np.float32 for p in net.to(np.float32).parameters())


def test_repr_is_a_tree_with_sizes():
    seq = Sequential(nn.Linear(2, 3), nn.ReLU(), Sequential(nn.LayerNorm(3), nn.Linear(3, 1)))
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)  # 9 params\n"
        "  (1): ReLU()  # 0 params\n"
        "  (2): Sequential(\n"
        "    (0): LayerNorm((3,), eps=1e-05, elementwise_affine=True)  # 6 params\n"
        "    (1): Linear(in_features=3, out_features=1, bias=True)  # 4 params\n"
        "  )  # 10 params\n"
        ")"
    )
    assert "(blocks.1): Block(" in repr(Net())


def test_parameter_basics():
    p = Parameter(np.zeros(3))
    assert p.requires_grad and p.is_leaf and p.dtype == np.float64
    assert not Parameter(np.zeros(3), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\n")
    with pytest.raises(RuntimeError, match="only floating-point tensors can require grad"):
        Parameter(np.zeros(3, dtype=np.int64))


def test_forward_must_be_defined():
    class Empty(Module):
        pass

    with pytest.raises(NotImplementedError, match="Empty has no forward"):
        Empty()(1)
