"""A Python int beside an integer tensor is wrapped to the tensor's dtype (two's complement), as
PyTorch does, for arithmetic, bitwise ops and comparisons alike (`int32 | 0xFFFFFFFF` raised
numpy's OverflowError; PyTorch gives -1); as a value to write (clip, where) an int out of the
dtype's range is refused, as in PyTorch. Each case is compared with PyTorch."""

import operator

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install 'minigrad[torch]'")

VALUES = {"int8": [1, -1, 100, -128], "uint8": [1, 255, 3, 0], "int16": [7, -300, 32767, 0],
          "int32": [1, -1, 5, -2**31], "int64": [1, -1, 5, 2**62]}
SCALARS = [300, -300, 256, 0xFF, 0xFFFFFFFF, 2**31, 2**32 + 1, 2**40, -(2**40) - 3, 2**63, 2**64 - 1,
           -(2**63)]
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "or": operator.or_,
       "and": operator.and_, "xor": operator.xor, "floordiv": operator.floordiv, "mod": operator.mod,
       "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
       "ge": operator.ge}


@pytest.mark.parametrize("dtype", list(VALUES))
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("reflected", [False, True], ids=["tensor-op-int", "int-op-tensor"])
def test_python_ints_wrap_as_in_torch(dtype, op, reflected):
    fn = OPS[op]
    values = np.array(VALUES[dtype], dtype=dtype)
    if op in ("floordiv", "mod") and reflected:
        values = values[values != 0]  # an integer division by 0 raises in PyTorch
    mine_t, torch_t = mg.tensor(values), torch.tensor(values)
    for s in SCALARS:
        if op in ("floordiv", "mod") and not reflected and not s % 2 ** (8 * values.itemsize):
            continue  # a divisor that wraps to 0
        theirs = fn(s, torch_t) if reflected else fn(torch_t, s)
        with np.errstate(over="ignore"):  # int8 -128 // -1 wraps, in both
            mine = fn(s, mine_t) if reflected else fn(mine_t, s)
        assert mine.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (dtype, op, s)
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy(), err_msg=f"{dtype} {op} {s}")


def test_the_reported_case_and_the_examples():
    x = mg.tensor(np.array([1, -1, 5], np.int32))
    assert (x | 0xFFFFFFFF).tolist() == [-1, -1, -1] and (x | 0xFFFFFFFF).dtype == np.int32
    assert (mg.tensor(np.array([1, -1, 100], np.int8)) + 300).tolist() == [45, 43, -112]
    assert (mg.tensor(np.array([1, 255], np.uint8)) | 256).tolist() == [1, 255]
    assert (x < 2**40).tolist() == [False, True, False]  # 2**40 wraps to 0, as in PyTorch
    assert (x == 2**32 + 1).tolist() == [True, False, False]


def test_ints_beyond_64_bits_are_refused():
    x = mg.tensor(np.array([1, 2], np.int32))
    with pytest.raises(OverflowError, match="too big to convert to int32"):
        x + 2**64
    with pytest.raises(OverflowError):
        torch.tensor([1, 2], dtype=torch.int32) + 2**64


@pytest.mark.parametrize("make", [lambda x: x.clamp(max=300), lambda x: x.clip(-300, 5),
                                  lambda x: mg.where(x > 0, x, 300)], ids=["clamp", "clip", "where"])
def test_a_value_to_write_is_refused_out_of_range(make):
    """PyTorch refuses these ("value cannot be converted to type int8_t without overflow")."""
    x = mg.tensor(np.array([1, -1, 100], np.int8))
    with pytest.raises(OverflowError, match=r"(clip|where): the value -?300 cannot be converted to int8"):
        make(x)
    with pytest.raises(RuntimeError, match="cannot be converted"):
        torch.tensor([1, -1, 100], dtype=torch.int8).clamp(max=300)


def test_in_range_ints_and_other_kinds_are_unchanged():
    x = mg.tensor(np.array([1, -1, 100], np.int8))
    assert (x + 27).tolist() == [28, 26, 127] and (x + 27).dtype == np.int8
    assert (x * 0.5).dtype == np.float32 and (x * 0.5).tolist() == [0.5, -0.5, 50.0]
    b = mg.tensor(np.array([True, False]))
    assert (b + 300).dtype == np.int64 and (b + 300).tolist() == [301, 300]
    assert (mg.tensor(np.array([1.0], np.float32)) + 2**40).item() == 2.0**40
