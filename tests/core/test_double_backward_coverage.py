"""Every built-in op takes part in higher-order gradients (CONTRIBUTING.md, "Higher-order
gradients"): its backward builds a graph (`differentiable_backward`, with `graph_saved` where it
saved intermediates) or it names its composed `reference`. Anything else would be refused under
create_graph, so a new op must choose."""

import importlib
import inspect
import pkgutil

import minigrad
import minigrad.nn
import minigrad.ops


def _op_classes():
    names = [f"minigrad.ops.{m.name}" for m in pkgutil.iter_modules(minigrad.ops.__path__)]
    names += [f"minigrad.nn.{m.name}" for m in pkgutil.iter_modules(minigrad.nn.__path__)]
    attention = importlib.import_module("minigrad.nn.attention")
    names += [f"minigrad.nn.attention.{m.name}" for m in pkgutil.iter_modules(attention.__path__)]
    found = {}
    for name in names:
        module = importlib.import_module(name)
        for attr, cls in vars(module).items():
            if (inspect.isclass(cls) and issubclass(cls, minigrad.Function) and cls is not minigrad.Function
                    and cls.__module__ == module.__name__):
                found[f"{module.__name__}.{attr}"] = cls
    return found


def test_every_op_builds_its_graph_or_names_its_reference():
    classes = _op_classes()
    assert len(classes) > 90  # the walk found the ops
    missing = sorted(name for name, cls in classes.items()
                     if not (getattr(cls, "differentiable_backward", False) or hasattr(cls, "reference")))
    assert missing == []
