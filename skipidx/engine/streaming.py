"""Streaming SELECTs: a large result read as its consumer pulls.

A SELECT without aggregation, ORDER BY or DISTINCT whose kept granules hold
more than :data:`STREAM_MIN_ROWS` rows becomes a streamed
:class:`~skipidx.engine.result.Result`: the scan's chunks are projected one
by one as the consumer asks for rows (``fetch_record_batch``, the Arrow
capsule stream, ``fetchmany``), so memory holds a few scan jobs whatever the
result size. ``db.scan`` always streams.
"""
from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa

from skipidx.engine.result import QueryStats, Result

__all__ = ["STREAM_MIN_ROWS", "STREAM_MIN_BYTES", "streamable", "bound_types", "select_stream", "scan_stream"]


#: A streamable SELECT whose kept granules hold more rows than this, and whose
#: result turns out to hold more too (or :data:`STREAM_MIN_BYTES`), is read as the
#: consumer pulls (Result streams); others are computed at once, so their errors
#: and figures (``stats.rows_read``) are all there when ``db.sql`` returns.
STREAM_MIN_ROWS = 1 << 20
STREAM_MIN_BYTES = 64 << 20


def streamable(bs) -> bool:
    """Rows that can be handed out chunk by chunk as the scan yields them."""
    from skipidx.execution.select import array_joins

    return not bs.aggregate and not bs.order_by and not bs.distinct and bs.limit != 0 and not array_joins(bs)


def bound_types(bs, table: pa.Table) -> list[str] | None:
    """ClickHouse type names of a SELECT's output columns, from the bound items."""
    from skipidx.engine.result import ch_type_name

    try:
        out = []
        for it, f in zip(bs.items, table.schema):
            e = it.expr
            ch = getattr(e, "ch_type", "") or ""
            if ch:
                out.append(ch)
                continue
            out.append(ch_type_name(f.type, bool(getattr(e, "nullable", False))))
        return out if len(out) == table.num_columns else None
    except Exception:
        return None


def select_stream(snap, plan, force: bool, before_scan: Any = None, max_result_rows: int | None = None) -> Result:
    """Prune, then either compute the result now (little to read, and not
    `force`d) or hand out a Result that reads the kept granules as it is
    pulled. Takes ownership of `snap` (closed when the rows are done).
    `before_scan(selections, stats)` sees the pruning first (query settings'
    checks); a `max_result_rows` limit computes the result now and checks it."""
    import dataclasses
    import time

    from skipidx.execution.scan import rows_in_ranges, scan
    from skipidx.execution.select import run_select
    from skipidx.engine.query import LIMIT_BATCH_GRANULES
    from skipidx.planner.plan import prune_plan

    bs = plan.select
    if not streamable(bs):
        from skipidx.engine.query import run_query

        with snap:
            table, stats = run_query(plan, before_scan=before_scan)
        _check_result_rows(max_result_rows, table)
        return Result(table, stats, types=bound_types(bs, table))
    stats = QueryStats(table=bs.table)
    selections = prune_plan(plan, stats)
    if before_scan is not None:
        before_scan(selections, stats)
    out_cols = bs.output_columns()
    keep = [c for c in plan.columns if c in out_cols]
    need = None if bs.limit is None else bs.limit + bs.offset
    kept = sum(rows_in_ranges(sel.part, sel.ranges) for sel in selections)
    if not force and (kept <= STREAM_MIN_ROWS or (need is not None and need <= STREAM_MIN_ROWS)
                      or max_result_rows):
        with snap:
            t0 = time.perf_counter()
            chunks = scan(selections, plan.columns, bs.where, stats,
                          max_granules=LIMIT_BATCH_GRANULES if bs.limit is not None else None, keep=keep, prewhere=plan.prewhere, threads=plan.threads,
                          executor=plan.executor)
            table = run_select(bs, chunks, sort_key=plan.snapshot.meta.order_by)
            stats.scan_ms = (time.perf_counter() - t0) * 1000
        _check_result_rows(max_result_rows, table)
        return Result(table, stats, types=bound_types(bs, table))

    proj = dataclasses.replace(bs, limit=None, offset=0)
    empty = run_select(proj, iter([]))

    def rows() -> Iterator[pa.Table]:
        skip, left = bs.offset or 0, bs.limit
        chunks = scan(selections, plan.columns, bs.where, stats, keep=keep, prewhere=plan.prewhere, threads=plan.threads,
                          executor=plan.executor)
        try:
            for ch in chunks:
                p = run_select(proj, iter([ch]))
                if skip:
                    drop = min(skip, p.num_rows)
                    p, skip = p.slice(drop), skip - drop
                if left is not None:
                    p = p.slice(0, left)
                    left -= p.num_rows
                if p.num_rows:
                    yield p
                if left == 0:
                    return
        finally:
            chunks.close()
            snap.close()

    gen = rows()
    # Many kept rows may give few result rows (a selective WHERE the indexes could not narrow
    # further): read on while the result stays small, so such a query returns complete, with
    # its full figures (stats.rows_read); only a large result streams. db.scan (`force`)
    # streams from its first chunk.
    head: list[pa.Table] = []
    n_rows = n_bytes = 0
    done = True
    for p in gen:           # errors of the first chunks surface here, not at the first fetch
        head.append(p)
        n_rows += p.num_rows
        n_bytes += p.nbytes
        if force or n_rows > STREAM_MIN_ROWS or n_bytes > STREAM_MIN_BYTES:
            done = False
            break
    if done:
        table = pa.concat_tables(head) if head else empty
        return Result(table, stats, types=bound_types(bs, table))

    def chained() -> Iterator[pa.Table]:
        try:
            yield from head
            head.clear()
            yield from gen
        finally:
            gen.close()

    return Result(stream=chained(), schema=head[0].schema, stats=stats, types=bound_types(bs, head[0]),
                  on_close=snap.close)


def _check_result_rows(limit: int | None, table: pa.Table) -> None:
    if limit and table.num_rows > limit:
        from skipidx.engine.settings import result_rows_exceeded

        raise result_rows_exceeded(limit, table.num_rows)


def scan_stream(snap, columns: list[str], where_expr, cache, executor=None) -> Result:
    """db.scan: the table's `columns` where `where_expr` holds, streamed."""
    from skipidx.expr.binder import bind_where
    from skipidx.expr.bound import BColumn
    from skipidx.expr.select import BoundSelect, OutputItem
    from skipidx.planner.plan import plan_query

    meta = snap.meta
    bound = bind_where(meta, where_expr) if where_expr is not None else None
    items = []
    for c in columns:
        ct = meta.column(c).type
        items.append(OutputItem(c, BColumn(c, ct.arrow_type, bool(ct.nullable), ct.name)))
    bs = BoundSelect(meta.name, items, bound)
    plan = plan_query(snap, bs, cache)
    plan.executor = executor
    return select_stream(snap, plan, force=True)
