"""Tests for minigrad.viz: graph drawing (rendered for real with Graphviz's `dot`), the
backward trace, and anomaly detection. The models are small modules built here from
nn.Module, nn.Parameter and core ops, so these tests depend on nothing but the core."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad import grad_mode, hooks
from minigrad.autograd import broadcast_axes
from minigrad.nn import Module, Parameter
from minigrad.testing import arrays, broadcastable_shapes
from minigrad.viz import (
    AnomalyError,
    GraphvizNotFoundWarning,
    detect_anomaly,
    draw_graph,
    save_graph,
    trace_backward,
)

# ----------------------------------------------------------------------------- small models


class Lin(Module):
    """y = x @ W.T + b, weight (out, in) as in nn.Linear."""

    def __init__(self, n_in: int, n_out: int):
        self.weight = Parameter(mg.randn(n_out, n_in) * (n_in**-0.5))
        self.bias = Parameter(mg.zeros(n_out))

    def forward(self, x):
        return x @ self.weight.T + self.bias


class MLP(Module):
    def __init__(self, d: int, hidden: int):
        self.fc1, self.fc2 = Lin(d, hidden), Lin(hidden, d)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


class ToyAttention(Module):
    """Single-head causal attention: softmax(q k^T / sqrt(d), masked) v."""

    def __init__(self, d: int):
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (Lin(d, d) for _ in range(4))

    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        t = x.shape[-2]
        scores = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5)
        future = mg.tensor(np.triu(np.ones((t, t), dtype=bool), 1))
        weights = scores.masked_fill(future, float("-inf")).softmax(-1)
        return self.out_proj(weights @ v)


class Block(Module):
    def __init__(self, d: int):
        self.attn, self.mlp = ToyAttention(d), MLP(d, 2 * d)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class Tiny(Module):
    """Two blocks in a plain list (named blocks.0, blocks.1) and a head."""

    def __init__(self, d: int = 8, n_out: int = 3):
        self.blocks = [Block(d), Block(d)]
        self.head = Lin(d, n_out)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


@pytest.fixture
def tiny():
    mg.manual_seed(0)
    model = Tiny()
    x = mg.randn(2, 5, 8)
    loss = (model(x) ** 2).mean()
    loss.backward()
    return model, loss


def svg_texts(path) -> list[str]:
    """Every piece of text in an SVG file (node and cluster labels)."""
    root = ET.parse(path).getroot()
    return [el.text for el in root.iter() if el.tag.endswith("text") and el.text]


def op_nodes(dot) -> list[str]:
    return re.findall(r"^\s*(n\d+) \[", dot.source, flags=re.M)


def box_labels(dot) -> list[str]:
    return re.findall(r'^\s*b\d+ \[label="([^"]*)"', dot.source, flags=re.M)


# ----------------------------------------------------------------------------- draw_graph


def test_graph_names_params_and_clusters_and_grad_norms(tiny):
    model, loss = tiny
    dot = draw_graph(loss, model=model)
    src = dot.source
    for name in dict(model.named_parameters()):
        assert f'"{name}\\n' in src  # every parameter is labelled by its dotted path
    w = model.blocks[0].attn.q_proj.weight
    norm = float(np.linalg.norm(w.grad.numpy().astype(np.float64)))
    assert f"blocks.0.attn.q_proj.weight\\n(8, 8) float32\\n|grad| = {norm:.4g}" in src
    for label in ("blocks.0 (Block)", "blocks.0.attn (ToyAttention)", "blocks.1.mlp.fc2 (Lin)",
                  "head (Lin)", 'label="Tiny"'):
        assert label in src
    assert src.count("subgraph cluster_") == 1 + 2 * (1 + 1 + 4 + 1 + 2) + 1
    for op in ("MatMul", "SoftmaxOp", "MaskedFill", "ReLUOp", "Pow", "Mean"):
        assert f'label="{op}"' in src
    assert "(2, 5, 8) float32" in src and "(2, 5, 3) float32" in src


def test_tiny_tensors_show_values_and_grads_like_micrograd():
    a = mg.tensor(2.0, requires_grad=True)
    b = mg.tensor([1.0, -3.0], requires_grad=True)
    out = (a * b).sum()
    out.backward()
    src = draw_graph(out).source
    assert "scalar float32\\ndata 2\\ngrad -2" in src  # da = sum(b) = -2, printed once
    assert "(2,) float32\\ndata [1, -3]\\n|grad| = 2.828\\ngrad [2, 2]" in src
    assert "data -4" in src  # the output
    hidden = draw_graph(out, show_values=False).source
    assert "data" not in hidden and "|grad| = 2.828" in hidden
    every = draw_graph(out, show_values=True).source
    assert every.count("data ") == 4  # a, b, a*b and the sum
    with pytest.raises(ValueError, match="show_values"):
        draw_graph(out, show_values="yes")


def test_intermediate_tensors_show_their_gradient_without_retain_grad():
    """As micrograd's drawing: after backward every small intermediate shows its gradient."""
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3  # dL/dh = 2h = [6, 12] for L = sum(h^2)
    h.name = "h"
    loss = (h * h).sum()
    loss.backward()
    assert h.grad is None  # nothing was retained on the tensor itself
    src = draw_graph(loss).source
    assert "h\\n(2,) float32\\ndata [3, 6]\\n|grad| = 13.42\\ngrad [6, 12]" in src
    assert "grad 1" in src  # the loss: d loss / d loss


def test_keep_grads_gives_every_large_intermediate_its_gradient_norm():
    x = mg.randn(10, 10, requires_grad=True)
    h = x * 2
    loss = (h * h).sum()
    loss.backward()
    assert "|grad|" not in _label_of(draw_graph(loss).source, "(10, 10) float32", skip_leaf=True)
    x.grad = None
    h = x * 2
    loss = (h * h).sum()
    with mg.viz.keep_grads():
        loss.backward()
    expected = float(np.linalg.norm(4 * x.numpy()))  # d loss / dh = 2h = 4x
    label = _label_of(draw_graph(loss).source, "(10, 10) float32", skip_leaf=True)
    assert f"|grad| = {expected:.4g}" in label


def _label_of(src, text, skip_leaf=False):
    """The label of the first tensor whose label holds `text` (optionally not a leaf)."""
    import re

    for label, style in re.findall(r'label="([^"]*)" ([^\]]*)\]', src):
        if text in label and not (skip_leaf and "d9ead3" in style):
            return label
    raise AssertionError(f"no label with {text!r}")


def test_show_values_draws_a_grid_not_one_long_line():
    a = mg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    out = (a * 2).sum()
    out.backward()
    src = draw_graph(out, show_values=True).source
    assert "data [0, 1, 2, 3]\\n[4, 5, 6, 7]\\n[8, 9, 10, 11]" in src
    big = mg.tensor(np.arange(400.0).reshape(2, 10, 20))
    lines = mg.viz.graph.values_grid(big.numpy())
    assert max(map(len, lines)) < 60 and "..." in lines  # summarized, every line short
    assert lines[0] == "[0, :, :]" and lines[1].startswith("[0, 1, 2, ...")


def test_a_tensor_name_labels_it():
    x = mg.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = x.exp()
    y.name = "scores"
    src = draw_graph(y.sum()).source
    assert 'label="x\\n(2,) float32' in src and 'label="scores\\n(2,) float32' in src


@pytest.mark.requires_dot
def test_render_svg_and_png_for_real(tiny, tmp_path):
    model, loss = tiny
    dot = draw_graph(loss, model=model, depth=2)
    svg = dot.save(tmp_path / "graph.svg")
    assert svg == str(tmp_path / "graph.svg")
    texts = svg_texts(svg)
    joined = "\n".join(texts)
    for expected in ("blocks.0.attn (ToyAttention)", "blocks.1.mlp (MLP)", "head.weight",
                     "(2, 5, 8) float32", "MatMul", "Mean", "Pow", "head (Lin)", "Tiny"):
        assert expected in joined, expected
    assert "in: (2, 5, 8), (5, 5) bool" in texts and "out: (2, 5, 8)" in texts
    png = save_graph(dot, tmp_path / "graph.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    pdf = save_graph(dot, tmp_path / "graph.pdf")
    assert open(pdf, "rb").read(5) == b"%PDF-"
    gv = save_graph(dot, tmp_path / "graph.gv")
    assert open(gv).read() == dot.source
    assert "image/svg+xml" in dot._repr_mimebundle_()  # what Jupyter shows inline
    with pytest.raises(ValueError, match=r"\.svg"):
        save_graph(dot, tmp_path / "graph.unknown")


def test_without_dot_writes_source_and_warns_once(tiny, tmp_path, monkeypatch):
    model, loss = tiny
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` program anywhere
    dot = draw_graph(loss, model=model, depth=1)  # drawing needs no program
    with pytest.warns(GraphvizNotFoundWarning) as record:
        written = save_graph(dot, tmp_path / "model.svg")
    expected = str(tmp_path / "model.dot")
    assert written == expected
    assert len(record) == 1
    assert str(record[0].message) == (
        f"Graphviz's `dot` program was not found; wrote DOT source to {expected}. Install Graphviz "
        "(apt-get install graphviz / brew install graphviz / conda install graphviz) to render SVG "
        "or PNG."
    )
    assert open(expected).read() == dot.source
    assert not (tmp_path / "model.svg").exists()
    shown = dot._repr_mimebundle_()
    assert list(shown) == ["text/plain"] and "Install Graphviz" in shown["text/plain"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # .dot needs no program and must not warn
        assert save_graph(dot, tmp_path / "model.gv").endswith("model.gv")


def test_depth_folds_modules_into_boxes_with_shapes(tiny):
    model, loss = tiny
    d1 = draw_graph(loss, model=model, depth=1)
    labels = {lab.split("\\n")[0]: lab.split("\\n")[1:] for lab in box_labels(d1)}
    assert sorted(labels) == ["blocks.0 (Block)", "blocks.1 (Block)", "head (Lin)"]
    # The causal mask is made inside attention, from no op: it enters the box as a constant.
    assert labels["blocks.0 (Block)"][:2] == ["in: (2, 5, 8), (5, 5) bool", "out: (2, 5, 8)"]
    assert labels["head (Lin)"] == ["in: (2, 5, 8)", "out: (2, 5, 3)", "3 ops"]  # Permute, MatMul, Add
    assert "q_proj" not in d1.source  # a folded module's parameters are inside its box
    assert len(op_nodes(d1)) == 2  # only Pow and Mean, outside the model
    d0 = draw_graph(loss, model=model, depth=0)
    assert [lab.split("\\n")[0] for lab in box_labels(d0)] == ["Tiny"]
    d2 = draw_graph(loss, model=model, depth=2)
    heads = sorted(lab.split("\\n")[0] for lab in box_labels(d2))
    assert heads == sorted(f"blocks.{i}.{m}" for i in (0, 1) for m in
                           ("attn (ToyAttention)", "mlp (MLP)"))
    assert "head.weight" in d2.source and "blocks.0 (Block)" in d2.source  # now a cluster
    with pytest.raises(ValueError, match="depth"):
        draw_graph(loss, depth=-1)


def test_module_draws_only_that_module(tiny):
    model, loss = tiny
    dot = draw_graph(loss, model=model, module="blocks.0.attn")
    src = dot.source
    assert "blocks.0.attn.k_proj.weight" in src and "SoftmaxOp" in src
    assert "blocks.1" not in src and "mlp" not in src and "Mean" not in src
    assert "style=dashed" in src  # the input coming into the module
    sub = draw_graph(loss, model=model, module="blocks.0", depth=1)
    assert sorted(lab.split("\\n")[0] for lab in box_labels(sub)) == [
        "blocks.0.attn (ToyAttention)", "blocks.0.mlp (MLP)"]
    with pytest.raises(ValueError, match="blocks.0.attn"):
        draw_graph(loss, model=model, module="blocks.7")


def test_names_without_model_come_from_the_outermost_module():
    mg.manual_seed(0)
    mlp = MLP(3, 4)
    out = mlp(mg.randn(2, 3)).sum()
    src = draw_graph(out).source
    assert "fc1.weight" in src and "fc2.bias" in src
    assert 'label="fc1 (Lin)"' in src and 'label="MLP"' in src
    named = draw_graph(out, params={"my.w1": mlp.fc1.weight}).source
    assert "my.w1" in named
    only = draw_graph(out, module="fc2").source  # paths work without the model too
    assert "fc2.weight" in only and "fc1.weight" not in only


def test_scope_object_without_names_falls_back_to_class_name():
    class Region:  # not a Module: no named_modules
        pass

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    with grad_mode.module_scope(Region()):
        y = x.exp()
    src = draw_graph(y.sum()).source
    assert 'label="Region"' in src and 'label="Exp"' in src


def test_draws_a_big_graph_quickly():
    mg.manual_seed(0)
    model = Tiny(d=8)
    h = mg.randn(1, 4, 8)
    for _ in range(40):  # a deep unrolled stack: thousands of nodes
        h = model(h)[..., :1] * mg.ones(1, 1, 8)
    loss = h.sum()
    start = time.perf_counter()
    dot = draw_graph(loss, model=model)
    full = time.perf_counter() - start
    assert len(op_nodes(dot)) > 2000
    start = time.perf_counter()
    folded = draw_graph(loss, model=model, depth=1)
    assert time.perf_counter() - start < 2.0 and full < 3.0
    assert len(box_labels(folded)) == 3  # each module is one box, however often it ran


# ----------------------------------------------------------------------------- trace_backward


def test_trace_names_summed_broadcast_axes_and_matches_grads():
    x = mg.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    b = mg.tensor([[0.5, -1.0, 2.0, 0.0]], requires_grad=True)
    w = mg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    g = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    trace = trace_backward((x + b) * w, gradient=g, max_values=16)
    assert [s.op for s in trace.steps] == ["Mul", "Add"]
    mul, add = trace.steps
    assert mul.grad_shape == (3, 4) and np.allclose(mul.grad_values, g)
    assert len(mul.sent) == 1 and mul.sent[0].to == "step 1 (Add)" and mul.sent[0].to_step == 1
    to_x, to_b = add.sent
    assert (to_x.to, to_x.shape, to_x.input_shape, to_x.summed_axes) == ("leaf (3, 1)", (3, 4), (3, 1), (1,))
    assert to_b.summed_axes == (0,) and to_b.to_step is None
    assert np.allclose(to_x.values, x.grad) and np.allclose(to_b.values, b.grad)
    assert np.allclose(x.grad, (g * w.numpy()).sum(1, keepdims=True))
    assert to_x.norm == pytest.approx(np.linalg.norm(x.grad), rel=1e-5)
    table = str(trace)
    assert "summed over axes (1,) of (3, 4)" in table and "summed over axes (0,) of (3, 4)" in table
    assert "#1  Add" in table


@given(broadcastable_shapes(2, max_dims=3), st.data())
def test_trace_summed_axes_property(shapes, data):
    a_shape, b_shape = shapes
    a = mg.tensor(data.draw(arrays(a_shape)), requires_grad=True)
    b = mg.tensor(data.draw(arrays(b_shape)), requires_grad=True)
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    g = data.draw(arrays(out_shape))
    (step,) = trace_backward(a - b, gradient=g).steps
    sent = {s.index: s for s in step.sent}
    for i, (t, sign) in enumerate(((a, 1), (b, -1))):
        assert sent[i].summed_axes == broadcast_axes(out_shape, t.shape)
        expect = sign * np.sum(g, axis=broadcast_axes(out_shape, t.shape), keepdims=True).reshape(t.shape)
        np.testing.assert_allclose(t.grad, expect)
        assert sent[i].norm == pytest.approx(float(np.linalg.norm(expect)), abs=1e-9)


def test_trace_order_is_topological_and_names_modules(tiny):
    model, _ = tiny
    model.zero_grad()
    loss = (model(mg.randn(2, 5, 8)) ** 2).mean()
    trace = trace_backward(loss, model=model)
    assert [s.step for s in trace.steps] == list(range(len(trace)))
    for s in trace.steps:
        for sent in s.sent:
            if sent.to_step is not None:
                assert sent.to_step > s.step  # a node before the nodes that made its inputs
    modules = {s.module for s in trace.steps}
    assert "blocks.1.attn.q_proj (Lin)" in modules and "" in modules  # the loss: no module
    targets = {sent.to for s in trace.steps for sent in s.sent}
    assert {name for name, _ in model.named_parameters()} <= targets
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is not None for g in grads.values())
    dot = trace.draw(depth=2)
    edge_steps = {int(n) for lab in re.findall(r'-> \w+ \[label="([^"]*)"', dot.source)
                  for n in lab.replace(", ...", "").split(", ")}
    assert edge_steps and edge_steps <= set(range(len(trace)))
    full = trace.draw().source
    assert f"backward step {len(trace) - 1}" in full and "Mean\\nbackward step 0" in full


def test_trace_removes_its_observer_even_on_error():
    before = hooks.backward_observers()
    y = mg.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="not a scalar"):
        trace_backward(y)
    assert hooks.backward_observers() == before


# ----------------------------------------------------------------------------- detect_anomaly


class LogLayer(Module):
    def forward(self, x):
        return x.log()


class Net(Module):
    def __init__(self):
        self.fc, self.act = Lin(2, 2), LogLayer()

    def forward(self, x):
        return self.act(self.fc(x))


def installed_hooks():
    return hooks.forward_checks(), hooks.backward_observers()


def test_anomaly_forward_names_the_first_op():
    x = mg.tensor([1.0, -1.0, 4.0], requires_grad=True)
    with pytest.raises(FloatingPointError) as info:
        with detect_anomaly():
            x.log().exp().sum()  # Exp only passes the NaN on: Log made it
    e = info.value
    assert isinstance(e, AnomalyError) and e.op == "Log" and e.phase == "forward"
    assert e.input_shapes == [(3,)] and e.module == ""
    assert "Log (forward)" in str(e) and "nan" in str(e) and "(3,) float32" in str(e)


def test_anomaly_flags_inf_from_log_of_zero():
    with pytest.raises(AnomalyError, match=r"Log \(forward\) made inf"):
        with detect_anomaly():
            mg.tensor([0.0, 1.0], requires_grad=True).log()


def test_anomaly_backward_sqrt_at_zero():
    x = mg.tensor([0.0, 4.0], requires_grad=True)
    with detect_anomaly():
        y = x.sqrt().sum()  # forward is fine: sqrt(0) = 0
        with pytest.raises(AnomalyError) as info:
            y.backward()
    assert info.value.op == "Sqrt" and info.value.phase == "backward"
    assert "inf" in str(info.value) and "input 0" in str(info.value)
    assert x.grad is None  # nothing half-written


def test_anomaly_names_the_module():
    mg.manual_seed(0)
    net = Net()
    x = mg.tensor([[1.0, 2.0]])
    with mg.no_grad():
        net.fc.weight.numpy()[:] = -1.0
    with pytest.raises(AnomalyError) as info:
        with detect_anomaly():
            net(x)
    assert info.value.module == "act (LogLayer)" and "in module act (LogLayer)" in str(info.value)
    with pytest.raises(AnomalyError, match="in module act"):
        with detect_anomaly(model=net):
            net(x)


def test_anomaly_allows_attention_masks_and_inf_inputs():
    mg.manual_seed(0)
    attn = ToyAttention(4)
    x = mg.randn(2, 3, 4, requires_grad=True)
    with detect_anomaly():
        out = attn(x)  # masked_fill(-inf) then softmax: the -inf is asked for
        out.sum().backward()
        y = mg.tensor([np.inf, 1.0]) + 1.0  # an inf the caller put in is not this op's doing
    assert np.isfinite(out.numpy()).all() and np.isfinite(x.grad).all()
    assert np.isinf(y.numpy()[0])


def test_anomaly_has_no_effect_outside_and_removes_hooks():
    before = installed_hooks()
    with pytest.raises(AnomalyError):
        with detect_anomaly():
            assert installed_hooks() != before
            with detect_anomaly():  # nesting adds and removes its own hooks
                pass
            mg.tensor([-1.0], requires_grad=True).log()
    assert installed_hooks() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mg.tensor([-1.0, 0.0], requires_grad=True).log()  # no check outside the block
    assert np.isnan(y.numpy()[0]) and np.isneginf(y.numpy()[1])

    @detect_anomaly()
    def bad():
        return mg.tensor([2.0]).log() - mg.tensor([0.0]).log()

    with pytest.raises(AnomalyError):
        bad()
    assert installed_hooks() == before
    assert mg.detect_anomaly is detect_anomaly and mg.AnomalyError is AnomalyError


def test_import_minigrad_does_not_import_graphviz():
    code = "import sys, minigrad; print('graphviz' in sys.modules, 'minigrad.nn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_expand_fused_draws_the_attention_pipeline_like_the_composed_path():
    import minigrad.nn.functional as F
    from minigrad.nn.functional import attention_reference

    q, k, v = (mg.randn(1, 3, 4, requires_grad=True) for _ in range(3))
    mask = mg.tensor(np.tril(np.ones((3, 3), dtype=bool)))
    fused = F.scaled_dot_product_attention(q, k, v, mask=mask).sum()
    closed = draw_graph(fused).source
    assert 'label="Attention"' in closed and "SoftmaxOp" not in closed
    opened = draw_graph(fused, expand_fused=True).source
    for step in ("MatMul q @ k^T", "Mul by 1/sqrt(d_k)", "MaskedFill -inf where not allowed",
                 "Softmax over keys", "MatMul weights @ v", "Attention (fused kernel, expanded)"):
        assert step in opened
    assert "weights\\n(1, 3, 3) float32" in opened
    composed = draw_graph(attention_reference(q, k, v, mask=mask).sum()).source
    for name in ("q k^T", "1/sqrt(d_k)", "scores", "masked scores", "weights", "attention output"):
        assert f'label="{name}\\n' in composed


@pytest.mark.requires_dot
def test_expanded_graph_renders_to_svg(tmp_path):
    import minigrad.nn.functional as F

    q, k, v = (mg.randn(2, 4, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True).sum()
    out.backward()
    svg = draw_graph(out, expand_fused=True).save(tmp_path / "attention.svg")
    texts = svg_texts(svg)
    assert "Softmax over keys" in texts and "MatMul weights @ v" in texts
