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

        assert torch.zeros is mg.zeros and torch.Tensor.masked_fill_ is mg.Tensor.masked_fill_
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


def test_a_torch_program_gets_torchs_time_major_attention_default():
    with bound_to_minigrad():
        import torch
        from torch.nn import MultiheadAttention

        layer = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0)
        assert not layer.batch_first and not MultiheadAttention(8, 2).batch_first
        assert isinstance(layer, mg.nn.TransformerEncoderLayer)
        assert type(layer).__name__ == "TransformerEncoderLayer"
        assert torch.nn.MultiheadAttention(8, 2, batch_first=True).batch_first
        assert torch.nn.TransformerDecoderLayer(8, 2, batch_first=True).batch_first

        class Block(torch.nn.MultiheadAttention):  # a program's subclass gets torch's default too
            pass

        assert not Block(8, 2).batch_first
        x = torch.randn(5, 3, 8)  # (T, B, E)
        assert layer(x).shape == (5, 3, 8)
    assert mg.nn.MultiheadAttention(8, 2).batch_first  # minigrad itself is batch-first


def test_torch_tensor_is_torchs_constructor_and_every_tensors_type():
    """Course code of torch's older style makes parameters with `torch.Tensor(out, in)` and fills
    them with an init function: under `minigrad run` a call with ints is a shape (float32, as
    torch's), data becomes float32, and every minigrad tensor is a `torch.Tensor`."""
    with bound_to_minigrad():
        import torch
        import torch.nn as tnn

        w, b = tnn.Parameter(torch.Tensor(3, 4)), torch.Tensor(5)
        assert (w.shape, b.shape, torch.Tensor().shape) == ((3, 4), (5,), (0,))
        assert w.dtype is torch.float32 and isinstance(w, tnn.Parameter) and w.requires_grad
        tnn.init.kaiming_uniform_(w)
        assert torch.Tensor([1, 2]).dtype is torch.float32
        assert torch.Tensor(np.arange(3)).dtype is torch.float32
        assert torch.Tensor(torch.tensor([1, 2])).tolist() == [1.0, 2.0]
        x = torch.zeros(2, dtype=torch.long)
        assert isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)
        assert not isinstance(1.0, torch.Tensor)
        assert issubclass(tnn.Parameter, torch.Tensor) and torch.is_tensor(x)
        with pytest.raises(TypeError, match=r"torch.Tensor: expected data or sizes, got \(\[1\], 2\)"):
            torch.Tensor([1], 2)
    assert mg.Tensor(3).shape == ()  # minigrad's own Tensor takes data


def test_torch_cuda_and_backends_import_as_modules():
    with bound_to_minigrad():
        import torch.backends.cudnn as cudnn
        import torch.cuda
        from torch.cuda import manual_seed_all

        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
        assert manual_seed_all(0) is None and cudnn.enabled is True
        cudnn.benchmark = True  # course code sets it; nothing changes
        with pytest.raises(ImportError):
            import torch.cuda.amp  # noqa: F401
    uses = check_source("import torch.cuda\nimport torch.backends.cudnn\n")
    assert [u.name for u in uses if not u.found] == []


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


def test_a_nanogpt_style_program_trains_as_under_torch(tmp_path):
    """nanoGPT's model.py and train.py, unchanged (a ModuleDict reached by attributes, weight
    tying, apply(_init_weights), AdamW groups, clip_grad_norm_, top-k generate): torch writes
    the initial weights, `minigrad run` loads them; the losses, the greedy tokens, the parameter
    count, the first step's gradient and the final weights agree to float32 rounding."""
    pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")
    program, init = os.path.join(PROGRAMS, "nanogpt.py"), str(tmp_path / "init.npz")
    commands = ([sys.executable], [sys.executable, "-m", "minigrad", "run"])
    runs = [subprocess.run([*cmd, program, init, "50"], capture_output=True, text=True, check=True,
                           cwd=tmp_path) for cmd in commands]
    theirs, ours = (json.loads(r.stdout) for r in runs)
    assert len(ours["losses"]) == 50 and ours["losses"][-1] < ours["losses"][0]
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=0, atol=1e-5)
    assert ours["tokens"] == theirs["tokens"] and ours["params"] == theirs["params"]
    assert ours["checksum"] == pytest.approx(theirs["checksum"], rel=1e-5)
    assert np.abs(theirs["first_grad"]).max() > 1e-3  # a gradient worth comparing
    np.testing.assert_allclose(ours["first_grad"], theirs["first_grad"], rtol=1e-4, atol=1e-6)
