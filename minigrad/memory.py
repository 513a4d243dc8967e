"""Keep freed memory inside the process between training steps (Linux, glibc).

A training step allocates the same large arrays every time and frees them all when the graph
goes. By default glibc hands blocks of more than about 128 KiB straight back to the operating
system, so the next step gets fresh pages and pays a page fault for every 4 KiB of them:
measured here, that made a 512x512 op chain 1.3x slower than numpy instead of level with it.
Raising glibc's mmap and trim thresholds lets freed blocks be reused, as PyTorch's caching
allocator does. Set MINIGRAD_KEEP_MEMORY=0 to leave the allocator alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h
_MMAP_THRESHOLD = 32 * 2**20  # the largest value glibc accepts on 64-bit machines
_TRIM_THRESHOLD = 512 * 2**20


def keep_freed_memory() -> bool:
    """Ask glibc to reuse freed blocks instead of returning them; True if it agreed."""
    if not sys.platform.startswith("linux") or os.environ.get("MINIGRAD_KEEP_MEMORY") == "0":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
            libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):  # not glibc (e.g. musl): nothing to tune
        return False
