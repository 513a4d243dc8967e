"""Python started in the clone's root imports the source folder minigrad/; minigrad.nn, .models,
.exercises and .export are then found in the folders beside it, as after an install."""

import os
import subprocess
import sys

import pytest

import minigrad
from minigrad._source_tree import SourceTreeFinder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(minigrad.__file__)))


@pytest.mark.parametrize("name,found", [
    pytest.param("minigrad.nn", os.path.join("nn", "__init__.py"), id="nn"),
    pytest.param("minigrad.models", os.path.join("models", "__init__.py"), id="models"),
    pytest.param("minigrad.export", None, id="export-lives-in-minigrad"),
    pytest.param("minigrad.ops", None, id="a-core-subpackage"),
    pytest.param("minigrad.nn.linear", None, id="deeper-names-go-through-the-parent"),
    pytest.param("nn", None, id="not-under-minigrad"),
])
def test_the_finder_maps_only_the_two_folders(name, found):
    spec = SourceTreeFinder(ROOT).find_spec(name)
    if found is None:
        assert spec is None
    else:
        assert spec.origin == os.path.join(ROOT, found)
        assert spec.submodule_search_locations == [os.path.dirname(spec.origin)]


def test_a_plain_install_imports_the_subpackages_from_the_clones_root():
    if not os.path.isfile(os.path.join(ROOT, "setup.cfg")):
        pytest.skip("minigrad is installed, not imported from a clone")  # the finder is not added
    # An editable install has a finder of its own; without it, this is a plain install's view.
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in "
            "getattr(f, '__name__', type(f).__name__)]; import minigrad.nn, minigrad.models.gpt; "
            "print(minigrad.nn.__file__); print(minigrad.models.gpt.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [os.path.join(ROOT, "nn", "__init__.py"),
                                  os.path.join(ROOT, "models", "gpt.py")]
