"""The process's caches of parsed or derived values: one bounded LRU map, one registry.

Every such cache is an :class:`LRU` with a name: parsed Parquet footers,
manifests and table states (store), bound index conditions (indexes),
prepared IN lists (execution), ... Each value is costly to build and
immutable once built, so it is kept by key and shared across queries,
Databases and threads; the least recently used entry goes first beyond the
cache's bound. :func:`caches` lists them with their bounds (the registry is
the one place that says what the process keeps); :func:`clear_caches` forgets
them all, as a new process would (``Database.close(clear_caches=True)`` calls
it; tests and benchmarks do).

The caches and their bounds (entries; ``tests/core/test_lru.py`` checks this
table against :func:`caches`):

=========================  =====  ===========================================================
name                       bound  holds
=========================  =====  ===========================================================
expr.constant_hashes         256  xxh64 of the String constants of IN lists / comparisons
expr.in_plans                256  prepared IN-list membership plans, by (values, value type)
expr.stable_dictionaries   16384  value hashes of dictionaries the store keeps (and 96 MiB with them)
indexes.sbbf_conditions     1024  bound SBBF conditions, by (subject, tokenizer, type, seed, atom)
store.checked_strings       4096  row groups whose String columns were found UTF-8, by file, column
store.external_files        4096  marks, schema and Bloom columns of external data files
store.external_footers      4096  parsed Parquet footers of external data files
store.fingerprints          1024  index fingerprints per IndexMeta object
store.footers                512  parsed Parquet footers of part data files
store.index_types            256  index instances reading index files, by definition and params
store.manifests             4096  parsed part manifests, by (part dir, manifest checksum)
store.page_dictionaries      256  decoded dictionary pages of external files' column chunks (and 64 MiB)
store.part_dictionaries    16384  decoded dictionary pages of parts' String column chunks (and 64 MiB)
store.part_page_layouts    16384  page layouts of parts' dictionary-read column chunks
store.states                 256  parsed table states with the bytes they were parsed from
store.string_page_layouts     64  page layouts of PLAIN String columns read in place, by file, column (and 32 MiB)
store.table_meta             256  column-name set and Arrow schema per TableMeta object
store.validated_metas         64  validated table metadata, by its canonical JSON (states share it)
system_tables.column_bytes  4096  column sizes of parts' data files (system.parts / columns / tables)
=========================  =====  ===========================================================

What a Database owns itself (not here): its index cache (loaded index
granules, bounded by bytes: ``planner.prune.IndexCache``) and its scan
threads (``execution.scan.ScanExecutor``), both released by ``close()``.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Hashable

__all__ = ["LRU", "caches", "clear_caches"]

_REGISTRY: "weakref.WeakValueDictionary[str, LRU]" = weakref.WeakValueDictionary()


class LRU:
    """A bounded map with least-recently-used eviction; every method takes one lock.

    ``size`` may be changed at any time (it bounds the next :meth:`put`; 0
    keeps nothing). With a `name` the cache joins the process registry
    (:func:`caches`); `what` says what it holds and why. `max_bytes` bounds
    the sum of the sizes that :meth:`put` is told too (values of very
    different sizes, such as decoded pages).
    """

    def __init__(self, size: int, name: str | None = None, what: str = "", max_bytes: int | None = None) -> None:
        self.size = size
        self.name = name
        self.what = what
        self.max_bytes = max_bytes
        self._d: OrderedDict[Hashable, Any] = OrderedDict()
        self._nbytes: dict[Hashable, int] = {}
        self._total = 0
        self._lock = threading.Lock()
        if name is not None:
            _REGISTRY[name] = self

    def get(self, key: Hashable) -> Any:
        """The value of `key` (marked most recently used), or None."""
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: Hashable, value: Any, nbytes: int = 0) -> None:
        """Keep `value` under `key`, evicting the least recently used beyond ``size``
        (and beyond ``max_bytes``, `nbytes` being the size of `value`)."""
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            if self.max_bytes is not None:
                self._total += nbytes - self._nbytes.pop(key, 0)
                self._nbytes[key] = nbytes
            while self._d and (len(self._d) > self.size
                               or (self.max_bytes is not None and self._total > self.max_bytes)):
                k, _ = self._d.popitem(last=False)
                self._total -= self._nbytes.pop(k, 0)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self._nbytes.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._d)


def caches() -> dict[str, tuple[int, int, str]]:
    """Every named cache of the process: name -> (entries, bound, what it holds)."""
    return {name: (len(c), c.size, c.what) for name, c in sorted(_REGISTRY.items())}


def clear_caches() -> None:
    """Empty every named cache (tests and benchmarks: as a new process would start)."""
    for c in list(_REGISTRY.values()):
        c.clear()
