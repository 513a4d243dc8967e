"""ThreadTuner picks the count whose steps are fastest, times the counts again every so often
(so a run whose cores become shared moves to fewer threads), and `--threads` takes a count or
auto."""

import pytest

import minigrad as mg
from minigrad.cli import build_parser
from minigrad.threads import ThreadTuner, candidate_counts


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
    return ThreadTuner(counts=sorted(machine.cost), clock=machine.clock, apply=machine.apply, **kw)


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


def test_a_run_that_starts_sharing_its_cores_moves_to_fewer_threads():
    m = FakeMachine({1: 0.015, 2: 0.011})
    t = tuner_on(m, trial=2, every=10)
    for _ in range(6 + 5):
        t.run(m.step)
    assert t.best == 2
    m.cost[2] = 0.030  # another process now keeps one core busy
    ran = [t.run(m.step) for _ in range(5 + 6 + 3)]
    assert ran[:5] == [2] * 5  # the 10 steps since the trial run out...
    assert ran[5:11] == [1, 1, 1, 2, 2, 2]  # ...then the counts are timed again
    assert t.best == 1 and ran[11:] == [1, 1, 1]


def test_one_candidate_means_no_trial():
    m = FakeMachine({1: 0.01})
    t = tuner_on(m)
    assert [t.run(m.step) for _ in range(3)] == [1, 1, 1] and t.timings == {}
    assert t.describe() == "threads: 1"


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        ThreadTuner(counts=[0, 2])
    with pytest.raises(ValueError, match="positive"):
        ThreadTuner(counts=[1, 2], trial=0)


@pytest.mark.parametrize("cores, counts", [(1, [1]), (2, [1, 2]), (4, [1, 2, 4]), (6, [1, 2, 4, 6]),
                                           (8, [1, 2, 4, 8])])
def test_candidates_are_powers_of_two_and_the_cores(cores, counts):
    assert candidate_counts(cores) == counts


def test_the_command_takes_a_count_or_auto(capsys):
    parser = build_parser()
    assert parser.parse_args(["train", "gpt"]).threads == "auto"
    assert parser.parse_args(["--threads", "3", "train", "gpt"]).threads == 3
    for bad, says in (("0", "at least 1 thread"), ("two", "a number of threads or auto")):
        with pytest.raises(SystemExit):
            parser.parse_args(["--threads", bad, "train", "gpt"])
        assert says in capsys.readouterr().err


@pytest.fixture
def one_thread_after():
    yield
    mg.set_num_threads(1)


def test_train_with_auto_logs_the_count_it_chose(tmp_path, capsys, monkeypatch, one_thread_after):
    from minigrad import threads
    from minigrad.cli import main

    monkeypatch.setattr(threads, "available_cores", lambda: 2)  # a trial even on a 1-core machine
    out = tmp_path / "run"
    assert main(["train", "gpt", "--preset", "tiny", "--steps", "12", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "threads: " in text and "timed per step: 1:" in text and ", 2:" in text
    assert main(["--threads", "1", "train", "gpt", "--preset", "tiny", "--steps", "12",
                 "--out", str(tmp_path / "fixed")]) == 0
    assert "timed per step" not in capsys.readouterr().out
