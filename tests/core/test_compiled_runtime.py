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


def test_the_cache_folder_is_the_users_never_the_packages(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiled.cache_folder() == str(tmp_path / "minigrad" / "numba")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert compiled.cache_folder() == str(tmp_path / ".cache" / "minigrad" / "numba")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert compiled.cache_folder() == str(tmp_path / "mine")


def test_a_kernel_caches_in_the_cache_folder_and_leaves_numbas_setting(monkeypatch, tmp_path):
    monkeypatch.setattr(compiled, "cache_folder", lambda: str(tmp_path))
    compiled._jit()
    config = compiled._numba.core.config
    before = config.CACHE_DIR
    k = compiled.kernel(_twice)
    x, out = np.arange(3.0), np.empty(3)
    k(x, out, 0, 3)
    np.testing.assert_array_equal(out, 2 * x)
    assert config.CACHE_DIR == before
    assert [p.suffix for p in tmp_path.rglob("*_twice*")].count(".nbi") == 1


def test_an_unwritable_cache_folder_compiles_without_a_cache(monkeypatch, tmp_path):
    """Not numba's fallback, the __pycache__ inside the installed package: no cache at all."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(compiled, "cache_folder", lambda: str(blocker / "numba"))
    real = compiled._jit()
    asked = []

    def jit(**options):
        asked.append(options["cache"])
        return real(**options)

    monkeypatch.setattr(compiled, "_jit", lambda: jit)
    x, out = np.arange(4.0), np.empty(4)
    compiled.kernel(_twice)(x, out, 0, 4)
    np.testing.assert_array_equal(out, 2 * x)
    assert asked == [False]


def test_set_enabled_names_the_missing_package(monkeypatch):
    monkeypatch.setattr(compiled, "available", lambda: False)
    with pytest.raises(ModuleNotFoundError, match="pip install numba"):
        compiled.set_enabled(True)


def test_using_restores_the_setting():
    before = compiled.enabled()
    with compiled.using(not before):
        assert compiled.enabled() is (not before)
    assert compiled.enabled() is before
