"""Independent pieces of one kernel, run on several threads: the one place that partitions work.

numpy releases the GIL inside its loops over arrays, so the pieces of an elementwise kernel (GELU
over blocks of elements, the optimizer over parameters) can run on several cores at once from
Python threads. A kernel hands its pieces to `run_pieces`; the pieces are fixed by the kernel
(the same blocks whatever the thread count), and each piece is computed exactly as the serial
loop computes it, so the results are bit-identical for any thread count.

A hand-off to a sleeping thread costs about 150 us on a 2-core VM (waking it, and waking the
caller when it is done), so work below MIN_ELEMENTS elements runs in the calling thread. The
workers wait on a queue (they sleep; they never spin), so a process that shares the cores loses
nothing to them. `minigrad.set_num_threads(n)` sets the thread count (the caller plus n - 1
workers); BLAS runs its own threads for the matrix products, which never overlap a kernel's
pieces: a piece calls no BLAS, so the threads busy at any moment are at most n.
"""

from __future__ import annotations

import contextvars
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Sequence

# Below this many elements of work, splitting costs more than it saves: on the 2-core VM of the
# README a hand-off cost about 150 us, and np.tanh over 2**16 float32 took 215 us serially and
# 252 us in two halves on two threads, over 2**18 elements 1214 us and 711 us.
MIN_ELEMENTS = 2**17

_threads = 1
_pool: ThreadPoolExecutor | None = None
_inside = threading.local()  # a piece that calls run_pieces again runs its pieces serially


def set_threads(n: int) -> None:
    """Use n threads for kernels' pieces (1: everything in the calling thread)."""
    global _threads, _pool
    if n < 1:
        raise ValueError(f"set_threads: need at least 1 thread, got {n}")
    if _pool is not None and n != _threads:
        _pool.shutdown(wait=True)
        _pool = None
    _threads = n


def get_threads() -> int:
    return _threads


def run_pieces(fn: Callable[[int], None], sizes: Sequence[int]) -> None:
    """fn(i) for every piece i, where sizes[i] is piece i's number of elements.

    Serially, in order, with one thread or less than MIN_ELEMENTS of work in all; otherwise the
    pieces are dealt to the threads in contiguous runs of about equal work, the calling thread
    taking the first run. fn must write only its own piece's outputs. An exception in any piece
    is raised here, after every piece has finished.
    """
    count = len(sizes)
    total = sum(sizes)
    if _threads == 1 or count < 2 or total < MIN_ELEMENTS or getattr(_inside, "flag", False):
        for i in range(count):
            fn(i)
        return
    runs = _split(sizes, min(_threads, count))
    # Each worker runs in a copy of the caller's context, so np.errstate and grad mode hold there too.
    futures = [_executor().submit(contextvars.copy_context().run, _run, fn, run) for run in runs[1:]]
    error = None
    try:
        _run(fn, runs[0])
    except BaseException as e:  # finish the others first: their outputs must not be half-written later
        error = e
    for f in futures:
        e = _wait(f)
        error = error or e
    if error is not None:
        raise error


def _run(fn: Callable[[int], None], run: range) -> None:
    _inside.flag = True
    try:
        for i in run:
            fn(i)
    finally:
        _inside.flag = False


def _wait(f: Future) -> BaseException | None:
    try:
        f.result()
    except BaseException as e:
        return e
    return None


def _split(sizes: Sequence[int], parts: int) -> list[range]:
    """Contiguous runs of pieces, `parts` of them (parts <= len(sizes)), each non-empty: run k
    ends where the running total first reaches k * total / parts, or where the pieces left are
    just enough for the runs left."""
    total, runs, start, done = sum(sizes), [], 0, 0
    for i, size in enumerate(sizes):
        done += size
        k, left = len(runs) + 1, len(sizes) - (i + 1)
        if k < parts and (done >= total * k / parts or left == parts - k):
            runs.append(range(start, i + 1))
            start = i + 1
    runs.append(range(start, len(sizes)))
    return runs


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=_threads - 1, thread_name_prefix="minigrad")
    return _pool
