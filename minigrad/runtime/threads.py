"""How many threads minigrad uses, and how `minigrad train` finds the fastest setting.

There are two ways to give a step n threads, and neither is the faster for every model:
  - `set_num_threads(n)` (the default way, "kernels"): minigrad's kernels split their
    independent pieces over n threads, the large matrix products' blocks of rows included
    (minigrad.runtime.parallel), and numpy's BLAS is held to one thread. So n threads are busy at most,
    and none spins while idle. It wins when the pieces are large (the T = 1024 step).
  - `set_num_threads(n, way="blas")`: BLAS multiplies on its own n threads and minigrad's
    kernels run on one. BLAS's idle threads spin for about 0.1 s after a product, waiting for
    the next, so handing a product to them is fast: on small models, where every product is
    a millisecond or less and waking a sleeping thread costs a tenth of that, it wins. But they
    spin on the cores the kernels' pieces and other processes need (the reasons, measured, are
    in minigrad.runtime.parallel's docstring), so the two are never mixed.

The fastest setting depends on the model's sizes and on what else the machine is running: on
small matrices a second thread saves little, and a thread whose core another process is using
makes every step wait for it. `ThreadTuner` measures instead of guessing: it times a few real
steps at each candidate setting, keeps the fastest, and measures again every so often, or
sooner when the steps become much slower than the trial found, so a run that starts sharing its
cores moves to fewer threads (`minigrad train --threads auto`, the default). A setting is a
count (the kernels way) or "blas:N" (BLAS's way): `apply_setting` sets either.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Sequence

from threadpoolctl import threadpool_info, threadpool_limits

from . import parallel

_limits: Any = None  # kept alive: the limit holds while this object exists
_count: int | None = None  # set by set_num_threads
WAYS = ("kernels", "blas")


def set_num_threads(num: int, *, way: str = "kernels") -> None:
    """Let a step use at most num threads. way="kernels" (the default): minigrad's kernels, their
    matrix products included, split their work over them and BLAS runs on one. way="blas": BLAS
    runs the matrix products on its own num threads and minigrad's kernels run on one (faster for
    small models on an idle machine; see this module's docstring)."""
    global _limits, _count
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ValueError(f"set_num_threads: need a whole number of threads, at least 1; got {num!r}")
    if way not in WAYS:
        raise ValueError(f"set_num_threads: way must be one of {', '.join(WAYS)}; got {way!r}")
    if way == "blas":
        _limits = threadpool_limits(limits=num, user_api="blas")
        parallel.set_threads(1)
    else:
        _limits = threadpool_limits(limits=1, user_api="blas")  # BLAS idle threads would spin
        parallel.set_threads(num)
    _count = num


def apply_setting(setting: int | str) -> None:
    """Set a tuner's setting: a count n (set_num_threads(n)) or "blas:N" (BLAS's way)."""
    n, way = parse_setting(setting)
    set_num_threads(n, way=way)


def parse_setting(setting: int | str) -> tuple[int, str]:
    """(count, way) of a setting: 2 -> (2, "kernels"), "blas:2" -> (2, "blas"); ValueError
    naming the setting when it is neither."""
    if isinstance(setting, str):
        way, _, count = setting.partition(":")
        if way == "blas" and count.isdigit() and int(count) >= 1:
            return int(count), "blas"
        if setting.isdigit() and int(setting) >= 1:
            return int(setting), "kernels"
    elif isinstance(setting, int) and not isinstance(setting, bool) and setting >= 1:
        return setting, "kernels"
    raise ValueError(f"thread setting: a count of at least 1 or blas:N, not {setting!r}")


def get_num_threads() -> int:
    """The thread count set by set_num_threads (else the largest among the loaded BLAS libraries)."""
    if _count is not None:
        return _count
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


def candidate_settings(cores: int) -> list[int | str]:
    """The settings worth timing: each candidate count the kernels' way, then each count above
    one BLAS's way ("blas:N")."""
    counts = candidate_counts(cores)
    return [*counts, *(f"blas:{c}" for c in counts if c > 1)]


class ThreadTuner:
    """Run a repeated step at the fastest thread setting, found by timing it.

        tuner = ThreadTuner()
        for batch in batches:
            loss = tuner.run(lambda: step(batch))

    A trial times `trial` steps at each candidate setting (after one step at that setting that
    is not timed, as the first step after a change pays for it) and keeps the setting with the
    smallest median, the earlier candidate on a tie; a trial runs at the start and then after
    every `every` steps, or as soon as the median of the last `trial` steps is `slower` times
    the trial's time for the setting kept (another process has begun to share the cores, say)
    and at least as many steps as a trial takes have run since the last one (so a noisy
    machine does not spend most of its steps at the slower settings).
    The steps of a trial are real steps: nothing is thrown away. The results of a BLAS product
    may differ in the last bit between settings, so for runs that agree to the bit pass a fixed
    count (`minigrad train --threads N`).

    settings: counts and "blas:N" strings (default: candidate_settings of the cores this process
    may use); apply(setting) sets one (default: apply_setting).
    """

    def __init__(self, settings: Sequence[int | str] | None = None, trial: int = 3, every: int = 500,
                 slower: float = 1.5, clock: Callable[[], float] = time.perf_counter,
                 apply: Callable[[Any], None] = apply_setting):
        self.settings = list(settings) if settings is not None else candidate_settings(available_cores())
        if not self.settings:
            raise ValueError("ThreadTuner: need at least one setting to run at")
        for setting in self.settings:
            parse_setting(setting)  # a clear error for a bad one, before any step
        if trial < 1 or every < 1 or not slower > 1:
            raise ValueError(f"ThreadTuner: trial and every must be positive and slower above 1, "
                             f"got {trial}, {every} and {slower}")
        self.trial, self.every, self.slower, self.clock, self.apply = trial, every, slower, clock, apply
        self.best = self.settings[0]
        self.timings: dict[Any, float] = {}  # setting -> median seconds per step, of the last trial
        self._plan: list[tuple[Any, bool]] = []  # (setting, timed) for the steps of a running trial
        self._times: dict[Any, list[float]] = {}
        self._recent: list[float] = []  # the last steps at the best setting, after a trial
        self._since = every  # so the first step starts a trial
        self._current: Any = None

    def wrap(self, step: Callable[..., Any]) -> Callable[..., Any]:
        """step(...) run through the tuner: each call at the setting it picks (see `run`). The
        training loop's plain step stays as it is; `--threads auto` wraps it with this."""
        @functools.wraps(step)
        def tuned(*args: Any, **kwargs: Any) -> Any:
            return self.run(lambda: step(*args, **kwargs))
        return tuned

    def run(self, step: Callable[[], Any]) -> Any:
        """One step, at the setting the tuner picks for it; returns what step returned."""
        if not self._plan and self._since >= self.every and len(self.settings) > 1:
            self._plan = [(c, timed) for c in self.settings for timed in [False] + [True] * self.trial]
            self._times = {c: [] for c in self.settings}
        in_trial = bool(self._plan)
        setting, timed = self._plan.pop(0) if in_trial else (self.best, False)
        if setting != self._current:
            self.apply(setting)
            self._current = setting
        t0 = self.clock()
        out = step()
        took = self.clock() - t0
        if timed:
            self._times[setting].append(took)
            if not self._plan:  # the trial is over
                self.timings = {c: _median(t) for c, t in self._times.items()}
                self.best = min(self.settings, key=lambda c: self.timings[c])  # min keeps the first of equals
                self._since, self._recent = 0, []
        elif not in_trial:
            self._since += 1
            if self.timings:
                self._recent.append(took)
                del self._recent[:-self.trial]
                slowed = _median(self._recent) > self.slower * self.timings[self.best]
                settled = self._since >= (1 + self.trial) * len(self.settings)  # as many as a trial took
                if len(self._recent) == self.trial and slowed and settled:
                    self._since = self.every  # much slower than the trial found: time them again now
        return out

    @property
    def setting(self) -> Any:
        """The setting the last step ran at (None before the first)."""
        return self._current

    def describe(self) -> str:
        """One line for the log: the setting chosen and the trial's times."""
        if not self.timings:
            return f"threads: {self.best}"
        times = ", ".join(f"{c}: {1e3 * self.timings[c]:.1f} ms" for c in self.settings)
        return f"threads: {self.best} (timed per step: {times})"


def _median(times: list[float]) -> float:
    return sorted(times)[len(times) // 2]
