"""One op, one place: every op's Function, Tensor method, function form and in-place variant are
declared in one kind's module of minigrad/ops/ (ops/table.py), and the kinds have the same names
in every folder that files ops (the torch twins in minigrad/export/, the tests here)."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad import ops
from minigrad.autograd import Function
from minigrad.ops import table

ROOT = Path(__file__).resolve().parents[2]
KINDS_WITH_FUNCTIONS = [k for k in ops.KINDS if any(
    isinstance(v, type) and issubclass(v, Function) and v.__module__ == f"minigrad.ops.{k}"
    for v in vars(__import__(f"minigrad.ops.{k}", fromlist=["_"])).values())]


def test_each_kind_is_one_module_and_has_its_tests_and_torch_twins_under_its_name():
    modules = {p.stem for p in (ROOT / "minigrad" / "ops").glob("*.py")} - {"__init__"}
    assert modules - set(ops.KINDS) == {"table", "arguments", "promotion", "erf", "either"}  # the helpers
    for kind in ops.KINDS:
        assert (ROOT / "tests" / "core" / f"test_ops_{kind}.py").exists(), kind
        assert f"{kind}.py" in ops.__doc__, f"ops/__init__.py does not list {kind}"
    for kind in KINDS_WITH_FUNCTIONS:
        assert (ROOT / "minigrad" / "export" / f"twins_{kind}.py").exists(), kind
    # logic: bool results, no gradient; filling: its fills compose masked_fill and add, whose
    # Functions and twins are theirs
    assert set(ops.KINDS) - set(KINDS_WITH_FUNCTIONS) == {"logic", "filling"}


def test_every_declared_name_lives_in_its_kinds_module():
    entries = table.entries()
    assert len(entries) > 200
    for e in entries:
        assert e.kind in ops.KINDS, e
        for variant in (e.method, e.function, e.inplace):
            if variant is not None:
                source = inspect.unwrap(variant.fget if isinstance(variant, property) else variant)
                assert source.__module__ == f"minigrad.ops.{e.kind}", (e.name, source)


def test_the_tensor_class_defines_no_op_of_its_own():
    """tensor.py keeps what a tensor is (array, grad, node, protocols); every method that
    computes something new is declared in a kind's module."""
    from minigrad import tensor

    declared = {e.name for e in table.entries() if e.method is not None}
    own = {n for n, v in vars(mg.Tensor).items()
           if callable(v) and getattr(v, "__module__", "") == tensor.__name__}
    assert own.isdisjoint(declared)
    assert own <= {"__init__", "_make", "__len__", "__iter__", "__repr__", "backward", "requires_grad_",
                   "detach", "retain_grad", "register_hook", "zero_grad", "item", "numpy", "tolist",
                   "__bool__", "__float__", "__int__", "__array__", "_other", "_binary", "_inplace",
                   "_take_result", "__iadd__", "__isub__", "__imul__", "__itruediv__", "size", "dim",
                   "numel", "__hash__"}, own


def test_a_function_form_is_its_method_with_input_for_self():
    x = mg.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]])
    checked = 0
    for e in table.entries():
        if e.function is None or e.method is None or getattr(e.function, "__wrapped__", None) is not e.method:
            continue
        params = list(inspect.signature(e.function).parameters)
        assert params[0] == "input" and params[1:] == list(inspect.signature(e.method).parameters)[1:], e.name
        checked += 1
    assert checked > 120
    np.testing.assert_array_equal(mg.exp(x).numpy(), x.exp().numpy())
    np.testing.assert_array_equal(mg.sum([1.0, 2.0]).numpy(), np.float32(3.0))  # anything as_tensor takes
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        mg.exp(x, 1)  # a wrong call names the counts a method call would


def test_an_op_declared_twice_is_refused():
    def exp(self):  # a second exp, declared from another kind's module
        return self

    exp.__module__ = "minigrad.ops.reduce"
    with pytest.raises(RuntimeError, match="exp is declared in ops/pointwise.py and ops/reduce.py"):
        table.op(exp)
    assert mg.Tensor.exp is table._TABLE["exp"].method and table._TABLE["exp"].kind == "pointwise"


def test_every_function_of_a_kind_has_its_torch_twin_in_the_kinds_twins_file():
    twins = pytest.importorskip("minigrad.export.ops",
                                reason="needs the torch extra: pip install 'minigrad[torch]'")
    for kind in KINDS_WITH_FUNCTIONS:
        module = __import__(f"minigrad.ops.{kind}", fromlist=["_"])
        twin_file = __import__(f"minigrad.export.twins_{kind}", fromlist=["_"])
        here = getattr(twin_file, f"{kind.upper()}_TWINS")
        for name, cls in vars(module).items():
            if isinstance(cls, type) and issubclass(cls, Function) and cls.__module__ == module.__name__:
                if cls.__name__ == "PiecewiseConstant":  # the base of sign, floor, ...: never applied
                    continue
                assert cls in here, f"ops/{kind}.py's {name} has no twin in export/twins_{kind}.py"
                assert twins.TORCH_OPS[cls] is here[cls]
