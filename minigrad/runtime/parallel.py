"""Independent pieces of one kernel, run on several threads: the one place that partitions work.

numpy releases the GIL inside its loops over arrays, so the pieces of a kernel can run on
several cores at once from Python threads. A kernel cuts its work into pieces (GELU: blocks of
elements; the attention kernels: batch rows or heads; `matmul`: blocks of rows) and hands them
to `run_spans`, which calls it once per thread with a contiguous run of pieces. The pieces do
not depend on the thread count, and the kernel makes a run give each piece exactly what the
piece alone would give, so the results are bit-identical for any thread count (except in the
last bit of large matrix products: see `matmul`).

`minigrad.set_num_threads(n)` sets the thread count: the caller plus n - 1 workers. BLAS is
then held to one thread (minigrad.runtime.threads) and the large matrix products are split here
instead (`matmul`), for two reasons measured on the 2-core VM of the README (the other way,
`set_num_threads(n, way="blas")`, leaves this module on one thread and gives BLAS the n; the
two never mix):
  - OpenBLAS's idle threads spin for about 0.1 s after every product before they sleep (a
    process burned 0.11 s of CPU during a 0.3 s sleep after one), on the very cores the
    workers need: inside a training step at T = 1024 the attention's backward, split over
    the heads, took 67 ms with BLAS's idle threads spinning and 39 ms with them put to sleep
    at once (OPENBLAS_THREAD_TIMEOUT=4).
  - Two threads' products each asking for BLAS's two threads oversubscribe the cores: the
    tiled attention at (B, H, T, D) = (2, 4, 1024, 32), forward and backward, took 97-154 ms
    so, 64-67 ms with one BLAS thread each, and 97-111 ms on one thread alone.
So nothing here spins while idle: a worker sleeps on a lock until it is given a run, and a
process that shares the cores loses nothing to it. While runs execute, BLAS is held to one
thread in any case (`_one_blas_thread`, for a caller that gave BLAS threads of its own).

Waking a sleeping thread costs about 100 us on that VM, so work below MIN_ELEMENTS elements
(MIN_PRODUCT multiply-adds for a product) runs in the calling thread. And every numpy call in
a run hands the GIL back and forth between the threads, which costs as much again when it
wakes one: kernels with many small calls (an optimizer's step over many small parameters,
layer norm's row blocks) gain nothing and stay serial; GELU does its run in large chunks.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import threading
import time
from typing import Callable, Sequence

import numpy as np

# Below this many elements of work, splitting costs more than it saves. Alone, np.tanh over 2**18
# float32 took 1214 us serially and 711 us in halves on two threads; but inside a training step,
# where a sleeping worker's core has gone idle, the standard step's GELU and attention (2**18
# elements each) on two threads made the step slower (28.7 ms against 25.1, benchmarks/threads.py);
# from 2**19 on they stay serial and two threads cost the step nothing (22.2 against 21.9 ms).
MIN_ELEMENTS = 2**19
# A matrix product is split from this many multiply-adds (m * k * n) on, in blocks of ROW_BLOCK
# rows. Float32, one BLAS thread, whole against split in two halves on two threads, on the same
# VM: (1024, 64) x (64, 192) 397 and 442 us; (1024, 64) x (64, 256) 516 and 452; (768, 128) x
# (128, 384) 1062 and 579; (2048, 128) x (128, 384) 3123 and 1567.
MIN_PRODUCT = 2**25
ROW_BLOCK = 64
# How long the caller polls for a worker's run to end before it sleeps too (`_Worker.wait`).
SPIN_SECONDS = 50e-6

_threads = 1
_pool: list | None = None  # the workers, made at the first parallel run
_inside = threading.local()  # a run that calls run_spans again runs its pieces serially
_blas: list | None = None  # the BLAS libraries' thread controls, see _one_blas_thread


def set_threads(n: int) -> None:
    """Use n threads for kernels' pieces (1: everything in the calling thread)."""
    global _threads, _pool
    if n < 1:
        raise ValueError(f"set_threads: need at least 1 thread, got {n}")
    if _pool is not None and n != _threads:
        for worker in _pool:
            worker.stop()
        _pool = None
    _threads = n


def get_threads() -> int:
    return _threads


def run_spans(fn: Callable[[int, int], None], sizes: Sequence[int], min_total: int | None = None) -> None:
    """fn(start, stop) over contiguous runs of pieces that cover them all, where sizes[i] is
    piece i's number of elements: fn(0, len(sizes)) once with one thread or less than
    MIN_ELEMENTS of work in all; otherwise one run per thread, of about equal work, the calling
    thread taking the first. fn(a, b) must write only the outputs of pieces a..b-1, and give
    each of them what fn(i, i + 1) would: then the results do not depend on the thread count.
    An exception in any run is raised here, after every run has finished. `min_total` replaces
    MIN_ELEMENTS for work whose sizes count something else (`matmul`'s).
    """
    count = len(sizes)
    least = MIN_ELEMENTS if min_total is None else min_total
    if _threads == 1 or count < 2 or sum(sizes) < least or getattr(_inside, "flag", False):
        fn(0, count)
        return
    runs = _split(sizes, min(_threads, count))
    workers = _workers()
    with _one_blas_thread():
        # Each worker runs in a copy of the caller's context, so np.errstate and grad mode hold there too.
        for worker, run in zip(workers, runs[1:]):
            worker.start(functools.partial(contextvars.copy_context().run, _run, fn, run))
        error = None
        try:
            _run(fn, runs[0])
        except BaseException as e:  # finish the others first: their outputs must not be half-written later
            error = e
        for worker in workers[:len(runs) - 1]:
            e = worker.wait()
            error = error or e
    if error is not None:
        raise error


class _Worker:
    """A thread that sleeps on a lock until it is given a job (`start`), runs it, and releases
    a second lock when it is done, on which the caller waits (`wait`).

    The worker's wake-up overlaps the caller's own run. The caller, done first, polls for up to
    SPIN_SECONDS before it sleeps on the lock: a run that ends about when the caller's does is
    then seen at once, without the cost of waking the caller, and a longer one is not kept from
    the GIL by the polling. An empty job took 99 us from start to the end of wait (median;
    148 us with a plain sleep on the lock, 153 us through a ThreadPoolExecutor). A worker with
    nothing to do sleeps: it never spins."""

    def __init__(self, name: str):
        self._go, self._finished = threading.Lock(), threading.Lock()
        self._go.acquire()
        self._finished.acquire()
        self._job: Callable[[], None] | None = None
        self._done, self._error = True, None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def start(self, job: Callable[[], None]) -> None:
        self._done, self._error, self._job = False, None, job
        self._go.release()

    def wait(self) -> BaseException | None:
        deadline = time.perf_counter() + SPIN_SECONDS
        while not self._done and time.perf_counter() < deadline:
            os.sched_yield()
        self._finished.acquire()
        return self._error

    def stop(self) -> None:
        """End the thread, and return once it has ended (so set_threads(1) leaves no worker)."""
        self._job = None
        self._go.release()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            job = self._job
            if job is None:
                return
            try:
                job()
            except BaseException as e:  # raised in the caller, by run_spans
                self._error = e
            finally:
                self._job = None
                self._done = True
                self._finished.release()


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b of 2-D arrays, a's rows in blocks of ROW_BLOCK spread over the threads when the
    product is large (m * k * n of at least MIN_PRODUCT), each thread's run of blocks one BLAS
    call on one thread.

    The one exception to bit-identical results: OpenBLAS's sums for a row depend, in the last
    bit, on how many rows the call has (its kernels block the rows), so a product's rows may
    differ in the last bit between thread counts. Calling BLAS once per fixed block instead
    would make them agree, but costs one thread 5-20% (2048 x 512 x 128 in blocks of 256 rows:
    4.0 ms against 3.3)."""
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), np.result_type(a, b))
    if _threads == 1 or m * a.shape[1] * n < MIN_PRODUCT:
        return np.matmul(a, b, out=out)
    blocks = -(-m // ROW_BLOCK)

    def rows(start: int, stop: int) -> None:
        r0, r1 = start * ROW_BLOCK, min(stop * ROW_BLOCK, m)
        np.matmul(a[r0:r1], b, out=out[r0:r1])

    run_spans(rows, [min(ROW_BLOCK, m - i * ROW_BLOCK) * n for i in range(blocks)], min_total=0)
    return out


def _run(fn: Callable[[int, int], None], run: range) -> None:
    _inside.flag = True
    try:
        fn(run.start, run.stop)
    finally:
        _inside.flag = False


@contextlib.contextmanager
def _one_blas_thread():
    """BLAS on one thread inside the block, its counts as they were after (a call to each
    library's setter costs about a microsecond)."""
    libraries = _blas_libraries()
    before = [lib.get_num_threads() for lib in libraries]
    for lib, n in zip(libraries, before):
        if n != 1:
            lib.set_num_threads(1)
    try:
        yield
    finally:
        for lib, n in zip(libraries, before):
            if n != 1:
                lib.set_num_threads(n)


def _blas_libraries() -> list:
    """threadpoolctl's controllers of the BLAS libraries loaded (found once)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    return _blas


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


def _workers() -> list[_Worker]:
    global _pool
    if _pool is None:
        _pool = [_Worker(f"minigrad-{i}") for i in range(1, _threads)]
    return _pool
