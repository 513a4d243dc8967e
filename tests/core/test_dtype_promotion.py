"""One dtype rule for every op that combines inputs: each op, over every pair of operand
dtypes (bool, int32, int64, float32, float64; with dimensions, 0-d, and Python numbers),
gives PyTorch's result dtype."""

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
SCALARS = [True, 2, 2.5]
COND = np.array([True, False, True])


def operands():
    """(label, minigrad operand, torch operand): tensors of shape (3,) and (), and numbers."""
    out = []
    for name in DTYPES:
        vals = np.array([1, 2, 3]).astype(name)
        out.append((f"{name}[3]", mg.tensor(vals), torch.tensor(vals)))
        zero_d = np.array(2).astype(name)
        out.append((f"{name}[]", mg.tensor(zero_d), torch.tensor(zero_d)))
    out += [(repr(v), v, v) for v in SCALARS]
    return out


def _where(lib, cond):
    return lambda a, b: lib.where(cond, a, b)


# op name -> (minigrad function, torch function, whether operands may be Python numbers:
# "both" either side, "second" only the second, "none"). Ops PyTorch defines on tensors only
# (maximum, cat, stack) take a number by torch.result_type's rule.
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, "both"),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, "both"),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, "both"),
    "div": (lambda a, b: a / b, lambda a, b: a / b, "both"),
    "pow": (lambda a, b: a**b, lambda a, b: a**b, "both"),
    "maximum": (mg.maximum, torch.maximum, "second"),
    "minimum": (mg.minimum, torch.minimum, "second"),
    "where": (_where(mg, mg.tensor(COND)), _where(torch, torch.tensor(COND)), "both"),
    "cat": (lambda a, b: mg.cat([a, b]), lambda a, b: torch.cat([a, b]), "none"),
    "stack": (lambda a, b: mg.stack([a, b]), lambda a, b: torch.stack([a, b]), "none"),
    "clip_min": (lambda a, b: a.clip(b, None), lambda a, b: a.clip(b, None), "second"),
    "clip_max": (lambda a, b: a.clip(None, b), lambda a, b: a.clip(None, b), "second"),
    "clip_both": (lambda a, b: a.clip(b, b), lambda a, b: a.clip(b, b), "second"),
}


def _torch_dtype(fn, a, b, tensors_only):
    """PyTorch's result dtype, or None where PyTorch refuses the op (bool - bool, bool ** bool)."""
    if tensors_only and isinstance(b, (bool, int, float)):
        return torch.result_type(a, b)  # torch.maximum takes tensors only: its promotion rule
    try:
        out = fn(a, b)
    except (RuntimeError, TypeError):
        return None
    return out.dtype


def _name(dtype):
    return str(dtype).replace("torch.", "")


@pytest.mark.parametrize("op", list(OPS))
def test_result_dtype_matches_torch_for_every_pair(op):
    mg_fn, torch_fn, numbers = OPS[op]
    compared, wrong = 0, []
    for la, ma, ta in operands():
        for lb, mb, tb in operands():
            a_num, b_num = not isinstance(ma, mg.Tensor), not isinstance(mb, mg.Tensor)
            if (a_num and b_num and op != "where") or (a_num and numbers != "both") or \
                    (b_num and numbers == "none"):
                continue
            if op in ("cat",) and (ma.ndim == 0 or mb.ndim != ma.ndim):
                continue  # cat needs equal dimensions of at least 1 (both libraries refuse)
            if op == "stack" and mb.ndim != ma.ndim:
                continue
            expected = _torch_dtype(torch_fn, ta, tb, op in ("maximum", "minimum"))
            if expected is None:
                continue
            try:
                got = mg_fn(ma, mb).dtype
            except Exception as e:  # noqa: BLE001  (reported with the pair below)
                got = f"{type(e).__name__}: {e}"
            compared += 1
            if _name(got) != _name(expected):
                wrong.append(f"{op}({la}, {lb}): minigrad {got}, torch {_name(expected)}")
    assert not wrong, "\n".join(wrong)
    assert compared >= 25, compared  # the table really ran over the pairs


def test_matmul_of_an_integer_and_a_float_is_refused_as_in_torch():
    a = mg.tensor(np.ones((2, 3), dtype=np.int64))
    w = mg.tensor(np.ones((3, 2), dtype=np.float32))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.ones(2, 3, dtype=torch.int64) @ torch.ones(3, 2)
    with pytest.raises(TypeError, match=r"matmul: \(2, 3\) int64 @ \(3, 2\) float32.*\.float\(\)"):
        a @ w
    with pytest.raises(TypeError, match="matmul: .* float32 @ .* bool"):
        w.T @ mg.tensor(np.ones((2, 2), dtype=bool))
    # same kinds multiply: int64 @ int64 is int64, as in torch; float widths promote (float32 @
    # float64 is float64, where torch refuses: a float64 input may run through a float32 layer)
    assert (a @ a.T).dtype == np.int64
    assert (w.double() @ w.T).dtype == np.float64


@pytest.mark.parametrize("args", [(4,), (np.int64(4),), (np.int32(1), 5), (0, 6, np.int64(2)),
                                  (4.0,), (np.float64(4),), (1, 2.5), (0, 3, 0.5)],
                         ids=lambda a: ",".join(type(v).__name__ for v in a))
def test_arange_dtype_matches_torch(args):
    assert _name(mg.arange(*args).dtype) == _name(torch.arange(*args).dtype)


@pytest.mark.parametrize("values", [[1, 2, 3], [0.5, 1.5]], ids=["int", "float"])
def test_where_of_two_numbers_matches_torch(values):
    cond = np.array([True, False])
    a, b = values[0], values[-1]
    assert _name(mg.where(mg.tensor(cond), a, b).dtype) == _name(torch.where(torch.tensor(cond), a, b).dtype)


def test_int_clip_by_floats_is_float32_with_torch_values():
    x = np.array([0, 1, 2, 3])
    got = mg.tensor(x).clip(0.5, 1.5)
    ref = torch.tensor(x).clip(0.5, 1.5)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_in_place_division_of_an_int_tensor_is_refused():
    # true division makes a float (float32 by the one rule), which an int64 tensor cannot hold
    t = mg.tensor(np.array([2, 4]))
    with pytest.raises(TypeError, match="float32"):
        t /= 2
