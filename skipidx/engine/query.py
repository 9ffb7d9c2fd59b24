"""A SELECT from plan to result: prune, scan the kept mark ranges, select."""
from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from skipidx.execution.direct_read import direct_count, direct_scan, row_filter_rows
from skipidx.execution.scan import scan, zero_column_table
from skipidx.execution.select import run_select
from skipidx.expr.select import BoundSelect
from skipidx.expr.evaluate import where_mask
from skipidx.planner.plan import QueryPlan, prune_plan
from skipidx.planner.stats import QueryStats

#: Granules per read when a LIMIT without ORDER BY/aggregation may stop the scan early.
LIMIT_BATCH_GRANULES = 8


def limit_streams(bs: Any) -> bool:
    """A LIMIT without ORDER BY or aggregate: the scan reads granules in small batches and
    stops early, with no row filter from postings."""
    return bs.limit is not None and not bs.order_by and not bs.aggregate


def run_query(plan: QueryPlan, before_scan: Any = None) -> tuple[pa.Table, QueryStats]:
    """Prune, scan the kept mark ranges, and compute the result.

    `before_scan(selections, stats)`, if given, sees the pruning's outcome before
    any row is read (query limits such as max_rows_to_read raise there)."""
    bs = plan.select
    stats = QueryStats(table=bs.table)
    selections = prune_plan(plan, stats)
    if before_scan is not None:
        before_scan(selections, stats)
    t0 = time.perf_counter()
    # (external tables too: a file's sidecar is used only for the version the query's snapshot
    # checked, so its postings count that version's rows; a stale or missing one falls back)
    if plan.direct_read and selections:
        got = direct_count(plan, [s.part for s in selections])
        if got is not None:
            n, plan.direct_read_from = got
            stats.rows_matched = n
            stats.notes.append(f"count() read from the postings of {', '.join(plan.direct_read_from)} "
                               f"(no column read)")
            table = run_select(bs, iter([zero_column_table(n)]))
            stats.scan_ms = (time.perf_counter() - t0) * 1000
            return table, stats
    stream = limit_streams(bs)
    out_cols = bs.output_columns()
    if plan.direct_read and selections and plan.snapshot.kind != "external":
        keep = [c for c in plan.columns if c in out_cols]
        got = direct_scan(plan, selections, stats, keep)
        if got is not None:
            chunks, plan.direct_read_from = got
            stats.notes.append(f"WHERE answered by the postings of {', '.join(plan.direct_read_from)} "
                               f"(columns read: {', '.join(keep) or 'none'})")
            table = run_select(bs, chunks, sort_key=plan.snapshot.meta.order_by)
            stats.scan_ms = (time.perf_counter() - t0) * 1000
            return table, stats
    known = None if stream else row_filter_rows(plan, selections)
    if known is not None:
        stats.notes.append(f"WHERE rows from the postings of {', '.join(known[1])} (columns read: "
                           f"{', '.join(plan.columns)}; the WHERE not evaluated per row)")
    chunks = scan(selections, plan.columns, bs.where, stats,
                  max_granules=LIMIT_BATCH_GRANULES if stream else None,
                  keep=[c for c in plan.columns if c in out_cols], prewhere=plan.prewhere, threads=plan.threads,
                  executor=plan.executor, known=None if known is None else known[0])
    table = run_select(bs, chunks, sort_key=plan.snapshot.meta.order_by)
    stats.scan_ms = (time.perf_counter() - t0) * 1000
    return table, stats


def run_constant_select(bs: BoundSelect) -> pa.Table:
    """A SELECT without FROM: one row of constants (ClickHouse's system.one)."""
    one = zero_column_table(1)
    mask = where_mask(bs.where, one)
    return run_select(bs, iter([one if mask is None else one.filter(mask)]))
