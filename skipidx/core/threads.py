"""How many threads the engine's parallel work uses by default."""
from __future__ import annotations

import os

__all__ = ["available_cores", "resolve_threads"]


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, so ``taskset -c 0``
    means one), else the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_threads(threads: int | None) -> int:
    """`threads` when set (>= 1), else :func:`available_cores` (0 and None mean the default,
    as ClickHouse's ``max_threads = 0``)."""
    return max(1, int(threads)) if threads else available_cores()
