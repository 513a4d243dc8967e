"""Hypothesis profiles: `ci` (fewer examples, the default in CI), `dev` (the default), and
`thorough`; choose with HYPOTHESIS_PROFILE. The `requires_dot` marker skips a test, naming the
install command, when Graphviz's `dot` program is missing."""

import os

from hypothesis import HealthCheck, settings

common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=25, derandomize=True, **common)
settings.register_profile("dev", max_examples=50, **common)
settings.register_profile("thorough", max_examples=500, **common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Threads cost more than they save on the tiny arrays of the tests.
import minigrad  # noqa: E402

minigrad.set_num_threads(1)

# ----------------------------------------------------------------------------- system programs

import shutil  # noqa: E402

import pytest  # noqa: E402

DOT_MISSING = ("needs Graphviz's `dot` program, not found on PATH; install Graphviz: apt-get install "
               "graphviz / brew install graphviz / conda install -c conda-forge graphviz")


def pytest_configure(config):
    config.addinivalue_line("markers", "requires_dot: renders with Graphviz's `dot`; skipped when it is "
                                       "missing (CI installs it and fails without it)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_dot") is not None and shutil.which("dot") is None:
        pytest.skip(DOT_MISSING)


@pytest.fixture
def one_thread_after():
    """Whatever thread setting a test makes, the next test starts with one thread again."""
    yield
    minigrad.set_num_threads(1)


@pytest.fixture(params=[False, True], ids=["numpy", "compiled"])
def both_kernel_paths(request):
    """A test run twice: on the numpy kernels and on the compiled loop kernels
    (minigrad.runtime.compiled), which must meet the same references. A file takes it with
    `pytestmark = pytest.mark.usefixtures("both_kernel_paths")`."""
    from minigrad.runtime import compiled

    if request.param and not compiled.available():
        pytest.skip("the compiled kernels need numba: pip install numba (the fast extra)")
    with compiled.using(request.param):
        yield request.param
