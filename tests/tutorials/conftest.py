"""The tutorial runs, shared by the test modules of this folder."""

import pytest
from tutorial_runs import run_all


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Every tutorial as a script and in a kernel, once per session: {(kind, name): Run}."""
    return run_all(tmp_path_factory)
