"""docs/api.md is what docs/api.py generates from the code now, lists every public name, and the
deliberate differences it states hold when minigrad and PyTorch run."""

from __future__ import annotations

import difflib
import importlib.util
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

import minigrad as mg  # noqa: E402
import minigrad.nn as nn  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIX = "run `python docs/api.py` to regenerate docs/api.md"


def _load_script():
    spec = importlib.util.spec_from_file_location("docs_api", ROOT / "docs" / "api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


api = _load_script()


@pytest.fixture(scope="module")
def generated() -> str:
    return api.generate()


def test_api_md_is_what_the_script_generates(generated):
    on_disk = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    diff = list(difflib.unified_diff(on_disk.splitlines(), generated.splitlines(), lineterm="", n=0))
    assert on_disk == generated, f"{FIX}\n{api.stale_summary(diff)}"


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## `([\w.]+)`$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_public_name_has_its_row():
    sections = _sections((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))
    tensor_members = [n for n in dir(mg.Tensor) if not n.startswith("_")]
    expected = {"minigrad.Tensor": tensor_members}
    for name, _ in api.MODULES:
        module = api._import(name)
        if module is not None:
            expected[name] = list(module.__all__)
    assert {"minigrad", "minigrad.nn", "minigrad.nn.functional", "minigrad.optim"} <= expected.keys()
    for module, names in expected.items():
        assert module in sections, f"docs/api.md has no table for {module}: {FIX}"
        missing = [n for n in names if f"\n| `{n}` |" not in sections[module]]
        assert not missing, f"docs/api.md lacks {module}: {missing}: {FIX}"


def _cells(section: str, name: str) -> list[str]:
    """The cells (kind, what it is, PyTorch) of `name`'s row in a table (the last, "defined in",
    is `_defined_in`'s)."""
    (line,) = [ln for ln in section.splitlines() if ln.startswith(f"| `{name}` |")]
    return [c.strip() for c in line.strip("|").split(" | ")][1:4]


def test_rows_name_torch_counterparts_and_minigrads_own(generated):
    sections = _sections(generated)
    assert _cells(sections["minigrad"], "exp")[::2] == ["function", "`torch.exp`"]
    assert _cells(sections["minigrad"], "float32")[0] == "constant"
    assert _cells(sections["minigrad"], "float32")[1].startswith("The float32 dtype")
    kind, summary, theirs = _cells(sections["minigrad.nn"], "Linear")
    assert (kind, theirs) == ("class", "`torch.nn.Linear`") and summary.startswith("An affine map")
    assert _cells(sections["minigrad.nn"], "functional")[::2] == ["module", "`torch.nn.functional`"]
    kind, _, theirs = _cells(sections["minigrad.nn"], "evaluating")
    assert kind == "function" and theirs.startswith("minigrad only: ")
    assert _cells(sections["minigrad.optim"], "StepLR")[2] == "`torch.optim.lr_scheduler.StepLR`"
    assert _cells(sections["minigrad.Tensor"], "shape")[::2] == ["property", "`torch.Tensor.shape`"]
    assert _cells(sections["minigrad.Tensor"], "data")[::2] == ["property", "`torch.Tensor.data`"]
    assert "| Pooling | " in generated and "`nn.MaxPool3d`" in generated


def test_a_missing_module_is_left_out_and_a_broken_one_raises(monkeypatch, tmp_path):
    assert api._import("minigrad.no_such_module") is None
    assert api._import("minigrad.nn.no_such_package.utils") is None
    (tmp_path / "broken_api_pkg").mkdir()
    (tmp_path / "broken_api_pkg" / "__init__.py").write_text("import no_such_dependency_of_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_of_it"):
        api._import("broken_api_pkg")


def test_check_exits_1_naming_the_fix_when_stale(monkeypatch, tmp_path, capsys, generated):
    monkeypatch.setattr(api, "generate", lambda: generated)
    monkeypatch.setattr(api, "OUT", tmp_path / "api.md")
    assert generated.count("| `torch.exp` |") == 1
    stale = generated.replace("| `torch.exp` |", "| `torch.expo` |")
    (tmp_path / "api.md").write_text(stale, encoding="utf-8")
    assert api.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "python docs/api.py" in err and "1 lines to add, 1 to remove" in err and "`torch.expo`" in err
    assert api.main([]) == 0 and api.main(["--check"]) == 0
    assert (tmp_path / "api.md").read_text(encoding="utf-8") == generated


# ----------------------------------------------------------------------------- the stated differences


def _float64_matmul():
    a, b = mg.ones(2, 2), mg.tensor(np.ones((2, 2)))
    assert (a @ b).dtype == np.float64
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.float64)


def _float64_into_float32_linear():
    layer = nn.Linear(3, 2)
    x = mg.tensor(np.ones((4, 3)), requires_grad=True)
    y = layer(x)
    y.backward(np.ones((4, 2)))
    assert layer.weight.dtype == np.float32 and y.dtype == np.float64 and x.grad.dtype == np.float64
    assert layer.weight.grad.dtype == np.float32 and layer.bias.grad.dtype == np.float32
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.nn.Linear(3, 2)(torch.ones(4, 3, dtype=torch.float64))


def _all_inf_softmax_row():
    x = mg.tensor(np.array([[-np.inf, -np.inf], [0.0, 1.0]]), requires_grad=True)
    y = F.softmax(x, -1)
    y.backward(np.ones((2, 2)))
    assert np.array_equal(y.numpy()[0], [0, 0]) and np.array_equal(x.grad, np.zeros((2, 2)))
    assert torch.tensor(x.numpy()).softmax(-1)[0].isnan().all()


def _fully_masked_query():
    mg.manual_seed(0)
    q, k, v = mg.randn(1, 1, 2, 4), mg.randn(1, 1, 3, 4), mg.randn(1, 1, 3, 4)
    mask = np.array([[False] * 3, [True, True, False]])
    out = F.scaled_dot_product_attention(q, k, v, mask=mg.tensor(mask))
    assert np.array_equal(out.numpy()[0, 0, 0], np.zeros(4)) and np.isfinite(out.numpy()).all()
    mha = nn.MultiheadAttention(4, 2)
    mha.out_proj.bias.numpy()[:] = 0.5
    x = mg.randn(1, 2, 4)
    first_sees_nothing = mg.tensor(np.array([[False, False], [True, True]]))
    layer_out = mha(x, x, x, mask=first_sees_nothing, need_weights=False)[0]
    assert np.array_equal(layer_out.numpy()[0, 0], [0.5] * 4)
    t_mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)
    t_out, _ = t_mha(*[torch.randn(1, 2, 4)] * 3, attn_mask=torch.tensor([[True, True], [False, True]]))
    assert t_out[0, 0].isnan().all() and not t_out[0, 1].isnan().any()
    t_sdpa = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(t.numpy()) for t in (q, k, v)), attn_mask=torch.tensor(mask))
    assert np.allclose(t_sdpa.numpy(), out.numpy(), atol=1e-6)


def _mean_over_ignored_rows():
    logits = mg.randn(3, 4, requires_grad=True)
    target = mg.tensor(np.array([-100] * 3))
    loss = F.cross_entropy(logits, target)
    loss.backward()
    assert loss.item() == 0.0 and not logits.grad.any()
    assert F.nll_loss(logits.log_softmax(-1), target).item() == 0.0
    assert nn.CrossEntropyLoss()(logits, target).item() == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(F.cross_entropy(logits, target, weight=mg.ones(4)).item())
    t_logits, t_target = torch.tensor(logits.numpy()), torch.tensor(target.numpy())
    assert torch.nn.functional.cross_entropy(t_logits, t_target).isnan()
    assert torch.nn.functional.cross_entropy(t_logits, t_target, weight=torch.ones(4)).isnan()


def _bool_masks():
    mg.manual_seed(1)
    may_attend = nn.causal_mask(4)  # minigrad's sense
    masked_out = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)  # the same mask in PyTorch's
    assert np.array_equal(~may_attend.numpy(), masked_out.numpy())
    mha, x = nn.MultiheadAttention(8, 2), mg.randn(1, 4, 8)
    causal = mha(x, x, x, is_causal=True, need_weights=False)[0].numpy()
    assert np.allclose(mha(x, x, x, mask=may_attend, need_weights=False)[0].numpy(), causal, atol=1e-6)
    by_torch_mask = mha(x, x, x, attn_mask=masked_out.numpy(), need_weights=False)[0]
    assert np.allclose(by_torch_mask.numpy(), causal, atol=1e-6)
    padded = np.array([[False, False, True, True]])  # PyTorch's key_padding_mask: True at padding
    ours = mha(x, x, x, mask=nn.padding_mask(np.array([2]), max_len=4), need_weights=False)[0].numpy()
    assert np.allclose(mha(x, x, x, key_padding_mask=padded, need_weights=False)[0].numpy(), ours, atol=1e-6)
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
    causal = layer(x, is_causal=True).numpy()
    assert np.allclose(layer(x, attend_mask=may_attend).numpy(), causal, atol=1e-6)
    assert np.allclose(layer(x, src_mask=masked_out.numpy()).numpy(), causal, atol=1e-6)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    tx = torch.randn(1, 4, 8)
    float_causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert torch.allclose(t_layer(tx, src_mask=masked_out), t_layer(tx, src_mask=float_causal), atol=1e-6)
    q, k, v = (torch.randn(1, 1, 4, 2) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    same_rule = sdpa(q, k, v, attn_mask=torch.tensor(may_attend.numpy()))
    assert torch.allclose(same_rule, sdpa(q, k, v, is_causal=True), atol=1e-6)


def _batch_first_and_weights():
    mha = nn.MultiheadAttention(8, 2)
    x = mg.randn(3, 5, 8)  # (B, T, E)
    out, weights = mha(x, x, x)  # need_weights=True by default, as in torch (below)
    assert out.shape == (3, 5, 8) and weights.shape == (3, 5, 5)
    assert mha(x, x, x, need_weights=True, average_attn_weights=False)[1].shape == (3, 2, 5, 5)
    assert mha(x, x, x, need_weights=False)[1] is None
    assert nn.MultiheadAttention(8, 2).batch_first and nn.TransformerEncoderLayer(8, 2).batch_first
    time_major = nn.MultiheadAttention(8, 2, batch_first=False)
    assert time_major(*[mg.randn(5, 3, 8)] * 3)[0].shape == (5, 3, 8)  # torch's (T, B, E), on request
    assert nn.GRU(8, 4).batch_first is False and torch.nn.GRU(8, 4).batch_first is False
    t_mha = torch.nn.MultiheadAttention(8, 2)
    assert not t_mha.batch_first and not torch.nn.TransformerEncoderLayer(8, 2).self_attn.batch_first
    t_out, t_weights = t_mha(*[torch.randn(5, 3, 8)] * 3)  # (T, B, E), need_weights=True by default
    assert t_out.shape == (5, 3, 8) and t_weights.shape == (3, 5, 5)


def _softmax_dim():
    x = mg.randn(2, 3)
    assert np.allclose(x.softmax().numpy().sum(-1), 1)
    assert np.allclose(F.log_softmax(x).numpy(), F.log_softmax(x, -1).numpy())
    with pytest.raises(TypeError):
        torch.ones(2, 3).softmax()
    with pytest.warns(UserWarning, match="Implicit dimension"):
        torch.nn.functional.softmax(torch.ones(2, 3))


@pytest.mark.parametrize("claim", [
    pytest.param(_float64_matmul, id="float32-matmul-float64"),
    pytest.param(_float64_into_float32_linear, id="float64-into-float32-linear"),
    pytest.param(_all_inf_softmax_row, id="all-inf-softmax-row"),
    pytest.param(_fully_masked_query, id="fully-masked-query"),
    pytest.param(_mean_over_ignored_rows, id="mean-over-ignored-rows"),
    pytest.param(_bool_masks, id="bool-masks"),
    pytest.param(_batch_first_and_weights, id="batch-first"),
    pytest.param(_softmax_dim, id="softmax-dim"),
])
def test_a_stated_difference_holds(claim):
    claim()


# ----------------------------------------------------------------------------- what the rows say


def test_every_row_says_what_its_name_is(generated):
    """A row without a description is a public name without a docstring (or whose method,
    function form and op have none): give it one."""
    empty = []
    for module, section in _sections(generated).items():
        for line in section.splitlines():
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            if line.startswith("| `") and len(cells) >= 3 and not cells[2]:
                empty.append(f"{module}.{cells[0].strip('`')}")
    assert not empty, f"{len(empty)} rows of docs/api.md have no description: {empty}"


# Names the "Not supported" notes point to as the way to do without what is missing.
ALTERNATIVES = {"x.numpy()", "view", "reshape", "Tensor.to", "Module.to", "minigrad.export.to_torch",
                "minigrad.models.data"}


def _resolves(token: str) -> bool:
    """Whether minigrad has the name `token` (`name`, `x.name(...)`, `Module.name`, `F.name`)."""
    token = re.sub(r"\(.*\)$", "", token)
    owner, _, name = token.rpartition(".")
    places = {"": [mg, mg.Tensor, nn, nn.Module, F], "x": [mg.Tensor], "Tensor": [mg.Tensor],
              "Module": [nn.Module], "F": [F]}.get(owner)
    return places is not None and any(hasattr(p, name) for p in places)


def test_not_supported_names_nothing_minigrad_has():
    notes = (ROOT / "docs" / "api_notes.md").read_text(encoding="utf-8")
    section = notes.split("## Not supported", 1)[1].split(api.MISSING_MARK, 1)[0]
    tokens = set(re.findall(r"`([A-Za-z_][\w.]*(?:\([^`]*\))?)`", section)) - ALTERNATIVES
    present = sorted(t for t in tokens if _resolves(t))
    assert not present, f"docs/api_notes.md's 'Not supported' names what minigrad has: {present}"
