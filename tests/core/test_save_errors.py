"""save refuses what load cannot read before touching the file, stores any key name and
dtype that load reads back, and leaves file permissions to the umask."""

import os

import numpy as np
import pytest

import minigrad as mg

GOOD = {"w": np.arange(4.0)}


@pytest.mark.parametrize("value, kind", [
    pytest.param(np.array([{"a": 1}, None], dtype=object), "ndarray", id="object-array"),
    pytest.param({1, 2}, "set", id="set"),
    pytest.param([1, print], "builtin_function_or_method", id="function-in-a-list"),
    pytest.param({"nested": object()}, "object", id="object-in-a-dict"),
])
def test_what_load_cannot_read_is_refused_and_the_old_file_is_kept(tmp_path, value, kind):
    """What only pickle could store; None, lists and dicts are a nested checkpoint, which load
    reads back (tests/core/test_save_structures.py)."""
    path = tmp_path / "ckpt.npz"
    mg.save(GOOD, path)
    before = path.read_bytes()
    where = r"(key 'best'|obj\['best'\](\[1\]|\['nested'\])?)"  # a dict of arrays, or a nested structure
    with pytest.raises(TypeError, match=rf"save: {where} holds {kind}"):
        mg.save({"w": np.zeros(4), "best": value}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.npz"]
    np.testing.assert_array_equal(mg.load(path)["w"], GOOD["w"])


def test_keys_are_strings_numbers_booleans_or_none(tmp_path):
    mg.save({3: np.ones(2), None: 1.5, True: "yes"}, tmp_path / "x.npz")
    back = mg.load(tmp_path / "x.npz")
    assert list(back) == [3, None, True] and back[None] == 1.5 and back[True] == "yes"
    with pytest.raises(TypeError, match=r"save: obj has a key \(1, 2\) of type tuple"):
        mg.save({(1, 2): np.ones(2)}, tmp_path / "y.npz")
    assert os.listdir(tmp_path) == ["x.npz"]


def test_any_key_name_round_trips(tmp_path):
    # `file` and `allow_pickle` are np.savez's own parameter names; `x` and `x.npy` would
    # meet in np.load's convenience lookup; slashes make zip folders.
    names = ["file", "allow_pickle", "args", "kwds", "x", "x.npy", "model/layer.0/weight", "", "ünï cødé"]
    state = {name: np.full(2, i, dtype=np.int64) for i, name in enumerate(names)}
    mg.save(state, tmp_path / "keys.npz")
    loaded = mg.load(tmp_path / "keys.npz")
    assert sorted(loaded) == sorted(names)
    for i, name in enumerate(names):
        np.testing.assert_array_equal(loaded[name], [i, i])


@pytest.mark.parametrize("arr", [
    pytest.param(np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"), id="datetime64"),
    pytest.param(np.array([5, -3], dtype="timedelta64[s]"), id="timedelta64"),
    pytest.param(np.array("a json string"), id="unicode"),
    pytest.param(np.array([b"ab", b"c"]), id="bytes"),
    pytest.param(np.zeros(2, dtype=[("a", np.int32), ("b", np.float64)]), id="structured"),
    pytest.param(np.array([1 + 2j], dtype=np.complex64), id="complex"),
    pytest.param(np.arange(6, dtype=np.float16).reshape(2, 3).T, id="non-contiguous"),
])
def test_every_dtype_without_objects_round_trips(tmp_path, arr):
    mg.save({"a": arr}, tmp_path / "a.npz")
    out = mg.load(tmp_path / "a.npz")["a"]
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)


def test_python_numbers_and_lists_come_back_as_they_were(tmp_path):
    mg.save({"step": 7, "lr": 0.5, "sizes": [1, 2]}, tmp_path / "s.npz")
    out = mg.load(tmp_path / "s.npz")
    assert out == {"step": 7, "lr": 0.5, "sizes": [1, 2]} and type(out["step"]) is int


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_permissions_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        mg.save(GOOD, tmp_path / "m.npz")
        (tmp_path / "plain").write_bytes(b"")  # what open() gives under the same umask
    finally:
        os.umask(old)
    mode = os.stat(tmp_path / "m.npz").st_mode & 0o777
    assert mode == 0o666 & ~umask == os.stat(tmp_path / "plain").st_mode & 0o777


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_replacing_a_file_keeps_its_mode(tmp_path):
    path = tmp_path / "private.npz"
    mg.save(GOOD, path)
    os.chmod(path, 0o640)
    mg.save({"w": np.zeros(2)}, path)  # as open(path, "wb") would: the mode stays
    assert os.stat(path).st_mode & 0o777 == 0o640
    np.testing.assert_array_equal(mg.load(path)["w"], np.zeros(2))


def test_the_file_is_an_ordinary_npz(tmp_path):
    mg.save({"file": np.ones(2), "w": np.arange(3)}, tmp_path / "n.npz")
    with np.load(tmp_path / "n.npz", allow_pickle=False) as f:
        assert sorted(f.files) == ["file", "w"]
        np.testing.assert_array_equal(f["w"], np.arange(3))
