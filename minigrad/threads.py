"""How many threads minigrad uses, and how `minigrad train` finds the fastest count.

`set_num_threads(n)` gives minigrad's kernels n threads for their independent pieces, the large
matrix products' blocks of rows included (minigrad.parallel), and holds numpy's BLAS to one
thread: its idle threads would spin on the cores the pieces need (the reasons, measured, are in
minigrad.parallel's docstring). So n threads are busy at most, and none spins while idle.

The fastest count depends on the model's sizes and on what else the machine is running: on small
matrices a second thread saves little, and a thread whose core another process is using makes
every step wait for it. `ThreadTuner` measures instead of guessing: it times a few real steps at
each candidate count, keeps the fastest, and measures again every so often, so a run that starts
sharing its cores moves to fewer threads (`minigrad train --threads auto`, the default).

"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Sequence

from threadpoolctl import threadpool_info, threadpool_limits

from . import parallel

_limits: Any = None  # kept alive: the limit holds while this object exists


def set_num_threads(n: int) -> None:
    """Let minigrad's kernels, their matrix products included, use at most n threads (BLAS
    itself runs on one: minigrad splits the products)."""
    global _limits
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: need a whole number of threads, at least 1; got {n!r}")
    _limits = threadpool_limits(limits=1, user_api="blas")  # BLAS idle threads would spin
    parallel.set_threads(n)


def get_num_threads() -> int:
    """The thread count set by set_num_threads (else the largest among the loaded BLAS libraries)."""
    if _limits is not None:
        return parallel.get_threads()
    return max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1)


def available_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def candidate_counts(cores: int) -> list[int]:
    """The thread counts worth timing: 1, then powers of two up to the cores, then the cores."""
    counts = [1]
    while counts[-1] * 2 <= cores:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == cores else counts + [cores]


class ThreadTuner:
    """Run a repeated step at the fastest thread count, found by timing it.

        tuner = ThreadTuner()
        for batch in batches:
            loss = tuner.run(lambda: step(batch))

    A trial times `trial` steps at each candidate count (after one step at that count that is
    not timed, as the first step after a change pays for it) and keeps the count with the
    smallest median; a trial runs at the start and then after every `every` steps. The steps of
    a trial are real steps: nothing is thrown away. The results of a BLAS product may differ in
    the last bit between thread counts, so for runs that agree to the bit pass a fixed count
    (`minigrad train --threads N`).
    """

    def __init__(self, counts: Sequence[int] | None = None, trial: int = 3, every: int = 500,
                 clock: Callable[[], float] = time.perf_counter,
                 apply: Callable[[int], None] = set_num_threads):
        self.counts = list(counts) if counts is not None else candidate_counts(available_cores())
        if not self.counts or any(c < 1 for c in self.counts):
            raise ValueError(f"ThreadTuner: thread counts must be at least 1, got {self.counts}")
        if trial < 1 or every < 1:
            raise ValueError(f"ThreadTuner: trial and every must be positive, got {trial} and {every}")
        self.trial, self.every, self.clock, self.apply = trial, every, clock, apply
        self.best = self.counts[0]
        self.timings: dict[int, float] = {}  # count -> median seconds per step, of the last trial
        self._plan: list[tuple[int, bool]] = []  # (count, timed) for the steps of a running trial
        self._times: dict[int, list[float]] = {}
        self._since = every  # so the first step starts a trial
        self._current: int | None = None

    def run(self, step: Callable[[], Any]) -> Any:
        """One step, at the count the tuner picks for it; returns what step returned."""
        if not self._plan and self._since >= self.every and len(self.counts) > 1:
            self._plan = [(c, timed) for c in self.counts for timed in [False] + [True] * self.trial]
            self._times = {c: [] for c in self.counts}
        in_trial = bool(self._plan)
        count, timed = self._plan.pop(0) if in_trial else (self.best, False)
        if count != self._current:
            self.apply(count)
            self._current = count
        t0 = self.clock()
        out = step()
        if timed:
            self._times[count].append(self.clock() - t0)
            if not self._plan:  # the trial is over
                self.timings = {c: sorted(t)[len(t) // 2] for c, t in self._times.items()}
                self.best = min(self.timings, key=lambda c: (self.timings[c], c))
                self._since = 0
        elif not in_trial:
            self._since += 1
        return out

    def describe(self) -> str:
        """One line for the log: the count chosen and the trial's times."""
        if not self.timings:
            return f"threads: {self.best}"
        times = ", ".join(f"{c}: {1e3 * t:.1f} ms" for c, t in sorted(self.timings.items()))
        return f"threads: {self.best} (timed per step: {times})"
