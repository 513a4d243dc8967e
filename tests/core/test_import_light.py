"""`import minigrad` loads the core only: the drawing package (and the backward observer that
keeps small gradients for drawings) comes when first asked for, as `mg.viz`,
`mg.detect_anomaly` or an import of minigrad.viz or minigrad.nn."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import minigrad as mg
from minigrad import hooks
loaded = sorted(m for m in sys.modules if m.startswith("minigrad.viz") or m == "graphviz")
print(loaded, len(hooks._everywhere))
x = mg.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
with mg.detect_anomaly():
    pass
print("minigrad.viz" in sys.modules, len(hooks._everywhere), mg.viz.draw_graph.__name__)
"""


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_import_minigrad_loads_no_drawing_and_registers_no_observer():
    before, after = _run(PROBE)
    assert before == "[] 0"  # neither minigrad.viz nor graphviz, no process-wide observer
    assert after == "True 1 draw_graph"  # loaded on first use, its observer with it


def test_an_unknown_name_is_still_an_attribute_error():
    code = "import minigrad\ntry:\n    minigrad.nonexistent\nexcept AttributeError as e:\n    print(e)"
    (line,) = _run(code)
    assert line == "module 'minigrad' has no attribute 'nonexistent'"
