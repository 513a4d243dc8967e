"""Save and load dictionaries of arrays as .npz files, written atomically.

The file is an ordinary .npz (a zip of .npy files, one per key), readable by `np.load`.
Only arrays that load can read back without pickle are ever written. What torch.save takes
from course code is taken too: a nested structure (an optimizer's state dict, a checkpoint
dict of state dicts, step counts and settings) is written as its arrays, members "0", "1", ...,
and one more member, `__minigrad_tree__`, the structure as JSON text in a uint8 array (dicts
with str, int, float, bool or None keys; lists; tuples; numbers, strings, booleans, None;
arrays and tensors), and `load` gives that structure back. `f` may be a path (written
atomically) or a file object (a BytesIO), as in torch.

`load` checks a file before it allocates anything: every member's .npy header is read and its
declared size (prod(shape) * itemsize) compared with the member's size in the zip directory,
and the declared sizes together must fit in `memory_budget()`. A damaged file (truncated,
corrupt, a header that lies), a file that is not an archive of arrays and one too large to hold
are each refused with a `CheckpointError` (a ValueError) of one line naming the file.
"""

from __future__ import annotations

import io
import json
import math
import os
import stat
import uuid
import zipfile
from typing import Any, Mapping

import numpy as np

from .tensor import Tensor

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
_NPY_MAGIC = b"\x93NUMPY"

# The most bytes `load` allocates for one file's arrays, on any machine (less where there is
# less memory: see `memory_budget`). minigrad's models are megabytes; this leaves room for
# much larger ones while refusing a file that would inflate past what a machine can hold.
MAX_LOAD_BYTES = 8 * 2**30


class CheckpointError(ValueError):
    """A file refused by `load` or by a checkpoint reader: damaged, not ours, or too large.
    Its message is one line naming the file, the part at fault and what was expected."""


def memory_budget() -> int:
    """The bytes that reading a file may allocate: `MAX_LOAD_BYTES`, or less where the machine
    has less physical memory, or the process a smaller address-space limit (`ulimit -v`) minus
    what it has mapped already."""
    budget = MAX_LOAD_BYTES
    try:
        budget = min(budget, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        pass
    try:
        import resource
    except ImportError:  # Windows
        return budget
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        budget = min(budget, soft - mapped_bytes())
    return max(budget, 0)


def mapped_bytes() -> int:
    """The process's address space in use (Linux's /proc/self/statm), 0 where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def format_size(n: int) -> str:
    """n bytes for a message: "1,234 bytes", "3.2 MiB", "140.0 TiB"."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:,} bytes"


def _as_array(key: Any, value: Any) -> np.ndarray:
    """`value` as an array that load can read back, or a TypeError naming the key."""
    if not isinstance(key, str):
        raise TypeError(f"save: keys must be strings, not {type(key).__name__} ({key!r})")
    if isinstance(value, np.ndarray):
        arr = value
    else:
        data = value._data if isinstance(value, Tensor) else value
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


# The member that holds a nested structure's shape (see the module's docstring).
TREE = "__minigrad_tree__"
_SCALARS = (str, int, float, bool, type(None))


def _flat_arrays(obj: Any) -> bool:
    """Whether obj is a dict of str keys to arrays (or tensors): the plain format, one member per
    key (a Python number there is kept as a number: the structured format)."""
    if not isinstance(obj, Mapping) or TREE in obj:
        return False
    return all(isinstance(k, str) and isinstance(v, (np.ndarray, np.generic, Tensor)) for k, v in obj.items())


def _to_tree(obj: Any, path: str, arrays: list[np.ndarray]) -> Any:
    """obj as JSON-able nodes, its arrays appended to `arrays`; a TypeError names a leaf that
    only pickle could store."""
    if isinstance(obj, Tensor):
        arrays.append(_as_array(path, obj))
        return {"tensor": len(arrays) - 1, "requires_grad": obj.requires_grad}
    if isinstance(obj, (np.ndarray, np.generic)):
        arrays.append(_as_array(path, obj))
        return {"array": len(arrays) - 1}
    if isinstance(obj, _SCALARS):
        return {"value": obj}
    if isinstance(obj, Mapping):
        items = []
        for key, value in obj.items():
            if not isinstance(key, _SCALARS):
                raise TypeError(f"save: {path} has a key {key!r} of type {type(key).__name__}; the keys of a "
                                "saved dict are strings, numbers, booleans or None")
            items.append([key, _to_tree(value, f"{path}[{key!r}]", arrays)])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        nodes = [_to_tree(v, f"{path}[{i}]", arrays) for i, v in enumerate(obj)]
        return {"tuple" if isinstance(obj, tuple) else "list": nodes}
    raise TypeError(f"save: {path} holds {type(obj).__name__}, which only pickle could store, and load "
                    "never unpickles; save arrays, tensors, numbers, strings and dicts, lists or tuples "
                    "of them")


def _from_tree(node: Any, arrays: Mapping[str, np.ndarray], name: str) -> Any:
    try:
        (kind, value), *rest = node.items()
        if kind == "value":
            return value
        if kind == "array":
            return arrays[str(value)]
        if kind == "tensor":
            return Tensor._make(arrays[str(value)], None).requires_grad_(bool(node["requires_grad"]))
        if kind == "dict":
            return {key: _from_tree(v, arrays, name) for key, v in value}
        if kind in ("list", "tuple"):
            items = [_from_tree(v, arrays, name) for v in value]
            return tuple(items) if kind == "tuple" else items
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    raise CheckpointError(f"load: {name} is damaged (its {TREE} does not describe its arrays)")


def _members(obj: Any) -> dict[str, np.ndarray]:
    """The arrays to write, by member name, for either format."""
    if _flat_arrays(obj):
        return {k: _as_array(k, v) for k, v in obj.items()}
    arrays: list[np.ndarray] = []
    tree = _to_tree(obj, "obj", arrays)
    members = {str(i): a for i, a in enumerate(arrays)}
    members[TREE] = np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8)
    return members


def save(obj: Any, f: str | os.PathLike | io.IOBase) -> None:
    """Write a dict of arrays (or tensors) to `f` (a path, or a file object opened for
    writing bytes) as .npz; a nested structure (see the module's docstring) as its arrays and
    its shape.

    Every value is checked before the file is touched, so a value that load could not read
    back (None, an object array) raises a TypeError naming its key and leaves any old file
    as it was. Any string is a valid key. The file is first written beside its destination
    and then renamed over it, so a crash leaves either the old file or the new one, never
    half of one. Permissions are those `open()` would give: the old file's when there is
    one, else what the umask allows. A file object is written in place (atomic only as the
    object itself is).
    """
    arrays = _members(obj)
    if hasattr(f, "write"):
        _write_npz(f, arrays)
        return
    path = os.fspath(f)
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
            with os.fdopen(fd, "wb") as out:
                _write_npz(out, arrays)
                out.flush()
                os.fsync(out.fileno())  # the bytes are on disk before the name points at them
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
    """Whether a process with this id exists (signal 0 checks without sending anything). An id
    no process can have (<= 0, or beyond the C int the kernel takes) is no running process."""
    if not 0 < pid < 2**31:
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


def load(f: str | os.PathLike | io.IOBase, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None) -> Any:
    """Read what `save` wrote to `f` (a path, or a file object opened for reading bytes): a dict
    of arrays, or the nested structure it saved, its tensors as Tensors. No pickled object is
    ever loaded, whatever `weights_only` says (torch's keyword, accepted: True and False both
    load only arrays and plain values). `map_location` may be None or the CPU ("cpu", or a
    device whose str() is "cpu"): minigrad runs on the CPU. `mmap` is accepted and reads the
    arrays into memory. `pickle_module` must be None.

    Nothing is allocated before the whole file is checked: each member's .npy header must
    parse and declare exactly the bytes the zip directory says the member holds, and the
    declared sizes together must fit in `memory_budget()`. Raises FileNotFoundError for a
    missing file and `CheckpointError` (a ValueError) for a file that is damaged (truncated,
    corrupt, a header that lies), one that is not an archive of arrays, or one too large.
    """
    _check_load_options(map_location, pickle_module)
    name = getattr(f, "name", "<file object>") if hasattr(f, "read") else os.fspath(f)
    try:
        with (_Borrowed(f) if hasattr(f, "read") else open(f, "rb")) as fh:
            magic = fh.read(6)
            fh.seek(0)
            if not magic:
                raise CheckpointError(f"load: {name} is damaged (the file is empty)")
            if magic.startswith(_NPY_MAGIC):
                raise _not_ours(name, "it holds one .npy array, as np.save writes, not an archive of named "
                                "arrays: read it with np.load, or write a dict of arrays with save")
            if magic[:4] not in _ZIP_MAGIC:
                raise _not_ours(name, "not a .npz archive")
            with zipfile.ZipFile(fh) as zf:
                members = zf.infolist()
                other = [m.filename for m in members if not m.filename.endswith(".npy")]
                if other:  # a zip, but not of arrays
                    raise _not_ours(name, f"a zip archive whose member {other[0]!r} is not a .npy array")
                names = [m.filename for m in members]
                twice = sorted({n for n in names if names.count(n) > 1})
                if twice:
                    raise CheckpointError(f"load: {name} is damaged (two members named {twice[0]!r})")
                total = sum(_checked_size(zf, m, name) for m in members)
                budget = memory_budget()
                if total > budget:
                    raise CheckpointError(
                        f"load: {name} declares {format_size(total)} of arrays ({len(members)} members), "
                        f"more than the {format_size(budget)} this process may allocate for a file "
                        "(minigrad.serialization.MAX_LOAD_BYTES, the machine's memory, ulimit -v)")
                try:
                    arrays = {_key(m.filename): _read_member(zf, m.filename, name) for m in members}
                except MemoryError:  # the budget fitted, the machine did not (other processes)
                    raise CheckpointError(f"load: {name}: its {format_size(total)} of arrays do not fit "
                                          "in the memory free now") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"load: no such file: {name}") from None
    except CheckpointError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:  # truncated or corrupt zip
        raise CheckpointError(f"load: {name} is damaged ({_one_line(e)})") from None
    if TREE not in arrays:
        return arrays
    tree = arrays.pop(TREE)
    try:
        node = json.loads(tree.tobytes().decode())
    except (UnicodeDecodeError, ValueError):
        raise CheckpointError(f"load: {name} is damaged (its {TREE} is not JSON)") from None
    return _from_tree(node, arrays, name)


class _Borrowed:
    """A file object the caller opened: used as `with` would use a file, and left open."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def __enter__(self) -> Any:
        return self.f

    def __exit__(self, *exc: Any) -> None:
        pass


def _check_load_options(map_location: Any, pickle_module: Any) -> None:
    if pickle_module is not None:
        raise TypeError("load: pickle_module must be None: minigrad never unpickles (its files hold arrays "
                        "and plain values only)")
    where = map_location
    if where is None or str(getattr(where, "type", where)) == "cpu":
        return
    raise ValueError(f"load: map_location={map_location!r}: minigrad runs on the CPU; pass None or 'cpu'")


def _not_ours(name: str, reason: str) -> CheckpointError:
    return CheckpointError(f"load: {name} is not a minigrad checkpoint ({reason})")


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _key(member: str) -> str:
    return member[:-4] if member.endswith(".npy") else member


def _checked_size(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> int:
    """The bytes the member's array takes, from its .npy header (nothing else is read), after
    checking that the header declares exactly the data the zip directory says follows it:
    prod(shape) * itemsize == file_size - header length."""
    key = _key(info.filename)
    with zf.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
            # Versions 2.0 and 3.0 share a layout (3.0's header is UTF-8, 2.0's latin-1); only
            # the shape and the dtype's size are needed here, which both spell in ASCII.
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(f)
        except ValueError as e:
            raise CheckpointError(f"load: {name} is damaged (member {key!r}: {_one_line(e)})") from None
        data = info.file_size - f.tell()
    if dtype.hasobject:
        raise _not_ours(name, f"key {key!r} holds pickled Python objects")
    declared = math.prod(shape) * dtype.itemsize  # Python ints: no overflow for any header
    if declared != data:
        raise CheckpointError(
            f"load: {name} is damaged (member {key!r}: its header declares shape {tuple(shape)} of "
            f"{dtype}, {format_size(declared)}, but the member holds {format_size(max(data, 0))} of data)")
    return declared


def _read_member(zf: zipfile.ZipFile, member: str, name: str) -> np.ndarray:
    with zf.open(member) as f:
        try:
            return np.lib.format.read_array(f, allow_pickle=False)
        except ValueError as e:
            where = f"member {_key(member)!r}"
            raise CheckpointError(f"load: {name} is damaged ({where}: {_one_line(e)})") from None
