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
    np.testing.assert_array_equal(mg.load(str(path))["w"], w.numpy())
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
    pytest.param(_lone_npy, id="lone-npy-array"),
    pytest.param(lambda p: np.savez(p, obj=np.array([{"a": 1}], dtype=object)), id="pickled-objects"),
])
def test_files_that_are_not_ours_give_a_clear_error(tmp_path, corrupt):
    path = tmp_path / "bad.npz"
    corrupt(path)
    with pytest.raises(ValueError, match=r"load: .*bad.npz is not a minigrad checkpoint \(.+\)") as e:
        mg.load(path)
    assert "allow_pickle" not in str(e.value)  # numpy's advice to unpickle is not for checkpoints


def _bad_member_magic(path):
    import io
    import zipfile

    npy = io.BytesIO()
    np.save(npy, np.arange(10.0))
    with zipfile.ZipFile(path, "w") as zf:  # a sound zip (checksums right) of a broken .npy
        zf.writestr("w.npy", npy.getvalue().replace(b"\x93NUMPY", b"\x93NUMPZ"))


@pytest.mark.parametrize("corrupt,reason", [
    pytest.param(lambda p: p.write_bytes(b""), "the file is empty", id="empty-file"),
    pytest.param(_truncated, "", id="truncated"),
    pytest.param(_bit_flipped, "", id="bit-flipped"),
    pytest.param(_bad_member_magic, "member 'w'", id="member-fails-to-parse"),
])
def test_damaged_files_are_called_damaged_not_foreign(tmp_path, corrupt, reason):
    """A checkpoint cut short or corrupted is ours, damaged: the error says so (and where),
    not that the file is some other kind of file."""
    path = tmp_path / "bad.npz"
    corrupt(path)
    with pytest.raises(ValueError, match=r"load: .*bad.npz is damaged \(.+\)") as e:
        mg.load(path)
    assert reason in str(e.value) and "not a minigrad checkpoint" not in str(e.value)
    assert "\n" not in str(e.value)


# ----------------------------------------------------------------------------- durability


def test_a_write_fsyncs_the_whole_file_before_the_rename_then_the_folder(tmp_path, monkeypatch):
    """Without the first fsync a power cut after the rename can leave the name pointing at
    missing bytes; without the second the rename itself may be lost."""
    import stat

    events, real_fsync, real_replace = [], os.fsync, os.replace

    def fsync(fd):
        info = os.fstat(fd)
        events.append(("fsync-folder",) if stat.S_ISDIR(info.st_mode) else ("fsync-file", info.st_size))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("rename", os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    path = tmp_path / "state.npz"
    mg.save(STATE, path)
    assert events == [("fsync-file", path.stat().st_size), ("rename", "state.npz"), ("fsync-folder",)]


def test_a_failed_write_names_the_file_and_keeps_the_errno(tmp_path, monkeypatch):
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np.lib.format, "write_array", full)
    with pytest.raises(OSError) as e:
        mg.save({"w": np.ones(3)}, tmp_path / "state.npz")
    assert e.value.errno == errno.ENOSPC
    assert f"save: cannot write {tmp_path / 'state.npz'}: {os.strerror(errno.ENOSPC)}" in str(e.value)
    assert os.listdir(tmp_path) == []


def _dead_pid():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def test_the_next_save_removes_temporaries_of_dead_writers_only(tmp_path):
    from minigrad.serialization import clean_temporaries

    dead = tmp_path / f".tmp-{_dead_pid()}-0123abcd.npz"  # a save killed by kill -9
    old_style = tmp_path / ".tmp-0123abcd.npz"  # no PID: written before PIDs were in the name
    live = tmp_path / f".tmp-{os.getppid()}-4567.npz"  # a save in progress in a live process
    for p in (dead, old_style, live):
        p.write_bytes(b"PK\x03\x04 half")
    mg.save({"w": np.ones(2)}, tmp_path / "state.npz")
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, "state.npz"])
    assert clean_temporaries(tmp_path) == []  # nothing more to remove


# ----------------------------------------------------------------------------- what load refuses


def _zip_of_text(path):
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")


@pytest.mark.parametrize("name,write,reason", [
    pytest.param("weights.npy", lambda p: np.save(p, np.ones(3)), "one .npy array, as np.save writes",
                 id="npy-named-npy"),
    pytest.param("weights.npz", lambda p: p.write_bytes(open(_npy(p), "rb").read()),
                 "one .npy array, as np.save writes", id="npy-named-npz"),
    pytest.param("archive.zip", _zip_of_text, "member 'readme.txt' is not a .npy array", id="zip-of-text"),
    pytest.param("log.csv", lambda p: p.write_text("step,loss\n"), "not a .npz archive", id="csv"),
])
def test_load_refuses_what_is_not_a_checkpoint_and_says_what_it_is(tmp_path, name, write, reason):
    path = tmp_path / name
    write(path)
    with pytest.raises(ValueError) as e:
        mg.load(path)
    message = str(e.value)
    assert message.startswith(f"load: {path} is not a minigrad checkpoint (") and reason in message
    if ".npy array, as" in reason:
        assert "read it with np.load" in message


def _npy(path):
    other = path.with_suffix(".npy")
    np.save(other, np.arange(4))
    return other


def test_a_save_killed_midway_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    import signal
    import subprocess
    import sys

    # A child that starts a save and blocks inside it; kill -9 gives it no chance to clean up.
    code = ("import sys, time, numpy as np, minigrad as mg\n"
            "def stuck(*a, **k):\n    print('writing', flush=True); time.sleep(60)\n"
            "np.lib.format.write_array = stuck\n"
            f"mg.save({{'w': np.ones(3)}}, {str(tmp_path / 'state.npz')!r})\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "writing\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].startswith(f".tmp-{child.pid}-") and left[0].endswith(".npz")
    mg.save({"w": np.zeros(3)}, tmp_path / "state.npz")
    assert os.listdir(tmp_path) == ["state.npz"]
