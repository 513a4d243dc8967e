"""minigrad.runtime.parallel: a kernel's pieces on several threads give the serial loop's results, to
the bit, for any thread count, at ordinary and extreme values; errors and numpy's error state
travel from the pieces to the caller."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.nn import _pieces
from minigrad.runtime import parallel

EXTREMES = [0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 1e3, -1e3, 1e19, -1e19, 3e38, -3e38,
            np.inf, -np.inf, np.nan]


@pytest.fixture
def threads():
    """Set the thread count for a test (kernels split whatever their size), then go back to one."""
    saved = parallel.MIN_ELEMENTS

    def use(n):
        parallel.MIN_ELEMENTS = 0
        parallel.set_threads(n)

    yield use
    parallel.MIN_ELEMENTS = saved
    parallel.set_threads(1)


def run_each(fn, sizes):
    """fn(i) for every piece i, through run_spans (each run's pieces in order)."""
    parallel.run_spans(lambda start, stop: [fn(i) for i in range(start, stop)], sizes)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=30), st.integers(1, 8))
def test_split_deals_contiguous_non_empty_runs(sizes, parts):
    parts = min(parts, len(sizes))
    runs = parallel._split(sizes, parts)
    assert len(runs) == parts and all(len(r) for r in runs)
    assert [i for r in runs for i in r] == list(range(len(sizes)))


def test_split_balances_the_work():
    runs = parallel._split([1] * 8, 2)
    assert [list(r) for r in runs] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [list(r) for r in parallel._split([1, 1, 1, 5], 2)] == [[0, 1, 2], [3]]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_every_piece_runs_once(threads, n):
    threads(n)
    seen = np.zeros(17, dtype=int)

    def piece(i):
        seen[i] += 1

    run_each(piece, [3] * 17)
    assert seen.tolist() == [1] * 17


def test_small_work_stays_in_the_calling_thread():
    parallel.set_threads(2)
    try:
        import threading

        names = set()
        run_each(lambda i: names.add(threading.current_thread().name), [10] * 4)
        assert names == {threading.current_thread().name}  # 40 elements: below MIN_ELEMENTS
    finally:
        parallel.set_threads(1)


def test_an_error_in_a_piece_is_raised_once_every_run_has_stopped(threads):
    import time

    threads(2)
    done = []

    def piece(i):  # pieces 0-2 run here, 3-5 on the worker
        if i == 0:
            raise ValueError("piece 0 failed")
        time.sleep(0.01)
        done.append(i)

    with pytest.raises(ValueError, match="piece 0 failed"):
        run_each(piece, [1] * 6)
    assert sorted(done) == [3, 4, 5]  # the worker's run was over before the error came out


def test_nested_pieces_run_serially(threads):
    threads(2)
    inner = []
    run_each(lambda i: run_each(lambda j: inner.append((i, j)), [1, 1]), [1, 1])
    assert sorted(inner) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_numpy_error_state_holds_in_the_workers(threads):
    threads(2)
    x = np.full(8, 1e30, dtype=np.float32)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        run_each(lambda i: np.multiply(x[i:i + 1], x[i:i + 1]), [1] * 8)
    import warnings

    with warnings.catch_warnings(record=True) as caught, np.errstate(over="ignore"):
        warnings.simplefilter("always")
        run_each(lambda i: np.multiply(x[i:i + 1], x[i:i + 1]), [1] * 8)
    assert not caught  # an overflow ignored in the caller warns in no worker either


def test_set_threads_refuses_nonsense():
    with pytest.raises(ValueError, match="at least 1"):
        parallel.set_threads(0)
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="set_num_threads"):
            mg.set_num_threads(bad)


def gelu_tanh(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The GELU (tanh) kernel's output and input gradient, on arrays."""
    t = mg.tensor(x, requires_grad=True)
    y = mg.nn.functional.gelu(t, approximate="tanh")
    y.backward(mg.tensor(g))
    return y.numpy(), t.grad


arrays = st.tuples(
    st.lists(st.integers(1, 70), min_size=0, max_size=3),
    st.sampled_from([np.float32, np.float64]),
    st.integers(0, 2**16),
    st.booleans(),
)


@given(arrays)
def test_gelu_pieces_are_bit_identical_for_any_thread_count(spec):
    shape, dtype, seed, extreme = spec
    rng = np.random.default_rng(seed)
    x = (rng.normal(0, 3, shape)).astype(dtype)
    if extreme and x.size:
        x.reshape(-1)[rng.integers(0, x.size, max(1, x.size // 3))] = rng.choice(EXTREMES)
    g = rng.uniform(-2, 2, shape).astype(dtype)
    saved = parallel.MIN_ELEMENTS, _pieces.PIECE
    try:
        _pieces.PIECE = 7  # many pieces even for small arrays
        parallel.MIN_ELEMENTS = 0
        parallel.set_threads(1)
        with np.errstate(all="ignore"):
            want = gelu_tanh(x, g)
            for n in (2, 3):
                parallel.set_threads(n)
                got = gelu_tanh(x, g)
                for a, b in zip(got, want):
                    assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    finally:
        parallel.MIN_ELEMENTS, _pieces.PIECE = saved
        parallel.set_threads(1)


def test_gelu_in_pieces_matches_the_formula_at_the_extremes(threads):
    threads(2)
    x = np.array(EXTREMES[:-1] * 3, dtype=np.float32)
    with np.errstate(invalid="ignore"):  # GELU(-inf) = -inf * 0 is nan, as in torch
        y, dx = gelu_tanh(x, np.ones_like(x))
    u = np.sqrt(2 / np.pi) * (x.astype(np.float64) + 0.044715 * np.clip(x, -1e3, 1e3).astype(np.float64) ** 3)
    with np.errstate(all="ignore"):
        want = 0.5 * x.astype(np.float64) * (1 + np.tanh(u))
    finite = np.isfinite(want)
    assert np.allclose(y[finite], want[finite], rtol=1e-6, atol=1e-30)
    assert np.all(np.isfinite(dx)) and np.all((dx >= -0.2) & (dx <= 1.2))


def train_a_little(optimizer, n_threads, seed=0):
    """Parameters after three steps of `optimizer` on a small MLP, at n threads."""
    parallel.set_threads(n_threads)
    mg.manual_seed(seed)
    model = mg.nn.Sequential(mg.nn.Linear(5, 16), mg.nn.GELU(approximate="tanh"), mg.nn.Linear(16, 3))
    opt = optimizer(model.parameters())
    x = mg.randn(9, 5)
    for _ in range(3):
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.numpy().copy() for p in model.parameters()], opt


@pytest.mark.parametrize("optimizer", [
    lambda ps: mg.optim.Adam(ps, lr=1e-2),
    lambda ps: mg.optim.AdamW(ps, lr=1e-2, amsgrad=True),
    lambda ps: mg.optim.SGD(ps, lr=1e-2, momentum=0.9, nesterov=True),
    lambda ps: mg.optim.RMSprop(ps, lr=1e-2, centered=True),
], ids=["adam", "adamw-amsgrad", "sgd-nesterov", "rmsprop"])
def test_optimizers_over_threads_update_as_serially(threads, optimizer):
    threads(1)
    want, opt1 = train_a_little(optimizer, 1)
    threads(3)
    got, opt3 = train_a_little(optimizer, 3)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert opt1.state.keys() == opt3.state.keys()


def test_an_optimizer_error_leaves_every_parameter_marked_changed(threads, monkeypatch):
    threads(2)
    w, v = (mg.tensor(np.ones(3), requires_grad=True) for _ in range(2))
    (w * v).backward(mg.tensor(np.array([0.5, -1.0, 2.0])))  # any upstream gradient: only .grad matters
    opt = mg.optim.SGD([w, v], lr=0.1)
    update = opt._update

    def fails_for_v(p, grad, state, group):
        if p is v.numpy():
            raise FloatingPointError("the update of v failed")
        update(p, grad, state, group)

    monkeypatch.setattr(opt, "_update", fails_for_v)
    z = (w * 2).sum()  # recorded before the step
    with pytest.raises(FloatingPointError):
        opt.step()
    assert np.allclose(w, [0.95, 1.1, 0.8])  # w was updated (1 - 0.1 * g * v), and its version bumped:
    with pytest.raises(RuntimeError):
        z.backward()
