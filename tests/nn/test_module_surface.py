"""The parts of torch's Module surface course code leans on: dict and list containers reached
as attributes, torch's registrations and look-ups, zero_grad(set_to_none=), module hooks."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn


def _gpt_like():
    """nanoGPT's layout: a ModuleDict whose entries are reached as attributes."""
    class Tiny(nn.Module):
        def __init__(self):
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(10, 4),
                h=nn.ModuleList([nn.Linear(4, 4) for _ in range(2)]),
                ln_f=nn.LayerNorm(4),
            ))
            self.lm_head = nn.Linear(4, 10, bias=False)

        def forward(self, idx):
            x = self.transformer.wte(idx)
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))

    mg.manual_seed(0)
    return Tiny()


def test_module_dict_entries_are_attributes_and_state_dict_names():
    model = _gpt_like()
    assert model.transformer.wte is model.transformer["wte"]
    assert model(mg.tensor([[1, 2, 3]])).shape == (1, 3, 10)
    assert list(model.state_dict()) == [
        "transformer.wte.weight", "transformer.h.0.weight", "transformer.h.0.bias",
        "transformer.h.1.weight", "transformer.h.1.bias", "transformer.ln_f.weight",
        "transformer.ln_f.bias", "lm_head.weight"]
    model.transformer.drop = nn.Dropout(0.1)  # an attribute set to a module becomes an entry
    assert "drop" in model.transformer and model.transformer["drop"] is model.transformer.drop
    with pytest.raises(AttributeError, match="'ModuleDict' object has no attribute 'wpe'"):
        _ = model.transformer.wpe
    with pytest.raises(KeyError, match="has no module 'wpe'; it has"):
        model.transformer["wpe"]


def test_module_list_as_torch():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    layers += [nn.Tanh()]
    layers.insert(0, nn.Identity())
    assert [type(m).__name__ for m in layers] == ["Identity", "Linear", "ReLU", "Tanh"]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    assert getattr(layers, "1") is layers[1]  # torch names the entries "0", "1", ...
    del layers[0]
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias"]
    with pytest.raises(TypeError, match="ModuleList: entry 3 must be a Module, not a int"):
        layers.append(3)


def test_parameter_list_and_dict_wrap_tensors_as_parameters():
    plist = nn.ParameterList([mg.zeros(2), nn.Parameter(mg.ones(3))])
    pdict = nn.ParameterDict({"scale": mg.ones(1)})
    pdict.shift = mg.zeros(1)
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in [*plist, *pdict.values()])
    assert [n for n, _ in plist.named_parameters()] == ["0", "1"]
    assert list(pdict) == ["scale", "shift"] and pdict.scale is pdict["scale"]
    with pytest.raises(TypeError, match="ParameterDict: 'w' must be a Parameter or a Tensor, not a list"):
        pdict["w"] = [1.0]
    with pytest.raises(KeyError, match="without '.'"):
        pdict["a.b"] = mg.zeros(1)


def test_register_parameter_add_module_and_lookups():
    model = _gpt_like()
    model.register_parameter("temperature", nn.Parameter(mg.ones(1)))
    model.register_parameter("unused", None)
    model.add_module("extra", nn.Identity())
    assert "temperature" in dict(model.named_parameters()) and model.unused is None
    assert model.get_submodule("transformer.h.1") is model.transformer.h[1]
    assert model.get_submodule("") is model
    assert model.get_parameter("transformer.h.1.bias") is model.transformer.h[1].bias
    with pytest.raises(AttributeError, match="ModuleDict has no attribute `q`"):
        model.get_submodule("transformer.q.0")
    with pytest.raises(AttributeError, match="get_parameter: Linear has no parameter `scale`"):
        model.get_parameter("transformer.h.0.scale")
    with pytest.raises(TypeError, match="register_parameter: cannot assign a Tensor"):
        model.register_parameter("w", mg.ones(1))
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        model.add_module("forward", nn.Identity())
    with pytest.raises(KeyError, match="without '.'"):
        model.add_module("a.b", nn.Identity())


def test_zero_grad_set_to_none_false_zeroes_in_place():
    model = _gpt_like()
    model(mg.tensor([[1, 2]])).sum().backward()
    grad = model.lm_head.weight.grad
    assert np.any(grad.numpy() != 0)
    model.zero_grad(set_to_none=False)
    assert np.all(model.lm_head.weight.grad.numpy() == 0)
    assert np.all(grad.numpy() == 0)  # the same memory, zeroed
    model.zero_grad()
    assert model.lm_head.weight.grad is None


def test_forward_hooks_replace_inputs_and_outputs_and_come_off():
    lin = nn.Linear(3, 2)
    x = mg.ones(1, 3)
    calls = []
    pre = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    post = lin.register_forward_hook(lambda m, args, out: calls.append(args[0].sum().item()) or out + 1)
    first = lin.register_forward_hook(lambda m, args, out: calls.append("first"), prepend=True)
    np.testing.assert_allclose(lin(x).numpy(), (x * 2 @ lin.weight.T + lin.bias + 1).numpy(), rtol=1e-6)
    assert calls == ["first", 6.0]
    for handle in (pre, post, first):
        handle.remove()
    np.testing.assert_allclose(lin(x).numpy(), (x @ lin.weight.T + lin.bias).numpy(), rtol=1e-6)
    assert lin._module_hooks.forward == {}


def test_forward_hooks_with_kwargs_and_always_call():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            if factor < 0:
                raise ValueError("negative factor")
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": kwargs.get("factor", 1) * 3}),
                                with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(out), with_kwargs=True,
                            always_call=True)
    assert m(mg.ones(1), factor=2.0).item() == 6.0
    with pytest.raises(ValueError, match="negative factor"):
        m(mg.ones(1), factor=-1.0)
    assert seen[0].item() == 6.0 and seen[1] is None
    m2 = Scale()
    m2.register_forward_pre_hook(lambda mod, args, kwargs: "wrong", with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m2(mg.ones(1))


def test_full_backward_hook_sees_and_replaces_input_gradients():
    class Mix(nn.Module):
        def forward(self, a, b, scale):
            return a * b * scale, a + b

    m = Mix()
    a, b = mg.tensor([1.0, 2.0], requires_grad=True), mg.tensor([3.0, 4.0], requires_grad=True)
    seen = []

    def hook(module, grad_input, grad_output):
        seen.append((grad_input, grad_output))
        return (grad_input[0] * 10, grad_input[1], None)

    m.register_full_backward_hook(hook)
    prod, total = m(a, b, 2.0)
    (prod.sum() + 3 * total.sum()).backward()
    (grad_a, grad_b, grad_scale), (grad_prod, grad_total) = seen[0]
    assert grad_scale is None  # not a tensor
    np.testing.assert_allclose(grad_a.numpy(), [2 * 3 + 3, 2 * 4 + 3])
    np.testing.assert_allclose(grad_b.numpy(), [2 * 1 + 3, 2 * 2 + 3])
    np.testing.assert_allclose(grad_prod.numpy(), [1, 1])
    np.testing.assert_allclose(grad_total.numpy(), [3, 3])
    np.testing.assert_allclose(a.grad.numpy(), [90, 110])  # replaced by the hook
    np.testing.assert_allclose(b.grad.numpy(), [5, 7])
    assert len(seen) == 1


def test_full_backward_hook_without_grad_inputs_and_an_unused_input():
    lin = nn.Linear(2, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    lin(mg.ones(1, 2)).sum().backward()  # the input needs no grad: the hook fires on grad_output
    assert seen[0][0] == (None,) and seen[0][1][0].shape == (1, 2)

    class First(nn.Module):
        def forward(self, a, b):
            return a * 2

    f = First()
    f.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    a, b = mg.ones(2, requires_grad=True), mg.ones(2, requires_grad=True)
    f(a, b).sum().backward()
    assert seen[1][0][1] is None and seen[1][0][0].numpy().tolist() == [2.0, 2.0]
    assert b.grad is None


def test_backward_hook_returning_the_wrong_count_is_named():
    lin = nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    out = lin(mg.ones(1, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match="backward hook of Linear returned 2 gradients, expected a tuple"):
        out.sum().backward()


def test_hooks_are_not_parameters_or_state():
    lin = nn.Linear(2, 2)
    lin.register_forward_hook(nn.Identity())  # a callable module as a hook is not a child
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert list(lin.named_children()) == []
