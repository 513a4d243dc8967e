"""The Module API against torch.nn.Module on the same small tree: named_modules (order, prefix,
memo, duplicates), children, apply, buffers (state dict, loading, persistence), requires_grad_,
load_state_dict's (missing_keys, unexpected_keys), and Sequential with an OrderedDict."""

from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
from minigrad import Tensor

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")


def make(lib, shared=True):
    """The same tree in minigrad (lib=nn) and torch (lib=torch.nn): a Sequential of two blocks
    with buffers, a head reached twice (as `head` and `again`) when shared, a None buffer.
    (A state dict holds a shared tensor once in minigrad, under every name in torch.)"""
    tensor = (lambda a: Tensor(np.array(a))) if lib is nn else (lambda a: torch.tensor(np.array(a)))

    class Block(lib.Module):
        def __init__(self):
            super().__init__() if lib is torch.nn else None
            self.linear = lib.Linear(2, 2)
            self.norm = lib.LayerNorm(2)
            self.register_buffer("steps", tensor(np.int64(0)))
            self.register_buffer("scratch", tensor(np.zeros(3)), persistent=False)

    class Net(lib.Module):
        def __init__(self):
            super().__init__() if lib is torch.nn else None
            self.register_buffer("running", tensor(np.zeros(2, dtype=np.float32)))
            self.blocks = lib.Sequential(Block(), Block())
            self.head = lib.Linear(2, 1)
            if shared:
                self.again = self.head
            self.register_buffer("nothing", None)

    return Net()


@pytest.fixture
def pair():
    return make(nn), make(torch.nn)


def names(pairs):
    return [n for n, _ in pairs]


# ----------------------------------------------------------------------------- the tree


def test_named_modules_order_prefix_and_duplicates_as_torch(pair):
    mine, theirs = pair
    assert names(mine.named_modules()) == names(theirs.named_modules())
    assert names(mine.named_modules()) == ["", "blocks", "blocks.0", "blocks.0.linear", "blocks.0.norm",
                                           "blocks.1", "blocks.1.linear", "blocks.1.norm", "head"]
    assert names(mine.named_modules(prefix="net")) == names(theirs.named_modules(prefix="net"))
    assert (names(mine.named_modules(remove_duplicate=False))
            == names(theirs.named_modules(remove_duplicate=False)))
    assert "again" in names(mine.named_modules(remove_duplicate=False))
    memo = {mine.blocks[1]}
    assert names(mine.named_modules(memo=memo)) == names(theirs.named_modules(memo={theirs.blocks[1]}))
    assert mine.head in memo  # the memo collects what was yielded, as torch's
    assert len(list(mine.modules())) == len(list(theirs.modules())) == 9


def test_children_as_torch(pair):
    mine, theirs = pair
    assert names(mine.named_children()) == names(theirs.named_children()) == ["blocks", "head"]
    assert [type(m).__name__ for m in mine.children()] == [type(m).__name__ for m in theirs.children()]


def test_apply_visits_children_first_then_self_and_returns_self(pair):
    mine, theirs = pair
    seen = {"mine": [], "theirs": []}
    path_of = {id(m): n for n, m in mine.named_modules()} | {id(m): n for n, m in theirs.named_modules()}
    assert mine.apply(lambda m: seen["mine"].append(path_of[id(m)])) is mine
    theirs.apply(lambda m: seen["theirs"].append(path_of[id(m)]))
    assert seen["mine"] == seen["theirs"]
    assert seen["mine"][0] == "blocks.0.linear" and seen["mine"][-1] == ""


def test_apply_initialises_weights():
    net = make(nn)

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)

    net.apply(init)
    assert all(np.all(m.weight.numpy() == 0.5) for m in net.modules() if isinstance(m, nn.Linear))


def test_named_parameters_and_recurse(pair):
    mine, theirs = pair
    assert names(mine.named_parameters()) == names(theirs.named_parameters())
    assert names(mine.blocks[0].named_parameters(recurse=False)) == []
    assert names(mine.head.named_parameters(recurse=False)) == ["weight", "bias"]
    assert len(list(mine.parameters(recurse=False))) == 0


# ----------------------------------------------------------------------------- buffers


def test_buffers_in_state_dict_and_named_buffers_as_torch():
    mine, theirs = make(nn, shared=False), make(torch.nn, shared=False)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    assert "blocks.0.steps" in mine.state_dict() and "blocks.0.scratch" not in mine.state_dict()
    assert "nothing" not in mine.state_dict()
    assert names(mine.named_buffers()) == names(theirs.named_buffers())
    assert names(mine.named_buffers(prefix="m", recurse=False)) == ["m.running"]
    assert len(list(mine.buffers())) == len(list(theirs.buffers())) == 5
    params = {id(p) for p in mine.parameters()}
    assert all(id(b) not in params for b in mine.buffers())  # buffers are not parameters
    assert mine.nothing is None and mine.blocks[0].steps.dtype == np.int64


def test_buffers_load_and_cast():
    net = make(nn)
    state = net.state_dict()
    state["running"] = np.array([1.5, 2.5])
    state["blocks.1.steps"] = np.array(7)
    assert net.load_state_dict(state) == ([], [])
    np.testing.assert_array_equal(net.running.numpy(), [1.5, 2.5])
    assert net.running.dtype == np.float32 and int(net.blocks[1].steps.numpy()) == 7
    net.double()
    assert net.running.dtype == np.float64 and net.blocks[0].scratch.dtype == np.float64
    assert net.blocks[0].steps.dtype == np.int64  # integer buffers keep their dtype, as torch
    with pytest.raises(ValueError, match=r"wrong shape: running: checkpoint \(3,\), model \(2,\)"):
        net.load_state_dict({**state, "running": np.zeros(3)})


REGISTER_ERRORS = [
    pytest.param("a.b", lambda lib: None, KeyError, r"register_buffer: .*without '.', not 'a.b'", id="dot"),
    pytest.param("", lambda lib: None, KeyError, r"register_buffer: .*non-empty", id="empty"),
    pytest.param("weight", lambda lib: None, KeyError, r"register_buffer: attribute 'weight' already",
                 id="exists"),
    pytest.param("x", lambda lib: [1.0], TypeError, r"register_buffer: cannot assign a list to the buffer",
                 id="not-a-tensor"),
    pytest.param(3, lambda lib: None, TypeError, r"register_buffer: the buffer name must be a string",
                 id="name"),
]


@pytest.mark.parametrize("name, value, error, message", REGISTER_ERRORS)
def test_register_buffer_errors_as_torch(name, value, error, message):
    with pytest.raises(error, match=message):
        nn.Linear(2, 2).register_buffer(name, value(nn))
    with pytest.raises(error):  # torch raises the same type
        torch.nn.Linear(2, 2).register_buffer(name, value(torch.nn))


def test_a_parameter_is_not_a_buffer():
    with pytest.raises(TypeError, match="register_buffer: cannot assign a Parameter"):
        nn.Linear(2, 2).register_buffer("p", nn.Parameter(np.zeros(2)))


# ----------------------------------------------------------------------------- requires_grad_, loading


def test_requires_grad_freezes_every_parameter_and_returns_self(pair):
    mine, theirs = pair
    assert mine.blocks.requires_grad_(False) is mine.blocks
    theirs.blocks.requires_grad_(False)
    assert ([p.requires_grad for p in mine.parameters()] == [p.requires_grad for p in theirs.parameters()]
            == [False] * 8 + [True] * 2)
    mine.requires_grad_()
    assert all(p.requires_grad for p in mine.parameters())


def test_load_state_dict_result_as_torch():
    mine, theirs = make(nn, shared=False), make(torch.nn, shared=False)
    assert repr(mine.load_state_dict(mine.state_dict())) == repr(theirs.load_state_dict(theirs.state_dict()))
    state = {k: v for k, v in mine.state_dict().items() if k not in ("head.bias", "blocks.1.steps")}
    state["extra.weight"] = np.zeros(2)
    tstate = {k: torch.tensor(np.asarray(v)) for k, v in state.items()}
    state["blocks.0.linear.bias"] = np.array([3.0, 4.0])
    result, expected = mine.load_state_dict(state, strict=False), theirs.load_state_dict(tstate, strict=False)
    assert result.missing_keys == expected.missing_keys == ["blocks.1.steps", "head.bias"]
    assert result.unexpected_keys == expected.unexpected_keys == ["extra.weight"]
    assert result == (expected.missing_keys, expected.unexpected_keys)  # a named tuple
    assert repr(result) == repr(expected).lstrip("_")  # torch's class is _IncompatibleKeys
    np.testing.assert_array_equal(mine.blocks[0].linear.bias.numpy(), [3, 4])  # the rest was loaded
    with pytest.raises(ValueError, match=r"missing: blocks.1.steps, head.bias \| unexpected: extra.weight"):
        mine.load_state_dict(state)


# ----------------------------------------------------------------------------- Sequential


def test_sequential_with_an_ordered_dict_as_torch():
    mg.manual_seed(0)
    pairs = [("fc", nn.Linear(3, 4)), ("act", nn.ReLU()), ("out", nn.Linear(4, 2))]
    seq = nn.Sequential(OrderedDict(pairs))
    tseq = torch.nn.Sequential(OrderedDict([("fc", torch.nn.Linear(3, 4)), ("act", torch.nn.ReLU()),
                                            ("out", torch.nn.Linear(4, 2))]))
    assert names(seq.named_children()) == names(tseq.named_children()) == ["fc", "act", "out"]
    keys = ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    assert list(seq.state_dict()) == list(tseq.state_dict()) == keys
    assert seq.fc is pairs[0][1] and seq[2] is seq.out and seq[-1] is seq.out and len(seq) == 3
    tseq.load_state_dict({k: torch.tensor(v.numpy()) for k, v in seq.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(seq(mg.tensor(x)).numpy(), tseq(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    head = seq[1:]
    assert isinstance(head, nn.Sequential) and names(head.named_children()) == ["act", "out"]
    seq.act = nn.Tanh()  # replaces the child of that name
    assert isinstance(seq[1], nn.Tanh) and "act" not in vars(seq)
    assert repr(seq).startswith("Sequential(\n  (fc): Linear(in_features=3, out_features=4, bias=True)")
    with pytest.raises(AttributeError, match="'Sequential' object has no attribute 'nope'"):
        _ = seq.nope


def test_sequential_positional_append_and_errors():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU()).append(nn.Linear(2, 1))
    assert names(seq.named_parameters()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(TypeError, match=r"Sequential: argument 0 is a dict, not a Module \(pass an Ordered"):
        nn.Sequential({"fc": nn.Linear(2, 2)})
    with pytest.raises(TypeError, match="Sequential: argument 1 is a int, not a Module"):
        nn.Sequential(nn.ReLU(), 3)
    with pytest.raises(KeyError, match="Sequential: a key must be a non-empty string without '.'"):
        nn.Sequential(OrderedDict([("a.b", nn.ReLU())]))
    with pytest.raises(IndexError, match="Sequential: index 3 is out of range for 3 modules"):
        seq[3]


def test_a_deep_chain_needs_no_recursion():
    model = nn.Linear(1, 1)
    for _ in range(3000):
        model = nn.Sequential(model)
    assert len(list(model.named_modules())) == 3001
    assert list(model.state_dict())[0].endswith("0.0.weight")
