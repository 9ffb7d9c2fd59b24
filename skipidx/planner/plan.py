"""A query plan: the WHERE clause's RPN, the indexes that answer it, the columns to read; and pruning with it."""
from __future__ import annotations

import time
from skipidx.core.dataclass_codes import dataclass
from typing import Any

import numpy as np

from skipidx.expr.binder import bind_where
from skipidx.expr.select import BoundSelect
from skipidx.expr.visitors import columns_of
from skipidx.planner.prune import IndexCache, IndexUse, PartSelection, plan_indexes, prune
from skipidx.planner.rpn import RPN, build_rpn
from skipidx.planner.stats import IndexStats, QueryStats
from skipidx.sql.parser import parse_expression

@dataclass
class QueryPlan:
    snapshot: Any                  # store TableSnapshot (meta + parts)
    select: BoundSelect
    rpn: RPN
    uses: list[IndexUse]
    columns: list[str]             # columns the scan reads, in table order
    cache: IndexCache | None = None
    #: answer count()-only queries from exact postings when it can (execution.direct_read)
    direct_read: bool = True
    #: a scanned WHERE made of exactly answered atoms filters its rows by the postings
    #: (the columns are still read; text_index_row_filter = 0 evaluates it per row)
    row_filter: bool = True
    #: set by run_query / EXPLAIN when it did: the indexes whose postings gave the count
    direct_read_from: list[str] | None = None
    #: read first (ClickHouse's PREWHERE): the scan reads this filter's columns,
    #: then the other columns only for granules with a passing row. The WHERE
    #: itself by default (optimize_move_to_prewhere); None: one read of all
    #: columns; an explicit PREWHERE clause puts its own expression here.
    prewhere: Any = None
    prewhere_explicit: bool = False
    #: why the WHERE was not moved to PREWHERE although the setting asks for it (EXPLAIN)
    prewhere_note: str | None = None
    #: concurrent scan reads (the query's max_threads; None: the executor's default)
    threads: int | None = None
    #: what runs the concurrent reads (the Database's execution.scan.ScanExecutor);
    #: None: every read in the calling thread
    executor: Any = None


def plan_query(snapshot: Any, bs: BoundSelect, cache: IndexCache | None = None) -> QueryPlan:
    """The RPN of the WHERE clause, the indexes that can answer it, the columns to read."""
    meta = snapshot.meta
    retain_parts(snapshot, cache)
    rpn = build_rpn(bs.where)
    derived = None
    if snapshot.kind == "external":
        from skipidx.planner.external import external_uses

        def derived(rpn_: RPN, cache_: Any, declared: list) -> list:
            return external_uses(snapshot, rpn_, cache_, declared)
    uses = plan_indexes(rpn, meta, cache, derived)
    need = columns_of(bs.where) | bs.output_columns()
    columns = [c for c in meta.column_names if c in need]
    plan = QueryPlan(snapshot, bs, rpn, uses, columns, cache)
    set_prewhere(plan, bs.where)
    return plan


def retain_parts(snapshot: Any, cache: IndexCache | None) -> None:
    """Trim `cache` to the parts of `snapshot`'s generation (a table's planning does it)."""
    if cache is not None and snapshot.kind == "merge_tree":
        # parts merged away since the last plan of this table are never read again
        cache.retain_parts(snapshot.table_dir, snapshot.gen, [p.path for p in snapshot.parts],
                           snapshot.table_id)


def copy_plan(plan: QueryPlan, snapshot: Any) -> QueryPlan:
    """`plan` for `snapshot`, before any pruning: what a query mutates is its own (the
    index uses, their notes and figures); what only the table metadata decides is shared
    (the bound SELECT, the RPN, the bound index conditions and types, the columns).

    A plan depends on the table's metadata, the statement and its settings only, never
    on the parts, so a plan made for one snapshot serves every later snapshot of the
    same metadata (engine/statements.py keeps such templates)."""
    uses = []
    for u in plan.uses:
        c = IndexUse.__new__(IndexUse)
        c.__dict__.update(u.__dict__)
        c.conditions = dict(u.conditions)
        if u.stats is not None:
            st = IndexStats.__new__(IndexStats)
            st.__dict__.update(u.stats.__dict__)
            st.__dict__.pop("_deferred", None)
            st.conditions = list(u.stats.conditions)
            c.stats = st
        uses.append(c)
    out = QueryPlan.__new__(QueryPlan)
    out.__dict__.update(plan.__dict__)
    out.snapshot = snapshot
    out.uses = uses
    out.direct_read_from = None
    return out


def set_prewhere(plan: QueryPlan, expr: Any, explicit: bool = False) -> None:
    """Read `expr`'s columns first (None: no PREWHERE). Only worth it when the
    scan reads other columns too; otherwise it is one read as before."""
    plan.prewhere_explicit = explicit
    plan.prewhere_note = None
    if expr is None or plan.snapshot.kind == "external":
        # (an external table's files are read whole-row-group by their own reader)
        plan.prewhere = None
        return
    first = columns_of(expr)
    if not any(c not in first for c in plan.columns):
        plan.prewhere = None
    elif not explicit and _indexes_judge_all(plan):
        # every atom is answered by an index that prunes: the kept granules hold a
        # match but for the filters' rare false positives, and a second read costs more
        plan.prewhere = None
        plan.prewhere_note = "every condition is answered by an index: the kept granules hold a match"
    else:
        plan.prewhere = expr


def _indexes_judge_all(plan: QueryPlan) -> bool:
    """Whether every atom of the WHERE's RPN is one some index can refute."""
    from skipidx.planner.rpn import Op

    judged = {i for u in plan.uses if u.useful
              for i, c in u.conditions.items() if c.can_prune and not c.reason}
    items = plan.rpn.items
    return bool(items) and all(it.op != Op.UNKNOWN and (it.op != Op.ATOM or it.atom in judged) for it in items)


#: An automatic PREWHERE needs at least this many kept granules: on fewer, the
#: second read's fixed cost is more than what skipping the other columns of a
#: granule without a match can save (id lookups with a condition no index
#: answers keep 1-3 granules, nearly always holding a match: 5-6 % slower).
PREWHERE_MIN_GRANULES = 4


def settle_prewhere(plan: QueryPlan, selections: list[PartSelection]) -> None:
    """After pruning, keep an automatic PREWHERE only where it can pay: on at least
    :data:`PREWHERE_MIN_GRANULES` kept granules. An explicit PREWHERE clause is
    always kept. (The filter columns' share of the bytes is no rule here: with
    85 % of them, skipping the rest of the granules without a match still paid.)"""
    if plan.prewhere is None or plan.prewhere_explicit:
        return
    n = sum(int(np.count_nonzero(s.kept)) for s in selections)
    if n < PREWHERE_MIN_GRANULES:
        plan.prewhere = None
        plan.prewhere_note = f"{n} granule{'s' if n != 1 else ''} kept: one read costs less than two"


def prune_plan(plan: QueryPlan, stats: QueryStats) -> list[PartSelection]:
    t0 = time.perf_counter()
    sel = prune(plan.snapshot.parts, plan.rpn, plan.uses, stats, plan.cache)
    stats.prune_ms = (time.perf_counter() - t0) * 1000
    stats.notes.extend(plan.snapshot.notes)
    settle_prewhere(plan, sel)
    return sel


def prune_where(snapshot: Any, where: str | None, cache: IndexCache | None = None):
    """Prune a table snapshot with a skipidx WHERE text (no SELECT around it).

    Returns ``(selections, stats, bound_where)``: the parts and mark ranges to
    read, the pruning figures, and the bound expression to apply exactly on
    what is read (``skipidx.expr.evaluate.where_mask(bound_where, table)``;
    None means every row passes). For embedders such as the Spark source.
    """
    bound = None if where is None or not where.strip() else bind_where(snapshot.meta, parse_expression(where))
    bs = BoundSelect(snapshot.meta.name, [], bound)
    plan = plan_query(snapshot, bs, cache)
    stats = QueryStats(table=snapshot.meta.name)
    return prune_plan(plan, stats), stats, bound
