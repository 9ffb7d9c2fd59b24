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

from skipidx.errors import SkipidxError
from skipidx.sql import ast as A

__all__ = ["ScanPlan", "TaskSlice", "plan_scan", "split_tasks", "resolve_table_dir"]


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
    if not os.path.isfile(os.path.join(d, STATE_FILE)):
        raise SkipidxError("not a skipidx table (no state.json); write to it once or CREATE TABLE it", path=d)
    return d


def plan_scan(table_dir: str, where: A.Expr | None, cache: Any = None) -> ScanPlan:
    """Prune the current snapshot of `table_dir` with `where` (an unbound
    expression; None reads everything). The snapshot is pinned only while
    pruning: readers pin its generation again while they read."""
    from skipidx.planner.binder import bind_where
    from skipidx.planner.prune import plan_indexes, prune
    from skipidx.planner.rpn import build_rpn
    from skipidx.result import QueryStats
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


def split_tasks(slices: list[TaskSlice], max_granules: int) -> list[list[TaskSlice]]:
    """Spread the selected ranges over tasks of at most `max_granules` granules
    each (a range longer than that is cut); consecutive small pieces, also of
    different parts, share a task, so a selective query does not start one
    Spark task per kept granule."""
    if max_granules < 1:
        raise SkipidxError(f"granules_per_task must be >= 1, got {max_granules}")
    tasks: list[list[TaskSlice]] = []
    cur: list[TaskSlice] = []
    size = 0
    for s in slices:
        pending: list[tuple[int, int]] = []
        for a, b in s.ranges:
            while a < b:
                take = min(b - a, max_granules - size)
                pending.append((a, a + take))
                size += take
                a += take
                if size >= max_granules:
                    cur.append(TaskSlice(s.part, s.rows, s.manifest_hash, tuple(pending)))
                    tasks.append(cur)
                    cur, pending, size = [], [], 0
        if pending:
            cur.append(TaskSlice(s.part, s.rows, s.manifest_hash, tuple(pending)))
    if cur:
        tasks.append(cur)
    return tasks
