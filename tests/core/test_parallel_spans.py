"""minigrad.runtime.parallel's runs and products: run_spans covers every piece once in contiguous runs,
raises a run's error after all have finished and holds BLAS to one thread meanwhile; matmul
gives np.matmul's bits for any thread count; set_threads leaves no waiting worker behind."""

import threading
import time

import numpy as np
import pytest
import threadpoolctl
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minigrad.runtime import parallel
from minigrad.testing import split_threads

threads = split_threads  # n threads that split whatever the size


@pytest.fixture
def split_all():
    """threads(n) for a whole test: split_all(n) sets the count, the teardown goes back to one."""
    with threads(1):
        yield parallel.set_threads


def _record_runs(sizes):
    runs, lock = [], threading.Lock()

    def fn(start, stop):
        with lock:
            runs.append((start, stop))

    parallel.run_spans(fn, sizes)
    return sorted(runs)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@given(sizes=st.lists(st.integers(0, 20), min_size=1, max_size=25))
def test_every_piece_is_covered_once_by_contiguous_runs(n, sizes):
    with threads(n):
        runs = _record_runs(sizes)
    assert all(start < stop for start, stop in runs)
    assert [i for start, stop in runs for i in range(start, stop)] == list(range(len(sizes)))
    assert all(a[1] == b[0] for a, b in zip(runs, runs[1:]))  # contiguous, in order
    assert len(runs) == min(n, len(sizes))


@given(sizes=st.lists(st.integers(0, 20), min_size=0, max_size=25))
def test_one_thread_calls_fn_once_over_everything(sizes):
    with threads(1):
        assert _record_runs(sizes) == [(0, len(sizes))]


def test_an_error_in_a_workers_run_is_raised_after_every_run_finished(split_all):
    split_all(3)
    finished = []

    def fn(start, stop):
        if start == 2:  # the second run: a worker's
            raise KeyError("run from 2 failed")
        time.sleep(0.02)
        finished.append(start)

    with pytest.raises(KeyError, match="run from 2 failed"):
        parallel.run_spans(fn, [1] * 6)
    assert sorted(finished) == [0, 4]  # the caller's and the other worker's runs both ended


def _blas_threads():
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


def test_blas_runs_on_one_thread_inside_runs_and_gets_its_count_back(split_all):
    assert _blas_threads(), "numpy's BLAS is not visible to threadpoolctl"
    with threadpoolctl.threadpool_limits(2, "blas"):
        before = _blas_threads()
        assert max(before) == 2
        split_all(2)
        seen = []
        parallel.run_spans(lambda a, b: seen.append(_blas_threads()), [1, 1])
        assert len(seen) == 2 and all(max(s) == 1 for s in seen)
        assert _blas_threads() == before
        split_all(1)  # one thread: BLAS is left alone
        parallel.run_spans(lambda a, b: seen.append(_blas_threads()), [1, 1])
        assert seen[-1] == before


sides = st.integers(0, 40)


@st.composite
def products(draw):
    """(a, b) with a (m, k), b (k, n): floats of one dtype, `a` sometimes a transposed view."""
    m, k, n = draw(sides), draw(sides), draw(sides)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    values = st.floats(-100, 100, width=32)
    transposed = draw(st.booleans())
    a = draw(hnp.arrays(dtype, (k, m) if transposed else (m, k), elements=values))
    b = draw(hnp.arrays(dtype, (k, n), elements=values))
    return (a.T if transposed else a), b


@given(products())
def test_matmul_gives_numpys_product_for_any_thread_count(case):
    """One thread: numpy's bits. More: OpenBLAS's sum for a row depends in the last bit on how
    many rows its call has (`parallel.matmul` says why that is allowed), so each entry is held
    to the rounding bound of a k-term sum instead, 2 k eps (|a| @ |b|)."""
    a, b = case
    want = np.matmul(a, b)
    bound = 2 * a.shape[1] * np.finfo(want.dtype).eps * (np.abs(a) @ np.abs(b))
    for n in (1, 2, 3):
        with threads(n):
            got = parallel.matmul(a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        if n == 1:
            np.testing.assert_array_equal(got, want)
        else:
            assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_at_extreme_values(split_all, dtype):
    rng = np.random.default_rng(0)
    extremes = np.array([np.inf, -np.inf, np.nan, 1e38, -1e38, -0.0, 0.0, 1e-38], dtype)
    a = rng.choice(extremes, (11, 5)).astype(dtype)
    b = rng.choice(extremes, (5, 7)).astype(dtype)
    a[3] = -0.0  # a row of negative zeros: the signs of its zeros must survive
    b[:, 2] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.matmul(a, b)
        got = {}
        for n in (1, 2, 3):
            split_all(n)
            got[n] = parallel.matmul(a, b)
    assert np.isnan(want).any() and np.isinf(want).any()
    for result in got.values():
        assert result.dtype == dtype
        np.testing.assert_array_equal(result, want)  # NaN where NaN, inf where inf
        np.testing.assert_array_equal(np.signbit(result), np.signbit(want))


def _waiting_workers():
    return [t for t in threading.enumerate() if t.name.startswith("minigrad-") and t.is_alive()]


def test_set_threads_back_to_one_ends_the_workers(split_all):
    before = set(_waiting_workers())  # (none, unless another test left some: those are not ours)
    for n in (3, 2, 4):
        split_all(n)
        parallel.run_spans(lambda a, b: None, [1] * 4)  # make the pool
        assert len(set(_waiting_workers()) - before) == n - 1
    split_all(1)
    for t in set(_waiting_workers()) - before:
        t.join(timeout=1.0)
    assert set(_waiting_workers()) - before == set()


def test_set_threads_rejects_zero():
    with pytest.raises(ValueError, match="set_threads"):
        parallel.set_threads(0)
