"""Pruning a table snapshot for a Spark scan, and cutting the result into tasks.

The same pipeline as the embedded engine's SELECT (binder -> one RPN ->
:func:`skipidx.planner.prune.plan_indexes` / :func:`~skipidx.planner.prune.prune`
over every index, the ORDER BY key included), without the scan: the result is
a list of (part, granule ranges) which :func:`split_tasks` spreads over Spark
tasks of bounded size. Everything here is plain data that pickles, because
Spark plans in one Python process and reads in others.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skipidx.core.errors import SkipidxError
from skipidx.sql import ast as A

__all__ = ["ScanPlan", "TaskSlice", "plan_scan", "split_tasks", "resolve_table_dir", "planner_cache",
           "DEFAULT_INDEX_CACHE_MB"]

#: Bytes of loaded index files the planner process keeps between queries.
DEFAULT_INDEX_CACHE_MB = 512

_CACHE: Any = None


@dataclass(frozen=True)
class TaskSlice:
    """Granule ranges of one part for one task: enough to open the part anywhere."""

    part: str
    rows: int
    manifest_hash: str
    ranges: tuple[tuple[int, int], ...]


@dataclass
class ScanPlan:
    """What a scan reads after pruning, with the figures tests and users check."""

    gen: int
    slices: list[TaskSlice]
    meta_json: dict                 # the snapshot's table metadata (TableMeta.to_json())
    stats: dict[str, Any] = field(default_factory=dict)


def resolve_table_dir(path: Any) -> str:
    """The table directory of a Spark path ``DBDIR/table``; SkipidxError if it is no table."""
    from skipidx.store.commit import STATE_FILE

    if not isinstance(path, str) or not path:
        raise SkipidxError("the skipidx source needs a path: .load('DBDIR/table') / .save('DBDIR/table')")
    if path.startswith("file://"):
        path = path[len("file://"):]
    d = os.path.abspath(path)
    from skipidx.store.external import is_external

    if is_external(d):
        return d
    if not os.path.isfile(os.path.join(d, STATE_FILE)):
        raise SkipidxError("not a skipidx table (no state.json); write to it once or CREATE TABLE it", path=d)
    return d


def planner_cache(max_mb: int = DEFAULT_INDEX_CACHE_MB) -> Any:
    """The index cache of this process (None for `max_mb` 0).

    Spark plans a Python source's scans in reused Python workers
    (``spark.python.worker.reuse``, on by default), so the loaded index files
    can outlive one query there as they do in the embedded engine: without
    it every query would read and verify the whole index of each pruning
    column again (tens of MiB for a token index of 10M rows). Entries are
    keyed by part directory, index name and definition fingerprint, and
    parts never change, so an entry is never stale; the cache is bounded by
    the index files' bytes (LRU)."""
    global _CACHE
    if max_mb <= 0:
        return None
    from skipidx.planner.prune import IndexCache

    limit = int(max_mb) << 20
    if _CACHE is None:
        _CACHE = IndexCache(max_bytes=limit)
    elif _CACHE.max_bytes != limit:
        _CACHE.max_bytes = limit      # the next insert evicts down to the new bound
    return _CACHE


def plan_scan(table_dir: str, where: A.Expr | None, cache: Any = None) -> ScanPlan:
    """Prune the current snapshot of `table_dir` with `where` (an unbound
    expression; None reads everything). The snapshot is pinned only while
    pruning: readers pin its generation again while they read."""
    from skipidx.expr.binder import bind_where
    from skipidx.planner.prune import plan_indexes, prune
    from skipidx.planner.rpn import build_rpn
    from skipidx.planner.stats import QueryStats
    from skipidx.store import commit as _commit
    from skipidx.store.table import TableSnapshot

    st, fd = _commit.pin_snapshot(table_dir)
    snap = TableSnapshot(table_dir, st, fd)
    with snap:
        meta = snap.meta
        bound = bind_where(meta, where) if where is not None else None
        rpn = build_rpn(bound)
        uses = plan_indexes(rpn, meta, cache)
        qs = QueryStats(table=meta.name)
        selections = prune(snap.parts, rpn, uses, qs, cache)
        slices = []
        rows_selected = 0
        for sel in selections:
            e = next(p for p in st.parts if p.name == sel.part.name)
            marks = np.asarray(sel.part.marks, dtype=np.int64)
            rows_selected += int(sum(int(marks[b] - marks[a]) for a, b in sel.ranges))
            slices.append(TaskSlice(e.name, e.rows, e.manifest_hash, tuple(sel.ranges)))
    stats = qs.as_dict()
    stats["rows_selected"] = rows_selected
    stats["gen"] = st.gen
    stats["where"] = where.to_sql() if where is not None else None
    return ScanPlan(st.gen, slices, meta.to_json(), stats)


def split_tasks(slices: list[TaskSlice], max_granules: int, parallelism: int = 1,
                min_granules: int = 1) -> list[list[TaskSlice]]:
    """Spread the selected ranges over tasks of at most `max_granules` granules
    each (a range longer than that is cut), in as few tasks as that allows --
    but over up to `parallelism` tasks of at least `min_granules` granules
    when the scan is big enough, so a selective scan of a few dozen granules
    uses every core instead of one. Tasks are balanced (sizes differ by at
    most one granule); consecutive small pieces, also of
    different parts, share a task, so a selective query does not start one
    Spark task per kept granule. Nothing selected: no task."""
    if max_granules < 1:
        raise SkipidxError(f"granules_per_task must be >= 1, got {max_granules}")
    total = sum(b - a for s in slices for a, b in s.ranges)
    if total == 0:
        return []
    n = max(-(-total // max_granules), min(max(1, parallelism), total // max(1, min_granules)), 1)
    # sizes differ by at most one granule; each <= max_granules since n >= total / max_granules
    base, extra = divmod(total, n)
    tasks: list[list[TaskSlice]] = []
    cur: list[TaskSlice] = []
    size = 0
    target = base + (1 if extra else 0)
    for s in slices:
        pending: list[tuple[int, int]] = []
        for a, b in s.ranges:
            while a < b:
                take = min(b - a, target - size)
                pending.append((a, a + take))
                size += take
                a += take
                if size >= target:
                    cur.append(TaskSlice(s.part, s.rows, s.manifest_hash, tuple(pending)))
                    tasks.append(cur)
                    cur, pending, size = [], [], 0
                    target = base + (1 if len(tasks) < extra else 0)
        if pending:
            cur.append(TaskSlice(s.part, s.rows, s.manifest_hash, tuple(pending)))
    if cur:
        tasks.append(cur)
    return tasks
