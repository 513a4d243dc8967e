"""Without Graphviz's `dot`, the tests that render pictures skip and say how to install it (instead
of failing with FileNotFoundError); everything else about graphs still runs."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RENDERING = ["tests/core/test_viz.py::test_render_svg_and_png_for_real",
             "tests/models/test_cli_viz.py::test_graph_depth_1_shows_the_blocks_depth_3_the_ops"]


def _pytest(args, path):
    env = {**os.environ, "PATH": path}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0", "-rs", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_rendering_tests_skip_with_the_install_command_when_dot_is_missing(tmp_path):
    empty = tmp_path / "bin"  # a PATH with no programs at all, so no `dot`
    empty.mkdir()
    done = _pytest(RENDERING, str(empty))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout and "failed" not in done.stdout
    assert "needs Graphviz's `dot` program" in done.stdout  # -rs: the reason, once for both
    for command in ("apt-get install graphviz", "brew install graphviz", "conda install"):
        assert command in done.stdout


@pytest.mark.skipif(shutil.which("dot") is None, reason="checks the marker with `dot` present")
def test_the_marker_runs_the_test_when_dot_is_there():
    done = _pytest(RENDERING[:1], os.environ["PATH"])
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
