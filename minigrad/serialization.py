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
    tmp = os.path.join(folder, f".tmp-{uuid.uuid4().hex}.npz")
    # Not tempfile.mkstemp: it makes the file 0600 whatever the umask. os.open with 0o666
    # lets the kernel apply the umask, as open() does; O_EXCL never reuses a file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_npz(f, arrays)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
                raise ValueError("one .npy array, not an archive of named arrays")
            if magic[:4] not in _ZIP_MAGIC:
                raise ValueError("not a .npz archive")
            with zipfile.ZipFile(fh) as zf:
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
