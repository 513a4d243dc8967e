"""ThreadTuner picks the setting whose steps are fastest (a count, or BLAS's way "blas:N"),
times the settings again every so often or as soon as the steps slow down (so a run whose cores
become shared moves to fewer threads), and `--threads` takes a count, blas:N or auto."""

import pytest
from threadpoolctl import threadpool_info

import minigrad as mg
from minigrad.runtime import parallel
from minigrad.runtime.threads import (
    ThreadTuner,
    apply_setting,
    candidate_counts,
    candidate_settings,
    parse_setting,
)


class FakeMachine:
    """A clock and a thread setting: a step at n threads takes cost[n] seconds."""

    def __init__(self, cost):
        self.cost, self.now, self.threads, self.applied = dict(cost), 0.0, None, []

    def clock(self):
        return self.now

    def apply(self, n):
        self.threads = n
        self.applied.append(n)

    def step(self):
        self.now += self.cost[self.threads]
        return self.threads


def tuner_on(machine, **kw):
    return ThreadTuner(settings=list(machine.cost), clock=machine.clock, apply=machine.apply, **kw)


def test_it_keeps_the_fastest_count_after_one_trial():
    m = FakeMachine({1: 0.015, 2: 0.011, 4: 0.013})
    t = tuner_on(m, trial=3, every=100)
    ran = [t.run(m.step) for _ in range(50)]
    assert ran[:12] == [1] * 4 + [2] * 4 + [4] * 4  # per count: one untimed step, then three timed
    assert set(ran[12:]) == {2} and t.best == 2
    assert t.timings == pytest.approx({1: 0.015, 2: 0.011, 4: 0.013})
    assert m.applied == [1, 2, 4, 2]  # set only when it changes
    assert t.describe() == "threads: 2 (timed per step: 1: 15.0 ms, 2: 11.0 ms, 4: 13.0 ms)"


def test_the_median_step_decides_not_an_outlier():
    m = FakeMachine({1: 0.015, 2: 0.011})
    t = tuner_on(m, trial=3, every=100)
    costs = iter([0.015, 0.015, 0.015, 0.015, 0.011, 0.011, 0.5, 0.011])  # one slow step at 2 threads

    def step():
        m.now += next(costs)

    for _ in range(8):
        t.run(step)
    assert t.best == 2


def test_a_run_whose_steps_slow_a_little_moves_at_the_next_trial():
    m = FakeMachine({1: 0.015, 2: 0.014})
    t = tuner_on(m, trial=2, every=10)
    for _ in range(6 + 5):
        t.run(m.step)
    assert t.best == 2
    m.cost[2] = 0.018  # 1.3x: under `slower`, so no early trial
    ran = [t.run(m.step) for _ in range(5 + 6 + 3)]
    assert ran[:5] == [2] * 5  # the 10 steps since the trial run out...
    assert ran[5:11] == [1, 1, 1, 2, 2, 2]  # ...then the counts are timed again
    assert t.best == 1 and ran[11:] == [1, 1, 1]


def test_a_run_that_starts_sharing_its_cores_is_timed_again_at_once():
    m = FakeMachine({1: 0.015, 2: 0.011, "blas:2": 0.009})
    t = tuner_on(m, trial=3, every=500)
    for _ in range(12 + 12):  # a trial, then as many steps as it took
        t.run(m.step)
    assert t.best == "blas:2"
    m.cost["blas:2"] = 0.045  # another process now keeps one core busy: BLAS's threads wait for it
    m.cost[2] = 0.030
    ran = [t.run(m.step) for _ in range(3 + 12 + 2)]
    assert ran[:2] == ["blas:2"] * 2  # two slow steps of the last three: their median is 5x the trial's...
    assert ran[2:14] == [1] * 4 + [2] * 4 + ["blas:2"] * 4  # ...so the settings are timed again now
    assert t.best == 1 and ran[14:] == [1, 1, 1] and t.setting == 1
    assert t.describe() == "threads: 1 (timed per step: 1: 15.0 ms, 2: 30.0 ms, blas:2: 45.0 ms)"


def test_an_early_trial_waits_for_as_many_steps_as_a_trial_takes():
    m = FakeMachine({1: 0.015, 2: 0.011})
    t = tuner_on(m, trial=3, every=500)
    for _ in range(8):  # the first trial: 2 settings x (1 + 3) steps
        t.run(m.step)
    m.cost[2] = 0.030
    ran = [t.run(m.step) for _ in range(8 + 8)]
    assert ran[:8] == [2] * 8  # slow since its first step, but only 8 steps since the trial...
    assert ran[8:] == [1] * 4 + [2] * 4  # ...then it is timed again
    assert t.best == 1


def test_one_slow_step_does_not_start_a_trial():
    m = FakeMachine({1: 0.015, 2: 0.011})
    t = tuner_on(m, trial=3, every=500)
    for _ in range(8):
        t.run(m.step)
    costs = iter([0.011, 0.5, 0.011, 0.011, 0.5, 0.011, 0.011])  # outliers: a page fault, a log write

    def step():
        m.now += next(costs)
        return m.threads

    assert [t.run(step) for _ in range(7)] == [2] * 7


def test_a_tie_keeps_the_earlier_setting():
    m = FakeMachine({1: 0.01, 2: 0.01, "blas:2": 0.01})
    t = tuner_on(m, trial=1)
    for _ in range(7):
        t.run(m.step)
    assert t.best == 1


def test_one_candidate_means_no_trial():
    m = FakeMachine({1: 0.01})
    t = tuner_on(m)
    assert [t.run(m.step) for _ in range(3)] == [1, 1, 1] and t.timings == {}
    assert t.describe() == "threads: 1"


def test_bad_settings_are_refused():
    for bad in ([0, 2], [1, "blas:0"], [1, "blas"], [True], [2.0]):
        with pytest.raises(ValueError, match="count of at least 1 or blas:N"):
            ThreadTuner(settings=bad)
    with pytest.raises(ValueError, match="at least one setting"):
        ThreadTuner(settings=[])
    with pytest.raises(ValueError, match="positive"):
        ThreadTuner(settings=[1, 2], trial=0)
    with pytest.raises(ValueError, match="slower above 1"):
        ThreadTuner(settings=[1, 2], slower=1.0)


def test_settings_read_as_a_count_and_a_way():
    assert parse_setting(3) == (3, "kernels") and parse_setting("3") == (3, "kernels")
    assert parse_setting("blas:4") == (4, "blas")
    assert candidate_settings(1) == [1]
    assert candidate_settings(2) == [1, 2, "blas:2"]
    assert candidate_settings(6) == [1, 2, 4, 6, "blas:2", "blas:4", "blas:6"]


@pytest.mark.parametrize("cores, counts", [(1, [1]), (2, [1, 2]), (4, [1, 2, 4]), (6, [1, 2, 4, 6]),
                                           (8, [1, 2, 4, 8])])
def test_candidates_are_powers_of_two_and_the_cores(cores, counts):
    assert candidate_counts(cores) == counts


def blas_threads():
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


def test_the_two_ways_never_mix(one_thread_after):
    mg.set_num_threads(2, way="blas")
    assert blas_threads() == {2} and parallel.get_threads() == 1 and mg.get_num_threads() == 2
    mg.set_num_threads(2)
    assert blas_threads() == {1} and parallel.get_threads() == 2 and mg.get_num_threads() == 2
    apply_setting("blas:3")
    assert blas_threads() == {3} and parallel.get_threads() == 1 and mg.get_num_threads() == 3
    with pytest.raises(ValueError, match="way must be one of kernels, blas; got 'openmp'"):
        mg.set_num_threads(2, way="openmp")
    assert blas_threads() == {3} and parallel.get_threads() == 1  # a refused call changes nothing


def test_wrap_runs_the_plain_step_through_the_tuner_with_its_arguments():
    m = FakeMachine({1: 0.015, 2: 0.011})
    t = tuner_on(m, trial=2, every=100)

    def plain(batch, *, scale=1):
        """one step"""
        return (m.step(), batch * scale)

    tuned = t.wrap(plain)
    ran = [tuned(i, scale=2) for i in range(10)]
    assert [r[1] for r in ran] == [2 * i for i in range(10)]  # its arguments and its result
    assert {r[0] for r in ran[6:]} == {2} and t.best == 2  # the tuner picked the setting
    assert tuned.__name__ == "plain" and tuned.__doc__ == "one step"
