"""The tutorial runs, shared by the test modules of this folder: each code path is run once per
session, however many tests read it."""

import pytest
from tutorial_runs import PATHS, avx2_kernels, run_all


class _Runs:
    """The runs of each code path, made on first use: "native" as scripts and in kernels (a
    kernel runs the same code as the script, so one path of kernels is enough), "avx2" as
    scripts, the runs whose printed figures the tests read."""

    def __init__(self, tmp_path_factory):
        self._factory, self._done = tmp_path_factory, {}

    def __call__(self, path: str) -> dict:
        if path not in self._done:
            kinds = ("kernel", "script") if path == "native" else ("script",)
            self._done[path] = run_all(self._factory, path, kinds)
        return self._done[path]


def pytest_collection_modifyitems(items):
    """Under pytest-xdist each worker has its own session, so tests of the runs spread over two
    workers would make every run twice (5 minutes of CPU each time): they all go to one worker
    (setup.cfg's `--dist loadgroup`)."""
    for item in items:
        if {"runs", "native_runs"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("tutorial_runs"))


@pytest.fixture(scope="session")
def _tutorial_runs(tmp_path_factory):
    return _Runs(tmp_path_factory)


@pytest.fixture(scope="session", params=PATHS)
def runs(request, _tutorial_runs):
    """Every tutorial as a script on each code path, once per session: {(kind, name): Run}.
    The "avx2" leg runs where the CPU has AVX2 and FMA (every x86-64 CPU of the last ten years),
    and is skipped on one without, which has no AVX2 code to run."""
    if request.param == "avx2" and avx2_kernels() is None:
        pytest.skip("this CPU has no AVX2 and FMA: only its native code can run")
    return _tutorial_runs(request.param)


@pytest.fixture(scope="session")
def native_runs(_tutorial_runs):
    """Every tutorial as a script and in a Jupyter kernel on the machine's own code."""
    return _tutorial_runs("native")
