"""`minigrad.save` / `minigrad.load` of what torch.save takes from course code: a nested
checkpoint (state dicts, an optimizer's state dict, step counts, settings), to a path or a file
object, read back as it was, never through pickle; and torch.load's keywords."""

from __future__ import annotations

import io
import math
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.serialization import TREE, CheckpointError

leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.text(max_size=5),
                   st.floats(allow_nan=False), st.just(math.inf),
                   st.builds(lambda n: np.arange(n, dtype=np.float32), st.integers(0, 4)))
keys = st.one_of(st.text(max_size=4), st.integers(-5, 5), st.booleans(), st.none())
trees = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner),
    st.dictionaries(keys, inner, max_size=3)), max_leaves=12)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


@given(trees)
def test_a_nested_structure_comes_back_as_it_was(tree):
    obj = {"checkpoint": tree}  # nested: always the structured format
    buffer = io.BytesIO()
    mg.save(obj, buffer)
    buffer.seek(0)
    assert same(mg.load(buffer), obj)


def test_a_checkpoint_to_a_path_with_tensors_and_an_optimizer(tmp_path):
    model = nn.Linear(3, 2)
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    x = mg.randn(4, 3)
    for _ in range(2):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    path = tmp_path / "ckpt.pt"
    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 2,
             "best_val_loss": 0.25, "config": {"n_embd": 3, "bias": True}}, path)
    back = mg.load(path)
    assert back["iter_num"] == 2 and back["best_val_loss"] == 0.25
    assert back["config"] == {"n_embd": 3, "bias": True}
    assert set(back["model"]) == {"weight", "bias"}
    np.testing.assert_array_equal(np.asarray(back["model"]["weight"]), model.weight.numpy())
    # the optimizer resumes exactly where it was
    again = nn.Linear(3, 2)
    again.load_state_dict(back["model"])
    opt2 = optim.AdamW(again.parameters(), lr=1e-2)
    opt2.load_state_dict(back["optimizer"])
    for m, o in ((model, opt), (again, opt2)):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    np.testing.assert_array_equal(again.weight.numpy(), model.weight.numpy())


def test_tensors_come_back_as_tensors_with_their_flag():
    buffer = io.BytesIO()
    w = mg.randn(2, requires_grad=True)
    mg.save([w, w.detach()], buffer)
    buffer.seek(0)
    a, b = mg.load(buffer)
    assert isinstance(a, mg.Tensor) and a.requires_grad and not b.requires_grad
    np.testing.assert_array_equal(a.numpy(), w.numpy())


def test_a_flat_dict_of_arrays_keeps_its_format(tmp_path):
    path = tmp_path / "flat.npz"
    mg.save({"w": np.ones(2), "step": np.int64(3), "b": mg.zeros(1)}, path)
    assert sorted(np.load(path).files) == ["b", "step", "w"]  # one member per key, no tree
    back = mg.load(path)
    assert set(back) == {"b", "step", "w"} and back["step"] == 3
    assert all(isinstance(v, np.ndarray) for v in back.values())


def test_what_only_pickle_could_store_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"save: obj\['opt'\]\['fn'\] holds function"):
        mg.save({"opt": {"fn": lambda: 0}}, io.BytesIO())
    with pytest.raises(TypeError, match=r"has a key \(1, 2\) of type tuple"):
        mg.save({"a": {(1, 2): 3}}, io.BytesIO())


def test_torch_loads_keywords():
    buffer = io.BytesIO()
    mg.save({"a": [1, 2]}, buffer)
    for options in ({"map_location": "cpu"}, {"weights_only": True}, {"weights_only": False}, {"mmap": True},
                    {"map_location": None}):
        buffer.seek(0)
        assert mg.load(buffer, **options) == {"a": [1, 2]}
    with pytest.raises(ValueError, match="map_location='cuda:0': minigrad runs on the CPU"):
        mg.load(buffer, map_location="cuda:0")
    with pytest.raises(TypeError, match="pickle_module must be None"):
        mg.load(buffer, pickle_module=object())


def test_a_tree_that_does_not_describe_its_arrays_is_damaged(tmp_path):
    path = tmp_path / "bad.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, arr in ((TREE, np.frombuffer(b'{"array": 5}', np.uint8)), ("0", np.zeros(1))):
            with zf.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, arr)
    with pytest.raises(CheckpointError, match="damaged"):
        mg.load(path)
