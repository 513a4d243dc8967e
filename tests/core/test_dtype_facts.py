"""torch's numbers and dtype facts: minigrad.pi, e, inf, nan, finfo and iinfo."""

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
