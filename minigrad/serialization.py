"""Save and load dictionaries of arrays as .npz files, written atomically.

The file is an ordinary .npz (a zip of .npy files, one per key), readable by `np.load`.
Only arrays that load can read back without pickle are ever written.
"""

from __future__ import annotations

import os
import stat
import uuid
import zipfile
from typing import Any, Mapping

import numpy as np

from .tensor import Tensor

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
_NPY_MAGIC = b"\x93NUMPY"


def _as_array(key: Any, value: Any) -> np.ndarray:
    """`value` as an array that load can read back, or a TypeError naming the key."""
    if not isinstance(key, str):
        raise TypeError(f"save: keys must be strings, not {type(key).__name__} ({key!r})")
    if isinstance(value, np.ndarray):
        arr = value
    else:
        # Not `getattr(value, "data", value)`: a numpy array's .data is a raw buffer.
        data = value.data if isinstance(value, Tensor) else value
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as e:  # ragged lists and the like
            raise TypeError(f"save: key {key!r} holds {type(value).__name__}, not an array ({e})") from None
    if arr.dtype.hasobject:
        raise TypeError(
            f"save: key {key!r} holds {type(value).__name__} (dtype {arr.dtype}), which would be "
            "pickled, and load never unpickles; store numbers, booleans, strings or dates, "
            "or leave the key out"
        )
    return arr


def save(obj: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write a dict of arrays (or tensors) to `path` as .npz.

    Every value is checked before the file is touched, so a value that load could not read
    back (None, an object array) raises a TypeError naming its key and leaves any old file
    as it was. Any string is a valid key. The file is first written beside its destination
    and then renamed over it, so a crash leaves either the old file or the new one, never
    half of one. Permissions are those `open()` would give: the old file's when there is
    one, else what the umask allows.
    """
    arrays = {k: _as_array(k, v) for k, v in obj.items()}
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    clean_temporaries(folder)  # left by a process killed mid-save
    # The writer's PID in the name tells a live save's file from a dead one's.
    tmp = os.path.join(folder, f"{_TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex}.npz")
    # Not tempfile.mkstemp: it makes the file 0600 whatever the umask. os.open with 0o666
    # lets the kernel apply the umask, as open() does; O_EXCL never reuses a file.
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                _write_npz(f, arrays)
                f.flush()
                os.fsync(f.fileno())  # the bytes are on disk before the name points at them
            if os.path.exists(path):
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            os.replace(tmp, path)
            _fsync_folder(folder)  # and so is the rename itself
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as e:  # disk full, read-only folder...: name the file, keep the errno
        raise OSError(e.errno, f"save: cannot write {path}: {e.strerror or e}") from e


_TMP_PREFIX = ".tmp-"


def _fsync_folder(folder: str) -> None:
    """Flush a folder's entries (a rename) to disk; Windows cannot open a folder, and needs not."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clean_temporaries(folder: str | os.PathLike) -> list[str]:
    """Remove the temporary files (.tmp-PID-*.npz) that saves killed midway (kill -9, a power
    cut) left in `folder`: those whose process is no longer running. Returns their paths.
    A save in progress in another live process keeps its file."""
    folder = os.fspath(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        if not (name.startswith(_TMP_PREFIX) and name.endswith(".npz")):
            continue
        pid = name[len(_TMP_PREFIX):].split("-")[0]
        if pid.isdigit() and (int(pid) == os.getpid() or pid_running(int(pid))):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed.append(os.path.join(folder, name))
        except OSError:
            pass  # removed meanwhile, or not ours to remove
    return removed


def pid_running(pid: int) -> bool:
    """Whether a process with this id exists (signal 0 checks without sending anything)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # there os.kill(pid, 0) would end the process: ask the kernel instead
        import ctypes

        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def _write_npz(f: Any, arrays: Mapping[str, np.ndarray]) -> None:
    """What np.savez does, without passing keys as keyword arguments (a key named `file` or
    `allow_pickle` would collide with np.savez's own parameters)."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)


def load(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a dict of arrays written by `save` (no pickled objects are ever loaded)."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
            fh.seek(0)
            if magic.startswith(_NPY_MAGIC):
                raise ValueError("it holds one .npy array, as np.save writes, not an archive of named "
                                 "arrays: read it with np.load, or write a dict of arrays with save")
            if magic[:4] not in _ZIP_MAGIC:
                raise ValueError("not a .npz archive")
            with zipfile.ZipFile(fh) as zf:
                other = [m for m in zf.namelist() if not m.endswith(".npy")]
                if other:  # a zip, but not of arrays
                    raise ValueError(f"a zip archive whose member {other[0]!r} is not a .npy array")
                return {_key(member): _read_member(zf, member) for member in zf.namelist()}
    except FileNotFoundError:
        raise FileNotFoundError(f"load: no such file: {name}") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:  # truncated or corrupt
        raise ValueError(f"load: {name} is not a minigrad checkpoint ({e})") from None


def _key(member: str) -> str:
    return member[:-4] if member.endswith(".npy") else member


def _read_member(zf: zipfile.ZipFile, member: str) -> np.ndarray:
    with zf.open(member) as f:
        try:
            return np.lib.format.read_array(f, allow_pickle=False)
        except ValueError as e:
            if "allow_pickle" in str(e):  # numpy's advice to unpickle: not for a checkpoint
                raise ValueError(f"key {_key(member)!r} holds pickled Python objects") from None
            raise ValueError(f"key {_key(member)!r}: {e}") from None
