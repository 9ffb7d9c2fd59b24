"""A SELECT from bound query to result: plan (RPN + index choice), prune, scan, select."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from skipidx.execution.scan import scan, zero_column_table
from skipidx.execution.select import run_select
from skipidx.planner.bound import BoundSelect, columns_of
from skipidx.planner.prune import IndexCache, IndexUse, PartSelection, plan_indexes, prune
from skipidx.planner.rpn import RPN, build_rpn
from skipidx.planner.stats import QueryStats

#: Granules per read when a LIMIT without ORDER BY/aggregation may stop the scan early.
LIMIT_BATCH_GRANULES = 8


@dataclass
class QueryPlan:
    snapshot: Any                  # store TableSnapshot (meta + parts)
    select: BoundSelect
    rpn: RPN
    uses: list[IndexUse]
    columns: list[str]             # columns the scan reads, in table order
    cache: IndexCache | None = None
    #: answer count()-only queries from exact postings when it can (planner.direct_read)
    direct_read: bool = True
    #: set by run_query / EXPLAIN when it did: the indexes whose postings gave the count
    direct_read_from: list[str] | None = None


def plan_query(snapshot: Any, bs: BoundSelect, cache: IndexCache | None = None) -> QueryPlan:
    """The RPN of the WHERE clause, the indexes that can answer it, the columns to read."""
    meta = snapshot.meta
    rpn = build_rpn(bs.where)
    derived = None
    if getattr(snapshot, "kind", None) == "external":
        from skipidx.planner.external import external_uses

        def derived(rpn_: RPN, cache_: Any, declared: list) -> list:
            return external_uses(snapshot, rpn_, cache_, declared)
    uses = plan_indexes(rpn, meta, cache, derived)
    need = columns_of(bs.where) | bs.output_columns()
    columns = [c for c in meta.column_names if c in need]
    return QueryPlan(snapshot, bs, rpn, uses, columns, cache)


def prune_plan(plan: QueryPlan, stats: QueryStats) -> list[PartSelection]:
    t0 = time.perf_counter()
    sel = prune(plan.snapshot.parts, plan.rpn, plan.uses, stats, plan.cache)
    stats.prune_ms = (time.perf_counter() - t0) * 1000
    stats.notes.extend(getattr(plan.snapshot, "notes", ()))
    return sel


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
    if plan.direct_read and selections and getattr(plan.snapshot, "kind", None) != "external":
        from skipidx.execution.scan import zero_column_table as _zero
        from skipidx.planner.direct_read import direct_count

        got = direct_count(plan, [s.part for s in selections])
        if got is not None:
            n, plan.direct_read_from = got
            stats.rows_matched = n
            stats.notes.append(f"count() read from the postings of {', '.join(plan.direct_read_from)} "
                               f"(no column read)")
            table = run_select(bs, iter([_zero(n)]))
            stats.scan_ms = (time.perf_counter() - t0) * 1000
            return table, stats
    stream = bs.limit is not None and not bs.order_by and not bs.aggregate
    out_cols = bs.output_columns()
    chunks = scan(selections, plan.columns, bs.where, stats,
                  max_granules=LIMIT_BATCH_GRANULES if stream else None,
                  keep=[c for c in plan.columns if c in out_cols])
    table = run_select(bs, chunks, sort_key=plan.snapshot.meta.order_by)
    stats.scan_ms = (time.perf_counter() - t0) * 1000
    return table, stats


def run_constant_select(bs: BoundSelect) -> pa.Table:
    """A SELECT without FROM: one row of constants (ClickHouse's system.one)."""
    from skipidx.execution.evaluate import where_mask

    one = zero_column_table(1)
    mask = where_mask(bs.where, one)
    return run_select(bs, iter([one if mask is None else one.filter(mask)]))


def prune_where(snapshot: Any, where: str | None, cache: IndexCache | None = None):
    """Prune a table snapshot with a skipidx WHERE text (no SELECT around it).

    Returns ``(selections, stats, bound_where)``: the parts and mark ranges to
    read, the pruning figures, and the bound expression to apply exactly on
    what is read (``skipidx.execution.evaluate.where_mask(bound_where, table)``;
    None means every row passes). For embedders such as the Spark source.
    """
    from skipidx.planner.binder import bind_where
    from skipidx.sql.parser import parse_expression

    bound = None if where is None or not where.strip() else bind_where(snapshot.meta, parse_expression(where))
    bs = BoundSelect(snapshot.meta.name, [], bound)
    plan = plan_query(snapshot, bs, cache)
    stats = QueryStats(table=snapshot.meta.name)
    return prune_plan(plan, stats), stats, bound
