"""A small thread-safe LRU map for the process-wide caches of parsed or derived values.

Parsed Parquet footers and manifests (store/part.py), bound index conditions
(indexes/bloom.py) and prepared IN lists (execution/functions.py) are each
costly to build and immutable once built, so they are kept by key in one of
these and shared across queries and threads; the least recently used entry
goes first when a cache holds more than `size` entries.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable


class LRU:
    """A bounded map with least-recently-used eviction; every method takes one lock.

    ``size`` may be changed at any time (it bounds the next :meth:`put`; 0
    keeps nothing).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value of `key` (marked most recently used), or None."""
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: Hashable, value: Any) -> None:
        """Keep `value` under `key`, evicting the least recently used beyond ``size``."""
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()

    def __len__(self) -> int:
        return len(self._d)
