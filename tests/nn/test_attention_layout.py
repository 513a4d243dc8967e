"""How the attention code is laid out: kernels are plain functions under thin ops (no op runs
another op's forward or backward on a hand-made ctx), the drawing
pipelines registered with viz, the recorder in attention/maps.py, and attention_reference first.
Which module of the attention package may import which: test_attention_package.py."""

import ast
import importlib
import inspect
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad import Function
from minigrad.nn.attention import functional as attention_functional
from minigrad.nn.attention import maps as maps_module
from minigrad.nn.attention.one_block import Attention
from minigrad.nn.attention.packed import PackedAttention
from minigrad.nn.attention.tiled import TiledAttention
from minigrad.viz.pipelines import pipeline_of

NN = Path(nn.__file__).parent
# Dotted names under minigrad.nn: nn/*.py and the attention package's modules (attention.tiled, ...).
MODULES = sorted(".".join(p.relative_to(NN).with_suffix("").parts) for p in NN.rglob("*.py")
                 if p.stem != "__init__")
ATTENTION = [m for m in MODULES if m.startswith("attention.")]


def _calls_into_an_op(module_name):
    """`Op.forward(...)` / `Op.backward(...)` calls (Op a Function subclass) and
    `type(x).forward/backward(...)` calls in one nn module: the ctx-borrowing pattern."""
    module = importlib.import_module(f"minigrad.nn.{module_name}")
    tree = ast.parse(inspect.getsource(module))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("forward", "backward")):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Call) and getattr(owner.func, "id", None) == "type":
            found.append(f"{module_name}:{node.lineno} type(...).{node.func.attr}")
        elif isinstance(owner, ast.Name):
            target = getattr(module, owner.id, None)
            if isinstance(target, type) and issubclass(target, Function):
                found.append(f"{module_name}:{node.lineno} {owner.id}.{node.func.attr}")
    return found


def test_no_op_runs_another_ops_forward_or_backward():
    """Fused kernels call plain kernel functions (attention_forward, tiled_backward, ...), never
    another op's forward with a hand-made ctx that its backward then rewrites."""
    assert [c for m in MODULES for c in _calls_into_an_op(m)] == []


def test_the_attention_code_is_one_package():
    assert len(ATTENTION) >= 10 and not [m for m in MODULES if "attention" in m and "." not in m]


def test_the_attention_kernels_are_drawn_through_the_viz_registry():
    assert not any("pipeline" in vars(op) for op in (Attention, TiledAttention, PackedAttention))
    assert pipeline_of(Attention) is pipeline_of(TiledAttention) is not None
    assert pipeline_of(PackedAttention) is not None
    qkv = mg.randn(1, 3, 6, requires_grad=True)
    steps = pipeline_of(PackedAttention)(F.packed_self_attention(qkv, 2, is_causal=True).grad_fn)
    assert [s[0] for s in steps][-3:] == ["Softmax over keys", "MatMul weights @ v", "Merge heads"]


def test_register_pipeline_refuses_what_is_not_an_op():
    from minigrad.viz import register_pipeline

    with pytest.raises(TypeError, match="register_pipeline: op must be a Function subclass"):
        register_pipeline(np.ndarray, lambda node: [])


def test_the_recorder_lives_with_the_attention_maps():
    assert maps_module._recorders == []
    with nn.record_attention() as maps:
        assert list(maps_module._recorders) == [maps]
        F.scaled_dot_product_attention(mg.randn(1, 2, 4), mg.randn(1, 3, 4), mg.randn(1, 3, 4))
    assert len(maps) == 1 and maps[0].weights.shape == (1, 2, 3)


def test_a_reader_meets_attention_reference_first():
    tree = ast.parse(inspect.getsource(attention_functional))
    first = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
    assert first.name == "attention_reference"
    assert F.attention_reference is attention_functional.attention_reference
