"""Pruning and scan figures of one SELECT: :class:`QueryStats` and per-index :class:`IndexStats`."""
from __future__ import annotations

import threading
from dataclasses import asdict, field
from skipidx.core.dataclass_codes import dataclass
from typing import Any, Callable

import pyarrow as pa

#: One lock for every deferred per-index figure: resolving is rare (EXPLAIN,
#: a caller reading the figures) and must add its counts exactly once.
_DEFERRED_LOCK = threading.Lock()


class _DeferredCount:
    """An int field of :class:`IndexStats` whose value may still be owed by the pruner.

    The pruner probes an index only on the granules earlier indexes kept
    (sequential narrowing), so how many granules that index *alone* would
    keep is not known when the query runs. It registers a callback
    (:meth:`IndexStats.defer`) that probes the rest and adds the exact
    figures; reading ``granules_after`` / ``parts_after`` (attribute,
    ``as_dict()``, ``repr``, ``==``) runs it first, once.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = "_value_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> int:
        if obj is None:
            return 0        # the dataclass default
        if obj.__dict__.get("_deferred"):
            obj.resolve()
        return obj.__dict__.get(self.key, 0)

    def __set__(self, obj: Any, value: int) -> None:
        obj.__dict__[self.key] = value


@dataclass
class IndexStats:
    """What one skip index did for one query.

    ``granules_before`` is the number of data granules the query considered
    (all granules of all parts), ``granules_after`` the number this index alone
    would keep (the WHERE clause's RPN evaluated with only this index's
    answers; every other atom "maybe"). ``note`` says why an index did not
    help or was not trusted ("no usable atom", "negation only", "filter
    saturated", "damaged index ignored in part p", ...).

    ``granules_after``/``parts_after`` of an index the pruner only probed on
    granules other indexes had kept are computed when first read (the same
    exact figures; :meth:`resolve` forces it).
    """

    name: str
    type: str
    description: str
    granules_before: int = 0
    granules_after: int = _DeferredCount()
    parts_before: int = 0
    parts_after: int = _DeferredCount()
    used: bool = False               # was its data read for at least one part
    #: group summaries (one filter per group of granules) probed, and how many passed:
    #: the granules checked were those of the passing groups (0/0: checked flat)
    groups_total: int = 0
    groups_selected: int = 0
    note: str | None = None
    conditions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def defer(self, add: Callable[[], tuple[int, int]]) -> None:
        """Owe ``granules_after``/``parts_after`` increments that `add()` computes on first read.

        For the pruner: `add` returns (granules, parts) to add to the figures
        (see :class:`_DeferredCount`); it is called at most once, and dropped
        afterwards with whatever it references."""
        with _DEFERRED_LOCK:
            self.__dict__.setdefault("_deferred", []).append(add)

    @property
    def pending(self) -> bool:
        """Whether some figures are still deferred (reading them resolves them)."""
        return bool(self.__dict__.get("_deferred"))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle/copy the figures, not the callbacks that owe them."""
        self.resolve()
        state = dict(self.__dict__)
        state.pop("_deferred", None)
        return state

    def resolve(self) -> None:
        """Compute every deferred figure now (idempotent, thread-safe)."""
        with _DEFERRED_LOCK:
            todo = self.__dict__.get("_deferred") or []
            self.__dict__["_deferred"] = []
            for add in todo:
                g, p = add()
                self.__dict__["_value_granules_after"] = self.__dict__.get("_value_granules_after", 0) + int(g)
                self.__dict__["_value_parts_after"] = self.__dict__.get("_value_parts_after", 0) + int(p)


@dataclass
class QueryStats:
    """Pruning and scan figures of one SELECT (also available as a dict, :meth:`as_dict`)."""

    table: str
    parts_total: int = 0
    parts_selected: int = 0
    granules_total: int = 0
    granules_selected: int = 0
    rows_total: int = 0
    rows_read: int = 0
    rows_matched: int = 0
    #: compressed bytes of the column data read (per granule and column, the
    #: Parquet footer's mean): with PREWHERE, the WHERE's columns over the kept
    #: granules plus the other columns over the granules holding a match
    bytes_read: int = 0
    ranges: int = 0
    indexes: list[IndexStats] = field(default_factory=list)
    prune_ms: float = 0.0
    scan_ms: float = 0.0
    #: what the query could not read or trust (external tables: files skipped, stale sidecars)
    notes: list[str] = field(default_factory=list)

    def index(self, name: str) -> IndexStats:
        """The figures of the index called `name` (KeyError if the table has none)."""
        for s in self.indexes:
            if s.name == name:
                return s
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]
