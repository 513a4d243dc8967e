"""Save and load dictionaries of arrays as .npz files, written atomically."""

from __future__ import annotations

import os
import tempfile
import zipfile
from typing import Any, Mapping

import numpy as np


def save(obj: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write a dict of arrays (or tensors) to `path` as .npz.

    The file is first written beside its destination and then renamed over it, so a crash
    leaves either the old file or the new one, never half of one.
    """
    arrays = {k: np.asarray(getattr(v, "data", v)) for k, v in obj.items()}
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a dict of arrays written by `save` (no pickled objects are ever loaded)."""
    try:
        # Open the file here: np.load leaves its own handle open when the archive is corrupt.
        with open(path, "rb") as fh:
            f = np.load(fh, allow_pickle=False)
            if not isinstance(f, np.lib.npyio.NpzFile):  # a lone .npy array
                raise ValueError("one array, not an archive of named arrays")
            with f:
                return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise FileNotFoundError(f"load: no such file: {os.fspath(path)}") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:  # truncated or corrupt
        raise ValueError(f"load: {os.fspath(path)} is not a minigrad .npz file ({e})") from None
