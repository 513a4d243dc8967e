"""minigrad.runtime.compiled itself: a kernel compiles at its first call, not before, and still
compiles when numba has no folder to write its cache to; the switch's errors."""

import numpy as np
import pytest

from minigrad.runtime import compiled

pytest.importorskip("numba", reason="the compiled kernels need numba: pip install numba (the fast extra)")


def _twice(x, out, start, stop):
    for i in range(start, stop):
        out[i] = 2 * x[i]


def test_a_kernel_compiles_at_its_first_call_and_without_a_cache_folder(monkeypatch):
    real = compiled._jit()
    asked = []

    def jit(**options):
        asked.append(options["cache"])
        if options["cache"]:
            raise RuntimeError("cannot cache function '_twice': no locator available")
        return real(**options)

    monkeypatch.setattr(compiled, "_jit", lambda: jit)
    k = compiled.kernel(_twice)
    assert asked == [] and k.python is _twice  # nothing compiled yet
    x, out = np.arange(5.0), np.empty(5)
    k(x, out, 0, 5)
    np.testing.assert_array_equal(out, 2 * x)
    assert asked == [True, False]


def test_set_enabled_names_the_missing_package(monkeypatch):
    monkeypatch.setattr(compiled, "available", lambda: False)
    with pytest.raises(ModuleNotFoundError, match="pip install numba"):
        compiled.set_enabled(True)


def test_using_restores_the_setting():
    before = compiled.enabled()
    with compiled.using(not before):
        assert compiled.enabled() is (not before)
    assert compiled.enabled() is before
