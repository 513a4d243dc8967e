"""A shape that does not fit raises what torch raises (RuntimeError) and what minigrad always
raised (ValueError): a ShapeError is both, so a test written for either library passes."""

import pytest

import minigrad as mg
import minigrad.nn  # noqa: F401  (mg.nn below)
from minigrad.errors import ShapeError

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

CASES = {
    "matmul": lambda L: L.ones(2, 3) @ L.ones(2, 3),
    "broadcast": lambda L: L.ones(2, 3) + L.ones(4),
    "view": lambda L: L.ones(2, 3).view(4),
    "reshape": lambda L: L.ones(2, 3).reshape(5),
    "cat": lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)], 0),
    "stack": lambda L: L.stack([L.ones(2, 3), L.ones(2, 4)]),
    "item": lambda L: L.ones(2).item(),
    "expand": lambda L: L.ones(2, 3).expand(4, 3),
    "split": lambda L: L.ones(4).split(0),
    "linear": lambda L: L.nn.Linear(3, 2)(L.ones(2, 4)),
    "conv2d": lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(1, 2, 5, 5)),
    "layer_norm": lambda L: L.nn.LayerNorm(4)(L.ones(2, 3)),
    "mse_loss": lambda L: L.nn.functional.mse_loss(L.ones(2, 3), L.ones(3, 3)),
}


@pytest.mark.filterwarnings("ignore:Using a target size")  # torch's, before its error
@pytest.mark.parametrize("name", CASES)
def test_a_shape_error_is_torchs_runtime_error_and_a_value_error(name):
    with pytest.raises(RuntimeError) as theirs:
        CASES[name](torch)
    with pytest.raises(type(theirs.value)) as mine:
        CASES[name](mg)
    assert isinstance(mine.value, ShapeError) and isinstance(mine.value, ValueError)
    assert str(mine.value)  # says which op and which shapes
