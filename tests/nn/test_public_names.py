"""`__all__` of minigrad.nn and minigrad.nn.functional lists exactly their public names: what
`from minigrad.nn import *` gives and what the docs list."""

import types

import pytest

import minigrad.nn as nn
import minigrad.nn.functional as F


def _public(module, submodules=()):
    """The classes and functions of minigrad.nn that the module offers (not private, not helpers
    it imports from the core for its own use), and the submodules that are part of the API."""
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, types.ModuleType):
            if name in submodules:
                names.add(name)
        elif getattr(value, "__module__", "").startswith("minigrad.nn"):
            names.add(name)
    return names


@pytest.mark.parametrize("module, submodules", [(nn, ("functional", "init", "utils")), (F, ())],
                         ids=["nn", "F"])
def test_all_lists_every_public_name(module, submodules):
    assert len(module.__all__) == len(set(module.__all__))
    assert all(hasattr(module, name) for name in module.__all__)
    assert set(module.__all__) == _public(module, submodules)


def test_star_import_gives_the_layers_and_functions():
    ns = {}
    exec("from minigrad.nn import *\nfrom minigrad.nn.functional import *", ns)
    assert {"MultiheadAttention", "evaluating", "scaled_dot_product_attention", "cross_entropy"} <= ns.keys()
    assert "np" not in ns and "kernels" not in ns


def _classes(base, packages):
    """Every subclass of base defined in a module of one of the packages, by class name."""
    found, todo = {}, [base]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith(packages):
            found.setdefault(cls.__name__, set()).add(cls.__module__)
    return found


def test_no_op_shares_its_name_with_a_module():
    """A drawing's node is an op and its box a module: an op a module's name would take (ReLU,
    Linear, Conv2d) is named with the suffix Op (ReLUOp, LinearOp, Conv2dOp). The exercises' own
    ops keep the names their stubs give a student (a student's Softmax), so they are left out."""
    import minigrad.models  # noqa: F401  (their modules and ops are defined on import)
    from minigrad.autograd import Function

    library = ("minigrad.ops", "minigrad.nn", "minigrad.models", "minigrad.autograd", "minigrad.memory")
    ops, modules = _classes(Function, library), _classes(nn.Module, library)
    assert {name: ops[name] | modules[name] for name in ops.keys() & modules.keys()} == {}
    assert {"ReLUOp", "SoftmaxOp", "LinearOp", "LayerNormOp", "GELUOp", "DropoutOp", "EmbeddingOp",
            "Conv2dOp", "MaxPool2dOp", "AvgPool2dOp"} <= ops.keys()
