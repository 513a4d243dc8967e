"""save / load: round trips, atomic writes (a crash mid-write leaves the old file), and clear
errors for missing or corrupt files."""

import os

import numpy as np
import pytest

import minigrad as mg

STATE = {
    "weight": np.arange(6, dtype=np.float32).reshape(2, 3),
    "bias": np.array([0.5, -1.0], dtype=np.float64),
    "steps": np.array(7, dtype=np.int64),
    "mask": np.array([True, False]),
    "empty": np.zeros((0, 3), dtype=np.float32),
}


def test_round_trip_keeps_names_values_shapes_and_dtypes(tmp_path):
    path = tmp_path / "state.npz"
    mg.save(STATE, path)
    loaded = mg.load(path)
    assert sorted(loaded) == sorted(STATE)
    for name, value in STATE.items():
        assert loaded[name].dtype == value.dtype and loaded[name].shape == value.shape
        np.testing.assert_array_equal(loaded[name], value)


def test_tensors_are_saved_as_their_arrays_and_folders_are_made(tmp_path):
    path = tmp_path / "new" / "folder" / "model.npz"
    w = mg.randn(2, 2, requires_grad=True)
    mg.save({"w": w}, str(path))
    np.testing.assert_array_equal(mg.load(str(path))["w"], w.data)
    assert os.listdir(path.parent) == ["model.npz"]


def test_a_crash_mid_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "state.npz"
    mg.save({"w": np.ones(3)}, path)

    def crash(file, arr, **kwargs):
        file.write(b"PK\x03\x04 half a zip file")  # some bytes reach the disk, then the crash
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", crash)
    with pytest.raises(OSError, match="disk full"):
        mg.save({"w": np.zeros(3)}, path)
    monkeypatch.undo()
    np.testing.assert_array_equal(mg.load(path)["w"], np.ones(3))
    assert os.listdir(tmp_path) == ["state.npz"]


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="load: no such file: .*nothing.npz"):
        mg.load(tmp_path / "nothing.npz")


def _truncated(path):
    mg.save({"w": np.arange(1000.0)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _bit_flipped(path):
    mg.save({"w": np.arange(1000.0)}, path)
    data = bytearray(path.read_bytes())
    data[300:340] = b"x" * 40  # inside the array's bytes: the zip checksum no longer matches
    path.write_bytes(bytes(data))


def _lone_npy(path):
    with open(path, "wb") as f:
        np.save(f, np.ones(3))  # a valid .npy, but not an archive of named arrays


@pytest.mark.parametrize("corrupt", [
    pytest.param(lambda p: p.write_bytes(b"not an archive at all" * 4), id="garbage"),
    pytest.param(lambda p: p.write_text("step,loss\n1,2.5\n"), id="text-file"),
    pytest.param(lambda p: p.write_bytes(b""), id="empty-file"),
    pytest.param(_truncated, id="truncated"),
    pytest.param(_bit_flipped, id="bit-flipped"),
    pytest.param(_lone_npy, id="lone-npy-array"),
    pytest.param(lambda p: np.savez(p, obj=np.array([{"a": 1}], dtype=object)), id="pickled-objects"),
])
def test_corrupt_files_give_a_clear_error(tmp_path, corrupt):
    path = tmp_path / "bad.npz"
    corrupt(path)
    with pytest.raises(ValueError, match=r"load: .*bad.npz is not a minigrad checkpoint \(.+\)") as e:
        mg.load(path)
    assert "allow_pickle" not in str(e.value)  # numpy's advice to unpickle is not for checkpoints
