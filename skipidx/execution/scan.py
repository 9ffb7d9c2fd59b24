"""Scan the selected mark ranges of each part and apply the exact WHERE.

Only the kept granules are read (``Part.read(columns, mark_ranges)``), and
only the columns the query needs. The WHERE clause is evaluated exactly on
what was read (:mod:`skipidx.execution.evaluate`), so false positives of the
indexes never reach the answer. Chunks are yielded one at a time, so a
caller that has enough rows (LIMIT without ORDER BY or aggregation) stops
reading the rest.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skipidx.execution.evaluate import where_mask
from skipidx.planner.bound import BExpr
from skipidx.planner.prune import PartSelection


def _batches(ranges: list[tuple[int, int]], max_granules: int | None) -> Iterator[list[tuple[int, int]]]:
    """Ranges grouped so that one read covers at most `max_granules` granules (None: all at once)."""
    if max_granules is None:
        if ranges:
            yield ranges
        return
    cur: list[tuple[int, int]] = []
    size = 0
    for s, e in ranges:
        while s < e:
            take = min(e - s, max_granules - size)
            cur.append((s, s + take))
            size += take
            s += take
            if size >= max_granules:
                yield cur
                cur, size = [], 0
    if cur:
        yield cur


def rows_in_ranges(part: Any, ranges: list[tuple[int, int]]) -> int:
    marks = np.asarray(part.marks, dtype=np.int64)
    return int(sum(int(marks[e] - marks[s]) for s, e in ranges))


def zero_column_table(n: int) -> pa.Table:
    """A table with no columns and `n` rows (what ``count()`` needs)."""
    return pa.table({"__n": pa.nulls(n)}).drop_columns(["__n"])


def _read_filtered(part: Any, batch: list[tuple[int, int]], columns: list[str], where: BExpr | None,
                   keep: list[str]) -> tuple[pa.Table, int]:
    """Read one batch of ranges, apply the exact WHERE, keep only `keep`; (rows, rows read)."""
    if not columns:
        n = rows_in_ranges(part, batch)
        return zero_column_table(n), n
    t = part.read(columns, batch)
    read = t.num_rows
    mask = where_mask(where, t)
    if keep != list(t.column_names):
        t = t.select(keep) if keep else zero_column_table(t.num_rows)
    if mask is not None:
        if t.num_columns:
            t = t.filter(mask)
        else:
            t = zero_column_table(int(pc.sum(mask).as_py() or 0))
    return t, read


#: Parts read at the same time (Parquet decoding and pyarrow.compute release the GIL).
SCAN_THREADS = max(1, min(4, os.cpu_count() or 1))


def scan(selections: list[PartSelection], columns: list[str], where: BExpr | None, stats,
         max_granules: int | None = None, keep: list[str] | None = None) -> Iterator[pa.Table]:
    """Yield the rows of the kept granules that satisfy `where`, part by part in order.

    `columns` (read) must include every column `where` reads; `keep` (default:
    all of them) are the columns the caller needs afterwards, so a column
    read only for the filter is dropped before the rows are gathered
    (``SELECT count() ... WHERE msg LIKE ...`` never copies a string). With no
    columns at all (``SELECT count() FROM t`` without WHERE) nothing is read:
    each chunk is a zero-column table of the right length, taken from the marks.

    With `max_granules` (a LIMIT that may stop early) batches are read one by
    one; otherwise several parts are read and filtered concurrently, at most
    ``2 * SCAN_THREADS`` ahead of the consumer (bounded memory), and yielded
    in part order.
    """
    keep = list(columns) if keep is None else list(keep)
    jobs = [(sel.part, batch) for sel in selections for batch in _batches(sel.ranges, max_granules)]

    def account(t: pa.Table, read: int, t0: float) -> pa.Table:
        stats.rows_read += read
        stats.rows_matched += t.num_rows
        stats.scan_ms += (time.perf_counter() - t0) * 1000
        return t

    if max_granules is not None or len(jobs) <= 1 or SCAN_THREADS == 1:
        for part, batch in jobs:
            t0 = time.perf_counter()
            t, read = _read_filtered(part, batch, columns, where, keep)
            yield account(t, read, t0)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=SCAN_THREADS, thread_name_prefix="skipidx-scan") as pool:
        pending: deque = deque()
        it = iter(jobs)
        try:
            for part, batch in it:
                pending.append(pool.submit(_read_filtered, part, batch, columns, where, keep))
                if len(pending) >= 2 * SCAN_THREADS:
                    break
            while pending:
                t0 = time.perf_counter()
                t, read = pending.popleft().result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(pool.submit(_read_filtered, nxt[0], nxt[1], columns, where, keep))
                yield account(t, read, t0)
        finally:
            for f in pending:
                f.cancel()
