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
