"""Grad mode, the module scope and the anomaly/trace hooks are per thread, as in PyTorch."""

import contextvars
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import grad_mode, hooks
from minigrad.viz import AnomalyError, detect_anomaly, trace_backward

TIMEOUT = 10  # seconds; a wait that runs out fails the test instead of hanging the suite


class Worker(threading.Thread):
    """Runs fn in a thread; join() re-raises what it raised and hands back what it returned."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:  # noqa: BLE001  (handed to the main thread by join)
            self.error = e

    def join(self, timeout=TIMEOUT):
        super().join(timeout)
        assert not self.is_alive(), "worker thread did not finish"
        if self.error is not None:
            raise self.error
        return self.result


def wait(event):
    assert event.wait(TIMEOUT), "timed out waiting for the other thread"


def held_in_no_grad(inside, done):
    """A function that enters no_grad, signals `inside`, waits for `done`, and returns whether
    grad mode was enabled there (False)."""

    def quiet():
        with mg.no_grad():
            inside.set()
            wait(done)
            return mg.is_grad_enabled()

    return quiet


def test_no_grad_in_one_thread_does_not_stop_recording_in_another():
    inside, done = threading.Event(), threading.Event()
    worker = Worker(held_in_no_grad(inside, done))
    worker.start()
    wait(inside)
    w = mg.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()  # recorded here although the other thread is inside no_grad
    done.set()
    assert worker.join() is False
    assert mg.is_grad_enabled() and y.requires_grad and y.grad_fn is not None
    y.backward()
    np.testing.assert_array_equal(w.grad, [2.0, 4.0])


def test_overlapping_no_grad_blocks_in_two_threads_leave_grad_mode_on_in_both():
    # A enters, B enters, A leaves, B leaves: with one global flag B restored A's "off".
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with mg.no_grad():
            a_in.set()
            wait(b_in)
        a_out.set()
        return mg.is_grad_enabled()

    def b():
        wait(a_in)
        with mg.no_grad():
            b_in.set()
            wait(a_out)
        return mg.is_grad_enabled()

    ta, tb = Worker(a), Worker(b)
    ta.start()
    tb.start()
    assert ta.join() is True and tb.join() is True
    assert mg.is_grad_enabled()


def test_a_new_thread_starts_with_grad_mode_on_even_from_inside_no_grad():
    with mg.no_grad():
        worker = Worker(lambda: (mg.is_grad_enabled(), mg.tensor([1.0], requires_grad=True) * 2))
        worker.start()
        enabled, y = worker.join()
        assert not mg.is_grad_enabled()
    assert enabled and y.grad_fn is not None


def test_a_decorated_function_running_in_two_threads_at_once_restores_each():
    both_in = threading.Barrier(2, timeout=TIMEOUT)

    @mg.no_grad()
    def evaluate():
        both_in.wait()  # both threads are inside the same no_grad object now
        return mg.is_grad_enabled()

    def run():
        return evaluate(), mg.is_grad_enabled()

    workers = [Worker(run) for _ in range(2)]
    for t in workers:
        t.start()
    assert [t.join() for t in workers] == [(False, True), (False, True)]


def test_a_context_copied_into_another_thread_cannot_change_this_threads_grad_mode():
    # asyncio.to_thread runs a function in a copy of the caller's contextvars context.
    with mg.enable_grad():  # this thread has a state of its own now
        context = contextvars.copy_context()
    inside, done = threading.Event(), threading.Event()
    worker = Worker(lambda: context.run(held_in_no_grad(inside, done)))
    worker.start()
    wait(inside)
    enabled_here = mg.is_grad_enabled()
    done.set()
    assert worker.join() is False and enabled_here and mg.is_grad_enabled()


def test_detect_anomaly_in_one_thread_does_not_fire_in_another():
    inside, done = threading.Event(), threading.Event()

    def watch():
        with detect_anomaly():
            inside.set()
            wait(done)
            with pytest.raises(AnomalyError, match="Log"):
                mg.tensor([0.0]).log()  # it still fires in its own thread
        return len(hooks.forward_checks())  # this thread's hook list, empty again

    worker = Worker(watch)
    worker.start()
    wait(inside)
    y = mg.tensor([0.0, 1.0], requires_grad=True).log()  # -inf here is no business of theirs
    y.backward(np.ones(2))
    assert hooks.forward_checks() == () and hooks.backward_observers() == ()
    done.set()
    assert worker.join() == 0


def test_backward_observers_see_only_their_own_threads_backward():
    seen = []
    with hooks.observe_backward(lambda node, g, grads: seen.append(node.name)):
        w = mg.tensor([1.0, 2.0], requires_grad=True)
        other = Worker(lambda: (w * 3.0).sum().backward())
        other.start()
        other.join()
        assert seen == []  # the other thread's backward ran without this thread's observer
        (w * w).sum().backward()
        assert seen == ["Sum", "Mul"]
    assert hooks.backward_observers() == ()
    w.grad = None
    assert len(trace_backward((w * w).sum()).steps) == 2  # trace_backward hooks the same way


def test_module_scope_tags_only_nodes_of_its_own_thread():
    inside, done = threading.Event(), threading.Event()
    region = object()

    def scoped():
        with grad_mode.module_scope(region):
            inside.set()
            wait(done)
            return (mg.tensor([1.0], requires_grad=True) * 2).grad_fn.scope

    worker = Worker(scoped)
    worker.start()
    wait(inside)
    here = (mg.tensor([1.0], requires_grad=True) * 2).grad_fn.scope
    assert grad_mode.current_scope() == ()
    done.set()
    assert worker.join() == (region,) and here == ()
