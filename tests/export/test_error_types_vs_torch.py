"""A shape that does not fit raises what torch raises (RuntimeError) and what minigrad always
raised (ValueError): a ShapeError is both, so a test written for either library passes. So for
an index or class id out of range (RangeError) and an argument value an op refuses
(ArgumentError)."""

import pytest

import minigrad as mg
import minigrad.nn  # noqa: F401  (mg.nn below)
from minigrad.errors import ArgumentError, RangeError, ShapeError

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


# (case, the class minigrad raises, what minigrad raised before: still caught)
VALUE_CASES = {
    "gather": (lambda L: L.tensor([1.0, 2.0]).gather(0, L.tensor([5])), RangeError, IndexError),
    "scatter": (lambda L: L.zeros(3).scatter(0, L.tensor([4]), L.ones(1)), RangeError, IndexError),
    "cross_entropy": (lambda L: L.nn.functional.cross_entropy(L.ones(2, 3), L.tensor([0, 7])), RangeError,
                      ValueError),
    "nll_loss": (lambda L: L.nn.functional.nll_loss(L.ones(2, 3), L.tensor([0, 7])), RangeError, ValueError),
    "argmax": (lambda L: L.ones(0).argmax(), RangeError, ValueError),
    "argmin": (lambda L: L.ones(2, 0).argmin(1), RangeError, ValueError),
    "arange": (lambda L: L.arange(0, 5, 0), ArgumentError, ValueError),
    "arange-backwards": (lambda L: L.arange(0, 5, -1), ArgumentError, ValueError),
    "randint": (lambda L: L.randint(5, 2, (3,)), ArgumentError, ValueError),
    "linear": (lambda L: L.nn.Linear(3, -1), ArgumentError, ValueError),
    "clamp": (lambda L: L.ones(2).clamp(), ArgumentError, ValueError),
}


@pytest.mark.parametrize("name", VALUE_CASES)
def test_an_index_or_argument_error_is_what_torch_raises(name):
    case, cls, before = VALUE_CASES[name]
    with pytest.raises(Exception) as theirs:
        case(torch)
    assert type(theirs.value) in (IndexError, RuntimeError)
    with pytest.raises(type(theirs.value)) as mine:
        case(mg)
    assert isinstance(mine.value, cls) and isinstance(mine.value, before)
    assert str(mine.value).startswith(name.split("-")[0].replace("clamp", "clip").replace("linear", "Linear"))
