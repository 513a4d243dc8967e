"""Import minigrad from a clone's root after a plain `pip install .`.

Python started in the repository's root finds the source folder minigrad/ before the installed
package, but nn/ and models/ sit beside that folder (setup.cfg's package_dir installs them as
minigrad.nn and minigrad.models), so `import minigrad.nn` would fail there. A finder at the end
of sys.meta_path maps those two names to their folders; an installed package or an
editable install finds them first, and then it is never asked.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.machinery import ModuleSpec

BESIDE = ("nn", "models")


class SourceTreeFinder:
    """Finds minigrad.nn and minigrad.models in `root`."""

    def __init__(self, root: str):
        self.root = root

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        package, _, sub = name.partition(".")
        if package != "minigrad" or sub not in BESIDE:
            return None
        folder = os.path.join(self.root, sub)
        return importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])


def add_finder() -> None:
    """Add the finder when this package is the source folder of a clone (setup.cfg and nn/
    beside it); an installed package has neither, and nothing is added."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    marks = (os.path.join(root, "setup.cfg"), os.path.join(root, "nn", "__init__.py"))
    if not all(os.path.isfile(m) for m in marks):
        return
    if not any(isinstance(f, SourceTreeFinder) for f in sys.meta_path):
        sys.meta_path.append(SourceTreeFinder(root))
