"""Compiled kernels: plain loops that numba turns into machine code, where numpy's way of working
(one pass over the array per operation, one Python call per pass) is the cost.

A fused kernel (layer norm, softmax, GELU, Adam's update, ...) has a numpy form, its readable
reference and the path when numba is absent. Beside it, in the same file, a kernel may have a loop
form: a Python function over rows and elements, written with `@kernel`, which walks each row once
with everything in registers. The op picks the loop form when `enabled()`, else the numpy one;
the tests run both and hold them to each other (tests/nn/test_compiled_kernels.py).

    @kernel
    def scale_rows(x, s, out, start, stop):
        x, s, out = x[start:stop], s[start:stop], out[start:stop]  # (loops from 0 vectorize)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = x[i, j] * s[i]

A `Kernel` compiles at its first call, never at import (importing numba alone takes 0.4 s), and
caches the machine code on disk, in `cache_folder()` (the user's cache folder, never the installed
package's), so a later process loads it instead of compiling again (a GPT step's kernels: 4.1 s
to compile, 1.0 s to import numba and load them). The compiled loop releases the GIL
(`nogil=True`), so `minigrad.runtime.parallel.run_spans` can split its rows over minigrad's own
threads: a kernel takes (start, stop) and writes only those rows.
numba's own thread pool (`parallel=True`) is never used: one pool, minigrad's, on the cores, with
BLAS held to one thread beside it (minigrad.runtime.threads), and results that do not depend on
the thread count.

Off switches: `MINIGRAD_COMPILED=0` in the environment, or `set_enabled(False)` / `with
using(False):` in code (the tests and benchmarks use these to run the numpy path on a machine that
has numba).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from typing import Any, Callable, Iterator

import numpy as np

from .parallel import run_spans

_setting: bool | None = None  # set_enabled's flag; None: the environment decides
_numba: Any = None


def available() -> bool:
    """Whether numba is installed (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
    """Whether the fused kernels take their compiled loop form: numba is installed, and neither
    `MINIGRAD_COMPILED=0` nor `set_enabled(False)` turned it off."""
    if _setting is not None:
        return _setting
    return _from_environment()


@functools.cache
def _from_environment() -> bool:
    value = os.environ.get("MINIGRAD_COMPILED", "1").strip().lower()
    if value not in ("0", "1", "false", "true", "off", "on", ""):
        raise ValueError(f"MINIGRAD_COMPILED must be 0 or 1, not {value!r}")
    return value not in ("0", "false", "off") and available()


def takes(*arrays: np.ndarray) -> bool:
    """Whether a loop form may take these arrays: compiled kernels on, and every array float32 or
    float64 and C-contiguous (what the loops are compiled and vectorised for)."""
    return enabled() and all(a.dtype in (np.float32, np.float64) and a.flags.c_contiguous for a in arrays)


def set_enabled(flag: bool) -> None:
    """Use the compiled loop forms (True, when numba is installed) or the numpy ones (False)."""
    global _setting
    if flag and not available():
        raise ModuleNotFoundError("compiled kernels need numba: pip install numba")
    _setting = bool(flag)


@contextlib.contextmanager
def using(flag: bool) -> Iterator[None]:
    """Run a block with the compiled kernels on (True) or off (False), then restore the setting."""
    global _setting
    before = _setting
    set_enabled(flag)
    try:
        yield
    finally:
        _setting = before


class Kernel:
    """A loop function, compiled by numba at its first call (for each new combination of argument
    types) and cached on disk. `python` is the function itself, runnable without numba (slowly):
    the loop as written, for reading and for stepping through in a debugger."""

    def __init__(self, fn: Callable[..., Any], fastmath: bool | set = False):
        self.python = fn
        self.fastmath = fastmath
        self._compiled: Callable[..., Any] | None = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            njit = _jit()
            options = dict(nogil=True, error_model="numpy", fastmath=self.fastmath)
            folder = cache_folder()
            if _writable(folder):  # (else numba would fall back to the package's own folder)
                try:
                    with _caching_in(folder):
                        self._compiled = njit(cache=True, **options)(self.python)
                except RuntimeError:  # numba found no way to cache this function
                    pass
            if self._compiled is None:  # no cache: compile in each process
                self._compiled = njit(cache=False, **options)(self.python)
        return self._compiled(*args)


def cache_folder() -> str:
    """Where the compiled kernels' machine code is kept: `NUMBA_CACHE_DIR` when set, else
    minigrad/numba in the user's cache folder (`$XDG_CACHE_HOME`, else ~/.cache).

    Never numba's default, the `__pycache__` beside the source: in an installed package those
    files are not pip's, so `pip uninstall` would leave the folder behind, and a later editable
    install of the package would import that empty folder (a namespace package) instead."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "minigrad", "numba")


def _writable(folder: str) -> bool:
    """Whether folder exists or can be made, and may be written to."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


@contextlib.contextmanager
def _caching_in(folder: str) -> Iterator[None]:
    """numba's cache folder is one setting for the process, read when a function is marked for
    caching; set it for minigrad's kernels only, and put back what the program had."""
    config = _numba.core.config
    before = config.CACHE_DIR
    config.CACHE_DIR = folder
    try:
        yield
    finally:
        config.CACHE_DIR = before


def kernel(fn: Callable[..., Any] | None = None, *, fastmath: bool | set = False) -> Any:
    """Mark fn as a compiled loop kernel (see the module's docstring). `fastmath` takes numba's
    flags: REORDER (sums reordered, so the compiler vectorizes them; inf and NaN kept) or
    REORDER_FMA (fused multiply-adds too), below."""
    if fn is None:
        return lambda f: Kernel(f, fastmath)
    return Kernel(fn, fastmath)


# Sums reordered for vector instructions; inf and NaN kept (no "nnan"/"ninf"); no fused
# multiply-adds, which round a*b - c once instead of twice and so break the exact cancellations
# the kernels rely on (layer norm's dx of a constant row: g w - mean(g w) must be 0 exactly).
REORDER = {"reassoc", "nsz"}
# With fused multiply-adds, for kernels that rely on no exact cancellation (a polynomial).
REORDER_FMA = REORDER | {"contract"}

# A compiled kernel's rows are cut into pieces of about PIECE elements (fixed, whatever the thread
# count, so a kernel that sums over rows sums piece by piece and gives the same bits on any
# count), and split over the threads from MIN_TOTAL elements on: one call per run, the GIL
# released, so a run pays only for waking its thread.
PIECE = 2**14
MIN_TOTAL = 2**18


def rows_per_piece(cols: int) -> int:
    """How many rows of `cols` elements make one piece."""
    return max(1, PIECE // max(cols, 1))


def pieces(rows: int, cols: int) -> int:
    """How many pieces `rows` rows of `cols` elements make (at least 1)."""
    return max(1, -(-rows // rows_per_piece(cols)))


def over_rows(fn: Callable[..., None], rows: int, cols: int, *args: Any) -> None:
    """fn(*args, start, stop) over the rows [0, rows), in runs of whole pieces spread over
    minigrad's threads (minigrad.runtime.parallel.run_spans). fn writes only rows start..stop-1
    (and, for a sum over rows, only the slots of the pieces those rows make)."""
    per = rows_per_piece(cols)

    def run(first: int, last: int) -> None:
        fn(*args, first * per, min(last * per, rows))

    count = pieces(rows, cols)
    run_spans(run, [min(per, rows - i * per) * cols for i in range(count)], min_total=MIN_TOTAL)


def _jit() -> Callable[..., Any]:
    global _numba
    if _numba is None:
        import numba

        _numba = numba
    return _numba.njit
