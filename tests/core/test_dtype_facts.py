"""torch's numbers and dtype facts: minigrad.pi, e, inf, nan, finfo and iinfo; the dtype names
and aliases (one object per dtype), the legacy tensor types, torch.Tensor(list) as float32; the
dtype questions (is_floating_point, is_complex, is_signed, is_nonzero, is_tensor)."""

import math

import numpy as np
import pytest

import minigrad as mg


def test_the_constants_are_pythons_floats():
    assert (mg.pi, mg.e) == (math.pi, math.e)
    assert mg.inf == math.inf and math.isnan(mg.nan)
    assert mg.tensor([mg.inf, -mg.inf]).isinf().all().item()


@pytest.mark.parametrize("dtype", [mg.float16, mg.float32, mg.float64])
def test_finfo_gives_the_floating_dtypes_facts(dtype):
    info = mg.finfo(dtype)
    assert info.eps == np.finfo(dtype).eps and info.max == np.finfo(dtype).max
    assert info.tiny == info.smallest_normal and info.bits == np.dtype(dtype).itemsize * 8
    assert type(info.eps) is float and info.dtype == np.dtype(dtype).name
    assert mg.finfo(mg.zeros(1, dtype=dtype).dtype).eps == info.eps  # a tensor's dtype works too


def test_finfo_defaults_to_float32_and_refuses_integers():
    assert mg.finfo().eps == np.finfo(np.float32).eps
    with pytest.raises(TypeError, match="finfo: int64 is not a floating dtype; use iinfo"):
        mg.finfo(mg.int64)
    assert mg.iinfo(mg.int64).max == 2**63 - 1 and mg.iinfo(mg.uint8).min == 0
    assert mg.iinfo(mg.int32).bits == 32
    with pytest.raises(TypeError, match="iinfo: float32 is not an integer dtype"):
        mg.iinfo(mg.float32)


def test_as_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    assert (mg.pi, mg.e, mg.inf) == (torch.pi, torch.e, torch.inf)
    floats = ((mg.float16, torch.float16), (mg.float32, torch.float32), (mg.float64, torch.float64))
    for ours, theirs in floats:
        for fact in ("eps", "max", "min", "tiny", "smallest_normal", "resolution", "bits"):
            assert float(getattr(mg.finfo(ours), fact)) == float(getattr(torch.finfo(theirs), fact)), fact
    assert mg.finfo().eps == torch.finfo().eps
    for ours, theirs in ((mg.int64, torch.int64), (mg.int32, torch.int32), (mg.uint8, torch.uint8)):
        assert (mg.iinfo(ours).max, mg.iinfo(ours).min, mg.iinfo(ours).bits) == \
            (torch.iinfo(theirs).max, torch.iinfo(theirs).min, torch.iinfo(theirs).bits)
    with pytest.raises(TypeError):
        torch.finfo(torch.int64)


ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
           "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}


def test_each_dtype_is_one_object_compared_by_identity_as_torch_code_does():
    x = mg.ones(2)
    assert x.dtype is mg.float32 and x.long().dtype is mg.long is mg.int64
    assert x.double().dtype is mg.double and x.half().dtype is mg.half and x.bool().dtype is mg.bool
    for alias, name in ALIASES.items():
        assert getattr(mg, alias) is getattr(mg, name) is np.dtype(name), alias
    assert mg.zeros(2, dtype=mg.long).dtype is mg.int64 and mg.arange(3).dtype is mg.long
    assert "float" not in mg.__all__ and "bool" not in mg.__all__  # `import *` keeps the builtins


def test_legacy_types_make_tensors_and_answer_isinstance():
    ids = mg.LongTensor([1, 2, 3])
    assert ids.dtype is mg.int64 and ids.tolist() == [1, 2, 3] and not ids.requires_grad
    assert mg.FloatTensor(2, 3).shape == (2, 3) and mg.FloatTensor(2, 3).dtype is mg.float32
    assert isinstance(mg.ones(1), mg.FloatTensor) and not isinstance(mg.ones(1), mg.LongTensor)
    assert isinstance(ids, mg.Tensor) and mg.BoolTensor([True]).dtype is mg.bool
    with pytest.raises(TypeError, match="LongTensor: expected data or sizes"):
        mg.LongTensor([1], [2])


def test_tensor_of_python_data_is_float32_as_torch_tensor():
    assert mg.Tensor([1, 2]).dtype is mg.float32 and mg.Tensor([True]).dtype is mg.float32
    assert mg.Tensor(np.arange(3)).dtype is mg.int64  # an array keeps its dtype
    assert mg.tensor([1, 2]).dtype is mg.int64  # minigrad.tensor infers, as torch.tensor


def test_dtype_names_as_torch():
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    for alias, name in ALIASES.items():
        assert getattr(torch, alias) is getattr(torch, name), alias  # the same aliases in torch
        ours, theirs = mg.ones(2).to(getattr(mg, alias)), torch.ones(2).to(getattr(torch, alias))
        assert str(theirs.dtype) == f"torch.{ours.dtype.name}", alias
    assert torch.Tensor([1, 2]).dtype == torch.float32 and torch.LongTensor([1]).dtype == torch.int64
    assert mg.ones(3).type_as(mg.zeros(1, dtype=mg.long)).dtype is mg.long
    assert torch.ones(3).type_as(torch.zeros(1, dtype=torch.long)).dtype is torch.long


@pytest.mark.parametrize("dtype", [mg.float16, mg.float32, mg.float64, mg.int8, mg.int64, mg.uint8,
                                   mg.bool, mg.complex64])
def test_the_dtype_questions_answer_as_torchs(dtype):
    torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    x = mg.zeros(2, dtype=dtype)
    t = torch.zeros(2, dtype=getattr(torch, np.dtype(dtype).name))
    for name in ["is_floating_point", "is_complex", "is_signed"]:
        assert getattr(x, name)() is getattr(t, name)(), name
    assert mg.is_floating_point(x) is torch.is_floating_point(t) and mg.is_complex(x) is torch.is_complex(t)
    assert x.is_contiguous() and mg.is_tensor(x) and not mg.is_tensor(x.numpy())


def test_is_nonzero_needs_one_element():
    assert mg.tensor([0.5]).is_nonzero() is True and mg.is_nonzero(mg.tensor(0)) is False
    with pytest.raises(RuntimeError, match=r"is_nonzero: a tensor of 2 elements \(shape \(2,\)\)"):
        mg.tensor([1, 2]).is_nonzero()
    assert mg.get_default_dtype() is mg.float32
