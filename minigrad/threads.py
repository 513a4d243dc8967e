"""How many threads numpy's BLAS may use.

On small matrices (a few hundred rows) BLAS threads cost more in hand-offs than they save,
so the `minigrad` command defaults to one thread (see the performance notes in the README).
"""

from __future__ import annotations

from typing import Any

from threadpoolctl import threadpool_info, threadpool_limits

_limits: Any = None  # kept alive: the limit holds while this object exists


def set_num_threads(n: int) -> None:
    """Let BLAS (matrix products) use at most n threads."""
    global _limits
    if n < 1:
        raise ValueError(f"set_num_threads: need at least 1 thread, got {n}")
    _limits = threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    """The largest thread count among the loaded BLAS libraries."""
    return max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1)
