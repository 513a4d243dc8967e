"""`minigrad run`: a PyTorch program runs with torch bound to minigrad, for that run only; a
name minigrad lacks stops it with one line naming the name, the file and the line; `--check`
lists such names without running; `--explore` writes the page of the first backward pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.cli import main
from minigrad.run import MissingModule, MissingName, bound_to_minigrad, check_source

PROGRAMS = os.path.join(os.path.dirname(__file__), "programs")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_import_torch_gives_minigrad_for_the_block_only():
    before = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    with bound_to_minigrad():
        import torch
        import torch.nn.functional as TF
        from torch.nn import Linear

        assert torch.zeros is mg.zeros and torch.Tensor is mg.Tensor
        assert TF.gelu is F.gelu and Linear is mg.nn.Linear
        assert torch.nn.functional is TF and torch.__name__ == "torch"
        assert "gelu" in dir(TF) and "nn" in dir(torch)
    after = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    assert after == before  # torch itself (if the tests imported it) is back


def test_a_missing_name_is_an_attribute_error_naming_its_line():
    with bound_to_minigrad():
        import torch

        assert not hasattr(torch, "frobnicate") and getattr(torch, "frobnicate", 7) == 7
        with pytest.raises(MissingName) as caught:
            torch.nn.functional.frobnicate  # noqa: B018
        line = sys._getframe().f_lineno - 1
        with pytest.raises(MissingModule, match="torch.distributed is not in minigrad"):
            import torch.distributed  # noqa: F401
        with pytest.raises(ImportError):  # a program's `try: import ... except ImportError` works
            import torch.cuda.amp  # noqa: F401
    expected = f"torch.nn.functional.frobnicate is not in minigrad (test_run_command.py, line {line})"
    assert str(caught.value) == expected
    assert caught.value.lineno == line and caught.value.filename == __file__


def test_check_reads_imports_aliases_and_dotted_names():
    uses = check_source(
        "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
        "from torch.optim import AdamW, Frobnicator\n"
        "x = torch.zeros(3)\ny = F.gelu(x) + F.nothing(x)\nm = nn.Linear(2, 3)\n"
        "z = torch.no_such.deeper.still(x)\nw = F.gelu(x)\nimport torch.distributed\n")
    missing = [(u.name, u.line) for u in uses if not u.found]
    assert missing == [("torch.optim.Frobnicator", 4), ("torch.nn.functional.nothing", 6),
                       ("torch.no_such", 8), ("torch.distributed", 10)]
    found = {u.name for u in uses if u.found}
    assert {"torch", "torch.nn", "torch.nn.functional", "torch.optim.AdamW", "torch.zeros",
            "torch.nn.functional.gelu", "torch.nn.Linear"} <= found
    assert len([u for u in uses if u.name == "torch.nn.functional.gelu"]) == 1  # once, at its first line


def test_run_passes_the_arguments_and_the_exit_code(tmp_path, capsys):
    path = write(tmp_path, "prog.py", "import sys\nimport torch\n"
                 "print(sys.argv[1:], torch.ones(2).sum().item(), __name__)\nsys.exit(int(sys.argv[1]))\n")
    assert main(["run", path, "3", "--lr", "1e-3"]) == 3
    assert capsys.readouterr().out == "['3', '--lr', '1e-3'] 2.0 __main__\n"
    assert main(["run", path, "0"]) == 0


def test_a_missing_name_stops_the_run_with_one_line(tmp_path, capsys):
    path = write(tmp_path, "bad.py", "import torch\nx = torch.zeros(2)\ny = torch.frobnicate(x)\n")
    assert main(["run", path]) == 1
    assert capsys.readouterr().err == "minigrad run: torch.frobnicate is not in minigrad (bad.py, line 3)\n"
    assert main(["run", "--check", path]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "bad.py:3: torch.frobnicate is not in minigrad"
    assert "1 of the 3 torch names bad.py uses are not in minigrad" in out
    assert main(["run", str(tmp_path / "absent.py")]) == 2
    assert "no such program file" in capsys.readouterr().err


def test_explore_writes_the_page_of_the_first_backward(tmp_path, capsys):
    path = write(tmp_path, "train.py", "import torch\nimport torch.nn as nn\n"
                 "model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))\n"
                 "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "for _ in range(3):\n    loss = model(torch.randn(5, 3)).pow(2).mean()\n"
                 "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
                 "print('grad', model[0].weight.grad is not None)\n")
    page = tmp_path / "page.html"
    assert main(["run", "--explore", str(page), path]) == 0
    out = capsys.readouterr().out
    assert "grad True" in out and f"wrote {page}" in out
    text = page.read_text()
    assert "0 (Linear)" in text and "LinearOp" in text  # the model found in the program's frames
    assert mg.Tensor.backward.__name__ == "backward" and mg.Tensor.backward.__qualname__ == "Tensor.backward"
    quiet = write(tmp_path, "quiet.py", "import torch\nprint(torch.ones(1).item())\n")
    assert main(["run", "--explore", str(tmp_path / "none.html"), quiet]) == 1
    assert "called no backward()" in capsys.readouterr().err


def _weights(tmp_path):
    rng = np.random.default_rng(0)
    w = {"w1": rng.standard_normal((6, 4)), "b1": rng.standard_normal(6), "w2": rng.standard_normal((3, 6)),
         "x": rng.standard_normal((5, 4)), "y": rng.integers(0, 3, 5)}
    path = tmp_path / "weights.npz"
    np.savez(path, **w)
    return str(path)


def test_a_program_gives_torchs_numbers_under_minigrad_run(tmp_path):
    """The same file, run by python with torch and by `minigrad run`: the same loss and
    gradients, in float64."""
    pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    program, weights = os.path.join(PROGRAMS, "layer_norm_mlp.py"), _weights(tmp_path)
    runs = [subprocess.run(cmd + [program, weights], capture_output=True, text=True, check=True, cwd=tmp_path)
            for cmd in ([sys.executable], [sys.executable, "-m", "minigrad", "run"])]
    theirs, ours = (json.loads(r.stdout) for r in runs)
    assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-12)
    assert ours["grads"].keys() == theirs["grads"].keys()
    for name in theirs["grads"]:
        np.testing.assert_allclose(ours["grads"][name], theirs["grads"][name], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours["x_grad"], theirs["x_grad"], rtol=1e-10, atol=1e-12)


def test_help_names_the_options(capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert out.startswith("usage: minigrad run") and "--check" in out and "--explore PAGE" in out
    assert "the program's own arguments" in out
