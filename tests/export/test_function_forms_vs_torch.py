"""The function forms of the arithmetic, bitwise, reduction and shape methods
(`minigrad.add(x, y, alpha=2)`, `minigrad.var(x, 1)`, ...) against the same call in torch:
values, dtypes, and the gradient of every float input. And every Tensor method that has a
function form in torch has one in minigrad."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import well_conditioned

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

# (name, positional args after the tensors, keywords, number of tensor inputs, integer inputs?)
CASES = [
    ("add", (), {"alpha": 2.5}, 2, False), ("sub", (), {"alpha": -1.5}, 2, False),
    ("subtract", (), {}, 2, False), ("mul", (), {}, 2, False), ("multiply", (), {}, 2, False),
    ("div", (), {}, 2, False), ("divide", (), {"rounding_mode": "trunc"}, 2, False),
    ("true_divide", (), {}, 2, True), ("floor_divide", (), {}, 2, True),
    ("neg", (), {}, 1, False), ("negative", (), {}, 1, False), ("pow", (), {}, 2, False),
    ("bitwise_and", (), {}, 2, True), ("bitwise_or", (), {}, 2, True), ("bitwise_xor", (), {}, 2, True),
    ("bitwise_not", (), {}, 1, True),
    ("amax", (1,), {"keepdim": True}, 1, False), ("amin", ((0, 1),), {}, 1, False),
    ("argmax", (1,), {}, 1, False), ("argmin", (), {}, 1, False), ("logsumexp", (-1,), {}, 1, False),
    ("var", (1,), {"correction": 0}, 1, False), ("std", (), {"keepdim": True}, 1, False),
    ("flatten", (), {}, 1, False), ("chunk", (2, 1), {}, 1, False), ("split", ([1, 2], 1), {}, 1, False),
    ("detach", (), {}, 1, False),
]


def _outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


@pytest.mark.parametrize("name, args, kwargs, n, ints", CASES, ids=[c[0] for c in CASES])
@given(data=st.data())
def test_function_form_matches_torch(name, args, kwargs, n, ints, data):
    if ints:
        arrays = [data.draw(st.lists(st.integers(1, 50), min_size=6, max_size=6)) for _ in range(n)]
        arrays = [np.array(a, dtype=np.int64).reshape(2, 3) for a in arrays]
    else:
        arrays = [data.draw(well_conditioned((2, 3))) for _ in range(n)]
    grads = not ints and name not in ("argmax", "argmin", "detach")
    mins = [mg.tensor(a, requires_grad=grads) for a in arrays]
    tins = [torch.tensor(a, requires_grad=grads) for a in arrays]
    got = _outputs(getattr(mg, name)(*mins, *args, **kwargs))
    want = _outputs(getattr(torch, name)(*tins, *args, **kwargs))
    assert len(got) == len(want)
    for m, t in zip(got, want):
        assert str(t.dtype) == f"torch.{m.dtype}", name
        np.testing.assert_allclose(m.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    if grads:  # a random weight per output element, so a wrong place cannot hide in a sum
        rng = np.random.default_rng(0)
        weights = [rng.standard_normal(o.shape) for o in got]
        sum((o * w).sum() for o, w in zip(got, weights)).backward()
        sum((o * torch.from_numpy(w)).sum() for o, w in zip(want, weights)).backward()
        for a, m, t in zip(arrays, mins, tins):
            if name in ("std", "var") and np.all(a == a.flat[0]):
                # a constant input: minigrad's deviations are exactly 0 (its mean of n equal
                # values is the value), so is its gradient; torch's rounded mean leaves an ulp,
                # which std's backward divides by an ulp-sized std (torch gave 0.023 here)
                assert np.all(m.grad == 0), name
                continue
            np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_number_first_and_the_remaining_forms():
    x = mg.tensor([1.0, 2.0])
    assert mg.pow(2, x).tolist() == [2.0, 4.0] and mg.numel(mg.zeros(2, 3)) == 6
    assert mg.masked_fill(x, mg.tensor([True, False]), 0.0).tolist() == [0.0, 2.0]


def test_every_torch_function_form_of_a_tensor_method_exists():
    methods = [m for m in dir(mg.Tensor) if not m.startswith("_") and m != "dtype"]
    missing = [m for m in methods if callable(getattr(torch, m, None)) and not hasattr(mg, m)]
    assert missing == []
